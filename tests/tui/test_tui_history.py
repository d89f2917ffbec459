"""The history views (issue 27) driven with ``App.run_test`` and ``Pilot`` against the real
test server: mark a session, compare with another (the same view as `oopav diff`), and the fork
tree of a session, kept current as a new fork arrives."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from textual.widgets import DataTable, RichLog
from tui_sessions import DIFF, T0, SessionBuilder

from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.events.clock import ManualClock
from oopav.projections.store import SnapshotStore
from oopav.tui.app import OopavTUI
from oopav.tui.feed import Feed
from oopav.tui.history import DiffScreen, TreeScreen

SIZE = (180, 48)
TRIES = 1000


@pytest.fixture
def snapshots(tmp_path: Path) -> Any:
    store = SnapshotStore(tmp_path / "snapshots")
    yield store
    store.close()


async def append(nc: Any, events: list[Event]) -> None:
    store = EventStore(nc)
    for event in events:
        await store.append(event)


async def until(pilot: Any, cond: Any, what: str) -> None:
    for _ in range(TRIES):
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never happened: {what}")


def fork_of(parent: SessionBuilder, seed: int, at: int, minutes: int) -> SessionBuilder:
    """A session whose task names ``parent`` and a fork sequence, like `replay --fork-at`."""
    child = SessionBuilder(
        "Rename fetch to fetch_page", seed=seed, start=T0 + timedelta(minutes=minutes)
    )
    child.task = msgspec.structs.replace(
        child.task, parent_session=parent.session_id, fork_sequence=at, model="fork:x@3:other"
    )
    child.last = child.task
    return child


def failing_finish(b: SessionBuilder) -> list[Event]:
    return [
        b.next(ev.GateEvaluated, "verifier", gate="tests", passed=False, evidence="1 failed"),
        b.next(
            ev.SessionCompleted, "verifier", outcome="failed", summary="tests fail", diff=DIFF[:-20]
        ),
    ]


def log_text(screen: Any, selector: str) -> str:
    return "\n".join(strip.text for strip in screen.query_one(selector, RichLog).lines)


async def test_mark_then_compare_shows_the_diff_of_two_runs(
    nc: Any, snapshots: Any, nats_url: str
) -> None:
    parent = SessionBuilder("Rename fetch to fetch_page", seed=21, start=T0)
    await append(nc, parent.complete())
    child = fork_of(parent, 22, 4, 1)
    await append(nc, [*child.until_plan(), *child.act(), *failing_finish(child)])
    app = OopavTUI(Feed(nc, snapshots, nats_url), clock=ManualClock(T0 + timedelta(minutes=10)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app.visible_sessions()) == 2, "two rows")
        table = app.query_one("#sessions", DataTable)
        await pilot.press("c")  # nothing marked yet: a notice, no screen
        assert not isinstance(app.screen, DiffScreen)
        table.move_cursor(row=table.get_row_index(parent.session_id))
        await pilot.press("m")
        assert app.marked == parent.session_id
        table.move_cursor(row=table.get_row_index(child.session_id))
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen), "the diff screen")
        screen = app.screen
        await until(pilot, lambda: screen.report is not None or screen.error, "the comparison")
        assert screen.error is None
        text = log_text(screen, "#run-diff")
        assert f"A {parent.session_id}" in text and f"B {child.session_id}" in text
        assert "B is a fork of A at seq 4" in text
        assert "first divergence: step 9: only A has action_proposed" in text
        assert "≠ outcome" in text and "= plans" in text
        assert "final diffs differ" in text
        # The CLI prints the same lines.
        assert text.splitlines()[: len(screen.report.lines())] == [
            t for t, _ in screen.report.lines()
        ]
        await pilot.press("escape")
        assert not isinstance(app.screen, DiffScreen)


async def test_fork_tree_is_navigable_and_live(nc: Any, snapshots: Any, nats_url: str) -> None:
    parent = SessionBuilder("Rename fetch to fetch_page", seed=31, start=T0)
    await append(nc, parent.complete())
    child = fork_of(parent, 32, 4, 1)
    await append(nc, [*child.until_plan(), *child.act(), *failing_finish(child)])
    app = OopavTUI(Feed(nc, snapshots, nats_url), clock=ManualClock(T0 + timedelta(minutes=10)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app.visible_sessions()) == 2, "two rows")
        table = app.query_one("#sessions", DataTable)
        table.move_cursor(row=table.get_row_index(child.session_id))
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, TreeScreen), "the tree screen")
        screen = app.screen
        await until(pilot, lambda: screen.root is not None, "the lineage")
        lines = screen.lines()
        assert lines[0].startswith(parent.session_id) and "success" in lines[0]
        assert lines[1].startswith(f"  fork@4 {child.session_id}") and "failed" in lines[1]
        assert "↳ step 9: only A has action_proposed" in lines[1] and lines[1].endswith("*")
        # A second fork arrives: the open tree follows it.
        other = fork_of(parent, 33, 6, 2)
        await append(nc, [other.task])
        await until(pilot, lambda: len(screen.lines()) == 3, "the new fork in the tree")
        assert screen.lines()[2].startswith(f"  fork@6 {other.session_id}")
        # Enter on a node opens that session.
        await pilot.press("down", "enter")
        await until(pilot, lambda: app.selected == child.session_id, "the fork opened")
        assert not isinstance(app.screen, TreeScreen)
