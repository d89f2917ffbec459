"""Writing a file so that readers see the old bytes or the new ones, never a part.

The temporary name is unique per writer (process, thread and a random token): handlers share
one process, two `oopav run` share a data directory, and with a shared name one writer renames
another's file away (seen twice: the learner's shards, the repo map cache). The leading dot
keeps temporary files out of globs over the directory.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from pathlib import Path

# The stubs gate (decide.stubs) and the starting-tree store (history.blobs) read this set:
# changing it changes what recorded sessions observed, so their replay; keep it stable.
SKIP_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "site-packages",
    }
)
"""Directory names never descended into: VCS data, virtualenvs, dependency trees and caches.
None of it is the code the task is about, and it can be huge. Build folders (``build``,
``target``) are not listed because some projects keep real sources under those names."""


def temporary_name(path: Path) -> Path:
    return path.with_name(
        f".{path.name}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.tmp"
    )


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (``OSError`` as usual when it cannot be)."""
    tmp = temporary_name(path)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
