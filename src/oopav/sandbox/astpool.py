"""Apply one ast-grep rule to many files on every core: a warm pool of worker processes.

ast-grep-py holds the GIL while it parses and matches (threads measured no faster than one),
so a rule over many files runs on one core in-process, while the ``ast-grep`` CLI parses on
all of them. For a batch big enough to pay for the hand-over (``MIN_POOL_BYTES`` of source in
at least two files that pass the literal filter), the files are split between this process
(which would otherwise wait) and worker processes, one per further core, each running
``rewrite_source`` with its own parsed-tree caches; smaller batches (an agent's usual one
file) stay in-process, where a round trip would cost more than the work.

- **Trees stay where they were parsed.** A file's content (language + BLAKE2b, as in
  ``treecache``) goes back to the process that parsed it, so a second rule on the same files
  reuses its trees; a content nobody holds goes to the one with the fewest bytes in this
  batch (largest files first). The map of who holds what is a hint only: a worker that dropped a tree
  parses again, with the same result.
- **Same results as in-process**, file for file: workers run the same function; the first
  ``RuleError`` in file order is raised, as the serial loop would.
- **Never a blocker**: the pool starts in the background on first use (that batch runs
  in-process); a batch that finds the pool busy (another thread), a worker that dies, fails
  or misses ``DEADLINE_S``, makes that batch run in-process (a failed pool is closed and
  started again on a later batch). ``OOPAV_ASTGREP_WORKERS=0`` disables the pool.
- Caches are disposable (invariant 1): dropping a worker's trees changes only speed.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import structlog

from oopav.sandbox import treecache
from oopav.sandbox.astgrep import Rule, RuleError, _prepare, rewrite_source
from oopav.sandbox.rulefilter import may_match

log = structlog.get_logger(__name__)

# Below this much candidate source a batch stays in-process: a round trip to the workers costs
# ~0.2-0.5 ms, an 81-line file's whole warm rewrite ~0.1 ms.
MIN_POOL_BYTES = 48 << 10
DEADLINE_S = 300.0
START_DEADLINE_S = 60.0
RETRY_S = 60.0  # after a failed start (e.g. a daemonic caller may not have children)
MAX_HOLDERS = 200_000  # entries in the "which worker holds this content" hint


def worker_count() -> int:
    raw = os.environ.get("OOPAV_ASTGREP_WORKERS")
    if raw is not None and raw.strip():
        try:
            return max(0, int(raw))
        except ValueError:
            log.warning("astpool.bad_workers_env", value=raw)
    # The cores this process may run on (a container or taskset may allow fewer than the
    # machine has); this process works on its own share of every batch, so one is its own.
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(cores, 4) - 1


def _serve(conn: Connection) -> None:
    """A worker: answer rewrite / forget / drop requests until the pipe closes."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        op = msg[0]
        if op == "rewrite":
            _, ws, rule, items = msg
            trees = treecache.for_workspace(ws)
            misses = trees.misses
            out: list[Any] = []
            try:
                for path, source in items:
                    try:
                        after, n = rewrite_source(source, rule, trees=trees, path=path)
                    except RuleError as exc:
                        out.append(("error", exc.code, exc.message))
                        break
                    # Unchanged text is not sent back.
                    out.append((None if after == source else after, n))
            except Exception as exc:  # reported; the caller redoes the batch in-process
                conn.send(("crash", f"{type(exc).__name__}: {exc}"))
                continue
            conn.send(("ok", out, trees.misses - misses))
        elif op == "forget":
            trees = treecache.for_workspace(msg[1])
            for path in msg[2]:
                trees.forget(path)
        elif op == "drop":
            treecache.drop_workspace(msg[1])
        elif op == "ping":
            conn.send(("pong",))


class AstGrepPool:
    """Worker processes holding parsed trees; used through ``rewrite_files``."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._starting: threading.Thread | None = None
        self._lock = threading.Lock()  # one batch on the pipes at a time
        # (workspace, content key) -> shard that parsed its tree: 0 this process, w worker w-1.
        self._holders: OrderedDict[tuple[str, tuple[str, bytes]], int] = OrderedDict()
        self._retry_at = 0.0  # no new start before this (after a failed one)
        self.batches = 0
        self.misses = 0  # trees the workers parsed

    def ready(self) -> bool:
        return bool(self._conns)

    def start(self, wait: bool = False, timeout_s: float = START_DEADLINE_S + 5) -> bool:
        """Start the workers (in a background thread unless ``wait``); True once ready."""
        with self._lock:
            if self._conns:
                return True
            if time.monotonic() < self._retry_at:
                return False
            if self._starting is None or not self._starting.is_alive():
                self._starting = threading.Thread(
                    target=self._spawn, name="astpool-start", daemon=True
                )
                self._starting.start()
            starting = self._starting
        if wait:
            starting.join(timeout_s)
        return self.ready()

    def _spawn(self) -> None:
        # spawn, not fork: the caller may run threads (asyncio, NATS) that fork would copy
        # mid-flight. Each worker imports this module afresh (~0.3 s, once per process).
        ctx = multiprocessing.get_context("spawn")
        conns, procs = [], []
        try:
            for _ in range(self.workers):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(theirs,), name="oopav-astgrep", daemon=True)
                proc.start()
                theirs.close()
                conns.append(mine)
                procs.append(proc)
            # Ready means imported and answering, not just forked.
            for conn in conns:
                conn.send(("ping",))
            for conn in conns:
                if not conn.poll(START_DEADLINE_S):
                    raise TimeoutError(f"a worker did not start in {START_DEADLINE_S:.0f} s")
                conn.recv()
        except Exception as exc:
            log.warning("astpool.start_failed", error=str(exc))
            for proc in procs:
                proc.kill()
            self._retry_at = time.monotonic() + RETRY_S
            return
        with self._lock:
            self._conns, self._procs = conns, procs
        log.info("astpool.started", workers=self.workers)

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        for conn in self._conns:
            conn.close()
        for proc in self._procs:
            proc.join(1.0)
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)
        self._conns, self._procs = [], []
        self._holders.clear()

    def _notify(self, msg: tuple[Any, ...], unhold: str | None = None) -> None:
        """A message needing no answer; skipped while a batch is on the pipes (the trees it
        would drop are bounded by the workers' LRU anyway). ``unhold``: a workspace whose
        contents no process holds any more."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if unhold is not None:
                self._holders = OrderedDict(
                    (k, v) for k, v in self._holders.items() if k[0] != unhold
                )
            for conn in self._conns:
                conn.send(msg)
        except OSError:
            self._close_locked()
        finally:
            self._lock.release()

    def forget(self, workspace: str, paths: Sequence[str]) -> None:
        if self._conns and paths:
            self._notify(("forget", workspace, list(paths)))

    def drop(self, workspace: str) -> None:
        if self._conns:
            self._notify(("drop", workspace), workspace)

    def rewrite(
        self, workspace: str, items: Sequence[tuple[str, str]], rule: Rule
    ) -> list[tuple[str, int]] | None:
        """(new text, rewrites) per item, or None when the batch must run in-process."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if not self._conns:
                return None
            return self._rewrite_locked(workspace, items, rule)
        except (OSError, EOFError, TimeoutError) as exc:
            log.warning("astpool.failed", error=str(exc))
            self._close_locked()
            return None
        finally:
            self._lock.release()

    def _rewrite_locked(
        self, workspace: str, items: Sequence[tuple[str, str]], rule: Rule
    ) -> list[tuple[str, int]] | None:
        # Shard 0 is this process (it would otherwise wait idle), shard w >= 1 worker w - 1.
        n = len(self._conns) + 1
        owner = [-1] * len(items)
        load = [0] * n
        fresh = []
        for i, (_, source) in enumerate(items):
            key = (workspace, treecache.content_key(source, rule.language))
            w = self._holders.get(key)
            if w is None or w >= n:
                fresh.append((len(source), i, key))
            else:
                owner[i] = w
                load[w] += len(source)
        # New contents, largest first, each to the least loaded shard (parse time follows
        # size; one big file in a package otherwise leaves a core idle).
        for size, i, key in sorted(fresh, key=lambda t: -t[0]):
            w = owner[i] = min(range(n), key=load.__getitem__)
            load[w] += size
            self._holders[key] = w
        while len(self._holders) > MAX_HOLDERS:
            self._holders.popitem(last=False)
        shards: list[list[int]] = [[] for _ in range(n)]
        for i, w in enumerate(owner):
            shards[w].append(i)
        busy = [w for w in range(1, n) if shards[w]]
        for w in busy:
            try:
                self._conns[w - 1].send(("rewrite", workspace, rule, [items[i] for i in shards[w]]))
            except OSError:
                raise
            except Exception as exc:  # e.g. a rule that does not pickle: start afresh
                raise OSError(f"cannot hand the batch to worker {w}: {exc}") from exc
        results: list[tuple[str, int] | None] = [None] * len(items)
        first_error: tuple[int, str, str] | None = None
        local_failure: BaseException | None = None
        trees = treecache.for_workspace(workspace)
        for i in shards[0]:
            path, source = items[i]
            try:
                results[i] = rewrite_source(source, rule, trees=trees, path=path)
            except RuleError as exc:
                first_error = (i, exc.code, exc.message)
                break
            except Exception as exc:  # raised once the workers' answers are read
                local_failure = exc
                break
        deadline = time.monotonic() + DEADLINE_S
        crashed = None
        for w in busy:
            conn = self._conns[w - 1]
            if not conn.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"ast-grep worker {w} gave no answer in {DEADLINE_S:.0f} s")
            reply = conn.recv()
            if reply[0] == "crash":
                crashed = reply[1]
                continue
            self.misses += reply[2]
            for i, res in zip(shards[w], reply[1], strict=False):
                if len(res) == 3:  # ("error", code, message)
                    if first_error is None or i < first_error[0]:
                        first_error = (i, res[1], res[2])
                    break
                after, count = res
                results[i] = (items[i][1] if after is None else after, count)
        self.batches += 1
        if local_failure is not None:
            raise local_failure
        if crashed is not None:
            log.warning("astpool.worker_error", error=crashed)
            return None
        if first_error is not None:
            raise RuleError(first_error[1], first_error[2])
        return results  # type: ignore[return-value]  # every slot is filled once no batch failed


_pool: AstGrepPool | None = None
_pool_lock = threading.Lock()


def pool() -> AstGrepPool | None:
    """The process's pool (not yet started), or None when disabled or on one core."""
    global _pool
    with _pool_lock:
        if _pool is None:
            n = worker_count()
            if n < 1:
                return None
            _pool = AstGrepPool(n)
        return _pool


def rewrite_files(
    workspace: Path | str, items: Sequence[tuple[str, str]], rule: Rule
) -> list[tuple[str, int]]:
    """``rewrite_source`` for each (workspace-relative path, text), with the workspace's
    parsed trees: on the worker pool for a big batch, in-process otherwise. Same results
    either way; raises the first ``RuleError`` in file order."""
    need = _prepare(rule).need
    candidates = [i for i, (_, text) in enumerate(items) if may_match(need, text)]
    size = sum(len(items[i][1]) for i in candidates)
    out: list[tuple[str, int]] = [(text, 0) for _, text in items]
    if len(candidates) >= 2 and size >= MIN_POOL_BYTES:
        p = pool()
        if p is not None:
            if not p.ready():
                p.start()
            else:
                done = p.rewrite(
                    treecache.workspace_key(workspace), [items[i] for i in candidates], rule
                )
                if done is not None:
                    for i, res in zip(candidates, done, strict=True):
                        out[i] = res
                    return out
    trees = treecache.for_workspace(workspace)
    for i in candidates:
        path, text = items[i]
        out[i] = rewrite_source(text, rule, trees=trees, path=path)
    return out


def forget(workspace: Path | str, paths: Sequence[str]) -> None:
    """``paths`` were written: drop their old trees here and in the workers."""
    trees = treecache.for_workspace(workspace)
    for path in paths:
        trees.forget(path)
    if _pool is not None:
        _pool.forget(treecache.workspace_key(workspace), paths)


def drop_workspace(workspace: Path | str) -> None:
    """Forget a workspace's trees, in-process and in the workers."""
    treecache.drop_workspace(workspace)
    if _pool is not None:
        _pool.drop(treecache.workspace_key(workspace))
