"""The training runs view of the TUI (key ``t``): the runs on the stream and, for the selected
run, its reward mean, loss and format validity per logged step as sparklines, following live.

Runs are aggregates on the event stream (``oopav.ev.run.<id>.*``, docs/training.md). The
screen reads them with one ordered consumer from the first run event — history, then live
events, through one subscription — and folds them with :func:`oopav.trainer.runs.fold_run`,
the fold ``oopav runs`` uses. As in the sessions view, the NATS callback only folds and posts
one coalesced message; the widgets render on the app's own loop. It never appends an event.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Sparkline, Static

from oopav.trainer.runs import fold_run

RUN_SUBJECT = "oopav.ev.run.>"
COLUMNS = (
    ("id", "run"),
    ("recipe", "recipe"),
    ("status", "status"),
    ("steps", "steps"),
    ("loss", "loss"),
    ("reward", "reward"),
    ("exact", "exact"),
)
# (row key of the series, label): what the sparklines show, top to bottom.
SERIES = (("rewards", "reward mean"), ("losses", "loss"), ("validity", "validity"))
STATUS_STYLE = {"completed": "green", "failed": "bold red", "running": "yellow"}
Line = tuple[str, str]


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


def run_cells(row: dict[str, Any]) -> tuple[str, ...]:
    ev = row.get("last_eval") or {}
    exact = ev.get("exact", ev.get("reward_srl"))
    return (
        row["run_id"][:13],
        row["recipe"],
        row["status"],
        str(row["steps"]),
        _fmt(row.get("last_loss")),
        _fmt(row.get("last_reward")),
        _fmt(exact),
    )


def values(row: dict[str, Any], key: str) -> list[float]:
    """A series of the run as plotted: the values of its ``[step, value]`` points."""
    return [float(v) for _, v in row.get(key) or []]


def series_label(row: dict[str, Any], key: str, label: str) -> str:
    points = row.get(key) or []
    if not points:
        return f"{label}: no points yet"
    ys = [v for _, v in points]
    return (
        f"{label}: last {ys[-1]:.3f} at step {points[-1][0]}  "
        f"min {min(ys):.3f}  max {max(ys):.3f}  ({len(ys)} steps)"
    )


def detail_lines(row: dict[str, Any]) -> list[Line]:
    out: list[Line] = [
        (f"run {row['run_id']}", "bold"),
        (
            f"{row['recipe']} · {row['status']} · {row['steps']} steps",
            STATUS_STYLE.get(row["status"], ""),
        ),
    ]
    if row.get("base_model"):
        out.append((f"base model {row['base_model']}", ""))
    if row.get("output_dir"):
        out.append((f"output {row['output_dir']}", ""))
    if row.get("dataset_hash"):
        out.append((f"dataset sha256 {row['dataset_hash'][:16]}", "dim"))
    for path in row.get("checkpoints") or []:
        out.append((f"checkpoint {path}", ""))
    ev = row.get("last_eval") or {}
    if ev:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in sorted(ev.items()) if k != "n")
        out.append((f"evaluation: {shown}", "cyan"))
    if row.get("error"):
        out.append((f"error: {row['error']}", "red"))
    return out


class RunsModel:
    """Runs folded from their events, as ``oopav runs`` folds them."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.skipped = 0

    def apply_raw(self, data: bytes) -> str | None:
        from oopav.events.codec import EventDecodeError, decode

        try:
            event = decode(data)
        except EventDecodeError:
            self.skipped += 1
            return None
        fold_run(self.rows, event)
        return event.aggregate_id

    def ordered(self) -> list[dict[str, Any]]:
        """Newest first (run ids are time-ordered, as the start times are)."""
        return sorted(
            self.rows.values(), key=lambda r: (r["started_at"] or "", r["run_id"]), reverse=True
        )


class RunsChanged(Message):
    """Runs changed (the screen re-renders what it shows)."""


class RunsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]
    CSS = """
    #runs-title { height: 1; padding: 0 1; background: $panel; }
    #runs { width: 3fr; }
    #run-detail { width: 4fr; border: round $primary; padding: 0 1; }
    #run-detail Sparkline { height: 3; margin-bottom: 1; }
    .series-label { height: 1; }
    """

    def __init__(self, nc: Any) -> None:
        super().__init__()
        self.nc = nc
        self.model = RunsModel()
        self.selected: str | None = None
        self._posted = False

    def compose(self) -> ComposeResult:
        yield Static("training runs · oopav.ev.run.> (live)", id="runs-title")
        with Horizontal():
            yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
            with Vertical(id="run-detail"):
                yield Static("no training runs on the stream yet", id="run-summary")
                for key, _label in SERIES:
                    yield Static("", id=f"label-{key}", classes="series-label")
                    yield Sparkline([], id=f"spark-{key}")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self.run_worker(self._follow(), name="runs", exclusive=True, exit_on_error=False)

    async def _follow(self) -> None:
        from nats.js.api import ConsumerConfig, DeliverPolicy

        from oopav.tui.feed import Feed

        async def on_msg(msg: Any) -> None:
            if self.model.apply_raw(msg.data) is not None and not self._posted:
                self._posted = True
                self.post_message(RunsChanged())

        try:
            sub = await self.nc.jetstream().subscribe(
                RUN_SUBJECT,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.ALL,
                config=ConsumerConfig(),
                cb=on_msg,
            )
        except Exception as exc:  # the view reads; a lost server is shown, not raised
            with contextlib.suppress(NoMatches):  # unless the screen went meanwhile
                self.query_one("#run-summary", Static).update(
                    Text(f"cannot read training runs: {exc}", style="red")
                )
            return
        try:
            await asyncio.Event().wait()  # until the screen goes (the worker is cancelled)
        finally:
            await Feed.close(sub)

    @on(RunsChanged)
    def _runs_changed(self) -> None:
        self._posted = False
        try:
            table = self.query_one("#runs", DataTable)
        except NoMatches:  # posted by a NATS callback while the screen goes: nothing to draw
            return
        keys = {str(k.value) for k in table.rows}
        rows = self.model.ordered()
        if {r["run_id"] for r in rows} - keys:
            # A new run: rebuild in order (newest first), keeping the cursor on its run.
            table.clear()
            for r in rows:
                table.add_row(*self._styled(r), key=r["run_id"])
            if self.selected in self.model.rows:
                table.move_cursor(row=table.get_row_index(self.selected))
        else:
            for r in rows:
                for (col, _), value in zip(COLUMNS, self._styled(r), strict=True):
                    table.update_cell(r["run_id"], col, value)
        if self.selected is None and rows:
            self.selected = rows[0]["run_id"]
        self._render_selected()

    @staticmethod
    def _styled(row: dict[str, Any]) -> list[str | Text]:
        cells: list[str | Text] = list(run_cells(row))
        cells[2] = Text(row["status"], style=STATUS_STYLE.get(row["status"], ""))
        return cells

    @on(DataTable.RowHighlighted, "#runs")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.selected = str(event.row_key.value)
            self._render_selected()

    def _render_selected(self) -> None:
        row = self.model.rows.get(self.selected or "")
        if row is None:
            return
        text = Text()
        for line, style in detail_lines(row):
            text.append(line + "\n", style=style or None)
        try:
            self.query_one("#run-summary", Static).update(text)
            for key, label in SERIES:
                self.query_one(f"#label-{key}", Static).update(Text(series_label(row, key, label)))
                self.query_one(f"#spark-{key}", Sparkline).data = values(row, key)
        except NoMatches:  # the screen went between the message and its handling
            return
