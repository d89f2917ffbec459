"""Signals, eligibility policies, the strict critic/consolidator contracts and the group field
of the submission contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oopav.decide.reflection import eligibility, group_signals, selected
from oopav.events import catalog as ev
from oopav.events.clock import SYSTEM_CLOCK
from oopav.events.mission import CandidateSignal, TaskSpec
from oopav.handlers.intake import decide_all, reply_for
from oopav.handlers.reflector import ReflectorConfig
from oopav.reflection.groups import normalise_verdict
from oopav.reflection.prompts import (
    CONSOLIDATOR_TEMPLATE,
    ConsolidatorAnswer,
    CriticAnswer,
    ReflectionAnswerError,
    consolidator_request,
    critic_request,
    parse_strict,
    validate_template,
)


def sig(sid: str, match: bool, confidence: float = 0.5) -> CandidateSignal:
    return CandidateSignal(
        session_id=sid,
        outcome="success" if match else "failed",
        verdict="pass" if match else "fail",
        label_match=match,
        confidence=confidence,
    )


MIXED_SELECTED_WRONG = [sig("a", True, 0.2), sig("b", False, 0.9)]
MIXED_SELECTED_RIGHT = [sig("a", True, 0.9), sig("b", False, 0.2)]
ALL_WRONG = [sig("a", False), sig("b", False)]
ALL_RIGHT = [sig("a", True), sig("b", True)]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            "selected_mismatch_or_all_wrong",
            {"mixed_wrong": True, "mixed_right": False, "all_wrong": True, "all_right": False},
        ),
        (
            "contradictions_only",
            {"mixed_wrong": True, "mixed_right": True, "all_wrong": False, "all_right": False},
        ),
        (
            "contradictions_or_all_wrong",
            {"mixed_wrong": True, "mixed_right": True, "all_wrong": True, "all_right": False},
        ),
    ],
)
def test_each_eligibility_policy(policy: str, expected: dict[str, bool]) -> None:
    groups = {
        "mixed_wrong": MIXED_SELECTED_WRONG,
        "mixed_right": MIXED_SELECTED_RIGHT,
        "all_wrong": ALL_WRONG,
        "all_right": ALL_RIGHT,
    }
    got = {name: eligibility(g, policy)[0] for name, g in groups.items()}
    assert got == expected
    ok, reason, why = eligibility(ALL_RIGHT, policy)
    assert (ok, reason) == (False, "ineligible") and policy in why


def test_all_wrong_strategy_manual_review() -> None:
    ok, reason, why = eligibility(ALL_WRONG, all_wrong_strategy="manual_review")
    assert (ok, reason) == (False, "manual_review") and "0/2" in why
    assert eligibility(ALL_WRONG, all_wrong_strategy="reflect_diagnose")[0]
    with pytest.raises(ValueError, match="unknown eligibility policy"):
        eligibility(ALL_WRONG, "sometimes")


def test_selected_is_by_confidence_then_session_id() -> None:
    assert selected([sig("b", True, 0.5), sig("a", False, 0.5)]).session_id == "a"
    assert selected(MIXED_SELECTED_WRONG).session_id == "b"


def test_label_first_selects_a_matching_candidate_then_breaks_ties_by_confidence() -> None:
    # The confident candidate is wrong; label_first answers with the one that matched.
    assert selected(MIXED_SELECTED_WRONG, "label_first").session_id == "a"
    two_right = [sig("c", True, 0.4), sig("b", True, 0.7), sig("a", False, 0.9)]
    assert selected(two_right, "label_first").session_id == "b"
    tied = [sig("d", True, 0.7), sig("b", True, 0.7)]
    assert selected(tied, "label_first").session_id == "b"  # then the lowest session id
    # The group no longer counts as a selected mismatch, so it is not reflected on.
    assert eligibility(MIXED_SELECTED_WRONG)[0] is True
    assert eligibility(MIXED_SELECTED_WRONG, selection="label_first")[:2] == (False, "ineligible")
    with pytest.raises(ValueError, match="unknown selection policy 'best'"):
        selected(MIXED_SELECTED_WRONG, "best")
    # The default is not recorded (old missions replay unchanged); label_first is.
    assert "selection" not in ReflectorConfig().recorded()
    assert ReflectorConfig(selection="label_first").recorded()["selection"] == "label_first"


def _session(
    sid: str, outcome: str, expected: str | None, gates: list[bool], diff: str
) -> list[Any]:
    env: dict[str, Any] = {
        "aggregate_id": sid,
        "correlation_id": sid,
        "actor": "t",
        "ts": SYSTEM_CLOCK.now(),
    }
    group = ev.GroupInfo(group_id="g", expected=expected)  # type: ignore[arg-type]
    out: list[Any] = [ev.TaskSubmitted(id=sid, instruction="i", repo="/r", group=group, **env)]
    for i, passed in enumerate(gates):
        out.append(ev.GateEvaluated(id=f"{sid}-g{i}", gate=f"g{i}", passed=passed, **env))
    out.append(
        ev.ModelCalled(
            id=f"{sid}-m",
            role="actor",
            backend="x",
            request_hash="h",
            request={},
            response="",
            guidance_step=3,
            **env,
        )
    )
    out.append(ev.SessionCompleted(id=f"{sid}-done", outcome=outcome, diff=diff, **env))  # type: ignore[arg-type]
    return out


def test_group_signals_label_match_confidence_and_self_consistency() -> None:
    sessions = {
        "s2": _session("s2", "failed", "pass", [True, False], "d1"),
        "s1": _session("s1", "success", "pass", [True, True], "d1"),
        "s3": _session("s3", "success", "fail", [True], "d2"),
    }
    signals = group_signals(sessions)
    assert [s.session_id for s in signals] == ["s1", "s2", "s3"]
    assert [s.label_match for s in signals] == [True, False, False]  # s3 expected a failure
    assert [s.confidence for s in signals] == [1.0, 0.5, 1.0]
    assert [s.self_consistency for s in signals] == [0.6667, 0.6667, 0.3333]
    assert {s.guidance_step for s in signals} == {3}


def test_verdict_aliases() -> None:
    assert [normalise_verdict(v) for v in ("PASS", "passed", "ok", True, "fail", "Wrong", 0)] == [
        "pass",
        "pass",
        "pass",
        "pass",
        "fail",
        "fail",
        "fail",
    ]
    assert normalise_verdict("maybe") is None


def test_critic_answers_are_strict_json_with_caps() -> None:
    ok = parse_strict(
        json.dumps(
            {"summary": "s", "critique": "c", "candidate_ops": [{"op": "upsert", "text": "t"}]}
        ),
        CriticAnswer,
    )
    assert ok.candidate_ops[0].to_op().text == "t"
    for bad, words in [
        ("", "empty"),
        ("Sure! {", "invalid JSON"),
        ('```json\n{"summary": "s", "critique": "c"}\n```', "invalid JSON"),
        (json.dumps({"summary": "s" * 601, "critique": "c"}), "schema mismatch"),
        (json.dumps({"summary": "s", "critique": "c", "mood": "x"}), "schema mismatch"),
        (json.dumps({"summary": "s"}), "schema mismatch"),
        (json.dumps({"summary": "s", "critique": "c", "issues": ["i"] * 9}), "schema mismatch"),
    ]:
        with pytest.raises(ReflectionAnswerError, match=words):
            parse_strict(bad, CriticAnswer)
    with pytest.raises(ReflectionAnswerError, match="schema mismatch"):
        parse_strict(
            json.dumps(
                {
                    "action": "refine",
                    "summary": "",
                    "critique": "",
                    "operations": [{"op": "upsert", "key": "X1", "text": "t"}],
                }
            ),
            ConsolidatorAnswer,
        )


def test_consolidator_template_is_validated() -> None:
    validate_template(CONSOLIDATOR_TEMPLATE)
    with pytest.raises(ValueError, match="unknown placeholders"):
        validate_template(CONSOLIDATOR_TEMPLATE + "{oops}")
    with pytest.raises(ValueError, match="max_operations"):
        validate_template("{library} {critiques} {allowed_ops} {schema}")
    with pytest.raises(ValueError, match="consolidator template"):
        ReflectorConfig(consolidator_template="{library}")
    with pytest.raises(ValueError, match="max_candidates"):
        ReflectorConfig(max_candidates=7)


def test_requests_render_the_library_and_the_budget() -> None:
    task = TaskSpec(instruction="write 42", repo="/r")
    lib = [("G0", "Keep it small."), ("G3", "Check values.")]
    req = critic_request(
        task, sig("s", False), lib, summary="x", diff="", evidence="", mode="diagnose"
    )
    assert req.role == "reflection_critic" and req.envelope is None
    assert "[G0]. Keep it small.\n[G3]. Check values." in req.messages[1].content
    assert req.sampling.temperature == 0.2
    creq = consolidator_request(
        CONSOLIDATOR_TEMPLATE,
        mission="m",
        step=4,
        library=lib,
        group_id="g",
        signals=[sig("s", False)],
        critiques=[],
        max_operations=2,
    )
    text = creq.messages[0].content
    assert "at most 2 operations" in text and "upsert, remove, merge" in text
    assert "(step 4)" in text and "[G3]. Check values." in text


def test_submission_group_fans_out_and_validates(tmp_path: Any) -> None:
    body = {
        "instruction": "x",
        "repo": str(tmp_path),
        "group": {"k": 3, "expected": "succeeded", "grid": [{"seed": 5}, {"temperature": 0.1}, {}]},
    }
    events = decide_all(json.dumps(body).encode(), 9, 1_700_000_000_000, SYSTEM_CLOCK)
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == 3
    groups = [e.group for e in events]
    assert {g.group_id for g in groups} == {groups[0].group_id}
    assert [g.index for g in groups] == [0, 1, 2]
    assert all(g.members == ids for g in groups)
    assert [(g.temperature, g.seed) for g in groups] == [(0.7, 5), (0.1, 1), (0.7, 2)]
    assert {g.expected for g in groups} == {"pass"}
    assert reply_for(events[0]) == {
        "session_id": ids[0],
        "group_id": groups[0].group_id,
        "session_ids": ids,
    }
    # Deterministic: the same stored submission gives the same ids.
    again = decide_all(json.dumps(body).encode(), 9, 1_700_000_000_000, SYSTEM_CLOCK)
    assert [e.id for e in again] == ids

    def rejected(group: Any) -> ev.TaskRejected:
        out = decide_all(
            json.dumps({"instruction": "x", "repo": str(tmp_path), "group": group}).encode(),
            1,
            1,
            SYSTEM_CLOCK,
        )
        assert len(out) == 1 and isinstance(out[0], ev.TaskRejected)
        return out[0]

    assert rejected({"k": 2, "grid": [{}]}).field == "group.grid"
    assert rejected({"k": 0}).field == "group.k"
    assert rejected({"k": 17}).field == "group.k"
    assert "not a verdict" in rejected({"k": 1, "expected": "maybe"}).error
    assert rejected({"k": 1, "grid": [{"temperature": 3}]}).field == "group.grid.0.temperature"


def test_holdout_prefers_other_tasks_of_the_mission() -> None:
    from oopav.handlers.reflector import holdout_slice
    from oopav.projections.guidance import GuidanceState

    a, b, c = (TaskSpec(instruction=x, repo="/r") for x in "abc")
    state = GuidanceState(mission="m", tasks=[a, b, c])
    assert holdout_slice(state, c, 2) == [a, b]  # held out: not the evidence group's task
    assert holdout_slice(state, c, 3) == [a, b, c]  # too few others: in-sample fills in
    assert holdout_slice(GuidanceState(mission="m"), a, 2) == [a]
