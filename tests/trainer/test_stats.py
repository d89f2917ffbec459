"""The intervals the learning and flywheel benches report."""

from __future__ import annotations

import pytest

from oopav.trainer.stats import (
    fmt_diff,
    fmt_paired,
    fmt_rate,
    newcombe,
    paired,
    sign_test,
    wilson,
)


def test_wilson_matches_the_published_values() -> None:
    # Newcombe (1998), table I: 81/263 -> 0.2553-0.3662; 0/10 -> 0-0.2775.
    lo, hi = wilson(81, 263)
    assert lo == pytest.approx(0.2553, abs=5e-4) and hi == pytest.approx(0.3662, abs=5e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=5e-4)
    assert wilson(10, 10)[1] == pytest.approx(1.0)
    assert wilson(0, 0) == (0.0, 0.0)


def test_wilson_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="outside"):
        wilson(5, 4)


def test_newcombe_difference_matches_the_published_example() -> None:
    # Newcombe (1998) example: 56/70 - 48/80 = 0.2000, method 10: 0.0524 to 0.3339.
    d, lo, hi = newcombe(56, 70, 48, 80)
    assert d == pytest.approx(0.2)
    assert lo == pytest.approx(0.0524, abs=5e-4) and hi == pytest.approx(0.3339, abs=5e-4)


def test_a_difference_from_tiny_samples_includes_zero() -> None:
    _, lo, hi = newcombe(2, 10, 0, 10)
    assert lo < 0 < hi
    assert fmt_rate(1, 4).startswith("25.0% [")
    assert fmt_diff(3, 4, 1, 4).startswith("+50.0 points [")


def test_paired_counts_the_tasks_each_side_wins() -> None:
    base = [True, True, False, False, True]
    other = [True, False, True, True, True]
    assert paired(base, other) == (2, 1)
    assert paired(other, base) == (1, 2)
    with pytest.raises(ValueError, match="different lengths"):
        paired(base, other[:2])


def test_sign_test_matches_the_binomial_tail() -> None:
    # 11 won, 1 lost: 2 * (C(12,0) + C(12,1)) / 2**12 = 26 / 4096.
    assert sign_test(11, 1) == pytest.approx(26 / 4096)
    assert sign_test(1, 11) == sign_test(11, 1)  # two-sided: symmetric
    assert sign_test(4, 5) == 1.0  # capped: an even split is no evidence
    assert sign_test(0, 0) == 1.0
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    with pytest.raises(ValueError, match="negative"):
        sign_test(-1, 2)
    assert fmt_paired([False] * 12, [True] * 11 + [False]) == "won 11, lost 0, sign test p = 0.001"
