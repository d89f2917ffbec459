"""The TUI's guidance view (key g), driven with Pilot against the real test server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import RichLog

from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events import mission as mev
from oopav.events.factory import root_event
from oopav.events.ids import IdGenerator
from oopav.projections.guidance import fold
from oopav.projections.store import SnapshotStore
from oopav.tui.app import OopavTUI
from oopav.tui.feed import Feed
from oopav.tui.guidance import GuidanceScreen, guidance_lines

IDS = IdGenerator(seed=3)
AGG = mev.mission_aggregate_id("tui.m")


def mission_events() -> list[Any]:
    def m(cls: type[Any], **f: Any) -> Any:
        return root_event(cls, handler="t", aggregate="mission", aggregate_id=AGG, ids=IDS, **f)

    return [
        m(
            mev.ExperienceLibrarySeeded,
            entries=[
                mev.GuidanceEntry(key="G0", text="Keep changes small."),
                mev.GuidanceEntry(key="G1", text="Read the tests."),
            ],
            source="seed.yaml",
        ),
        m(
            mev.GuidanceOpApplied,
            op="merge",
            key="G2",
            text="Keep changes small; read the tests first.",
            rationale="two lines, one idea",
            merged_from=["G0", "G1"],
            evidence_session_ids=["01a2085a-bc72-7617-b7e2-8737a8a977f4"],
        ),
    ]


def test_guidance_lines() -> None:
    lines = [t for t, _ in guidance_lines(fold(mission_events(), "tui.m"))]
    assert lines[0] == "Library of tui.m — step 2, 1 entries"
    assert lines[1] == "[G2]. Keep changes small; read the tests first."
    assert "step   2  merge    G2 ← G0, G1  Keep changes small; read the tests first." in lines
    assert "            why: two lines, one idea" in lines
    assert "            evidence: 8737a8a977f4" in lines
    assert guidance_lines(fold([], "none")) == [("mission none has no library yet", "dim")]


@pytest.fixture
def snapshots(tmp_path: Path) -> Any:
    store = SnapshotStore(tmp_path / "snapshots")
    yield store
    store.close()


async def test_g_opens_the_mission_library_of_the_session(
    nc: Any, snapshots: Any, nats_url: str
) -> None:
    store = EventStore(nc)
    for e in mission_events():
        await store.append(e)
    with_mission = root_event(
        ev.TaskSubmitted, handler="intake", ids=IDS, instruction="a", repo="/r", mission="tui.m"
    )
    await store.append(with_mission)
    app = OopavTUI(Feed(nc, snapshots, nats_url))
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(500):
            if app.visible_sessions():
                break
            await pilot.pause(0.02)
        await pilot.press("g")
        for _ in range(500):
            if isinstance(app.screen, GuidanceScreen) and app.screen.state is not None:
                break
            await pilot.pause(0.02)
        screen = app.screen
        assert isinstance(screen, GuidanceScreen) and screen.mission == "tui.m"
        log = screen.query_one("#guidance", RichLog)
        text = "\n".join(str(line.text) for line in log.lines)
        assert "[G2]. Keep changes small; read the tests first." in text
        assert "why: two lines, one idea" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, GuidanceScreen)
        await pilot.press("q")
