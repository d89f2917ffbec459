"""The Textual app driven with ``App.run_test`` and ``Pilot`` against the real test server.

Waits are bounded loops of ``pilot.pause`` on a condition (no timed assertions): events go
through NATS, so they arrive when they arrive."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.syntax import Syntax
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, RichLog, Static
from tui_sessions import T0, SessionBuilder

from oopav.bus.store import EventStore
from oopav.events.catalog import Event
from oopav.events.clock import ManualClock
from oopav.projections.store import SnapshotStore
from oopav.tui.app import OopavTUI
from oopav.tui.feed import Feed

SIZE = (160, 48)
TRIES = 1000  # x 0.02 s: generous bound on waits for NATS deliveries


@pytest.fixture
def snapshots(tmp_path: Path) -> Any:
    store = SnapshotStore(tmp_path / "snapshots")
    yield store
    store.close()


async def append(nc: Any, events: list[Event]) -> None:
    store = EventStore(nc)
    for event in events:
        await store.append(event)


async def until(pilot: Pilot[None], cond: Callable[[], bool], what: str) -> None:
    for _ in range(TRIES):
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never happened: {what}")


@contextlib.asynccontextmanager
async def showing_two(app: OopavTUI) -> AsyncIterator[tuple[OopavTUI, Pilot[None]]]:
    """The app running, once its table shows the two sessions."""
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app.visible_sessions()) == 2, "two rows")
        yield app, pilot


def app_over(nc: Any, snapshots: Any, nats_url: str, **kwargs: Any) -> OopavTUI:
    clock = ManualClock(T0 + timedelta(minutes=10))
    return OopavTUI(Feed(nc, snapshots, nats_url), clock=clock, **kwargs)


def cell(app: OopavTUI, sid: str, column: str) -> str:
    table = app.query_one("#sessions", DataTable)
    return str(table.get_cell(sid, column))


def timeline_text(app: OopavTUI) -> str:
    return "\n".join(strip.text for strip in app.query_one("#timeline", RichLog).lines)


def summary_text(app: OopavTUI) -> str:
    return str(app.query_one("#summary", Static).content)


Two = tuple[SessionBuilder, SessionBuilder]
Over = Callable[..., OopavTUI]


@pytest.fixture
def over(nc: Any, snapshots: Any, nats_url: str) -> Over:
    """``app_over`` the test's connection, snapshots and server."""
    return functools.partial(app_over, nc, snapshots, nats_url)


@pytest.fixture
async def two_sessions(nc: Any) -> AsyncIterator[Two]:
    old = SessionBuilder("Rename fetch to fetch_page", seed=11, start=T0)
    new = SessionBuilder("Add type hints to report.py", seed=12, start=T0 + timedelta(minutes=1))
    await append(nc, old.complete())
    await append(nc, new.until_plan())
    yield old, new


async def test_sessions_appear_newest_first(nc: Any, over: Over, two_sessions: Two) -> None:
    old, new = two_sessions
    async with showing_two(over()) as (app, pilot):
        assert app.visible_sessions() == [new.session_id, old.session_id]
        assert cell(app, old.session_id, "id") == old.session_id[:13]
        assert cell(app, old.session_id, "phase") == "completed"
        assert cell(app, old.session_id, "outcome") == "success"
        assert cell(app, old.session_id, "iterations") == "2"
        assert cell(app, old.session_id, "model_tokens") == "120"
        assert cell(app, new.session_id, "phase") == "acting"
        assert cell(app, new.session_id, "age") == "8m"  # created at T0+1m0.5s, now T0+10m
        assert cell(app, new.session_id, "instruction") == "Add type hints to report.py"
        await until(pilot, lambda: "2 sessions" in app.status_text()[0], "status counts")
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_new_event_updates_its_row_and_a_new_session_appears_live(
    nc: Any, over: Over, two_sessions: Two
) -> None:
    _, new = two_sessions
    async with showing_two(over()) as (app, pilot):
        await append(nc, new.act())
        await until(pilot, lambda: cell(app, new.session_id, "iterations") == "1", "iteration")
        await pilot.press("r")  # a refresh restarts the feed; it stays live
        await append(nc, new.finish())
        await until(pilot, lambda: cell(app, new.session_id, "phase") == "completed", "done")
        assert cell(app, new.session_id, "outcome") == "success"
        third = SessionBuilder("Third task", seed=13, start=T0 + timedelta(minutes=2))
        await append(nc, [third.task])
        await until(pilot, lambda: len(app.visible_sessions()) == 3, "a third row")
        assert app.visible_sessions()[0] == third.session_id
        assert cell(app, third.session_id, "phase") == "submitted"


async def test_opening_a_session_shows_its_timeline_and_summary_live(
    nc: Any, over: Over, two_sessions: Two
) -> None:
    _, new = two_sessions
    async with showing_two(over()) as (app, pilot):
        table = app.query_one("#sessions", DataTable)
        table.move_cursor(row=table.get_row_index(new.session_id))
        await pilot.press("enter")
        assert app.selected == new.session_id
        await until(pilot, lambda: "model_called" in timeline_text(app), "the timeline")
        text = timeline_text(app)
        for kind in ("task_submitted", "workspace_prepared", "orient_reported", "plan_proposed"):
            assert kind in text
        assert "risk=yellow gap=0.25 rename" in text
        assert "+   0.500s" in text
        summary = summary_text(app)
        assert "Add type hints to report.py" in summary
        assert " ▶ 1. rename fetch in client.py" in summary
        assert "model_tokens   120 / 200000" in summary

        await append(nc, new.act())
        await until(pilot, lambda: "action_applied" in timeline_text(app), "a live event")
        await until(pilot, lambda: "iterations     1 / 30" in summary_text(app), "budgets")
        await append(nc, new.finish())
        await until(pilot, lambda: "pass tests" in summary_text(app), "gates")
        await until(pilot, lambda: "Outcome" in summary_text(app), "the outcome")

        await pilot.press("escape")
        assert app.selected is None
        assert app.query_one("#sessions").has_focus


async def test_the_filter_narrows_the_table(nc: Any, over: Over, two_sessions: Two) -> None:
    old, new = two_sessions
    async with showing_two(over()) as (app, pilot):
        await pilot.press("slash")
        await pilot.press(*"rename")
        await until(pilot, lambda: app.visible_sessions() == [old.session_id], "filtered")
        await pilot.press("enter")  # leaves the filter applied, back in the table
        assert app.query_one("#sessions").has_focus
        assert app.visible_sessions() == [old.session_id]
        # A live event of a filtered-out session keeps it out.
        await append(nc, new.act())
        await until(
            pilot, lambda: app.model.states[new.session_id].budgets_used.iterations == 1, "fold"
        )
        await pilot.pause()
        assert app.visible_sessions() == [old.session_id]
        # 'q' in the filter is text, not quit.
        await pilot.press("slash", "q")
        await until(pilot, lambda: app.visible_sessions() == [], "nothing matches")
        assert app.is_running
        await pilot.press("escape")  # escape drops the filter
        await until(pilot, lambda: len(app.visible_sessions()) == 2, "all rows again")


async def test_the_diff_toggle_shows_the_final_diff(nc: Any, over: Over, two_sessions: Two) -> None:
    old, _ = two_sessions
    app = over(session=old.session_id)
    async with app.run_test(size=SIZE) as pilot:
        assert app.selected == old.session_id  # --session opens it at start
        await until(pilot, lambda: "Outcome" in summary_text(app), "the summary")
        detail = app.query_one("#detail-view")
        assert not app.query_one("#diff-pane").display
        await pilot.press("d")
        assert detail.has_class("diff")
        assert app.query_one("#diff-pane").display
        assert not app.query_one("#timeline").display
        diff = app.query_one("#diff", Static).content
        assert isinstance(diff, Syntax)
        assert "+def fetch_page(url):" in diff.code
        await pilot.press("d")
        assert not detail.has_class("diff")
        assert app.query_one("#timeline").display


async def test_an_undecodable_event_is_shown_and_skipped(
    nc: Any, over: Over, two_sessions: Two
) -> None:
    _, new = two_sessions
    app = over(session=new.session_id)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "model_called" in timeline_text(app), "the timeline")
        js = nc.jetstream()
        await js.publish(f"oopav.ev.session.{new.session_id}.plan_proposed", b"{garbage")
        await until(pilot, lambda: "undecodable" in timeline_text(app), "the bad entry")
        assert "plan_proposed" in timeline_text(app).split("undecodable", 1)[1]
        await until(pilot, lambda: "1 undecodable" in app.status_text()[0], "skipped count")
        # Still live after it.
        await append(nc, new.act())
        await until(pilot, lambda: "action_applied" in timeline_text(app), "a later event")
        assert app.is_running


async def test_a_server_that_goes_away_shows_a_status_line(tmp_path: Path) -> None:
    from oopav.bus.server import EmbeddedServer
    from oopav.bus.store import connect
    from oopav.bus.streams import ensure_streams

    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    url = server.start()
    store = SnapshotStore(tmp_path / "snapshots")
    nc = await connect(url, name="tui-test")
    try:
        await ensure_streams(nc.jetstream())
        b = SessionBuilder("survive a restart", seed=21)
        await append(nc, b.until_plan())
        app = OopavTUI(Feed(nc, store, url), clock=ManualClock(T0))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: len(app.visible_sessions()) == 1, "a row")
            assert not app.query_one("#status").has_class("bad")
            server.stop()
            await until(pilot, lambda: app.query_one("#status").has_class("bad"), "status")
            assert "unavailable" in app.status_text()[0] or "went away" in app.status_text()[0]
            await pilot.press("enter")  # the app still works on what it has
            assert app.selected == b.session_id
            await pilot.press("escape", "r")
            assert app.is_running
            assert app.visible_sessions() == [b.session_id]
    finally:
        server.stop()
        with contextlib.suppress(Exception):  # the connection is already gone
            await nc.close()
        store.close()


async def test_a_session_waiting_for_a_person_is_answered_from_the_tui(
    nc: Any, snapshots: Any, nats_url: str
) -> None:
    from oopav.events import catalog as ev

    waiting = SessionBuilder("Delete the whole repository and force-push", seed=21, start=T0)
    question = "This task is rated black (destructive). Proceed anyway?"
    events = waiting.until_plan()[:4]
    waiting.last = events[-1]
    asked = waiting.next(
        ev.HumanInputRequested,
        "orient",
        question=question,
        options=["abort", "proceed"],
        kind="black_risk",
        deadline=T0 + timedelta(hours=1),
    )
    await append(nc, [*events, asked])
    sid = waiting.session_id
    app = app_over(nc, snapshots, nats_url, session=sid)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: question in summary_text(app), "the question")
        summary = summary_text(app)
        assert "Waiting for a person" in summary and "answers: abort, proceed" in summary
        assert "phase waiting_for_human" in summary
        await pilot.press("a")
        box = app.query_one("#answer", Input)
        assert box.has_focus and question in box.placeholder
        # An answer the question does not understand is refused and nothing is appended.
        for key in "maybe":
            await pilot.press(key)
        await pilot.press("enter")
        assert app.last_answer is None and box.has_focus
        box.value = ""
        for key in "proceed":
            await pilot.press(key)
        await pilot.press("enter")
        await until(pilot, lambda: app.last_answer is not None, "the answer published")
        assert not box.has_focus
        await until(pilot, lambda: "Waiting for a person" not in summary_text(app), "answered")
    stored = [e for _, e in await EventStore(nc).read("session", sid)]
    answers = [e for e in stored if e.type == "human_input_provided"]
    assert len(answers) == 1
    assert answers[0].answer == "proceed" and answers[0].request_id == asked.id
    assert answers[0].actor.startswith("cli.answer")  # exactly what `oopav answer` appends
    assert app.last_answer == {
        "session_id": sid,
        "answer_id": answers[0].id,
        "request_id": asked.id,
    }


async def test_timers_that_tick_during_shutdown_do_not_crash_the_app(
    over: Over, two_sessions: Two
) -> None:
    """The status and age timers run until Textual stops them, which is after the widgets are
    removed at exit: a tick in between must not turn a clean exit into a traceback."""
    app = over()
    async with showing_two(app) as (_, pilot):
        await pilot.press("q")
    assert app.return_code == 0
    app._update_status()  # the widgets are gone now, as they are for a late tick
    app._refresh_ages()
