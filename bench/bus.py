"""Bus benchmark: the spine's append, rebuild and load paths against raw nats-py, same run.

    python bench/bus.py [--events 100000] [--session-events 10000] [--runs 5] [--quick]

Starts its own embedded nats-server (JetStream, file storage) in a temp dir and prints, per
measurement, oopav's figure, the raw nats-py baseline measured in the same run, and the ratio
(oopav / raw; higher is better for throughput). Each append measurement starts from empty
streams, so every run writes the same number of fresh messages.

Targets (docs/benchmarks.md), each as the median of ``--runs`` runs: pipelined append >= 0.8x
raw publish_async, awaited single append (with ``expected``, as a handler appends) >= 0.9x raw
awaited ``js.publish``, atomic batches >= 2.5x raw publish_async, projection rebuild >= 0.9x a
raw ordered consumer, loading a 10k-event session from snapshot + 100-event tail <= 50 ms.

``--sync`` picks the server's ``sync_interval``; ``always`` (the default, as oopav ships) makes
every acknowledged publish wait for an fsync, so raw ``publish_async`` is bound by the disk and
the atomic-batch ratio mostly says how much one fsync per 1,000 events saves. Run it with
``--sync default`` as well to see the batch path against an unsynced baseline.
"""

from __future__ import annotations

import asyncio
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from nats.js.api import DeliverPolicy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, arepeat, conclude, parser, report, runs_of
from oopav.bus.server import EmbeddedServer, nats_server_binary
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import ensure_streams, stream_definitions
from oopav.events import catalog as ev
from oopav.events.ids import derive_id
from oopav.projections.runner import SESSIONS, ProjectionRunner, load_session
from oopav.projections.session import SessionState
from oopav.projections.store import Snapshots, SnapshotStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_events(n: int, sessions: int, salt: str) -> list[ev.Event]:
    """``n`` events spread round-robin over ``sessions`` sessions: a task_submitted each, then
    a mix of model calls, gates and observations (~450-650 bytes of JSON each), each under its
    type's current schema as handlers write them (``events.factory``); before wave 5 the
    task_submitted and model_called events here carried schema 1, so a third of every read
    went through the upcasting path."""
    sids = [derive_id(salt, "bench-session", i) for i in range(sessions)]
    out: list[ev.Event] = []
    for i in range(n):
        sid = sids[i % sessions]
        k = i // sessions
        env: dict[str, Any] = {
            "id": sid if k == 0 else derive_id(sid, "bench", k),
            "aggregate_id": sid,
            "correlation_id": sid,
            "causation_id": None if k == 0 else sid,
            "actor": "bench/0",
            "ts": T0 + timedelta(milliseconds=i),
        }
        if k == 0:
            out.append(
                ev.TaskSubmitted(
                    instruction="rename fetch to fetch_page",
                    repo="/r",
                    schema=ev.TaskSubmitted.SCHEMA,
                    **env,
                )
            )
        elif k % 3 == 0:
            out.append(
                ev.ModelCalled(
                    role="actor",
                    backend="scripted",
                    request_hash=f"{k:016x}",
                    request={"n": k},
                    response='{"type": "finish", "summary": "ok"}',
                    prompt_tokens=120,
                    completion_tokens=30,
                    latency_ms=1.5,
                    schema=ev.ModelCalled.SCHEMA,
                    **env,
                )
            )
        elif k % 3 == 1:
            out.append(
                ev.GateEvaluated(
                    gate="tests",
                    passed=k % 2 == 0,
                    evidence="3 passed",
                    schema=ev.GateEvaluated.SCHEMA,
                    **env,
                )
            )
        else:
            out.append(
                ev.ObservationRecorded(
                    phase="change",
                    files_total=12,
                    changed_files=["src/app.py"],
                    schema=ev.ObservationRecorded.SCHEMA,
                    **env,
                )
            )
    return out


async def reset(js: Any) -> None:
    for name in stream_definitions():
        try:
            await js.delete_stream(name)
        except Exception:
            pass
    await ensure_streams(js)


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


async def raw_publish_async(
    nc: Any, subjects: list[str], payloads: list[bytes], headers: list[dict[str, str]] | None = None
) -> float:
    js = nc.jetstream()
    t = time.perf_counter()
    if headers is None:
        futs = [await js.publish_async(s, p) for s, p in zip(subjects, payloads, strict=True)]
    else:
        futs = [
            await js.publish_async(s, p, headers=h)
            for s, p, h in zip(subjects, payloads, headers, strict=True)
        ]
    await asyncio.gather(*futs)
    return time.perf_counter() - t


async def raw_ordered_count(nc: Any, n: int) -> float:
    js = nc.jetstream()
    done = asyncio.Event()
    count = 0

    async def cb(msg: Any) -> None:
        nonlocal count
        count += 1
        if count >= n:
            done.set()

    t = time.perf_counter()
    sub = await js.subscribe(
        "oopav.ev.session.>", ordered_consumer=True, deliver_policy=DeliverPolicy.ALL, cb=cb
    )
    await done.wait()
    elapsed = time.perf_counter() - t
    await sub.unsubscribe()
    return elapsed


FIGURES = [
    Figure("raw_async", "raw publish_async (baseline)", "ev/s", fmt=",.0f"),
    Figure("raw_async_id", "raw publish_async + Nats-Msg-Id / raw", "x"),
    Figure("pipelined", "append_many_async (pipelined) / raw", "x", 0.8),
    Figure("raw_awaited", "raw awaited js.publish (baseline)", "ev/s", fmt=",.0f"),
    Figure("single", "append(expected=), awaited / raw awaited js.publish", "x", 0.9),
    Figure("single_unconditional", "append, no expected (reads the last) / raw awaited", "x"),
    Figure("batch_rate", "append_batch (atomic, 1000/batch)", "ev/s", fmt=",.0f"),
    Figure("batch", "append_batch (atomic) / raw publish_async", "x", 2.5),
    Figure("raw_ordered", "raw ordered consumer (baseline)", "ev/s", fmt=",.0f"),
    Figure("rebuild", "rebuild (catch_up, fresh LMDB) / raw ordered", "x", 0.9),
    Figure("load_ms", "load 10k-event session (snapshot + tail)", "ms", 50.0, higher=False),
    Figure("load_full_ms", "load 10k-event session, no snapshot", "ms"),
    Figure("commit_plain_ms", "one decision stored: 1 event, plain append", "ms"),
    Figure("commit_batch_ms", "one decision stored: 2 events, atomic batch", "ms"),
]


async def measure(
    nc: Any, tmp: Path, run: int, n: int, session_events: int, single_n: int
) -> dict[str, float]:
    """One run of every figure; each append measurement starts from empty streams."""
    js = nc.jetstream()
    store = EventStore(nc)
    out: dict[str, float] = {}
    sessions = max(1, n // 100)
    events = make_events(n, sessions, f"a{run}")
    payloads = [store.registry.encode(e) for e in events]
    subjects = [e.subject for e in events]

    await reset(js)
    raw = rate(n, await raw_publish_async(nc, subjects, payloads))
    out["raw_async"] = raw
    await reset(js)
    raw_id_t = await raw_publish_async(
        nc, subjects, payloads, [{"Nats-Msg-Id": e.id} for e in events]
    )
    out["raw_async_id"] = rate(n, raw_id_t) / raw

    await reset(js)
    t = time.perf_counter()
    done = await store.append_many_async(events)
    out["pipelined"] = rate(n, time.perf_counter() - t) / raw
    assert len(done) == n and done[-1].sequence == n

    # Awaited one by one: a round trip per event, so compare with the same pattern in raw
    # nats-py (pre-encoded payloads, no headers).
    await reset(js)
    few = events[:single_n]
    t = time.perf_counter()
    for s, p in zip(subjects[:single_n], payloads[:single_n], strict=True):
        await js.publish(s, p)
    raw_awaited = rate(single_n, time.perf_counter() - t)
    out["raw_awaited"] = raw_awaited
    # As a handler appends a decision: on the sequence its state was folded to (`expected`),
    # linked to the hash of the event there; one round trip.
    await reset(js)
    last: dict[str, int] = {}
    t = time.perf_counter()
    for e in few:
        done_one = await store.append(e, expected=last.get(e.aggregate_id, 0))
        last[e.aggregate_id] = done_one.sequence
    out["single"] = rate(single_n, time.perf_counter() - t) / raw_awaited
    # Without `expected` a session event is linked to whatever is last: a read first.
    await reset(js)
    t = time.perf_counter()
    for e in few:
        await store.append(e)
    out["single_unconditional"] = rate(single_n, time.perf_counter() - t) / raw_awaited

    await reset(js)
    t = time.perf_counter()
    done = await store.append_batch(events)
    batched = rate(n, time.perf_counter() - t)
    assert len(done) == n and done[-1].sequence == n
    out["batch_rate"] = batched
    out["batch"] = batched / raw

    raw_t = await raw_ordered_count(nc, n)
    out["raw_ordered"] = rate(n, raw_t)
    snap_dir = tmp / f"snapshots-{run}"
    runner = ProjectionRunner(nc, SnapshotStore(snap_dir), SESSIONS)
    t = time.perf_counter()
    pos = await runner.catch_up()
    rebuild_t = time.perf_counter() - t
    assert pos == n, pos
    out["rebuild"] = rate(n, rebuild_t) / out["raw_ordered"]
    runner.snapshots.store.close()

    await reset(js)
    one = make_events(session_events, 1, f"load{run}")
    await store.append_batch(one[:-100])
    snaps = SnapshotStore(tmp / f"snap-one-{run}")
    await ProjectionRunner(nc, snaps, SESSIONS).catch_up()
    await store.append_batch(one[-100:])
    typed = Snapshots(snaps, SESSIONS.name, SESSIONS.schema, SessionState)
    sid = one[0].aggregate_id
    times = []
    for _ in range(7):
        t = time.perf_counter()
        state = await load_session(store, typed, sid)
        times.append((time.perf_counter() - t) * 1000)
        assert state.event_count == session_events, state.event_count
    out["load_ms"] = statistics.median(times)
    t = time.perf_counter()
    full = await load_session(store, None, sid)
    out["load_full_ms"] = (time.perf_counter() - t) * 1000
    assert full.event_count == session_events
    snaps.close()

    # What storing one handler decision costs, awaited: two events as an atomic batch (a
    # multi-output decision) against one plain append, each on a fresh session (expected 0).
    await reset(js)
    pairs = make_events(2 * 120, 120, f"pair{run}")
    by_session: dict[str, list[ev.Event]] = {}
    for e in pairs:
        by_session.setdefault(e.aggregate_id, []).append(e)
    groups = list(by_session.values())
    plain_ms, batch_ms = [], []
    for two in groups[:60]:
        t = time.perf_counter()
        await store.append(two[0], expected=0)
        plain_ms.append((time.perf_counter() - t) * 1000)
    for two in groups[60:]:
        t = time.perf_counter()
        await store.append_batch(two, expected=0)
        batch_ms.append((time.perf_counter() - t) * 1000)
    out["commit_plain_ms"] = statistics.median(plain_ms)
    out["commit_batch_ms"] = statistics.median(batch_ms)
    return out


async def main(n: int, session_events: int, single_n: int, runs: int, sync: str = "always") -> None:
    tmp = Path(tempfile.mkdtemp(prefix="oopav-bench-"))
    server = EmbeddedServer(tmp / "nats", write_info=False, sync=sync)
    url = server.start()
    nc = await connect(url, name="bench")
    print(f"oopav bus benchmark: {n:,} events, nats-server at {url}")
    print(f"  python {platform.python_version()}, {nats_server_binary()}, sync_interval {sync}")
    sample = make_events(min(n, 1000), max(1, min(n, 1000) // 100), "size")
    size = sum(len(EventStore(nc).registry.encode(e)) for e in sample) / len(sample)
    print(f"  {max(1, n // 100):,} sessions, mean event size {size:.0f} bytes")
    try:
        results = await arepeat(
            lambda i: measure(nc, tmp, i, n, session_events, single_n), runs, label="bus run"
        )
    finally:
        await nc.close()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    conclude(report("bus", FIGURES, results))


if __name__ == "__main__":
    ap = parser(__doc__)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--session-events", type=int, default=10_000)
    ap.add_argument(
        "--single",
        type=int,
        default=5_000,
        help="events for the awaited one-by-one append (slow: one round trip each)",
    )
    ap.add_argument(
        "--sync",
        default="always",
        help="the embedded server's JetStream sync_interval: always (oopav's default) or "
        "default (nats-server's: fsync every 2 min); run both to see what durability costs",
    )
    args = ap.parse_args()
    if args.quick:
        args.events, args.session_events, args.single = 2_000, 500, 200
    runs = runs_of(args)
    asyncio.run(
        main(args.events, args.session_events, min(args.single, args.events), runs, args.sync)
    )
