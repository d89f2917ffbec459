"""Parsed ast-grep trees, cached per workspace and keyed by the file's content hash.

Parsing is most of an in-process rule application (tree-sitter, ~77 % on an ordinary file);
an agent applies several rules to the same files, so rules after the first reuse the trees.

- The key is (language, BLAKE2b of the content): a file that was written has a new hash, so a
  stale tree can never be served. A write also drops the old tree (``forget``), which keeps
  memory to the files as they are now.
- Bounded: at most ``max_bytes`` of source per workspace (least recently used goes first) and
  ``MAX_WORKSPACES`` workspaces per process. A cache is disposable (invariant 1): dropping it
  changes only speed, never a result.
- A parsed ``SgRoot`` is read-only for matching; ast-grep-py's rewriting never mutates it (we
  build the new text ourselves), so one tree serves any number of rules.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

from ast_grep_py import SgNode, SgRoot

DEFAULT_MAX_BYTES = 64 << 20
MAX_WORKSPACES = 16


def content_key(source: str, language: str) -> tuple[str, bytes]:
    data = source.encode("utf-8", "surrogatepass")
    return language, hashlib.blake2b(data, digest_size=16).digest()


class TreeCache:
    """An LRU of parsed trees for one workspace."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._trees: OrderedDict[tuple[str, bytes], tuple[SgRoot, int]] = OrderedDict()
        self._by_path: dict[str, tuple[str, bytes]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._trees)

    def root(self, source: str, language: str, path: str | None = None) -> SgNode:
        """The root node of ``source`` parsed as ``language``, parsed at most once per content.
        ``path`` (workspace-relative) lets a later write of that file drop this tree."""
        key = content_key(source, language)
        with self._lock:
            hit = self._trees.get(key)
            if hit is not None:
                self._trees.move_to_end(key)
                self.hits += 1
                if path is not None:
                    self._by_path[path] = key
                return hit[0].root()
        tree = SgRoot(source, language)
        size = len(source)
        with self._lock:
            self.misses += 1
            if key not in self._trees:
                self._trees[key] = (tree, size)
                self._bytes += size
            if path is not None:
                old = self._by_path.get(path)
                if old is not None and old != key:
                    self._drop(old)
                self._by_path[path] = key
            while self._bytes > self.max_bytes and len(self._trees) > 1:
                oldest = next(iter(self._trees))
                self._drop(oldest)
        return tree.root()

    def forget(self, path: str) -> None:
        """``path`` was written: its old tree will never be asked for again."""
        with self._lock:
            key = self._by_path.pop(path, None)
            if key is not None and key not in self._by_path.values():
                self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._trees.clear()
            self._by_path.clear()
            self._bytes = 0

    def _drop(self, key: tuple[str, bytes]) -> None:
        entry = self._trees.pop(key, None)
        if entry is not None:
            self._bytes -= entry[1]


_caches: OrderedDict[str, TreeCache] = OrderedDict()
_caches_lock = threading.Lock()


def workspace_key(workspace: Path | str) -> str:
    """A workspace's resolved path, remembered: resolving costs ~10 us a call, as much as a
    tenth of a warm rule on one file. A path that later resolves elsewhere only costs speed:
    trees are keyed by content, so any workspace's cache gives the same results."""
    return _resolved(os.fspath(workspace))


@functools.lru_cache(maxsize=1024)
def _resolved(workspace: str) -> str:
    return str(Path(workspace).resolve())


def for_workspace(workspace: Path | str) -> TreeCache:
    """The cache of one workspace (by resolved path); the least recently used workspace's
    cache is dropped beyond ``MAX_WORKSPACES``."""
    key = workspace_key(workspace)
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = TreeCache()
            while len(_caches) > MAX_WORKSPACES:
                _caches.popitem(last=False)
        else:
            _caches.move_to_end(key)
        return cache


def drop_workspace(workspace: Path | str) -> None:
    """Forget a workspace's trees (it was removed or reset)."""
    with _caches_lock:
        _caches.pop(workspace_key(workspace), None)
