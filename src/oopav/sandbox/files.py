"""The one way the kernel reads a repository or a session's workspace: a read-only view of a
tree, confined to its root.

Handlers build one at the edge (``WorkspaceFiles(root)``) and pass it to the decisions in
``decide/``, which ask it questions (``is_file``, ``text``, ``scan``, ``find``) instead of opening paths
themselves; ``tests/test_layers.py::test_handlers_and_decide_read_the_repository_only_through_the_workspace_interface``
fails on a direct read. Paths are workspace-relative; one that leaves the root (``..``, an
absolute path, a symlink out) reads as absent. Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath


class WorkspaceFiles:
    """A read-only view of the tree under ``root``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._resolved = self.root.resolve()

    def __repr__(self) -> str:
        return f"WorkspaceFiles({str(self.root)!r})"

    @property
    def name(self) -> str:
        return self.root.name

    def path(self, rel: str) -> Path | None:
        """The absolute path of ``rel``, or None when it leaves the root."""
        if os.path.isabs(rel) or ".." in PurePosixPath(rel).parts:
            return None
        full = self.root / rel
        try:
            full.resolve().relative_to(self._resolved)
        except (ValueError, OSError):
            return None
        return full

    def exists(self, rel: str) -> bool:
        p = self.path(rel)
        return p is not None and p.exists()

    def is_file(self, rel: str) -> bool:
        p = self.path(rel)
        return p is not None and p.is_file()

    def is_dir(self, rel: str) -> bool:
        p = self.path(rel)
        return p is not None and p.is_dir()

    def is_symlink(self, rel: str) -> bool:
        p = self.root / rel
        return p.is_symlink()

    def size(self, rel: str) -> int | None:
        p = self.path(rel)
        try:
            return p.stat().st_size if p is not None else None
        except OSError:
            return None

    def read_bytes(self, rel: str, max_bytes: int | None = None) -> bytes | None:
        """The file's bytes; None when it is absent, outside the root, unreadable or larger
        than ``max_bytes``."""
        p = self.path(rel)
        if p is None:
            return None
        try:
            if max_bytes is not None and p.stat().st_size > max_bytes:
                return None
            return p.read_bytes()
        except OSError:
            return None

    def text(self, rel: str, *, errors: str = "strict", max_bytes: int | None = None) -> str | None:
        """The file as UTF-8 text; None when absent, unreadable, too large or (with
        ``errors='strict'``) not UTF-8."""
        data = self.read_bytes(rel, max_bytes)
        if data is None:
            return None
        try:
            return data.decode("utf-8", errors)
        except UnicodeDecodeError:
            return None

    def scan(
        self, rel: str = ".", *, skip: Iterable[str] = (), skip_virtualenvs: bool = True
    ) -> Iterator[str]:
        """Relative POSIX paths of the regular files under ``rel``, sorted per directory,
        skipping directories named in ``skip``, virtualenvs (a ``pyvenv.cfg``) and symlinks
        (which could point outside the tree)."""
        base = self.path(rel)
        if base is None or not base.is_dir():
            return
        skipped = frozenset(skip)
        for dirpath, dirnames, filenames in os.walk(base):
            here = Path(dirpath)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in skipped
                and not (here / d).is_symlink()
                and not (skip_virtualenvs and (here / d / "pyvenv.cfg").is_file())
            )
            for name in sorted(filenames):
                full = here / name
                if full.is_symlink() or not full.is_file():
                    continue
                yield full.relative_to(self.root).as_posix()

    def files(self, rel: str = ".", *, skip: Iterable[str] = (), limit: int) -> list[str]:
        """Up to about ``limit`` files under ``rel`` (depth first, names in order, whole
        directories at a time), sorted: the bounded listing the evidence search and
        retrieval use (virtualenvs are not told apart here, only ``skip``)."""
        base = self.path(rel)
        if base is None:
            return []
        skipped = frozenset(skip)
        out: list[Path] = []
        stack = [base]
        while stack and len(out) < limit:
            d = stack.pop()
            try:
                entries = sorted(d.iterdir(), key=lambda p: p.name, reverse=True)
            except OSError:
                continue
            for p in entries:
                if p.is_symlink():
                    continue
                if p.is_dir():
                    if p.name not in skipped:
                        stack.append(p)
                elif p.is_file():
                    out.append(p)
        return [p.relative_to(self.root).as_posix() for p in sorted(out)]

    def find(self, pattern: str, rel: str = ".") -> list[str]:
        """Files under ``rel`` matching ``pattern`` (pathlib's glob; ``**`` recurses)."""
        base = self.path(rel)
        if base is None or not base.is_dir():
            return []
        out = []
        for p in sorted(base.glob(pattern)):
            if p.is_symlink() or not p.is_file():
                continue
            try:
                p.resolve().relative_to(self._resolved)
            except ValueError:
                continue
            out.append(p.relative_to(self.root).as_posix())
        return out
