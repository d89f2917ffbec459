"""`replay --verify` says where a drifted prompt differs, not only that it does."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from oopav.events import catalog as ev
from oopav.replay import compare


def _call(prompt: str, request_hash: str) -> ev.ModelCalled:
    return ev.ModelCalled(
        id="c1",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        aggregate_id="s1",
        correlation_id="s1",
        actor="actor/0",
        role="actor",
        backend="scripted",
        request_hash=request_hash,
        request={"messages": [{"role": "user", "content": f"Plan\n{prompt}\nEnd"}]},
        response="{}",
    )


def test_a_request_hash_drift_names_the_first_differing_line() -> None:
    recorded = [(7, _call("22 | def fetch_page(url):", "a"))]
    replayed = _call("22 | def fetch(url):", "b")
    d = compare(recorded, [msgspec.structs.replace(replayed, completion_tokens=9)])
    # The field named is the request, not whatever else differs (tokens follow from it).
    assert d is not None and d.cause.startswith("request hash drift") and d.field == "request"
    assert "def fetch_page(url):" in d.detail and "def fetch(url):" in d.detail
    assert compare(recorded, [_call("22 | def fetch_page(url):", "a")]) is None


def test_every_divergence_names_the_event_the_field_and_both_values() -> None:
    """Issue 24 §4: `DIVERGED at event #21 … field diff` with an empty detail said nothing."""
    from oopav.replay import ReplayReport

    a = ev.OrientReported(
        id="o1",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        aggregate_id="s1",
        correlation_id="s1",
        actor="orient/0",
        risk_band="green",
        evidence_gap=0.0,
        category="rename",
        complexity=1,
        test_decision="optional",
        memory_examples=[{"session_id": "p", "score": 0.5, "rejected": ["stub the body"]}],
    )
    b = ev.OrientReported(
        id="o1",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        aggregate_id="s1",
        correlation_id="s1",
        actor="orient/0",
        risk_band="green",
        evidence_gap=0.0,
        category="rename",
        complexity=1,
        test_decision="optional",
        memory_examples=[{"session_id": "p", "score": 0.5, "rejected": []}],
    )
    d = compare([(21, a)], [b])
    assert d is not None and d.field == "memory_examples[0].rejected[len 1 != 0]"
    assert d.detail == "recorded '[\"stub the body\"]'; replayed '[]'"
    text = ReplayReport("s1", False, 1, 1, first_divergence=d).describe()
    assert "event #1 (recorded seq 21, orient_reported)" in text
    assert "memory_examples[0].rejected" in text and "stub the body" in text
