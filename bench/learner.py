"""The learner appends (issue 28 §4): with 1,000 and 10,000 sessions already learned, how long a
new session takes to land in the datasets, and the learner's CPU per session.

    python bench/learner.py [--sizes 1000,10000] [--new 10] [--quick]

For each size, a data directory is filled with that many learned sessions (the learner's own
``sessions/<id>.json`` files: one template session of the trainer tests, its text made unique
per session so that nothing deduplicates, strings capped at 600 characters), then:

- **before issue 28** (the same-run baseline): one full rebuild of the three datasets from all
  the sessions — what the learner did after every new session (``Learner.rebuild``, in this
  process, CPU seconds);
- **now**: a real learner on an embedded nats-server starts (its one rebuild is reported as
  start-up), then ``--new`` sessions are appended to the stream one at a time; for each, the
  time from its events being stored to its records being in every manifest, and this
  process's CPU for it (the learner's work, the stream reads, the append).

Targets: a new session lands within 1 s (max over the new sessions), and the learner's CPU per
session at the largest size is at most 1.5x that at the smallest (flat, not O(N)).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "trainer"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _cap(value: Any) -> Any:
    if isinstance(value, str):
        return value[:600]
    if isinstance(value, list):
        return [_cap(v) for v in value]
    if isinstance(value, dict):
        return {k: _cap(v) for k, v in value.items()}
    return value


def populate(root: Path, n: int) -> None:
    """``n`` learned sessions, completed before anything on the bench's stream (negative
    sequences), each with records of its own."""
    from trainer_sessions import numbered, session

    from oopav.events.ids import derive_id
    from oopav.trainer.datasets import Filters, session_records

    template_id = derive_id("template", "bench", 0)
    recs = session_records(numbered(session(template_id)), Filters())
    assert recs.source is not None
    text = json.dumps({"source": recs.source.to_json(), "records": _cap(recs.records)})
    d = root / "sessions"
    d.mkdir(parents=True)
    for i in range(n):
        sid = derive_id("old", "bench", i)
        data = json.loads(text.replace(template_id, sid).replace("fetch", f"fetch{i}"))
        src = data["source"]
        span = src["last_seq"] - src["first_seq"]
        src["completed_seq"] = -(n - i) * 100
        src["first_seq"], src["last_seq"] = src["completed_seq"] - span, src["completed_seq"]
        (d / f"{sid}.json").write_text(json.dumps(data, sort_keys=True))


async def measure(n: int, new: int) -> dict[str, float]:
    from trainer_sessions import session

    from oopav.bus.server import EmbeddedServer
    from oopav.bus.store import EventStore, connect
    from oopav.bus.streams import ensure_streams
    from oopav.events.ids import derive_id
    from oopav.handlers.learner import Learner

    tmp = Path(tempfile.mkdtemp(prefix=f"oopav-bench-learner-{n}-"))
    out: dict[str, float] = {"n": n}
    try:
        root = tmp / "datasets"
        populate(root, n)
        # Before issue 28: a full rebuild per new session.
        old = Learner.__new__(Learner)
        old.root, old.parquet, old.rebuilds = root, True, 0
        from oopav.trainer.datasets import Filters

        old.filters = Filters()
        c0, t0 = time.process_time(), time.perf_counter()
        old.rebuild()
        out["rebuild_cpu_s"] = time.process_time() - c0
        out["rebuild_wall_s"] = time.perf_counter() - t0
        server = EmbeddedServer(tmp / "nats", write_info=False)
        nc = await connect(server.start(), name="bench-learner")
        try:
            await ensure_streams(nc.jetstream())
            learner = Learner(nc, root)
            t0 = time.perf_counter()
            task = asyncio.create_task(learner.run())
            while learner._states is None:  # noqa: ASYNC110 (polling the learner's state)
                await asyncio.sleep(0.01)
            out["startup_s"] = time.perf_counter() - t0
            store = EventStore(nc)
            lat, cpu = [], []
            for i in range(new):
                sid = derive_id("new", "bench", i)
                events = session(sid, instruction=f"Rename fetch to fetch_page ({i})")
                c0, t0 = time.process_time(), time.perf_counter()
                await store.append_batch(events, expected=0)
                deadline = t0 + 30
                # The learner's own record of what its manifests hold (updated right after the
                # manifest is written): polling the files would put the bench's JSON parsing
                # into the CPU figure.
                while not (
                    learner._states and all(sid in st.sessions for st in learner._states.values())
                ):
                    if time.perf_counter() > deadline:
                        raise SystemExit(f"session {i} did not land within 30 s")
                    await asyncio.sleep(0.005)
                lat.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            learner.stop()
            await asyncio.wait_for(task, 60)
            out["land_median_s"] = statistics.median(lat)
            out["land_max_s"] = max(lat)
            out["cpu_per_session_ms"] = statistics.median(cpu) * 1000
            out["rebuilds_after_start"] = learner.rebuilds - 1
            out["appends"] = learner.appends
        finally:
            await nc.close()
            server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


async def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--new", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="50 and 200 sessions, 3 new (smoke)")
    ap.add_argument(
        "--runs",
        type=int,
        default=1,
        help="ignored beyond 1: each figure is already the median (max) over --new sessions",
    )
    args = ap.parse_args()
    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    from oopav.logging import configure

    configure("WARNING")
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.new = [50, 200], 3
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"sizes {sizes}, {args.new} new sessions each"
    )
    await measure(20, 1)  # warm-up: imports (pyarrow), first-use costs
    results = [await measure(n, args.new) for n in sizes]
    for r in results:
        print(
            f"{int(r['n']):>6} sessions: new session lands median {r['land_median_s'] * 1000:6.0f} ms, "
            f"max {r['land_max_s'] * 1000:6.0f} ms; learner CPU/session {r['cpu_per_session_ms']:6.1f} ms; "
            f"full rebuild (before: per session) {r['rebuild_cpu_s']:6.2f} s CPU "
            f"({r['rebuild_wall_s']:.2f} s wall); start-up {r['startup_s']:.2f} s; "
            f"rebuilds after start {int(r['rebuilds_after_start'])}"
        )
    worst = max(r["land_max_s"] for r in results)
    ratio = results[-1]["cpu_per_session_ms"] / results[0]["cpu_per_session_ms"]
    before = results[-1]["rebuild_cpu_s"] * 1000 / results[-1]["cpu_per_session_ms"]
    print(
        f"target a new session lands <= 1 s: max {worst:.2f} s -> {'PASS' if worst <= 1 else 'MISS'}"
    )
    print(
        f"target learner CPU/session flat ({int(results[-1]['n'])} vs {int(results[0]['n'])} "
        f"sessions) <= 1.5x: {ratio:.2f}x -> {'PASS' if ratio <= 1.5 else 'MISS'}"
    )
    print(
        f"per-session CPU, before (full rebuild) / now (append) at {int(results[-1]['n'])}: {before:,.0f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
