"""The guidance fold and its guardrails (pure): keys, merge provenance, rollback, never empty,
per-proposal and per-epoch caps, canonical export."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from oopav.events import mission as mev
from oopav.events.factory import root_event
from oopav.events.ids import IdGenerator
from oopav.projections.guidance import (
    OpsRefused,
    diff_libraries,
    export_library,
    fold,
    library_at,
    plan_operations,
    preview,
    stats,
)

IDS = IdGenerator(seed=7)
AGG = mev.mission_aggregate_id("m")


def ev(cls: type[Any], **fields: Any) -> Any:
    return root_event(cls, handler="test", aggregate="mission", aggregate_id=AGG, ids=IDS, **fields)


def seeded(*texts: str) -> list[Any]:
    return [
        ev(
            mev.ExperienceLibrarySeeded,
            entries=[mev.GuidanceEntry(key=f"G{i}", text=t) for i, t in enumerate(texts)],
            source="test",
        )
    ]


def applied(planned: list[dict[str, Any]], proposal: str | None = None) -> list[Any]:
    return [ev(mev.GuidanceOpApplied, **p, proposal_id=proposal) for p in planned]


def op(kind: str, **kw: Any) -> mev.GuidanceOp:
    return mev.GuidanceOp(op=kind, **kw)  # type: ignore[arg-type]


def plan(state: Any, ops: list[mev.GuidanceOp], **kw: Any) -> list[dict[str, Any]]:
    limits = {"max_operations": 5, "change_cap_per_epoch": 10, "epoch": 0, **kw}
    return plan_operations(state, ops, **limits)


def test_seed_upsert_remove_merge_keys_are_stable_and_never_reused() -> None:
    events = seeded("a", "b", "c")
    state = fold(events)
    assert (state.step, state.next_key) == (1, 3)
    planned = plan(
        state,
        [
            op("upsert", text="d"),
            op("upsert", key="G1", text="b2"),
            op("merge", merged_from=["G0", "G2"], text="a+c", rationale="same idea"),
            op("remove", key="G1"),
        ],
    )
    assert [(p["op"], p["key"]) for p in planned] == [
        ("upsert", "G3"),
        ("upsert", "G1"),
        ("merge", "G4"),
        ("remove", "G1"),
    ]
    events += applied(planned, "p1")
    state = fold(events)
    assert state.lines() == [("G4", "a+c"), ("G3", "d")]
    assert state.step == 5
    assert state.entry("G4").merged_from == ["G0", "G2"]  # type: ignore[union-attr]
    # A removed key is never handed out again.
    nxt = plan(state, [op("upsert", text="e")])
    assert nxt[0]["key"] == "G5"
    # preview gives the same library without touching the state.
    assert preview(state, nxt).lines()[-1] == ("G5", "e")
    assert state.lines() == [("G4", "a+c"), ("G3", "d")]


@pytest.mark.parametrize(
    ("ops", "reason", "words"),
    [
        ([op("remove", key="G0"), op("remove", key="G1")], "invalid_operation", "empty"),
        ([op("remove", key="G9")], "invalid_operation", "G9"),
        ([op("upsert", key="G9", text="x")], "invalid_operation", "leave key out"),
        ([op("merge", merged_from=["G0"], text="x")], "invalid_operation", "fewer than two"),
        ([op("upsert", text="  ")], "invalid_operation", "no text"),
        ([op("upsert", text="x" * 700)], "invalid_operation", "limit"),
        ([], "invalid_operation", "at least one"),
        ([op("upsert", text=str(i)) for i in range(6)], "budget", "at most 5"),
    ],
)
def test_guardrails_refuse(ops: list[mev.GuidanceOp], reason: str, words: str) -> None:
    state = fold(seeded("a", "b"))
    with pytest.raises(OpsRefused) as info:
        plan(state, ops)
    assert info.value.reason == reason
    assert words in info.value.detail


def test_change_cap_per_epoch_counts_applied_operations() -> None:
    events = seeded("a")
    group = ev(mev.ReflectionProposed, group_id="g1", epoch=2, signals=[])
    events.append(group)
    state = fold(events)
    events += applied(plan(state, [op("upsert", text="b"), op("upsert", text="c")]), group.id)
    state = fold(events)
    assert state.ops_per_epoch == {2: 2}
    with pytest.raises(OpsRefused) as info:
        plan(state, [op("upsert", text="d")], change_cap_per_epoch=2, epoch=2)
    assert info.value.reason == "budget" and "epoch 2" in info.value.detail
    assert plan(state, [op("upsert", text="d")], change_cap_per_epoch=2, epoch=3)


def test_rollback_restores_a_step_as_a_new_step() -> None:
    events = seeded("a", "b")
    state = fold(events)
    events += applied(plan(state, [op("remove", key="G0"), op("upsert", text="c")]))
    state = fold(events)
    assert state.lines() == [("G1", "b"), ("G2", "c")]
    events.append(ev(mev.GuidanceRolledBack, to_step=1, step=4, by="alice"))
    state = fold(events)
    assert state.step == 4
    assert state.lines() == [("G0", "a"), ("G1", "b")]
    assert library_at(state, 3) == [
        mev.GuidanceEntry(key="G1", text="b"),
        mev.GuidanceEntry(key="G2", text="c"),
    ]
    assert diff_libraries(library_at(state, 3), state.entries) == [
        "- [G2]. c",
        "+ [G0]. a",
    ]
    # Keys keep counting after a rollback: G2 stays retired.
    assert plan(state, [op("upsert", text="d")])[0]["key"] == "G3"
    assert state.history[-1].op == "rollback"


def test_export_is_canonical_bytes_of_the_fold() -> None:
    events = seeded("a", "b")
    events += applied(plan(fold(events), [op("upsert", key="G1", text="b!")]))
    one = export_library(fold(events, "m"))
    assert one == export_library(fold(list(events), "m"))
    assert one.startswith(b'{"entries":[{"evidence_session_ids":[],"key":"G0"')
    assert b'"step":2' in one


def test_stats_precision_acceptance_and_epochs() -> None:
    def sig(sid: str, match: bool, step: int) -> mev.CandidateSignal:
        return mev.CandidateSignal(
            session_id=sid, outcome=None, verdict="pass", label_match=match, guidance_step=step
        )

    events = seeded("a")
    p1 = ev(
        mev.ReflectionProposed,
        group_id="g1",
        epoch=0,
        signals=[sig("s1", False, 1), sig("s2", False, 1)],
    )
    events.append(p1)
    events += applied(plan(fold(events), [op("upsert", text="b")]), p1.id)
    events.append(
        ev(
            mev.ReflectionRejected,
            group_id="g2",
            reason="ineligible",
            epoch=1,
            signals=[sig("s3", True, 2), sig("s4", True, 2)],
        )
    )
    p3 = ev(mev.ReflectionProposed, group_id="g3", epoch=1, signals=[sig("s5", False, 2)])
    events.append(p3)
    events.append(
        ev(mev.ReflectionRejected, group_id="g3", reason="uplift_below_delta", proposal_id=p3.id)
    )
    s = stats(fold(events, "m"))
    assert s["proposals"] == 2 and s["applied"] == 1 and s["acceptance_rate"] == 0.5
    assert s["precision"] == 1.0 and s["precision_judged"] == 1
    assert s["rejected"] == {"ineligible": 1, "uplift_below_delta": 1}
    assert s["label_match_per_epoch"] == {"0": 0.0, "1": 0.5}
    assert s["ops_per_epoch"] == {"0": 1}
    assert s["pending"] == []


def test_mission_names_with_dots_keep_the_subject_shape() -> None:
    assert mev.mission_aggregate_id("team.alpha") == "team~alpha"
    assert mev.mission_name("team~alpha") == "team.alpha"
    e = root_event(
        mev.GuidanceRolledBack,
        handler="t",
        aggregate="mission",
        aggregate_id=mev.mission_aggregate_id("team.alpha"),
        to_step=0,
        clock=type("C", (), {"now": staticmethod(lambda: datetime(2026, 1, 1, tzinfo=UTC))})(),
    )
    assert e.subject == "oopav.ev.mission.team~alpha.guidance_rolled_back"
