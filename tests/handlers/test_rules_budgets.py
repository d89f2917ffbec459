"""Budget accounting (oopav.decide.budgets)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oopav.decide import (
    clip_output,
    merge_budgets,
)
from oopav.events.catalog import Budgets

# --- merge ----------------------------------------------------------------------------------


def test_merge_without_overrides_is_the_defaults() -> None:
    assert merge_budgets(Budgets()) == Budgets()
    assert merge_budgets(Budgets(), None, Budgets()) == Budgets()


def test_policy_caps_are_hard_maxima() -> None:
    merged = merge_budgets(
        Budgets(), {"iterations": 10, "model_tokens": 500_000}, {"iterations": 50}
    )
    # The policy lowered iterations: the submission cannot raise it back.
    assert merged.iterations == 10
    # The policy raised the token cap but the session starts at the default until asked.
    assert merged.model_tokens == 200_000


def test_submission_may_lower_or_raise_up_to_the_cap() -> None:
    policy = {"model_tokens": 500_000, "wall_seconds_per_phase": 1200}
    merged = merge_budgets(Budgets(), policy, {"model_tokens": 400_000, "bounces": 1})
    assert merged.model_tokens == 400_000
    assert merged.bounces == 1
    assert merge_budgets(Budgets(), policy, {"model_tokens": 10**9}).model_tokens == 500_000
    # Without a policy cap the default is the cap (deny by default).
    assert merge_budgets(Budgets(), None, {"iterations": 1000}).iterations == 30
    merged = merge_budgets(Budgets(), policy, {"wall_seconds_per_phase": 900})
    assert merged.wall_seconds_per_phase == 900.0 and isinstance(
        merged.wall_seconds_per_phase, float
    )
    assert isinstance(merge_budgets(Budgets(), {"iterations": 10.0}).iterations, int)


@pytest.mark.parametrize(
    ("policy", "submission", "message"),
    [
        ({"iteration": 3}, None, "unknown budget 'iteration' in policy"),
        (None, {"bounces": -1}, "budget 'bounces' in submission must be a finite number >= 0"),
        (None, {"iterations": 0}, "budget 'iterations' in submission must be a finite number > 0"),
        (None, {"bounces": "3"}, "budget 'bounces' in submission"),
        ({"model_tokens": float("inf")}, None, "budget 'model_tokens' in policy"),
    ],
)
def test_merge_rejects_bad_values(
    policy: dict[str, object] | None, submission: dict[str, object] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        merge_budgets(Budgets(), policy, submission)


# --- clip_output ----------------------------------------------------------------------------


def test_short_output_is_untouched() -> None:
    assert clip_output("ok\n", 8, "/a") == "ok\n"
    assert clip_output("é" * 4, 8, "/a") == "é" * 4


def test_long_output_keeps_head_and_tail_and_names_the_artifact() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    clipped = clip_output(text, 400, "artifacts/run-1.log")
    data = clipped.encode()
    assert len(data) <= 400
    assert clipped.startswith("line 0\nline 1\n")
    assert clipped.endswith("line 999\n")
    head, marker_and_tail = clipped.split("\n… [", 1)
    omitted = int(marker_and_tail.split(" bytes omitted", 1)[0])
    assert "; full output: artifacts/run-1.log] …\n" in clipped
    tail = marker_and_tail.split("] …\n", 1)[1]
    # The count is exact: head + omitted + tail = the original.
    assert len(head.encode()) + omitted + len(tail.encode()) == len(text.encode())
    assert text.startswith(head) and text.endswith(tail)
    # More room goes to the tail, where errors are.
    assert len(tail) > len(head)


def test_tiny_budget_returns_only_the_marker() -> None:
    clipped = clip_output("x" * 5000, 10, "/log")
    assert clipped == "… [5000 bytes omitted; full output: /log] …"


@given(
    text=st.text(min_size=0, max_size=3000),
    max_bytes=st.integers(min_value=80, max_value=4000),
)
def test_clip_never_exceeds_and_never_splits_characters(text: str, max_bytes: int) -> None:
    clipped = clip_output(text, max_bytes, "/artifacts/out.log")
    assert len(clipped.encode("utf-8")) <= max_bytes
    if len(text.encode("utf-8")) <= max_bytes:
        assert clipped == text
    else:
        assert "full output: /artifacts/out.log" in clipped
