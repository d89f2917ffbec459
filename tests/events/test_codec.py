"""Codec: every catalog type round-trips as JSON, bad bytes fail with a reason, upcasting."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from helpers.events import NoteV1, NoteV2
from oopav.events import catalog as ev
from oopav.events.actions import SearchReplaceAction, SearchReplaceEdit, WriteFileAction
from oopav.events.codec import (
    REGISTRY,
    EventDecodeError,
    Registry,
    UnknownEventType,
    comparable,
    decode,
    encode,
)

TS = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
ENV: dict[str, Any] = {
    "id": "01900000-0000-7000-8000-000000000001",
    "aggregate_id": "01900000-0000-7000-8000-000000000000",
    "causation_id": "01900000-0000-7000-8000-000000000000",
    "correlation_id": "01900000-0000-7000-8000-000000000000",
    "actor": "test/0",
    "ts": TS,
}
FINDING = ev.Finding(path="a.py", line=3, kind="parse_error", message="bad")
FIELDS: dict[type[ev.Event], dict[str, Any]] = {
    ev.TaskSubmitted: {
        "instruction": "rename fetch",
        "repo": "/tmp/r",
        "mission": "m",
        "budgets": ev.Budgets(iterations=7),
        "policy": {"net": False},
        "model": "scripted:x",
        "test_command": ["pytest", "-q"],
        "examples": [ev.Example(before="a", after="b", path="x.py")],
        "source": ev.IntakeSource(stream_sequence=4, digest="ab", size=10),
    },
    ev.TaskRejected: {"error": "bad", "field": "repo", "code": "not_found", "excerpt": "{}"},
    ev.WorkspacePrepared: {"path": "/w", "base_commit": "abc", "branch": "oopav/x"},
    ev.BaselineReused: {
        "key": "k" * 40,
        "from_session": "s0",
        "from_event": "e0",
        "tree": "t" * 40,
        "environment": "v" * 32,
        "command": ["python", "-m", "pytest"],
        "saved_ms": 1500.0,
    },
    ev.ObservationRecorded: {
        "phase": "change",
        "files_total": 3,
        "parse_errors": [FINDING],
        "stubs": [FINDING],
        "tests": ev.TestRun(argv=["pytest"], exit_code=1, passed=False, output_tail="E"),
        "changed_files": ["a.py"],
        "languages": {"python": 3},
        "observer_action": "replan",
        "reasons": ["r"],
    },
    ev.OrientReported: {
        "risk_band": "yellow",
        "evidence_gap": 0.25,
        "category": "rename",
        "complexity": 2,
        "test_decision": "required",
        "reasons": ["x"],
        "memory_hits": [("s1", 0.5)],
    },
    ev.PlanProposed: {
        "steps": [ev.PlanStep(id=1, description="do", files=["a.py"])],
        "files": ["a.py"],
        "test_decision": "required",
        "attempt": 2,
    },
    ev.ModelCalled: {
        "role": "planner",
        "backend": "scripted",
        "request_hash": "h",
        "request": {"messages": [{"role": "user", "content": "hi"}]},
        "response": "{}",
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "latency_ms": 12.5,
    },
    ev.ActionProposed: {
        "action": SearchReplaceAction(
            edits=[SearchReplaceEdit(path="a.py", search="fetch", replace="fetch_page")]
        ),
        "action_hash": "0123",
        "step": 1,
        "iteration": 2,
    },
    ev.ActionRejected: {
        "action_id": "a1",
        "reason": "no_match",
        "message": "m",
        "details": {"k": 1},
    },
    ev.PermissionRequested: {"scope": "net", "reason": "pip"},
    ev.PermissionGranted: {"scope": "net", "granted_by": "alice", "expires_at": TS, "max_uses": 2},
    ev.PermissionDenied: {"scope": "net", "denied_by": "bob", "reason": "no"},
    ev.ActionApplied: {
        "action_id": "a1",
        "exit_code": 0,
        "diff": "--- a\n+++ b\n",
        "files_changed": ["a.py"],
        "duration_ms": 3.5,
        "artifact": "/tmp/x",
        "grants_used": ["g1"],
    },
    ev.GateEvaluated: {"gate": "tests", "passed": False, "findings": [FINDING], "duration_ms": 9.0},
    ev.VerificationCompleted: {
        "passed": False,
        "gates": ["stubs", "tests"],
        "failed_gate": "tests",
    },
    ev.ReplanTriggered: {"source": "verifier", "reason": "tests failed", "attempt": 2},
    ev.BudgetExceeded: {"budget": "iterations", "limit": 30, "used": 31, "phase": "act"},
    ev.StuckDetected: {"pattern": "repeat", "action_hashes": ["a", "a"], "count": 2},
    ev.CautionRaised: {"level": 1, "reasons": ["3 failures"], "effects": ["smaller steps"]},
    ev.CriticVerdict: {"verdict": "approve", "reasons": ["ok"]},
    ev.SessionCompleted: {
        "outcome": "success",
        "summary": "done",
        "diff": "d",
        "metrics": {"n": 1},
    },
    ev.EvidenceGathered: {
        "round": 1,
        "reason": "red",
        "items": [ev.EvidenceItem(kind="file", target="a.py", found=True, summary="a.py: 3")],
        "trigger": "orient",
    },
    ev.WorkspaceRolledBack: {
        "to_checkpoint": "c0ffee",
        "reason": "negative example",
        "actions": ["a1"],
        "rejected": ["write_file a.py"],
        "source": "observer",
    },
    ev.HumanInputRequested: {
        "question": "Proceed?",
        "options": ["abort", "proceed"],
        "deadline": datetime(2026, 1, 1, 1, tzinfo=UTC),
        "kind": "black_risk",
    },
    ev.HumanInputProvided: {"answer": "proceed", "answered_by": "me", "request_id": "r1"},
    ev.QuestionAnswered: {
        "question": "Keep the alias?",
        "answer": "no",
        "answered_by": "me",
        "action_id": "a1",
        "mission": "m",
        "reused_from": "q0",
        "reused_session": "s0",
        "reused_question": "keep the alias",
        "similarity": 1.0,
    },
    ev.ReplanScored: {
        "replan_id": "r1",
        "source": "verifier",
        "before": {"stubs": True, "tests": False},
        "after": {"stubs": True, "tests": True},
        "score_before": 0.5,
        "score_after": 1.0,
    },
    ev.CandidateEvaluated: {
        "candidate_id": "c1",
        "position": 0,
        "action": WriteFileAction(path="a.py", content="x = 1\n"),
        "action_hash": "h1",
        "score": 3.5,
        "components": {"valid": 1.0, "clean": 1.0},
    },
    ev.CandidateSelected: {
        "candidate_id": "c1",
        "ranking": [("c1", 3.5), ("c2", 0.0)],
        "kind": "plan",
    },
    ev.PlanCandidateEvaluated: {
        "candidate_id": "p1",
        "position": 0,
        "steps": [ev.PlanStep(id=1, description="rename", files=["a.py"])],
        "files": ["a.py"],
        "test_decision": "required",
        "rationale": "one rule",
        "model_call_id": "m1",
        "score": 3.5,
        "components": {"valid": 1.0, "grounded": 1.0, "coverage": 0.75, "size": 0.75},
        "reason": "leaves out b.py",
    },
}


def make(cls: type[ev.Event]) -> ev.Event:
    return cls(schema=cls.SCHEMA, **ENV, **FIELDS[cls])


def test_every_session_event_has_a_sample() -> None:
    assert set(FIELDS) == set(ev.SESSION_EVENTS)


@pytest.mark.parametrize("cls", ev.SESSION_EVENTS, ids=lambda c: c.type_name())
def test_round_trip(cls: type[ev.Event]) -> None:
    event = make(cls)
    data = encode(event)
    wire = json.loads(data)
    assert wire["type"] == cls.type_name()
    assert wire["id"] == ENV["id"] and wire["schema"] == cls.SCHEMA
    back = decode(data)
    assert type(back) is cls
    assert back == event
    # The non-default fields really travelled (not just defaults on both sides).
    for name, value in FIELDS[cls].items():
        assert getattr(back, name) == value
    assert back.subject == f"oopav.ev.session.{ENV['aggregate_id']}.{cls.type_name()}"


def test_unknown_type() -> None:
    data = encode(make(ev.CriticVerdict)).replace(b'"critic_verdict"', b'"no_such_event"')
    with pytest.raises(UnknownEventType) as info:
        decode(data)
    assert info.value.type_name == "no_such_event"
    assert info.value.reason == "unknown_event_type"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json at all", "undecodable"),
        (b"[1, 2]", "undecodable"),
        (b"", "undecodable"),
        (b"\xff\xfe", "undecodable"),
        (b'{"schema": 1}', "undecodable"),  # no type tag
    ],
)
def test_garbage(data: bytes, reason: str) -> None:
    with pytest.raises(EventDecodeError) as info:
        decode(data)
    assert info.value.reason == reason
    assert info.value.detail


def test_invalid_content_of_a_known_type() -> None:
    raw = json.loads(encode(make(ev.CriticVerdict)))
    raw["verdict"] = "maybe"
    with pytest.raises(EventDecodeError) as info:
        decode(json.dumps(raw).encode())
    assert info.value.reason == "invalid_event"
    assert "verdict" in info.value.detail


def test_a_critic_verdict_recorded_before_the_structured_report_decodes_with_defaults() -> None:
    raw = json.loads(encode(make(ev.CriticVerdict)))
    for name in ("top_risks", "missing_tests", "confidence", "shown"):
        raw.pop(name, None)
    old = decode(json.dumps(raw).encode())
    assert isinstance(old, ev.CriticVerdict)
    assert old.top_risks == [] and old.missing_tests == [] and old.shown == []
    assert old.confidence is None
    # And a plan recorded before the adequacy gate has no score.
    plan = json.loads(encode(make(ev.PlanProposed)))
    plan.pop("adequacy", None)
    back = decode(json.dumps(plan).encode())
    assert isinstance(back, ev.PlanProposed) and back.adequacy is None


def test_schema_from_future() -> None:
    raw = json.loads(encode(make(ev.CriticVerdict)))
    raw["schema"] = ev.CriticVerdict.SCHEMA + 1
    with pytest.raises(EventDecodeError) as info:
        decode(json.dumps(raw).encode())
    assert info.value.reason == "schema_from_future"
    assert "upgrade oopav" in str(info.value)


def test_upcaster_in_memory() -> None:
    reg = Registry((NoteV1,))
    old = reg.encode(NoteV1(schema=1, text="hi", **ENV))
    reg.register(NoteV2, replace=True)
    with pytest.raises(EventDecodeError) as info:
        reg.decode(old)
    assert info.value.reason == "no_upcaster"

    @reg.upcaster("test_note", 1)
    def _(raw: dict[str, Any]) -> dict[str, Any]:
        return {**raw, "lang": "en"}

    new = reg.decode(old)
    assert isinstance(new, NoteV2)
    assert (new.schema, new.text, new.lang) == (2, "hi", "en")


def test_register_twice_needs_replace() -> None:
    reg = Registry((NoteV1,))
    with pytest.raises(ValueError, match="already registered"):
        reg.register(NoteV2)


def test_comparable_drops_volatile_fields() -> None:
    a = make(ev.ModelCalled)
    b = msgspec.structs.replace(a, ts=datetime(2030, 1, 1, tzinfo=UTC), latency_ms=999.0)
    assert a != b
    assert comparable(a) == comparable(b)
    assert "ts" not in comparable(a) and "latency_ms" not in comparable(a)
    assert comparable(a)["type"] == "model_called"
    c = msgspec.structs.replace(a, response="other")
    assert comparable(a) != comparable(c)
    applied = comparable(make(ev.ActionApplied))
    assert "duration_ms" not in applied and "artifact" not in applied
    assert applied["diff"] == FIELDS[ev.ActionApplied]["diff"]


def test_registry_knows_every_session_event() -> None:
    assert set(REGISTRY.types().values()) >= set(ev.SESSION_EVENTS)
