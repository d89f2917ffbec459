"""The training runs view (key t): runs from the run stream and the selected run's reward,
loss and validity curves, following live; driven with Pilot against the real test server."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from test_tui_app import SIZE, app_over, append, until
from textual.widgets import DataTable, Sparkline, Static
from tui_sessions import T0

from oopav.events import run as rv
from oopav.events.catalog import Event
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.projections.store import SnapshotStore
from oopav.tui.runs import RunsModel, RunsScreen, detail_lines, run_cells, series_label


@pytest.fixture
def snapshots(tmp_path: Path) -> Any:
    store = SnapshotStore(tmp_path / "snapshots")
    yield store
    store.close()


class RunBuilder:
    """A training run's events, as oopav.trainer.runs.RunRecorder publishes them."""

    def __init__(self, recipe: str, minute: int) -> None:
        self.clock = ManualClock(T0 + timedelta(minutes=minute), step=timedelta(seconds=1))
        self.started = root_event(
            rv.TrainingStarted,
            handler="trainer",
            aggregate="run",
            clock=self.clock,
            recipe=recipe,
            config={},
            base_model="runs/base",
            output_dir=f"runs/{recipe}",
        )
        self.index = 0

    @property
    def run_id(self) -> str:
        return self.started.aggregate_id

    def next(self, cls: type[Event], **fields: Any) -> Event:
        self.index += 1
        return caused_event(
            cls, self.started, handler="trainer", index=self.index, clock=self.clock, **fields
        )

    def steps(self, points: list[tuple[int, float, float | None, float | None]]) -> list[Event]:
        return [
            self.next(rv.TrainingStepCompleted, step=s, loss=loss, reward_mean=r, validity=v)
            for s, loss, r, v in points
        ]


def spark(screen: RunsScreen, key: str) -> list[float]:
    return list(screen.query_one(f"#spark-{key}", Sparkline).data or [])


def run_rows(screen: RunsScreen) -> list[str]:
    table = screen.query_one("#runs", DataTable)
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(table.row_count)]


async def test_runs_view_lists_runs_and_follows_the_selected_runs_curves(
    nc: Any, snapshots: Any, nats_url: str
) -> None:
    sft = RunBuilder("sft", 1)
    await append(nc, [sft.started, *sft.steps([(10, 2.5, None, None), (20, 1.25, None, None)])])
    grpo = RunBuilder("grpo", 2)
    await append(
        nc,
        [
            grpo.started,
            *grpo.steps([(1, 0.1, -1.0, 0.25), (2, 0.05, -0.5, 0.5), (3, 0.0, 0.25, 1.0)]),
        ],
    )
    app = app_over(nc, snapshots, nats_url)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, RunsScreen), "the runs screen")
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await until(pilot, lambda: len(run_rows(screen)) == 2, "two runs")
        assert run_rows(screen) == [grpo.run_id, sft.run_id]  # newest first
        # The newest run is selected: its curves, one point per logged step.
        await until(pilot, lambda: spark(screen, "rewards") == [-1.0, -0.5, 0.25], "rewards")
        assert spark(screen, "validity") == [0.25, 0.5, 1.0]
        assert spark(screen, "losses") == [0.1, 0.05, 0.0]
        label = str(screen.query_one("#label-rewards", Static).content)
        assert "last 0.250 at step 3" in label and "min -1.000" in label

        # Live: a new step and the end of the run arrive while the view is open.
        await append(nc, grpo.steps([(4, 0.0, 0.75, 1.0)]))
        await until(pilot, lambda: spark(screen, "rewards")[-1:] == [0.75], "a live step")
        await append(nc, [grpo.next(rv.TrainingCompleted, status="completed", steps=4)])
        table = screen.query_one("#runs", DataTable)
        await until(
            pilot, lambda: str(table.get_cell(grpo.run_id, "status")) == "completed", "completed"
        )
        assert str(table.get_cell(grpo.run_id, "reward")) == "0.750"

        # Another run selected: its own curves (an SFT run has a loss, no reward).
        table.move_cursor(row=table.get_row_index(sft.run_id))
        await until(pilot, lambda: spark(screen, "losses") == [2.5, 1.25], "the sft run")
        assert spark(screen, "rewards") == []
        assert "no points yet" in str(screen.query_one("#label-rewards", Static).content)

        # A run that starts now appears on top without moving the selection.
        third = RunBuilder("srl", 3)
        await append(nc, [third.started])
        await until(pilot, lambda: len(run_rows(screen)) == 3, "a third run")
        assert run_rows(screen)[0] == third.run_id and screen.selected == sft.run_id
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RunsScreen), "back")
        # A change posted by the NATS callback just before the screen went is handled after
        # its widgets are gone: nothing to draw, and no traceback.
        screen._runs_changed()
        screen._render_selected()


def test_rows_and_details_are_pure() -> None:
    run = RunBuilder("grpo", 1)
    model = RunsModel()
    from oopav.events.codec import encode

    events = [
        run.started,
        *run.steps([(1, 0.5, -0.2, 0.0), (2, 0.4, 0.3, 1.0)]),
        run.next(rv.CheckpointSaved, step=2, path="runs/grpo/final", final=True),
        run.next(
            rv.EvaluationCompleted, suite="t", model="m", n=4, metrics={"exact": 0.5, "n": 4.0}
        ),
        run.next(rv.TrainingCompleted, status="failed", steps=2, error="boom"),
    ]
    for e in events:
        assert model.apply_raw(encode(e)) == run.run_id
    assert model.apply_raw(b"{garbage") is None and model.skipped == 1
    (row,) = model.ordered()
    assert run_cells(row) == (run.run_id[:13], "grpo", "failed", "2", "0.400", "0.300", "0.500")
    text = "\n".join(line for line, _ in detail_lines(row))
    assert "checkpoint runs/grpo/final" in text and "evaluation: exact 0.500" in text
    assert "error: boom" in text
    assert series_label(row, "validity", "validity").startswith("validity: last 1.000 at step 2")
