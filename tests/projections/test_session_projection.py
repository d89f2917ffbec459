"""Projection runners on a real stream and real LMDB: incremental = rebuild, resume, rebuild."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from helpers.handlers import in_background
from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events.ids import derive_id
from oopav.projections.runner import SESSIONS, ProjectionRunner, load_session
from oopav.projections.session import SessionState, fold
from oopav.projections.store import Snapshots, SnapshotStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def session_events(sid: str, n: int, start: int = 0) -> list[ev.Event]:
    """A submitted task followed by model calls, actions and a completion."""
    env = {"aggregate_id": sid, "correlation_id": sid, "actor": "test/0"}
    out: list[ev.Event] = []
    if start == 0:
        out.append(ev.TaskSubmitted(id=sid, ts=T0, instruction=f"task {sid}", repo="/r", **env))
    for i in range(max(start, 1), n):
        ts = T0 + timedelta(seconds=i)
        eid = derive_id(sid, "test", i)
        if i % 3 == 0:
            out.append(
                ev.ModelCalled(
                    id=eid,
                    ts=ts,
                    role="actor",
                    backend="scripted",
                    request_hash="h",
                    request={},
                    response="{}",
                    prompt_tokens=i,
                    completion_tokens=1,
                    **env,
                )
            )
        elif i % 3 == 1:
            out.append(ev.StuckDetected(id=eid, ts=ts, pattern="repeat", count=i, **env))
        else:
            out.append(ev.GateEvaluated(id=eid, ts=ts, gate=f"g{i}", passed=i % 2 == 0, **env))
    return out


def interleave(*lists: list[ev.Event]) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i in range(max(len(x) for x in lists)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


async def append_all(store: EventStore, events: list[ev.Event]) -> int:
    last = 0
    for i in range(0, len(events), 200):
        done = await store.append_batch(events[i : i + 200])
        last = done[-1].sequence
    return last


def snapshot(runner: ProjectionRunner[SessionState]) -> dict[str, Any]:
    return {k: msgspec.to_builtins(v) for k, v in runner.snapshots.items()}


async def test_incremental_equals_rebuild(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    ids = ["s1", "s2", "s3", "s4"]
    await append_all(store, interleave(*(session_events(s, 40) for s in ids)))
    inc = ProjectionRunner(nc, SnapshotStore(tmp_path / "inc"), SESSIONS, commit_every=7)
    first = await inc.catch_up()
    assert first == 160
    await append_all(store, interleave(*(session_events(s, 90, start=40) for s in ids)))
    await append_all(store, session_events("s5", 30))
    # A new runner on the same store resumes (as a restarted process would).
    inc2 = ProjectionRunner(nc, inc.snapshots.store, SESSIONS, commit_every=7)
    assert await inc2.catch_up() == 160 + 4 * 50 + 30

    full = ProjectionRunner(nc, SnapshotStore(tmp_path / "full"), SESSIONS)
    assert await full.catch_up() == 390
    a, b = snapshot(inc2), snapshot(full)
    assert set(a) == {*ids, "s5"}
    assert a == b
    s1 = full.snapshots.get("s1")
    assert s1 is not None and s1.event_count == 90 and s1.task is not None
    assert s1.budgets_used.model_calls == len(range(3, 90, 3))
    # And it is what a plain fold of the session's events gives.
    assert msgspec.to_builtins(fold(await store.read("session", "s1"))) == a["s1"]


async def test_resume_reads_only_new_events(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    await append_all(store, session_events("s1", 50))
    snaps = SnapshotStore(tmp_path / "snap")
    seen: list[int] = []
    r1 = ProjectionRunner(nc, snaps, SESSIONS, listeners=[lambda seq, e, s: seen.append(seq)])
    await r1.catch_up()
    assert seen == list(range(1, 51))
    assert r1.snapshots.last_sequence() == 50
    await append_all(store, session_events("s1", 55, start=50))
    seen.clear()
    r2 = ProjectionRunner(nc, snaps, SESSIONS, listeners=[lambda seq, e, s: seen.append(seq)])
    assert await r2.catch_up() == 55
    assert seen == [51, 52, 53, 54, 55]
    state = r2.snapshots.get("s1")
    assert state is not None and state.event_count == 55 and state.last_sequence == 55
    seen.clear()
    r3 = ProjectionRunner(nc, snaps, SESSIONS, listeners=[lambda seq, e, s: seen.append(seq)])
    assert await r3.catch_up() == 55
    assert seen == []


async def test_schema_change_rebuilds(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    await append_all(store, session_events("s1", 20) + session_events("s2", 10))
    snaps = SnapshotStore(tmp_path / "snap")
    old = ProjectionRunner(nc, snaps, SESSIONS)
    await old.catch_up()
    before = snapshot(old)
    bumped = dataclasses.replace(SESSIONS, schema=SESSIONS.schema + 1)
    seen: list[int] = []
    new = ProjectionRunner(nc, snaps, bumped, listeners=[lambda seq, e, s: seen.append(seq)])
    assert not new.snapshots.valid()
    assert new.snapshots.get("s1") is None  # snapshots of another schema are not served
    await new.catch_up()
    assert seen == list(range(1, 31))  # rebuilt from sequence 1
    meta = new.snapshots.meta()
    assert meta is not None and meta.schema == SESSIONS.schema + 1 and meta.last_sequence == 30
    assert snapshot(new) == before


async def test_deleting_lmdb_rebuilds_identically(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    await append_all(store, interleave(session_events("a", 60), session_events("b", 45)))
    path = tmp_path / "snap"
    snaps = SnapshotStore(path)
    runner = ProjectionRunner(nc, snaps, SESSIONS)
    await runner.catch_up()
    before = snapshot(runner)
    snaps.close()
    shutil.rmtree(path)
    again = ProjectionRunner(nc, SnapshotStore(path), SESSIONS)
    assert again.snapshots.last_sequence() == 0
    assert await again.catch_up() == 105
    assert snapshot(again) == before


async def test_wait_for_gives_read_your_writes(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    runner = ProjectionRunner(nc, SnapshotStore(tmp_path / "snap"), SESSIONS)
    async with in_background(runner, 10):
        for n in (1, 5, 12):
            seq = await append_all(
                store, session_events("live", n + 1, start=n - 1 if n > 1 else 0)
            )
            await runner.wait_for(seq)
            state = runner.get("live")
            assert state is not None and state.last_sequence == seq
        assert runner.get("live").event_count == seq  # type: ignore[union-attr]
    # Stopping committed the position.
    assert runner.snapshots.last_sequence() == seq


async def test_load_session_is_snapshot_plus_tail(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    await append_all(store, session_events("s1", 30))
    snaps = SnapshotStore(tmp_path / "snap")
    runner = ProjectionRunner(nc, snaps, SESSIONS)
    await runner.catch_up()
    await append_all(store, session_events("s1", 37, start=30))  # the tail, not yet projected
    typed = Snapshots(snaps, SESSIONS.name, SESSIONS.schema, SessionState)
    assert typed.get("s1").last_sequence == 30  # type: ignore[union-attr]
    loaded = await load_session(store, typed, "s1")
    expected = fold(await store.read("session", "s1"))
    assert loaded.event_count == 37 and loaded.last_sequence == 37
    assert msgspec.to_builtins(loaded) == msgspec.to_builtins(expected)
    assert msgspec.to_builtins(await load_session(store, None, "s1")) == msgspec.to_builtins(
        expected
    )


def test_shared_store_never_regresses(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snap")
    snaps = Snapshots(store, "sessions", 1, SessionState)
    ahead = SessionState(session_id="s1", event_count=10, last_sequence=10)
    behind = SessionState(session_id="s1", event_count=4, last_sequence=4)
    snaps.commit({"s1": ahead}, 10, {"s1": 10})
    snaps.commit({"s1": behind, "s2": SessionState(session_id="s2")}, 6, {"s1": 4, "s2": 6})
    got = snaps.get("s1")
    assert got is not None and got.event_count == 10  # the older state did not overwrite
    assert snaps.get("s2") is not None  # but its other changes were written
    assert snaps.last_sequence() == 10  # and the position did not move back
    newer = SessionState(session_id="s1", event_count=12, last_sequence=12)
    snaps.commit({"s1": newer}, 12, {"s1": 12})
    assert snaps.get("s1").event_count == 12  # type: ignore[union-attr]
    assert snaps.last_sequence() == 12


async def test_two_runners_on_one_store(nc: Any, tmp_path: Path) -> None:
    store = EventStore(nc)
    await append_all(store, session_events("s1", 20))
    snaps = SnapshotStore(tmp_path / "snap")
    fast = ProjectionRunner(nc, snaps, SESSIONS)
    slow = ProjectionRunner(nc, snaps, SESSIONS)
    slow.position = 0
    await fast.catch_up()
    await append_all(store, session_events("s1", 25, start=20))
    await fast.catch_up()
    assert fast.snapshots.get("s1").event_count == 25  # type: ignore[union-attr]
    # A runner that started before (position 0) and folds only the first 20 commits late.
    late = SessionState(session_id="s1", event_count=20, last_sequence=20)
    slow.snapshots.commit({"s1": late}, 20, {"s1": 20})
    assert fast.snapshots.get("s1").event_count == 25  # type: ignore[union-attr]
    assert snaps is slow.snapshots.store and slow.snapshots.last_sequence() == 25


def test_the_observation_history_is_capped_and_keeps_the_latest() -> None:
    from oopav.events import catalog as ev
    from oopav.events.clock import SYSTEM_CLOCK
    from oopav.projections.session import OBSERVATION_HISTORY, evolve, initial

    state = initial("s")
    for i in range(OBSERVATION_HISTORY + 5):
        obs = ev.ObservationRecorded(
            id=f"o{i}",
            aggregate_id="s",
            correlation_id="s",
            actor="observer",
            ts=SYSTEM_CLOCK.now(),
            phase="change",
            changed_files=["a.py"] * i,
        )
        state = evolve(state, obs)
    assert len(state.observations) == OBSERVATION_HISTORY
    assert state.observations[-1].changed == OBSERVATION_HISTORY + 4
    assert state.observations[0].changed == 5
