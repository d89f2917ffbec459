"""The Textual app: a live sessions table and a session's timeline, summary and diff.

The widgets only render; ``oopav.tui.model`` decides what a row, a timeline entry and a
summary say, and ``oopav.tui.feed`` brings the events. NATS callbacks never touch a widget:
they update the model and post one coalesced message, which the app handles on its own
message loop (so a burst of events, such as the catch-up at start, costs one re-render).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, RichLog, Static

from oopav.events.catalog import Event
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.projections.session import SessionState
from oopav.tui.feed import Feed
from oopav.tui.model import (
    COLUMNS,
    OUTCOME_STYLE,
    SessionRow,
    SessionsModel,
    Timeline,
    row_of,
    summary_lines,
)

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS


def styled(row: SessionRow) -> list[str | Text]:
    """The row's cells with the outcome coloured (styling is the widget's business, not the
    model's). The id stays a ``str``: the table sorts on it."""
    cells: list[str | Text] = list(row.cells())
    cells[2] = Text(row.outcome, style=OUTCOME_STYLE.get(row.outcome, ""))
    return cells


class SessionsChanged(Message):
    """Some sessions' states changed (which ones: ``SessionsModel.take_dirty``)."""


class TimelineChanged(Message):
    """The open session's timeline has new entries."""


class SessionTable(DataTable[str | Text]):
    # DataTable's own enter binding is hidden from the footer; say what it does here.
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select_cursor", "Open")]


class _AnswerBus:
    """What ``publish_answer`` needs of a bus (its event store), over the feed's connection."""

    def __init__(self, nc: NATS) -> None:
        from oopav.bus.store import EventStore

        self.nc = nc
        self.events = EventStore(nc)


class OopavTUI(App[None]):
    TITLE = "oopav"
    CSS = """
    #status { height: 1; padding: 0 1; background: $panel; }
    #status.bad { background: $error; color: $text; }
    #filter { display: none; }
    #filter.shown { display: block; }
    #answer { display: none; dock: bottom; }
    #answer.shown { display: block; }
    #sessions { height: 1fr; }
    #timeline { width: 3fr; border: round $primary; }
    #diff-pane { width: 3fr; border: round $secondary; display: none; }
    #side { width: 2fr; border: round $primary; }
    #detail-view.diff #timeline { display: none; }
    #detail-view.diff #diff-pane { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("slash", "filter", "Filter"),
        Binding("enter", "open", "Open", show=False),
        Binding("escape", "back", "Back"),
        Binding("d", "toggle_diff", "Diff"),
        Binding("r", "refresh", "Refresh"),
        Binding("g", "guidance", "Guidance"),
        Binding("a", "answer", "Answer"),
        Binding("t", "runs", "Training runs"),
        Binding("m", "mark", "Mark for diff"),
        Binding("c", "compare", "Diff with marked"),
        Binding("f", "fork_tree", "Fork tree"),
    ]

    def __init__(
        self,
        feed: Feed,
        *,
        session: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        age_every: float = 5.0,
    ) -> None:
        super().__init__()
        self.feed = feed
        self.model = SessionsModel()
        self.clock = clock
        self.age_every = age_every
        self.filter_text = ""
        self.selected: str | None = None
        self.timeline: Timeline | None = None
        self.feed_error: str | None = None
        self._initial_session = session
        self._sessions_posted = False
        self._timeline_posted = False
        self._written = 0
        self._diff_shown = False
        self._answering: tuple[str, str] | None = None  # (session, question id) being answered
        self.last_answer: dict[str, object] | None = None
        self.marked: str | None = None  # the session `c` compares with (issue 27)
        feed.listen(self._on_state)

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="status")
        with ContentSwitcher(initial="sessions-view", id="views"):
            with Vertical(id="sessions-view"):
                yield Input(placeholder="filter: id, phase, outcome or instruction", id="filter")
                yield SessionTable(id="sessions", cursor_type="row", zebra_stripes=True)
            with Horizontal(id="detail-view"):
                yield RichLog(id="timeline", max_lines=20_000, wrap=False, markup=False)
                with VerticalScroll(id="diff-pane"):
                    yield Static("", id="diff")
                with VerticalScroll(id="side"):
                    yield Static("", id="summary")
        yield Input(id="answer")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(SessionTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self.model.seed(self.feed.stored_states())
        self._rebuild_table()
        self.run_worker(self._follow_sessions(), name="sessions", group="feed", exit_on_error=False)
        self.set_interval(1.0, self._update_status)
        self.set_interval(self.age_every, self._refresh_ages)
        if self._initial_session:
            self.open_session(self._initial_session)

    async def _follow_sessions(self) -> None:
        # The runner runs in its own task: when Textual cancels this worker at exit, the
        # runner is stopped instead of cancelled, so it unsubscribes and commits its snapshots
        # (a cancelled runner would leave its internal waiters pending).
        # Hold this runner: ``r`` may replace ``feed.runner`` while this one winds down.
        this = self.feed.runner
        runner = asyncio.ensure_future(this.run())
        try:
            await asyncio.shield(runner)
        except asyncio.CancelledError:
            this.stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(runner, 5)
            raise
        except Exception as exc:  # the status line says so; the app keeps what it has
            self.feed_error = f"{type(exc).__name__}: {exc}"
        self._update_status()

    def on_unmount(self) -> None:
        self.feed.stop()

    # -- live updates (called from NATS callbacks: model only, then one message) ------------

    def _on_state(self, seq: int, event: Event, state: SessionState) -> None:
        self.model.apply(seq, event, state)
        if not self._sessions_posted:
            self._sessions_posted = True
            self.post_message(SessionsChanged())

    def _on_raw(self, timeline: Timeline, seq: int, subject: str, data: bytes) -> None:
        if timeline is not self.timeline:  # a late message for a session closed since
            return
        if timeline.add(seq, subject, data) is not None and not self._timeline_posted:
            self._timeline_posted = True
            self.post_message(TimelineChanged())

    @on(SessionsChanged)
    def _sessions_changed(self) -> None:
        self._sessions_posted = False
        changed = self.model.take_dirty()
        now = self.clock.now()
        try:
            table = self.query_one(SessionTable)
        except NoMatches:  # posted by a NATS callback while the app shuts down
            return
        keys = self._row_keys()
        added = False
        for sid in changed:
            row = row_of(self.model.states[sid], now)
            if not row.matches(self.filter_text):
                if sid in keys:
                    table.remove_row(sid)
                continue
            if sid in keys:
                for (col, _), value in zip(COLUMNS, styled(row), strict=True):
                    table.update_cell(sid, col, value)
            else:
                table.add_row(*styled(row), key=sid)
                added = True
        if added:
            self._sort_table()
        if self.selected is not None and self.selected in changed:
            self._render_summary()
        from oopav.tui.history import TreeScreen

        if isinstance(self.screen, TreeScreen):
            self.screen.refresh_from(changed)
        self._update_status()

    @on(TimelineChanged)
    def _timeline_changed(self) -> None:
        self._timeline_posted = False
        timeline = self.timeline
        if timeline is None:
            return
        try:
            log = self.query_one("#timeline", RichLog)
        except NoMatches:  # posted by a NATS callback while the app shuts down
            return
        for entry in timeline.entries[self._written :]:
            log.write(Text(entry.text(), style="bold red" if entry.bad else ""))
        self._written = len(timeline.entries)

    # -- the sessions table ------------------------------------------------------------------

    def _row_keys(self) -> set[str]:
        return {str(k.value) for k in self.query_one(SessionTable).rows}

    def _sort_table(self) -> None:
        # Newest first: the ids are UUIDv7, so the id column sorts by creation time. Keep the
        # cursor on the session it was on, not on the position.
        table = self.query_one(SessionTable)
        current = self._cursor_key()
        table.sort("id", reverse=True)
        if current is not None:
            with contextlib.suppress(Exception):
                table.move_cursor(row=table.get_row_index(current))

    def _cursor_key(self) -> str | None:
        table = self.query_one(SessionTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:
            return None
        return None if key.value is None else str(key.value)

    def _rebuild_table(self) -> None:
        table = self.query_one(SessionTable)
        current = self._cursor_key()
        table.clear()
        rows: list[SessionRow] = self.model.rows(self.clock.now(), self.filter_text)
        for row in rows:
            table.add_row(*styled(row), key=row.session_id)
        self.model.take_dirty()
        if current is not None and current in self._row_keys():
            table.move_cursor(row=table.get_row_index(current))

    def _refresh_ages(self) -> None:
        try:
            table = self.query_one(SessionTable)
        except NoMatches:  # a timer tick during shutdown, after the widgets went
            return
        now = self.clock.now()
        for sid in self._row_keys():
            state = self.model.states.get(sid)
            if state is not None:
                table.update_cell(sid, "age", row_of(state, now).age)

    def visible_sessions(self) -> list[str]:
        """The table's session ids, top to bottom (for tests and the footer)."""
        table = self.query_one(SessionTable)
        return [
            str(table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value)
            for i in range(table.row_count)
        ]

    # -- the status line ---------------------------------------------------------------------

    def status_text(self) -> tuple[str, bool]:
        state = self.feed.connection()
        where = self.feed.url or "NATS"
        if state == "closed":
            return (
                f"server at {where} went away and the connection is closed: showing what was "
                "received; restart `oopav tui` once the server is back",
                True,
            )
        if state == "reconnecting":
            return f"server at {where} unavailable: reconnecting…", True
        if self.feed_error:
            return f"live updates stopped ({self.feed_error}); press r to retry", True
        parts = [where, f"{len(self.model.states)} sessions", f"seq {self.feed.position}"]
        if self.filter_text:
            parts.append(f"filter {self.filter_text!r}")
        if self.feed.skipped:
            parts.append(f"{self.feed.skipped} undecodable events skipped (see `oopav dlq`)")
        return " · ".join(parts), False

    def _update_status(self) -> None:
        text, bad = self.status_text()
        try:
            status = self.query_one("#status", Static)
        except NoMatches:  # a timer tick during shutdown, after the widgets went: not an error
            return
        status.update(Text(text))
        status.set_class(bad, "bad")

    # -- the detail view ---------------------------------------------------------------------

    def open_session(self, session_id: str) -> None:
        self.selected = session_id
        self.timeline = Timeline(session_id)
        self._written = 0
        self._timeline_posted = False
        self.query_one("#timeline", RichLog).clear()
        self._set_diff(False)
        self.query_one("#views", ContentSwitcher).current = "detail-view"
        self._render_summary()
        self.query_one("#timeline", RichLog).focus()
        self.run_worker(
            self._follow_timeline(self.timeline),
            name="timeline",
            group="timeline",
            exclusive=True,
            exit_on_error=False,
        )

    async def _follow_timeline(self, timeline: Timeline) -> None:
        def listener(seq: int, subject: str, data: bytes) -> None:
            self._on_raw(timeline, seq, subject, data)

        sub = await self.feed.subscribe_session(timeline.session_id, listener)
        try:
            await asyncio.Event().wait()  # until the worker is cancelled (back, or another)
        finally:
            await self.feed.close(sub)

    def _close_session(self) -> None:
        self.selected = None
        self.timeline = None
        self.workers.cancel_group(self, "timeline")
        self.query_one("#views", ContentSwitcher).current = "sessions-view"
        self.query_one(SessionTable).focus()

    def _render_summary(self) -> None:
        if self.selected is None:
            return
        state = self.model.states.get(self.selected)
        summary = self.query_one("#summary", Static)
        if state is None:
            summary.update(Text(f"session {self.selected}\n(waiting for its events…)"))
        else:
            text = Text()
            for line, style in summary_lines(state, self.clock.now()):
                text.append(line + "\n", style=style or None)
            summary.update(text)
        self._render_diff(state)

    def _render_diff(self, state: SessionState | None) -> None:
        diff = self.query_one("#diff", Static)
        if state is None or not state.diff:
            why = "the session has not completed" if state is None or not state.outcome else ""
            diff.update(Text(f"no diff{': ' + why if why else ''}"))
            return
        diff.update(Syntax(state.diff, "diff", theme="ansi_dark", word_wrap=False))

    def _set_diff(self, shown: bool) -> None:
        self._diff_shown = shown
        self.query_one("#detail-view").set_class(shown, "diff")

    # -- actions -----------------------------------------------------------------------------

    def action_filter(self) -> None:
        if self.selected is not None:
            self._close_session()
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._rebuild_table()
        self._update_status()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.query_one(SessionTable).focus()

    def action_open(self) -> None:
        if self.selected is None:
            key = self._cursor_key()
            if key is not None:
                self.open_session(key)

    @on(DataTable.RowSelected, "#sessions")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.open_session(str(event.row_key.value))

    def action_answer(self) -> None:
        """Answer the open (or highlighted) session's question: an input whose Enter publishes
        ``human_input_provided`` exactly as ``oopav answer`` does."""
        sid = self.selected or self._cursor_key()
        state = self.model.states.get(sid) if sid else None
        asked = state.human_request if state is not None else None
        if state is None or asked is None or not state.human_pending or state.outcome:
            self.notify("this session is not waiting for an answer")
            return
        box = self.query_one("#answer", Input)
        box.placeholder = f"answer ({', '.join(asked.options) or 'free text'}): {asked.question}"
        box.value = ""
        self._answering = (state.session_id, asked.id)
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#answer")
    async def _answer_submitted(self, event: Input.Submitted) -> None:
        import getpass

        from oopav.services import publish_answer

        text = event.value.strip()
        target = self._answering
        if not text or target is None:
            return
        sid, request_id = target
        bus = _AnswerBus(self.feed.nc)
        try:
            reply = await publish_answer(bus, sid, text, getpass.getuser(), request_id=request_id)
        except Exception as exc:  # the server went away: say so, keep the text to retry
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        if "error" in reply:
            self.notify(str(reply["error"]), severity="error")
            return
        self.last_answer = reply
        self.notify(f"answered {text!r}")
        self._hide_answer()

    def _hide_answer(self) -> None:
        self._answering = None
        box = self.query_one("#answer", Input)
        box.value = ""
        box.remove_class("shown")
        if self.selected is not None:
            self.query_one("#timeline", RichLog).focus()
        else:
            self.query_one(SessionTable).focus()

    async def action_back(self) -> None:  # async like App.action_back, which it overrides
        if self.query_one("#answer", Input).has_focus:
            self._hide_answer()
            return
        box = self.query_one("#filter", Input)
        if box.has_focus:
            # Escape in the filter drops it: all sessions again.
            box.value = ""
            box.remove_class("shown")
            self.query_one(SessionTable).focus()
            return
        if self._diff_shown:
            self._set_diff(False)
            return
        if self.selected is not None:
            self._close_session()

    def action_toggle_diff(self) -> None:
        if self.selected is None:
            key = self._cursor_key()
            if key is None:
                return
            self.open_session(key)
        self._set_diff(not self._diff_shown)

    def action_refresh(self) -> None:
        """Re-render everything from the model, restart the live feed (it resumes from the
        snapshots at once, where a consumer that lost its server would wait for missed
        heartbeats) and reload the open session's timeline from its first event."""
        self.feed_error = None
        self.feed.restart()
        self.run_worker(self._follow_sessions(), name="sessions", group="feed", exit_on_error=False)
        self._rebuild_table()
        if self.selected is not None:
            self.open_session(self.selected)
        self._update_status()

    def action_guidance(self) -> None:
        """The guidance view of the selected session's mission (docs/reflection.md)."""
        from oopav.tui.guidance import GuidanceScreen

        sid = self.selected or self._cursor_key()
        state = self.model.states.get(sid) if sid else None
        mission = state.task.mission if state is not None and state.task is not None else None
        if not mission:
            self.notify("this session has no mission: no guidance to show")
            return
        self.push_screen(GuidanceScreen(self.feed.nc, mission))

    def action_runs(self) -> None:
        """Training runs and their reward curves (oopav.tui.runs, docs/tui.md)."""
        from oopav.tui.runs import RunsScreen

        self.push_screen(RunsScreen(self.feed.nc))

    # -- history (issue 27): the diff of two runs, the fork tree -----------------------------

    def action_mark(self) -> None:
        """Mark the open (or highlighted) session; ``c`` on another compares the two."""
        sid = self.selected or self._cursor_key()
        if sid is None:
            return
        self.marked = sid
        self.notify(f"marked {sid}: press c on another session to compare")

    def action_compare(self) -> None:
        from oopav.tui.history import DiffScreen

        sid = self.selected or self._cursor_key()
        if self.marked is None or sid is None:
            self.notify("mark a session with m first, then press c on another")
            return
        if sid == self.marked:
            self.notify("that is the marked session: choose another one")
            return
        self.push_screen(DiffScreen(self.feed.nc, self.marked, sid))

    def action_fork_tree(self) -> None:
        from oopav.tui.history import TreeScreen

        sid = self.selected or self._cursor_key()
        if sid is None:
            return
        self.push_screen(
            TreeScreen(self.feed.nc, lambda: self.model.states, sid, self.open_session)
        )
