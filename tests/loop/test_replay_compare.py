"""`replay --verify` says where a drifted prompt differs, not only that it does."""

from __future__ import annotations

from datetime import UTC, datetime

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
    d = compare(recorded, [_call("22 | def fetch(url):", "b")])
    assert d is not None and d.cause.startswith("request hash drift")
    assert "def fetch_page(url):" in d.detail and "def fetch(url):" in d.detail
    assert compare(recorded, [_call("22 | def fetch_page(url):", "a")]) is None
