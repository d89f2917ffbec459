"""A mission's reflection as a run directory (oopav.reflection.run_export): stats.json,
trajectories.jsonl and selections.jsonl, from the mission's events alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oopav.events import mission as mev
from oopav.events.factory import root_event
from oopav.events.ids import IdGenerator
from oopav.projections.guidance import fold, stats
from oopav.reflection.run_export import run_records, write_run

IDS = IdGenerator(seed=11)
AGG = mev.mission_aggregate_id("m")


def ev(cls: type[Any], **fields: Any) -> Any:
    return root_event(cls, handler="test", aggregate="mission", aggregate_id=AGG, ids=IDS, **fields)


def sig(sid: str, match: bool, confidence: float) -> mev.CandidateSignal:
    return mev.CandidateSignal(
        session_id=sid,
        outcome="success" if match else "failed",
        verdict="pass" if match else "fail",
        label_match=match,
        confidence=confidence,
        guidance_step=1,
    )


def mission() -> list[Any]:
    seed = ev(
        mev.ExperienceLibrarySeeded, entries=[mev.GuidanceEntry(key="G0", text="Keep it small.")]
    )
    applied = ev(
        mev.ReflectionProposed,
        group_id="g1",
        epoch=0,
        signals=[sig("s1", False, 0.9), sig("s2", True, 0.2)],
        action="refine",
    )
    op = ev(
        mev.GuidanceOpApplied,
        op="upsert",
        key="G1",
        text="Run the tests.",
        proposal_id=applied.id,
        step=2,
    )
    ineligible = ev(
        mev.ReflectionRejected,
        group_id="g2",
        epoch=1,
        reason="ineligible",
        detail="contradictions_only: 2/2 match",
        signals=[sig("s3", True, 0.5), sig("s4", True, 0.7)],
        settings={"selection": "label_first"},
    )
    held_out = ev(
        mev.ReflectionProposed,
        group_id="g3",
        epoch=1,
        signals=[sig("s5", False, 0.5)],
        action="refine",
    )
    refused = ev(
        mev.ReflectionRejected,
        group_id="g3",
        epoch=1,
        reason="uplift_below_delta",
        proposal_id=held_out.id,
    )
    return [seed, applied, op, ineligible, held_out, refused]


def test_every_rollout_is_a_trajectory_and_every_group_a_selection() -> None:
    trajectories, selections = run_records(mission())
    rows = [json.loads(t) for t in trajectories]
    assert [(r["group_id"], r["session_id"], r["label_match"]) for r in rows] == [
        ("g1", "s1", False),
        ("g1", "s2", True),
        ("g2", "s3", True),
        ("g2", "s4", True),
        ("g3", "s5", False),
    ]
    picks = [json.loads(s) for s in selections]
    assert picks[0] == {
        "group_id": "g1",
        "epoch": 0,
        "selection": "confidence",
        "selected": "s1",  # the confident, wrong one: why the group was reflected on
        "candidates": 2,
        "eligible": True,
        "outcome": "applied",
        "operations": ["upsert G1"],
    }
    assert picks[1]["selection"] == "label_first" and picks[1]["selected"] == "s4"
    assert (picks[1]["eligible"], picks[1]["outcome"], picks[1]["reason"]) == (
        False,
        "rejected",
        "ineligible",
    )
    assert (picks[2]["outcome"], picks[2]["reason"]) == ("rejected", "uplift_below_delta")


def test_the_run_directory_is_the_same_bytes_for_the_same_events(tmp_path: Path) -> None:
    events = mission()
    st = stats(fold(events, "m"))
    first = [p.read_bytes() for p in write_run(tmp_path / "a", events, st)]
    second = [p.read_bytes() for p in write_run(tmp_path / "b", events, st)]
    assert first == second
    assert json.loads((tmp_path / "a" / "stats.json").read_text())["applied"] == 1
    assert len((tmp_path / "a" / "trajectories.jsonl").read_text().splitlines()) == 5
