"""Budget accounting (oopav.handlers.rules.budgets)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oopav.events.catalog import Budgets
from oopav.handlers.rules import (
    CHECK_ORDER,
    BudgetOverrun,
    BudgetUsage,
    charge_bounce,
    charge_iteration,
    charge_prompt_output,
    charge_retry,
    charge_tokens,
    charge_wall,
    clip_output,
    exceeded,
    merge_budgets,
)


def test_charges_return_new_values_and_leave_old_ones_alone() -> None:
    u0 = BudgetUsage()
    u1 = charge_retry(u0, "act")
    u2 = charge_retry(u1, "act", 2)
    u3 = charge_wall(charge_wall(u2, "plan", 1.5), "plan", 2.0)
    u4 = charge_tokens(charge_iteration(charge_bounce(u3)), 120)
    u5 = charge_prompt_output(charge_prompt_output(u4, 900), 300)
    assert u0 == BudgetUsage() and u0.retries == {}
    assert u1.retries == {"act": 1}
    assert u2.retries == {"act": 3}
    assert u3.wall_seconds == {"plan": 3.5}
    assert (u4.iterations, u4.model_tokens, u4.bounces) == (1, 120, 1)
    # Per-prompt budget: the largest prompt is what counts.
    assert u5.prompt_output_bytes == 900
    with pytest.raises(AttributeError):
        u5.iterations = 3  # type: ignore[misc]


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True])
def test_charges_reject_bad_amounts(bad: float) -> None:
    with pytest.raises(ValueError, match="finite number"):
        charge_tokens(BudgetUsage(), bad)  # type: ignore[arg-type]


def test_limit_is_allowed_and_one_more_is_exceeded() -> None:
    budgets = Budgets(retries_per_phase=3)
    at_limit = charge_retry(BudgetUsage(), "act", 3)
    assert exceeded(budgets, at_limit) is None
    over = charge_retry(at_limit, "act")
    assert exceeded(budgets, over) == BudgetOverrun("retries_per_phase", 3, 4, "act")
    assert exceeded(budgets, over)[:3] == ("retries_per_phase", 3, 4)


def test_every_budget_used_exactly_to_its_limit_is_not_exceeded() -> None:
    b = Budgets()
    at_limits = BudgetUsage(
        retries={"plan": b.retries_per_phase, "act": b.retries_per_phase},
        iterations=b.iterations,
        model_tokens=b.model_tokens,
        wall_seconds={"act": b.wall_seconds_per_phase},
        prompt_output_bytes=b.prompt_output_bytes,
        bounces=b.bounces,
    )
    assert exceeded(b, at_limits) is None


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (BudgetUsage(iterations=31), ("iterations", 30, 31, None)),
        (BudgetUsage(model_tokens=200_001), ("model_tokens", 200_000, 200_001, None)),
        (
            BudgetUsage(wall_seconds={"verify": 601.0}),
            ("wall_seconds_per_phase", 600.0, 601.0, "verify"),
        ),
        (BudgetUsage(bounces=4), ("bounces", 3, 4, None)),
        (BudgetUsage(prompt_output_bytes=9000), ("prompt_output_bytes", 8192, 9000, None)),
    ],
)
def test_each_budget(usage: BudgetUsage, expected: tuple[object, ...]) -> None:
    assert tuple(exceeded(Budgets(), usage) or ()) == expected


def test_check_order_is_fixed_when_several_are_over() -> None:
    everything = BudgetUsage(
        retries={"plan": 9, "act": 9},
        iterations=99,
        model_tokens=10**9,
        wall_seconds={"act": 10**6},
        prompt_output_bytes=10**6,
        bounces=9,
    )
    seen: list[str] = []
    usage = everything
    # Clear each reported budget in turn: the sequence is CHECK_ORDER, phases by name.
    clear = {
        "iterations": {"iterations": 0},
        "model_tokens": {"model_tokens": 0},
        "wall_seconds_per_phase": {"wall_seconds": {}},
        "bounces": {"bounces": 0},
        "prompt_output_bytes": {"prompt_output_bytes": 0},
    }
    while (over := exceeded(Budgets(), usage)) is not None:
        seen.append(over.budget if over.phase is None else f"{over.budget}:{over.phase}")
        if over.budget == "retries_per_phase":
            retries = dict(usage.retries)
            del retries[over.phase]  # type: ignore[arg-type]
            usage = BudgetUsage(**{**_fields(usage), "retries": retries})
        else:
            usage = BudgetUsage(**{**_fields(usage), **clear[over.budget]})
    assert seen == [
        "iterations",
        "model_tokens",
        "retries_per_phase:act",
        "retries_per_phase:plan",
        "wall_seconds_per_phase:act",
        "bounces",
        "prompt_output_bytes",
    ]
    assert set(CHECK_ORDER) == set(Budgets.__struct_fields__)


def _fields(u: BudgetUsage) -> dict[str, object]:
    return {name: getattr(u, name) for name in u.__struct_fields__}


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
        (None, {"bounces": 0}, "budget 'bounces' in submission must be a finite number > 0"),
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
