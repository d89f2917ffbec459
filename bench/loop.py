"""Loop benchmarks: the runtime's overhead per hop and whole scripted sessions per second.

    python bench/loop.py [--sessions 40] [--concurrency 8] [--runs 5] [--quick] [--skip-processes]

Starts its own embedded nats-server in a temporary directory. Every session is the same small
scripted task (plan → write_file → finish → gates → success) on a two-file repository; the
model is scripted and the sandbox a no-op port (the task has no test command and lint is off,
so nothing would reach the sandbox anyway — handler processes spawned with `oopav handler`
run the same way).

- **hop**: from an event being stored to the next handler's first output of that decision
  being stored, both times the server's own store timestamps (read back from the stream
  after the run); minus the handler's own work (its ``handle()``, timed in process), the
  runtime's overhead per hop: delivery, loading the session, appending the outputs (targets:
  median ≤ 2 ms, p99 ≤ 5 ms). Sessions run one at a time for this; their wall time per
  session is the per-session figure (target ≤ 50 ms).
- **sessions/s**: ``--sessions`` sessions submitted ``--concurrency`` at a time, (a) every
  handler in this process, (b) one `oopav handler <name>` process per handler, (c) two
  processes per handler; ratios against (a).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, arepeat, conclude, parser, report, runs_of
from oopav.events.catalog import ExecRecord
from oopav.models.prompt import render_answer

HANDLERS = ("intake", "observer", "orient", "planner", "actor", "verifier")


class NoopSandbox:
    """A Sandbox port that returns success at once: the hop figures exclude process start-up."""

    async def run(
        self,
        argv: list[str],
        *,
        workspace: Path,
        session_id: str,
        key: str,
        purpose: str,
        timeout_s: float,
        network: bool = False,
        environment: dict[str, Any] | None = None,
        report: bool = False,
        stdin: bytes | None = None,
    ) -> ExecRecord:
        return ExecRecord(key=key, purpose=purpose, argv=list(argv), exit_code=0, duration_ms=0.0)


def script() -> dict[str, list[str]]:
    plan = render_answer(
        "plan",
        {
            "steps": [
                {"id": 1, "description": "write the greeting module", "files": ["greet.py"]},
                {"id": 2, "description": "check it", "files": []},
            ],
            "files": ["greet.py"],
            "test_decision": "optional",
            "rationale": "one new file",
        },
        think="one file",
        state_update={"goals": ["greet exists"]},
    )
    write = render_answer(
        "action",
        {
            "type": "write_file",
            "path": "greet.py",
            "content": "def greet() -> str:\n    return 'hi'\n",
        },
        think="write it",
        state_update={"history": "wrote greet.py"},
    )
    done = render_answer(
        "action",
        {"type": "finish", "summary": "added greet"},
        think="done",
        state_update={"history": "finished"},
    )
    return {"planner": [plan], "actor": [write, done]}


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    (repo / "app.py").write_text("def main() -> int:\n    return 0\n")
    (repo / "README.md").write_text("A tiny repository for the loop benchmark.\n")
    return repo


def submission(repo: Path, script_file: Path) -> dict[str, Any]:
    return {
        "instruction": "Add a module greet.py with a function greet() that returns 'hi'.",
        "repo": str(repo),
        "model": f"scripted:{script_file}",
        "policy": {"lint": False},
    }


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


class Timed:
    """Wraps a loop handler and records how long each ``handle`` call took, so that the hop
    figures can be split into the handler's own work and the runtime's overhead."""

    spent: ClassVar[dict[tuple[str, str], float]] = {}

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.subscribes = inner.subscribes

    async def handle(self, event: Any, state: Any, ports: Any, delivery: Any) -> Any:
        t = time.perf_counter()
        try:
            return await self.inner.handle(event, state, ports, delivery)
        finally:
            key = (event.id, self.name)
            Timed.spent[key] = Timed.spent.get(key, 0.0) + (time.perf_counter() - t) * 1000


class Hops:
    """A hop, from the stream's own clock: the time the server stored a handler's first output
    of a decision minus the time it stored the event that caused it. Every event of the given
    sessions is read back with the server's store timestamp (``STREAM.MSG.GET``)."""

    def __init__(self) -> None:
        self.stored: dict[str, float] = {}
        self.events: list[Any] = []

    async def collect(self, bus: Any, session_ids: list[str]) -> None:
        from oopav.bus.streams import EVENTS_STREAM

        for sid in session_ids:
            for seq, e in await bus.events.read("session", sid):
                msg = await bus.events.js.get_msg(EVENTS_STREAM, seq=seq)
                self.stored[e.id] = msg.time.timestamp()
                self.events.append(e)

    def hops(self) -> list[tuple[str, float, float]]:
        """(``cause_type -> output_type [handler]``, hop ms, the handler's own ms) for the
        first output of every decision."""
        by_id = {e.id: e for e in self.events}
        seen: set[tuple[str, str]] = set()
        out = []
        for e in self.events:
            cause = by_id.get(e.causation_id)
            handler = e.actor.split("/")[0]
            key = (e.causation_id, handler)
            if cause is None or key in seen or e.causation_id == e.id:
                continue
            seen.add(key)
            ms = (self.stored[e.id] - self.stored[cause.id]) * 1000
            out.append((f"{cause.type} -> {e.type} [{handler}]", ms, Timed.spent.get(key, 0.0)))
        return out


async def wait_done(bus: Any, sids: list[str], timeout: float = 300.0) -> list[Any]:
    from oopav.services import wait_session

    states = await asyncio.gather(*(wait_session(bus, s, timeout) for s in sids))
    bad = [s for s in states if s.outcome != "success"]
    if bad:
        events = await bus.events.read("session", bad[0].session_id)
        raise SystemExit(
            f"{len(bad)} session(s) did not succeed: {bad[0].phase} {bad[0].outcome} "
            f"{bad[0].summary!r}; events: {[e.type for _, e in events]}"
        )
    return states


async def wait_ready(bus: Any, timeout: float = 120.0) -> None:
    """Until a spawned intake answers: a submission sent before its responder is up is stored,
    but its reply goes nowhere. An invalid submission is answered with a rejection."""
    from oopav.services import submit_task

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = await submit_task(bus, {"instruction": "", "repo": "/nonexistent"}, timeout=2)
        if reply.get("session_id"):
            return
        await asyncio.sleep(0.5)
    raise SystemExit("the handler processes did not start")


async def run_batch(
    bus: Any,
    body: dict[str, Any],
    n: int,
    concurrency: int,
    sessions: list[str] | None = None,
) -> float:
    """Submit ``n`` sessions, at most ``concurrency`` in flight; seconds until all completed
    (their ids appended to ``sessions``). Each submission is made unique (the intake matches
    replies by a digest of the payload)."""
    from oopav.services import submit_task

    sem = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with sem:
            unique = {**body, "instruction": f"{body['instruction']} (run {uuid.uuid4().hex[:12]})"}
            reply = await submit_task(bus, unique)
            if "session_id" not in reply or "error" in reply:
                raise SystemExit(f"submission refused: {reply}")
            await wait_done(bus, [reply["session_id"]])
            if sessions is not None:
                sessions.append(reply["session_id"])

    t = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - t


def _report_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        import traceback

        exc = task.exception()
        print("handlers crashed:", "".join(traceback.format_exception(exc)), file=sys.stderr)


@contextlib.asynccontextmanager
async def in_process(settings: Any, timed: bool = False):  # type: ignore[no-untyped-def]
    """Every handler in this process, on a connection of its own (closed afterwards, so no
    responder outlives the stage). Yields the Bus."""
    import oopav.handlers.registry as registry
    from oopav.app import open_bus
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers

    build = registry.build_loop_handler
    if timed:
        registry.build_loop_handler = lambda name, memory=None: Timed(build(name, memory))  # type: ignore[assignment]
    try:
        async with open_bus(settings, name="bench-loop") as bus:
            ports = Ports(settings=settings, sandbox=NoopSandbox())
            stop = asyncio.Event()
            task = asyncio.create_task(
                run_handlers(bus, stop, names=HANDLERS, ports=ports, projection=False)
            )
            await asyncio.sleep(0.2)
            task.add_done_callback(_report_crash)
            try:
                yield bus
            finally:
                stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 30)
    finally:
        registry.build_loop_handler = build  # type: ignore[assignment]


@contextlib.asynccontextmanager
async def processes(url: str, data_dir: Path, copies: int):  # type: ignore[no-untyped-def]
    env = {**os.environ, "OOPAV_DATA_DIR": str(data_dir), "OOPAV_LOG_LEVEL": "WARNING"}
    procs = [
        subprocess.Popen(  # noqa: ASYNC220 (started once, before timing)
            [sys.executable, "-m", "oopav.cli", "--nats-url", url, "handler", name],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name in HANDLERS
        for _ in range(copies)
    ]
    try:
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


async def reset_streams(settings: Any) -> None:
    from oopav.app import open_bus
    from oopav.bus.streams import ensure_streams, stream_definitions

    async with open_bus(settings, setup=False, name="bench-reset") as bus:
        js = bus.events.js
        for name in stream_definitions():
            with contextlib.suppress(Exception):
                await js.delete_stream(name)
        await ensure_streams(js)


FIGURES = [
    Figure("hop_med", "hop (event stored -> next output stored), median", "ms"),
    Figure("hop_p99", "hop, p99", "ms"),
    Figure("overhead_med", "runtime overhead per hop, median", "ms", 2.0, higher=False),
    Figure("overhead_p99", "runtime overhead per hop, p99", "ms", 5.0, higher=False),
    Figure("session_ms", "wall time per session (sequential)", "ms", 50.0, higher=False),
    Figure("prepare_ms", "observer: task_submitted -> workspace_prepared", "ms"),
    Figure("actor_ms", "actor: plan_proposed -> model_called", "ms"),
    Figure("tput_one", "throughput, all handlers in one process", "sess/s", fmt=".1f"),
    Figure("tput_p1_x", "throughput, 1 process per handler / one process", "x"),
    Figure("tput_p2_x", "throughput, 2 processes per handler / one process", "x"),
]


async def measure(
    run: int, args: argparse.Namespace, settings: Any, body: dict[str, Any], url: str
) -> dict[str, float]:
    from oopav.app import open_bus

    out: dict[str, float] = {}
    # -- hops: one session at a time, every handler in this process ----------------------------
    await reset_streams(settings)
    Timed.spent.clear()
    hops = Hops()
    prof = cProfile.Profile() if args.profile else None
    async with in_process(settings, timed=True) as bus:
        await run_batch(bus, body, 2, 1)  # warm-up: imports, consumers, caches
        sids: list[str] = []
        if prof:
            prof.enable()
        t = time.perf_counter()
        await run_batch(bus, body, args.hop_sessions, 1, sids)
        seq_s = time.perf_counter() - t
        if prof:
            prof.disable()
        await hops.collect(bus, sids)
    all_hops = hops.hops()
    values = [ms for _, ms, _ in all_hops]
    overhead = [ms - own for _, ms, own in all_hops]
    out["hop_med"] = statistics.median(values)
    out["hop_p99"] = pct(values, 0.99)
    out["overhead_med"] = statistics.median(overhead)
    out["overhead_p99"] = pct(overhead, 0.99)
    out["session_ms"] = seq_s / args.hop_sessions * 1000
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for kind, ms, own in all_hops:
        by_kind.setdefault(kind, []).append((ms, own))
    for kind, key in (
        ("task_submitted -> workspace_prepared [observer]", "prepare_ms"),
        ("plan_proposed -> model_called [actor]", "actor_ms"),
    ):
        if kind in by_kind:
            out[key] = statistics.median(r[0] for r in by_kind[kind])
    if run == 0 or args.verbose:
        per_session = len(hops.events) / args.hop_sessions
        print(f"  run {run + 1}: {len(values)} hops, {per_session:.0f} events per session")
        print(f"  {'hop':60} {'n':>3} {'hop med':>9} {'handler':>9} {'overhead':>9}")
        for kind, rows in sorted(
            by_kind.items(), key=lambda kv: -statistics.median(r[0] for r in kv[1])
        ):
            hop_med = statistics.median(r[0] for r in rows)
            own_med = statistics.median(r[1] for r in rows)
            over_med = statistics.median(r[0] - r[1] for r in rows)
            print(f"  {kind:60} {len(rows):3} {hop_med:9.2f} {own_med:9.2f} {over_med:9.2f}")
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(
            os.environ.get("BENCH_SORT", "cumulative")
        ).print_stats(45)
        print(s.getvalue())

    # -- throughput -----------------------------------------------------------------------------
    if args.sessions <= 0:
        return out
    async with in_process(settings) as bus:
        await run_batch(bus, body, 2, 2)
        secs = await run_batch(bus, body, args.sessions, args.concurrency)
    base = out["tput_one"] = args.sessions / secs
    if args.skip_processes:
        return out
    for copies in (1, 2):
        async with (
            processes(url, settings.data_dir, copies),
            open_bus(settings, name="bench") as bus,
        ):
            await wait_ready(bus)
            await run_batch(bus, body, 2, 2)
            secs = await run_batch(bus, body, args.sessions, args.concurrency)
        out[f"tput_p{copies}_x"] = args.sessions / secs / base
    return out


async def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sessions", type=int, default=40, help="sessions per throughput run")
    ap.add_argument("--concurrency", type=int, default=8, help="sessions in flight at once")
    ap.add_argument("--hop-sessions", type=int, default=20, help="sequential sessions for hops")
    ap.add_argument("--profile", action="store_true", help="cProfile the sequential sessions")
    ap.add_argument(
        "--skip-processes",
        action="store_true",
        help="no throughput stages with one process per handler (they spawn 6 and 12 processes)",
    )
    ap.add_argument("--verbose", action="store_true", help="the per-hop table of every run")
    ap.add_argument(
        "--sync",
        default=os.environ.get("OOPAV_NATS_SYNC") or "always",
        help="the embedded server's JetStream sync_interval: always (oopav's default, as "
        "shipped) or default (nats-server's: fsync every 2 min); OOPAV_NATS_SYNC sets it too",
    )
    args = ap.parse_args()
    if args.quick:
        args.sessions, args.concurrency, args.hop_sessions = 4, 2, 3
        args.skip_processes = True
    runs = runs_of(args)

    import yaml

    from oopav.bus.server import EmbeddedServer
    from oopav.config import Settings
    from oopav.logging import configure

    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    configure(level="WARNING")
    root = Path(tempfile.mkdtemp(prefix="oopav-bench-loop-"))
    server = EmbeddedServer(root / "nats", write_info=False, sync=args.sync)
    url = server.start()
    data_dir = root / "data"
    settings = Settings(data_dir=data_dir, nats_url=url)
    repo = make_repo(root)
    script_file = root / "script.yaml"
    script_file.write_text(yaml.safe_dump(script()))
    body = submission(repo, script_file)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}, "
        f"JetStream sync_interval {args.sync}"
    )
    try:
        results = await arepeat(
            lambda i: measure(i, args, settings, body, url), runs, label="loop run"
        )
    finally:
        server.stop()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    conclude(report("loop", FIGURES, results))


if __name__ == "__main__":
    asyncio.run(main())
