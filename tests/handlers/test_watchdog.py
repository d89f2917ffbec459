"""The watchdog ends a session that waits for a grant longer than its wall budget."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator
from oopav.handlers.watchdog import Watchdog, expire, overdue
from oopav.projections import SESSIONS, ProjectionRunner, SnapshotStore, fold


def _waiting_session(clock: ManualClock, wall: float = 30.0) -> list[ev.Event]:
    task = root_event(
        ev.TaskSubmitted,
        handler="intake",
        clock=clock,
        ids=IdGenerator(clock, seed=1),
        instruction="run make",
        repo="/tmp",
        budgets=ev.Budgets(wall_seconds_per_phase=wall),
    )
    asked = caused_event(
        ev.PermissionRequested,
        task,
        handler="actor",
        clock=clock,
        scope="exec:make",
        action_id="a1",
    )
    return [task, asked]


def test_not_overdue_within_the_budget() -> None:
    clock = ManualClock()
    events = _waiting_session(clock)
    state = fold(events)
    assert state.phase == "waiting_permission"
    assert overdue(state, clock.now() + timedelta(seconds=10)) is None
    assert expire(state, events[-1], clock.now() + timedelta(seconds=10), clock) == []


def test_overdue_session_is_aborted_with_the_budget_named() -> None:
    clock = ManualClock()
    events = _waiting_session(clock)
    state = fold(events)
    later = clock.now() + timedelta(seconds=31)
    out = expire(state, events[-1], later, clock)
    assert [e.type for e in out] == ["budget_exceeded", "session_completed"]
    assert out[0].budget == "wall_seconds_per_phase" and out[0].phase == "waiting_permission"
    assert out[1].outcome == "aborted" and out[1].reason == "permission_timeout"
    assert "exec:make" in out[1].summary
    # Deterministic: a second watchdog derives the same ids, so the stream keeps one copy.
    assert [e.id for e in expire(state, events[-1], later, clock)] == [e.id for e in out]


async def test_watchdog_ends_a_waiting_session_on_the_stream(nc, tmp_path: Path) -> None:
    clock = ManualClock()
    store = EventStore(nc)
    events = _waiting_session(clock, wall=5.0)
    for e in events:
        await store.append(e)
    watchdog = Watchdog(nc, clock=clock)
    runner = ProjectionRunner(
        nc, SnapshotStore(tmp_path / "snap"), SESSIONS, listeners=[watchdog.listener]
    )
    await runner.catch_up()
    sid = events[0].aggregate_id
    assert sid in watchdog.waiting
    assert await watchdog.check() == 0  # not yet overdue
    clock.advance(6)
    assert await watchdog.check() == 1
    stored = [e for _, e in await store.read("session", sid)]
    assert [e.type for e in stored][-2:] == ["budget_exceeded", "session_completed"]
    assert fold([(i + 1, e) for i, e in enumerate(stored)]).outcome == "aborted"
    # Once ended it is not expired again.
    assert await watchdog.check() == 0
