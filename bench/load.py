"""Load: many sessions submitted at once, one of them slow.

    python bench/load.py [--sessions 200] [--runs 1] [--concurrency 32] [--slow-seconds 30]

Starts its own embedded nats-server in a temporary directory and runs every handler in this
one process, with the real bwrap sandbox. Every session is the same small scripted task
(plan → write_file → finish → gates → success) on a two-file repository with a trivial test
command (``true``), run by the observer's baseline and by the verifier's tests gate. In the
"with slow" stage one extra session has ``sleep <slow-seconds>`` as its test command.

Reported per stage: sessions/s (all N sessions submitted at once, until the last completes),
p50/p95 submit→done, peak RSS growth of this process (handlers) and the server's peak RSS.
The delay the slow session adds to the others is p95 (and max) of the N fast sessions with
the slow one present minus the same without it.

Targets (2 cores): ≥ 10 sessions/s in one process; the slow session delays the others by
≤ 1 s. With ``--runs K`` each stage runs K times (alternating) and the median is reported.

``--memory 1000`` measures memory instead (issue 14): each run is a fresh `oopav up`-style
process (every handler, the session projection, the watchdog, workspace clean-up) that
completes ``--memory-first`` (100) sessions, reads its RSS (after a garbage collection), then
completes the rest up to 1000 and reads it again; target: RSS after 1000 ≤ 1.5x RSS after
100 (no unbounded caches). Median of ``--runs`` (5) through the shared harness.

``--real-tests`` (issue 28 §6): ``--sessions`` (200) sessions of the example task
(examples/rename_fetch: synth: renames ``fetch``, its real pytest suite in the project's
environment) submitted at once to one `oopav up`-style process (every handler); the first
session measures the baseline, the others wait for its verdict and reuse it
(``baseline_reused``). Same run, same process: ``--baseline-sessions`` (40) sessions with
``policy.fresh_baseline`` (every session measures its own baseline, as before issue 28).
Reported: sessions/s, p50/p95 submit→done, how many reused; target ≥ 5 sessions/s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop import make_repo, pct, reset_streams, script

HANDLERS = ("intake", "observer", "orient", "planner", "actor", "verifier")


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def proc_hwm_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def stage(
    settings: Any, body: dict[str, Any], n: int, slow: float | None, concurrency: int
) -> dict[str, float]:
    """N fast sessions (plus one slow one when ``slow``) submitted at once."""
    from oopav.app import open_bus
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers, submit_task

    await reset_streams(settings)
    async with open_bus(settings, name="bench-load") as bus:
        ports = Ports(settings=settings)
        stop = asyncio.Event()
        ready = asyncio.Event()
        handlers = asyncio.create_task(
            run_handlers(
                bus,
                stop,
                names=HANDLERS,
                ports=ports,
                projection=False,
                ready=ready,
                concurrency=concurrency,
                signals=False,
            )
        )
        await ready.wait()
        await asyncio.sleep(0.3)
        done_at: dict[str, float] = {}
        outcomes: dict[str, str] = {}
        all_done = asyncio.Event()
        expected = n + (1 if slow else 0)

        async def on_done(msg: Any) -> None:
            from oopav.events.codec import decode

            e = decode(msg.data)
            done_at.setdefault(e.aggregate_id, time.perf_counter())
            outcomes[e.aggregate_id] = e.outcome
            if len(done_at) >= expected:
                all_done.set()

        sub = await bus.nc.subscribe("oopav.ev.session.*.session_completed", cb=on_done)
        rss0 = rss_mib()
        submitted: dict[str, float] = {}
        slow_sid = None

        async def one(extra: dict[str, Any]) -> str:
            unique = {**body, **extra}
            unique["instruction"] = f"{body['instruction']} (run {uuid.uuid4().hex[:12]})"
            t = time.perf_counter()
            reply = await submit_task(bus, unique, timeout=60)
            if "session_id" not in reply:
                raise SystemExit(f"submission refused: {reply}")
            submitted[reply["session_id"]] = t
            return str(reply["session_id"])

        t0 = time.perf_counter()
        jobs = [one({}) for _ in range(n)]
        if slow:
            jobs.insert(n // 2, one({"test_command": ["sleep", str(int(slow))]}))
        sids = await asyncio.gather(*jobs)
        if slow:
            slow_sid = sids[n // 2]
        try:
            await asyncio.wait_for(all_done.wait(), 900)
        except TimeoutError:
            raise SystemExit(f"only {len(done_at)} of {expected} sessions completed") from None
        await sub.unsubscribe()
        fast = [s for s in sids if s != slow_sid]
        bad = [s for s in fast if outcomes.get(s) != "success"]
        if bad:
            events = await bus.events.read("session", bad[0])
            raise SystemExit(
                f"{len(bad)} session(s) did not succeed: {[e.type for _, e in events]}"
            )
        end = max(done_at[s] for s in fast)
        latencies = [done_at[s] - submitted[s] for s in fast]
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(handlers, 60)
        return {
            "sessions_per_s": n / (end - t0),
            "p50": pct(latencies, 0.5),
            "p95": pct(latencies, 0.95),
            "max": max(latencies),
            "rss_growth_mib": rss_mib() - rss0,
            "slow_s": (done_at[slow_sid] - submitted[slow_sid]) if slow_sid else 0.0,
        }


def current_rss_mib() -> float:
    """This process's resident set now (not its peak), after a full garbage collection."""
    import gc

    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return rss_mib()


async def memory_child(first: int, total: int, concurrency: int) -> dict[str, float]:
    """One fresh `oopav up`-style process: every handler, the session projection, the
    watchdog and workspace clean-up (``run_handlers`` as `oopav up` calls it). ``first``
    sessions, then RSS; the rest up to ``total``, then RSS again. At most ``concurrency``
    sessions in flight."""
    import yaml

    from oopav.app import open_bus
    from oopav.bus.server import EmbeddedServer
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.logging import configure
    from oopav.services import run_handlers, submit_task

    configure("WARNING")
    root = Path(tempfile.mkdtemp(prefix="oopav-bench-memory-"))
    server = EmbeddedServer(root / "nats", write_info=False)
    settings = Settings(data_dir=root / "data", nats_url=server.start())
    repo = make_repo(root)
    script_file = root / "script.yaml"
    script_file.write_text(yaml.safe_dump(script()))
    body = {
        "instruction": "Add a module greet.py with a function greet() that returns 'hi'.",
        "repo": str(repo),
        "model": f"scripted:{script_file}",
        "policy": {"lint": False},
    }
    out: dict[str, float] = {}
    try:
        async with open_bus(settings, name="bench-memory") as bus:
            stop, ready = asyncio.Event(), asyncio.Event()
            handlers = asyncio.create_task(
                run_handlers(
                    bus,
                    stop,
                    ports=Ports(settings=settings),
                    ready=ready,
                    cleanup=True,
                    signals=False,
                )
            )
            await ready.wait()
            done: dict[str, str] = {}
            changed = asyncio.Event()

            async def on_done(msg: Any) -> None:
                from oopav.events.codec import decode

                e = decode(msg.data)
                done.setdefault(e.aggregate_id, e.outcome)
                changed.set()

            sub = await bus.nc.subscribe("oopav.ev.session.*.session_completed", cb=on_done)
            gate = asyncio.Semaphore(concurrency)

            async def one() -> None:
                async with gate:
                    unique = {**body, "instruction": f"{body['instruction']} ({uuid.uuid4().hex})"}
                    reply = await submit_task(bus, unique, timeout=60)
                    sid = reply.get("session_id")
                    if not sid:
                        raise SystemExit(f"submission refused: {reply}")
                    deadline = time.monotonic() + 300
                    while sid not in done:
                        if time.monotonic() > deadline:
                            raise SystemExit(f"session {sid} did not complete")
                        changed.clear()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(changed.wait(), 1.0)

            t = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(first)))
            out["rss_first"] = current_rss_mib()
            await asyncio.gather(*(one() for _ in range(total - first)))
            out["rss_total"] = current_rss_mib()
            out["sessions_per_s"] = total / (time.perf_counter() - t)
            out["success"] = sum(1 for v in done.values() if v == "success")
            await sub.unsubscribe()
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 60)
    finally:
        server.stop()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    out["ratio"] = out["rss_total"] / out["rss_first"]
    return out


def memory_stage(args: argparse.Namespace) -> None:
    """RSS after ``--memory-first`` and after ``--memory`` sessions, each run in a fresh
    process; median of ``--runs`` through the harness."""
    import json
    import subprocess

    from _harness import Figure, conclude, repeat, report

    first, total = args.memory_first, args.memory

    def run(_: int) -> dict[str, float]:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--memory-child",
                str(first),
                str(total),
                "--concurrency",
                str(args.concurrency or 16),
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "OOPAV_LOG_LEVEL": "WARNING"},
        )
        if proc.returncode != 0:
            raise SystemExit(f"memory run failed: {proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    figures = [
        Figure("rss_first", f"RSS after {first} sessions", "MiB", fmt=",.1f"),
        Figure("rss_total", f"RSS after {total} sessions", "MiB", fmt=",.1f"),
        Figure("ratio", f"RSS after {total} / after {first}", "x", 1.5, higher=False),
        Figure("success", "sessions that succeeded", "", fmt=",.0f"),
        Figure("sessions_per_s", "sessions/s (one process)", "sess/s", fmt=".1f"),
    ]
    runs = repeat(run, args.runs, label="memory run")
    conclude(
        report(f"memory, one `oopav up`-style process per run ({total} sessions)", figures, runs)
    )


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rename_fetch"


def example_repo(root: Path) -> Path:
    import shutil
    import subprocess

    repo = root / "example"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@e.invalid", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def cpu_seconds() -> float:
    """User + system CPU of this process and its reaped descendants so far."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


async def real_tests_batch(bus: Any, body: dict[str, Any], n: int, fresh: bool) -> dict[str, float]:
    """``n`` sessions of ``body`` submitted at once; the last completion ends the batch."""
    from oopav.services import submit_task

    done_at: dict[str, float] = {}
    outcomes: dict[str, str] = {}
    all_done = asyncio.Event()
    submitted: dict[str, float] = {}

    async def on_done(msg: Any) -> None:
        from oopav.events.codec import decode

        e = decode(msg.data)
        if e.aggregate_id in done_at:
            return
        done_at[e.aggregate_id] = time.perf_counter()
        outcomes[e.aggregate_id] = e.outcome
        if len(done_at) >= n and all(s in done_at for s in submitted):
            all_done.set()

    sub = await bus.nc.subscribe("oopav.ev.session.*.session_completed", cb=on_done)
    policy = {**body.get("policy", {}), **({"fresh_baseline": True} if fresh else {})}

    async def one() -> str:
        unique = {**body, "policy": policy}
        unique["instruction"] = f"{body['instruction']} (run {uuid.uuid4().hex[:12]})"
        t = time.perf_counter()
        reply = await submit_task(bus, unique, timeout=120)
        if "session_id" not in reply:
            raise SystemExit(f"submission refused: {reply}")
        submitted[reply["session_id"]] = t
        return str(reply["session_id"])

    t0 = time.perf_counter()
    cpu0 = cpu_seconds()
    sids = await asyncio.gather(*(one() for _ in range(n)))
    try:
        await asyncio.wait_for(all_done.wait(), 1800)
    except TimeoutError:
        raise SystemExit(f"only {len(done_at)} of {n} sessions completed") from None
    await sub.unsubscribe()
    cpu = cpu_seconds() - cpu0
    bad = [s for s in sids if outcomes.get(s) != "success"]
    if bad:
        events = await bus.events.read("session", bad[0])
        end = events[-1][1]
        raise SystemExit(
            f"{len(bad)} session(s) did not succeed: {[e.type for _, e in events]} "
            f"{getattr(end, 'outcome', '')}: {getattr(end, 'summary', '')[:500]}"
        )
    reused = 0
    for s in sids:
        events = await bus.events.read("session", s)
        reused += any(e.type == "baseline_reused" for _, e in events)
    lat = [done_at[s] - submitted[s] for s in sids]
    return {
        "sessions_per_s": n / (max(done_at[s] for s in sids) - t0),
        "p50": pct(lat, 0.5),
        "p95": pct(lat, 0.95),
        "reused": reused,
        "n": n,
        # CPU (user + system) of this process and every command it ran (git, bwrap, pytest),
        # per session: what the load cannot change. Cores / this is the rate 2 idle cores
        # could sustain, which tells a slow run on a busy machine from oopav getting slower.
        "cpu_per_session": cpu / n,
    }


async def real_tests(args: argparse.Namespace) -> None:
    """See the module docstring (``--real-tests``)."""
    import json

    from oopav.app import open_bus
    from oopav.bus.server import EmbeddedServer
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.logging import configure
    from oopav.services import run_handlers

    configure("WARNING")
    root = Path(tempfile.mkdtemp(prefix="oopav-bench-realtests-"))
    server = EmbeddedServer(root / "nats", write_info=False)
    settings = Settings(data_dir=root / "data", nats_url=server.start())
    repo = example_repo(root)
    body = json.loads((EXAMPLE / "task.json").read_text())
    body["repo"] = str(repo)
    # The example's tests in a project environment with pytest: this interpreter's (a uv
    # build would need the package index; the sessions run the same either way).
    body["environment"] = {"python": sys.executable}
    body["policy"] = {"lint": False}
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f}; example task with `{' '.join(body['test_command'])}`; "
        f"{args.sessions} sessions with baseline reuse, {args.baseline_sessions} with "
        "fresh baselines (same process)"
    )
    out: dict[str, dict[str, float]] = {}
    try:
        async with open_bus(settings, name="bench-realtests") as bus:
            stop, ready = asyncio.Event(), asyncio.Event()
            handlers = asyncio.create_task(
                run_handlers(
                    bus,
                    stop,
                    ports=Ports(settings=settings),
                    ready=ready,
                    cleanup=True,
                    signals=False,
                    concurrency=args.concurrency or None,
                )
            )
            await ready.wait()
            await asyncio.sleep(0.3)
            # The same-run baseline first: its sessions also leave the cache warm... which
            # is why the reuse batch starts from an empty cache (deleted in between).
            out["fresh"] = await real_tests_batch(bus, body, args.baseline_sessions, True)
            import shutil

            shutil.rmtree(settings.data_dir / "cache", ignore_errors=True)
            out["reuse"] = await real_tests_batch(bus, body, args.sessions, False)
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 60)
    finally:
        server.stop()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    for name, r in out.items():
        print(
            f"{name:6} {int(r['n']):4d} sessions  {r['sessions_per_s']:5.2f} sessions/s  "
            f"p50 {r['p50']:6.1f} s  p95 {r['p95']:6.1f} s  baseline reused {int(r['reused'])}"
        )
    for name, r in out.items():
        print(
            f"{name:6} CPU {1000 * r['cpu_per_session']:.0f} ms/session (this process and the "
            f"commands it reaped; {os.cpu_count()} idle cores: ~"
            f"{(os.cpu_count() or 1) / r['cpu_per_session']:.1f} sessions/s)"
        )
    rate = out["reuse"]["sessions_per_s"]
    ratio = rate / out["fresh"]["sessions_per_s"]
    print(f"reuse / fresh sessions/s: {ratio:.2f}x; load at the end {os.getloadavg()[0]:.1f}")
    print(
        f"target sessions/s >= 5 with baseline reuse: {rate:.2f} -> "
        f"{'PASS' if rate >= 5 else 'MISS'}; p95 submit->done {out['reuse']['p95']:.1f} s"
    )


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument(
        "--runs",
        type=int,
        default=None,
        help="runs per stage (median reported; default 1, 5 with --memory)",
    )
    ap.add_argument("--concurrency", type=int, default=None, help="per handler (default 32)")
    ap.add_argument("--slow-seconds", type=float, default=30.0)
    ap.add_argument(
        "--memory",
        type=int,
        default=0,
        help="instead of the load stages: RSS after --memory-first and after this many "
        "sessions in one `oopav up`-style process (issue 14: 1000, ratio <= 1.5x)",
    )
    ap.add_argument("--memory-first", type=int, default=100)
    ap.add_argument(
        "--real-tests",
        action="store_true",
        help="issue 28: sessions of the example with its real test command, baseline reuse",
    )
    ap.add_argument("--baseline-sessions", type=int, default=40)
    ap.add_argument("--memory-child", nargs=2, type=int, help=argparse.SUPPRESS)
    ap.add_argument(
        "--quick", action="store_true", help="with --memory: 10 then 20 sessions, one run"
    )
    args = ap.parse_args()
    if args.quick and args.memory:
        args.memory, args.memory_first = 20, 10
        if "--runs" not in sys.argv:
            args.runs = 1
    if args.real_tests:
        if args.quick:
            args.sessions, args.baseline_sessions = 4, 2
        await real_tests(args)
        return
    if args.memory_child:
        import json

        first, total = args.memory_child
        print(json.dumps(await memory_child(first, total, args.concurrency or 16)))
        return
    if args.memory:
        args.runs = args.runs or 5
        memory_stage(args)
        return
    args.runs = args.runs or 1

    import yaml

    from oopav.bus.consumer import DEFAULT_CONCURRENCY
    from oopav.bus.server import EmbeddedServer
    from oopav.config import Settings

    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    from oopav.logging import configure

    configure("WARNING")
    concurrency = args.concurrency or DEFAULT_CONCURRENCY
    root = Path(tempfile.mkdtemp(prefix="oopav-bench-load-"))
    server = EmbeddedServer(root / "nats", write_info=False)
    url = server.start()
    settings = Settings(data_dir=root / "data", nats_url=url)
    repo = make_repo(root)
    script_file = root / "script.yaml"
    script_file.write_text(yaml.safe_dump(script()))
    body = {
        "instruction": "Add a module greet.py with a function greet() that returns 'hi'.",
        "repo": str(repo),
        "model": f"scripted:{script_file}",
        "policy": {"lint": False},
        "test_command": ["true"],
    }
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}; {args.sessions} sessions, concurrency "
        f"{concurrency} per handler, {args.runs} run(s) per stage"
    )
    rss_start = rss_mib()
    try:
        # Stages alternate (plain, slowed, plain, ...) so that drift in a shared machine's
        # load, or in the data directory's size, does not land on one stage only.
        plain_runs, slowed_runs = [], []
        for _ in range(args.runs):
            plain_runs.append(await stage(settings, body, args.sessions, None, concurrency))
            slowed_runs.append(
                await stage(settings, body, args.sessions, args.slow_seconds, concurrency)
            )
        plain, slowed = median_of(plain_runs), median_of(slowed_runs)
    finally:
        server_hwm = proc_hwm_mib(server.proc.pid) if server.proc else 0.0
        server.stop()
    for name, r in (("without slow", plain), ("with slow", slowed)):
        print(
            f"{name:13} {r['sessions_per_s']:6.1f} sessions/s  p50 {r['p50']:6.2f} s  "
            f"p95 {r['p95']:6.2f} s  max {r['max']:6.2f} s  RSS +{r['rss_growth_mib']:.0f} MiB"
            + (f"  (slow session {r['slow_s']:.1f} s)" if r["slow_s"] else "")
        )
    delay_p95 = slowed["p95"] - plain["p95"]
    delay_max = slowed["max"] - plain["max"]
    print(
        f"peak RSS: handlers process {rss_mib():.0f} MiB (+{rss_mib() - rss_start:.0f} MiB "
        f"over the run), nats-server {server_hwm:.0f} MiB"
    )
    rate = plain["sessions_per_s"]
    print(
        f"target sessions/s >= 10: {rate:.1f} -> {'PASS' if rate >= 10 else 'MISS'}\n"
        f"target slow-session delay <= 1 s: p95 {delay_p95:+.2f} s, max {delay_max:+.2f} s -> "
        f"{'PASS' if max(delay_p95, delay_max) <= 1.0 else 'MISS'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
