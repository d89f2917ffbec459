"""Baseline reuse (issue 28 §1): a session whose starting tree was already measured, in the same
project environment, with the same test command, reuses that verdict instead of running the
suite again.

The cache is keyed by content (DESIGN wave 3: "caches are keyed by content"):

- the **tree**: the git tree hash of the workspace's base commit, which includes the user's
  uncommitted and untracked files (the observer snapshots them into the base);
- the **environment**: the resolved project environment (interpreter, prefix, exposed paths,
  variables) plus the modification times of its site-packages directories, so installing or
  removing a package invalidates it;
- the **command**: the test argv, its timeout and the environment probe setting.

A reuse is an event (``baseline_reused``, naming the session that measured it), followed by the
same ``observation_recorded`` a measurement would give, so replay stays exact: replay serves the
recorded reuse (``RecordedBaselines``) and never looks at the cache.

The cache lives under ``<data dir>/cache/baselines`` and is disposable (invariant 1): delete it
and the next session measures again. It is shared between processes: entries are written with an
atomic rename, and a measurement holds a per-key file lock, so 200 sessions submitted at once on
one commit run the suite once and the others wait for its verdict (every wait has a deadline;
after it, a session measures by itself). Only runnable baselines are stored: a baseline that
stops the session (an environment that cannot import the package, a suite that cannot run) is
measured again next time, so fixing the environment is seen at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import glob
import hashlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from oopav.events import catalog as ev
from oopav.events.catalog import ExecRecord, Finding, TestRun
from oopav.logging import get_logger

log = get_logger("oopav.baseline_cache")

# Bump when what a baseline measures changes, so old entries are never reused.
CACHE_VERSION = 1
POLL_S = 0.05


class CachedBaseline(msgspec.Struct, kw_only=True, frozen=True):
    """A measured baseline: what the observer put in its ``observation_recorded``."""

    version: int = CACHE_VERSION
    key: str
    tree: str
    environment: str
    command: list[str] = msgspec.field(default_factory=list)
    session_id: str
    event_id: str = ""
    files_total: int = 0
    parse_errors: list[Finding] = msgspec.field(default_factory=list)
    stubs: list[Finding] = msgspec.field(default_factory=list)
    languages: dict[str, int] = msgspec.field(default_factory=dict)
    tests: TestRun | None = None
    execs: list[ExecRecord] = msgspec.field(default_factory=list)

    @property
    def measured_ms(self) -> float:
        return sum(r.duration_ms for r in self.execs)


@dataclass(frozen=True)
class BaselineKey:
    key: str
    tree: str
    environment: str
    command: list[str]


@dataclass
class Claim:
    """The answer to "has this baseline been measured?": ``hit`` when it has (reuse it), else
    ``key`` (None: not cacheable) and the caller measures, then ``store``s the verdict."""

    key: BaselineKey | None
    hit: CachedBaseline | None = None
    stored: bool = False
    _cache: Any = field(default=None, repr=False)

    def store(self, session_id: str, event: ev.ObservationRecorded) -> None:
        if self._cache is None or self.key is None:
            return
        self._cache.put(self.key, session_id, event)
        self.stored = True


def _site_packages_stamp(prefixes: list[str]) -> list[tuple[str, int]]:
    """(directory, mtime_ns) of each site-packages under the env's prefixes: a directory's
    mtime changes when an entry is added or removed (pip install/uninstall, uv sync)."""
    out: list[tuple[str, int]] = []
    for prefix in prefixes:
        for d in sorted(glob.glob(os.path.join(prefix, "lib", "python*", "site-packages"))):
            with contextlib.suppress(OSError):
                out.append((d, os.stat(d).st_mtime_ns))
    return out


def environment_hash(project_env: Any) -> str:
    data = msgspec.json.encode(project_env)
    prefixes = [
        str(getattr(project_env, "prefix", "")),
        *(getattr(project_env, "exposed", ()) or ()),
    ]
    stamp = _site_packages_stamp(sorted(set(p for p in prefixes if p)))
    h = hashlib.sha256(data)
    h.update(json.dumps(stamp).encode())
    return h.hexdigest()[:32]


def tree_hash(root: Path) -> str:
    """The content hash of the workspace's starting tree: its HEAD commit's tree (the base,
    which holds the user's uncommitted files as well)."""
    from oopav.sandbox.workspace import git, head_tree

    return head_tree(root) or git(root, "rev-parse", "HEAD^{tree}").strip()


class BaselineCache:
    """The live cache (see the module docstring)."""

    def __init__(self, directory: Path, sandbox: Any) -> None:
        self.directory = Path(directory)
        self.sandbox = sandbox
        self._locks: dict[str, asyncio.Lock] = {}

    def key_for(self, root: Path, task: Any, argv: list[str], timeout_s: float) -> BaselineKey:
        from oopav.sandbox.environment import spec_for_task

        project_env = self.sandbox.project_env(spec_for_task(task))
        env = environment_hash(project_env)
        tree = tree_hash(root)
        probe = (getattr(task, "environment", None) or {}).get("probe")
        raw = json.dumps([CACHE_VERSION, tree, env, list(argv), timeout_s, probe], default=str)
        return BaselineKey(hashlib.sha256(raw.encode()).hexdigest()[:40], tree, env, list(argv))

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: BaselineKey) -> CachedBaseline | None:
        try:
            data = self._path(key.key).read_bytes()
            hit = msgspec.json.decode(data, type=CachedBaseline)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None  # absent, torn or from another version: measure again
        if hit.version != CACHE_VERSION or hit.key != key.key:
            return None
        return hit

    def put(self, key: BaselineKey, session_id: str, event: ev.ObservationRecorded) -> None:
        from oopav.files import atomic_write

        entry = CachedBaseline(
            key=key.key,
            tree=key.tree,
            environment=key.environment,
            command=key.command,
            session_id=session_id,
            event_id=event.id,
            files_total=event.files_total,
            parse_errors=list(event.parse_errors),
            stubs=list(event.stubs),
            languages=dict(event.languages),
            tests=event.tests,
            execs=list(event.execs),
        )
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(self._path(key.key), msgspec.json.encode(entry))
        except OSError as exc:  # a cache that cannot be written is only slower
            log.warning("baseline_cache_write_failed", error=str(exc), key=key.key)

    @contextlib.asynccontextmanager
    async def claim(
        self,
        session_id: str,
        root: Path,
        task: Any,
        argv: list[str],
        *,
        timeout_s: float,
        fresh: bool = False,
        deadline_s: float = 600.0,
    ) -> AsyncIterator[Claim]:
        try:
            key = await asyncio.to_thread(self.key_for, root, task, argv, timeout_s)
        except Exception as exc:  # no environment, no git: the baseline is measured as before
            log.info("baseline_cache_unkeyed", session_id=session_id, error=str(exc)[:300])
            yield Claim(None)
            return
        if fresh:
            # A forced measurement waits for nobody; its verdict replaces the entry.
            yield Claim(key, _cache=self)
            return
        hit = await asyncio.to_thread(self.get, key)
        if hit is not None and hit.session_id != session_id:
            yield Claim(key, hit)
            return
        lock = self._locks.setdefault(key.key, asyncio.Lock())
        fh = None
        try:
            async with asyncio.timeout(deadline_s):
                await lock.acquire()
        except TimeoutError:
            yield Claim(key, _cache=self)  # measure unlocked rather than wait forever
            return
        try:
            with contextlib.suppress(TimeoutError, OSError):
                fh = await self._flock(key.key, deadline_s)
            hit = await asyncio.to_thread(self.get, key)
            if hit is not None and hit.session_id != session_id:
                yield Claim(key, hit)
                return
            yield Claim(key, _cache=self)
        finally:
            if fh is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            lock.release()

    def _open_lock(self, key: str) -> Any:
        self.directory.mkdir(parents=True, exist_ok=True)
        return open(self.directory / f".{key}.lock", "a+b")  # held across awaits

    async def _flock(self, key: str, deadline_s: float) -> Any:
        """The cross-process lock of one key, polled (a blocking flock would hold one of the
        few worker threads for as long as another process measures)."""
        fh = await asyncio.to_thread(self._open_lock, key)
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fh
            except BlockingIOError:
                if loop.time() >= end:
                    fh.close()
                    raise TimeoutError from None
                await asyncio.sleep(POLL_S)


# -- test verdicts after a change ------------------------------------------------------------


def worktree_hash(root: Path) -> str:
    """The content hash (a git tree) of the workspace's files as they are now: HEAD's tree when
    the workspace provably is at HEAD (``sandbox.clean``), else ``git add -A`` into a
    throw-away index and ``write-tree`` (the workspace's own index is not touched)."""
    import subprocess
    import tempfile

    from oopav.sandbox import clean
    from oopav.sandbox.workspace import head_tree

    if clean.clean_at(root) is not None:
        tree = head_tree(root)
        if tree:
            return tree
    with tempfile.TemporaryDirectory(prefix="oopav-tree-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for args in (["read-tree", "HEAD"], ["add", "-A"], ["write-tree"]):
            proc = subprocess.run(
                ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
            )
        return proc.stdout.strip()


class CachedRun(msgspec.Struct, kw_only=True, frozen=True):
    version: int = CACHE_VERSION
    key: str
    session_id: str
    record: ExecRecord


# Runs whose verdict depends only on the tree, the environment and the argv.
REUSABLE = ("action_tests", "gate_tests", "evidence_tests")


async def _run_key(
    cache: BaselineCache, env: Any, root: Path, argv: list[str], report: bool
) -> str:
    project_env = await asyncio.to_thread(cache.sandbox.project_env, env)
    tree = await asyncio.to_thread(worktree_hash, root)
    raw = json.dumps(
        # No timeout: a run that timed out is never stored, and one that completed did so
        # within any longer limit too.
        [CACHE_VERSION, "run", tree, environment_hash(project_env), argv, report],
        default=str,
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:40]


def _reused(hit: CachedRun, key: str, purpose: str) -> ExecRecord:
    return msgspec.structs.replace(
        hit.record,
        key=key,
        purpose=purpose,
        reused_from=hit.record.reused_from or f"{hit.session_id}/{hit.record.key}",
    )


async def run_tests(
    ports: Any,
    state: Any,
    argv: list[str],
    *,
    root: Path,
    key: str,
    purpose: str,
    timeout_s: float,
    report: bool = False,
    peek: bool = False,
) -> ExecRecord | None:
    """``ports.sandbox.run`` for a test command, reusing the verdict of an identical run — the
    same workspace content, environment and argv, in this session (the tests after the last
    action, then the tests gate on the same tree) or another one (200 sessions making the same
    change) — unless the policy says ``fresh_baseline``. The reused record keeps this run's
    ``key`` and names where it came from (``reused_from``), so the event that carries it is the
    record of the reuse and replay serves it like any other execution. ``peek``: only a
    reused verdict, None instead of running (live only; replay serves what was recorded)."""
    from oopav.decide.policy import decision_policy
    from oopav.sandbox.environment import spec_for_task

    task = state.task
    env = spec_for_task(task)  # what handlers.support.baseline.environment_spec gives
    cache = getattr(ports, "baselines", None)

    async def run() -> ExecRecord:
        if purpose.startswith("gate_"):
            # A gate observes and never edits: the tree is proven unchanged, else restored.
            from oopav.handlers.support.guard import run_check

            return await run_check(
                ports,
                root,
                argv,
                session_id=state.session_id,
                key=key,
                purpose=purpose,
                timeout_s=timeout_s,
                environment=env,
                report=report,
            )
        return await ports.sandbox.run(
            argv,
            workspace=root,
            session_id=state.session_id,
            key=key,
            purpose=purpose,
            timeout_s=timeout_s,
            environment=env,
            report=report,
        )

    if not isinstance(cache, BaselineCache) or decision_policy(state).fresh_baseline:
        if peek:
            recorded = getattr(ports.sandbox, "records", None)
            return recorded.get(key) if isinstance(recorded, dict) else None
        return await run()
    try:
        ckey = await _run_key(cache, env, root, list(argv), report)
    except Exception:
        return None if peek else await run()
    path = cache.directory.parent / "runs" / f"{ckey}.json"
    if peek:
        hit = await asyncio.to_thread(_read_run, path, ckey)
        return _reused(hit, key, purpose) if hit is not None else None
    lock = cache._locks.setdefault("run:" + ckey, asyncio.Lock())
    async with lock:  # the same change in many sessions of this process: one run
        hit = await asyncio.to_thread(_read_run, path, ckey)
        if hit is not None:
            return _reused(hit, key, purpose)
        rec = await run()
        if not rec.timed_out and rec.exit_code not in (None, 124, 125, 126, 127, 137):
            entry = CachedRun(key=ckey, session_id=state.session_id, record=rec)
            with contextlib.suppress(OSError):
                from oopav.files import atomic_write

                path.parent.mkdir(parents=True, exist_ok=True)
                await asyncio.to_thread(atomic_write, path, msgspec.json.encode(entry))
        return rec


def _read_run(path: Path, key: str) -> CachedRun | None:
    try:
        hit = msgspec.json.decode(path.read_bytes(), type=CachedRun)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return hit if hit.version == CACHE_VERSION and hit.key == key else None


class RecordedBaselines:
    """Replay: serves the recorded reuse of a session (its ``baseline_reused`` and the
    ``observation_recorded`` that carried the verdict); a session that measured its baseline
    measures it again, from the recorded executions."""

    def __init__(self, hits: dict[str, CachedBaseline]) -> None:
        self.hits = hits

    @classmethod
    def from_events(cls, events: list[ev.Event]) -> RecordedBaselines:
        hits: dict[str, CachedBaseline] = {}
        reused: dict[str, ev.BaselineReused] = {}
        for e in events:
            if isinstance(e, ev.BaselineReused):
                reused[e.aggregate_id] = e
            elif (
                isinstance(e, ev.ObservationRecorded)
                and e.phase == "baseline"
                and e.aggregate_id in reused
                and e.aggregate_id not in hits
            ):
                r = reused[e.aggregate_id]
                hits[e.aggregate_id] = CachedBaseline(
                    key=r.key,
                    tree=r.tree,
                    environment=r.environment,
                    command=list(r.command),
                    session_id=r.from_session,
                    event_id=r.from_event,
                    files_total=e.files_total,
                    parse_errors=list(e.parse_errors),
                    stubs=list(e.stubs),
                    languages=dict(e.languages),
                    tests=e.tests,
                    execs=list(e.execs),
                )
        return cls(hits)

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *args: Any, **kwargs: Any) -> AsyncIterator[Claim]:
        hit = self.hits.get(session_id)
        if hit is None:
            yield Claim(None)
            return
        yield Claim(BaselineKey(hit.key, hit.tree, hit.environment, list(hit.command)), hit)
