"""What a decision may ask of a repository's files: the read-only interface the edge passes in.

The handlers build the one implementation, ``oopav.sandbox.files.WorkspaceFiles``, over the
session's workspace; ``decide`` never opens a path itself (tests/test_layers.py checks that),
so the same functions run on any tree the edge hands them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol


class RepoFiles(Protocol):
    @property
    def name(self) -> str: ...

    def exists(self, rel: str) -> bool: ...

    def is_file(self, rel: str) -> bool: ...

    def is_dir(self, rel: str) -> bool: ...

    def is_symlink(self, rel: str) -> bool: ...

    def read_bytes(self, rel: str, max_bytes: int | None = None) -> bytes | None: ...

    def text(
        self, rel: str, *, errors: str = "strict", max_bytes: int | None = None
    ) -> str | None: ...

    def scan(
        self, rel: str = ".", *, skip: Iterable[str] = (), skip_virtualenvs: bool = True
    ) -> Iterator[str]: ...

    def files(self, rel: str = ".", *, skip: Iterable[str] = (), limit: int) -> list[str]: ...

    def find(self, pattern: str, rel: str = ".") -> list[str]: ...
