"""Intervals for the rates the benches report: a rate on n held-out tasks is a binomial
proportion, and a learning claim is a difference of two of them.

- :func:`wilson`: the Wilson score 95% interval of k successes in n (good at small n and at
  rates near 0 or 1, where the normal approximation gives intervals outside [0, 1]).
- :func:`newcombe`: Newcombe's hybrid score interval for p1 - p2 (method 10), built from the
  two Wilson intervals; a gain whose interval holds 0 is not shown by the data.
- :func:`paired` and :func:`sign_test`: two policies on the *same* tasks, compared task by
  task — the tasks one solves and the other does not, and the exact sign test on them
  (tighter than two independent intervals, which ignore that most tasks go the same way).
"""

from __future__ import annotations

import math
from typing import Any

Z95 = 1.959964


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of the proportion k/n ((0, 0) when n is 0)."""
    if n <= 0:
        return 0.0, 0.0
    if not 0 <= k <= n:
        raise ValueError(f"k={k} is outside 0..n={n}")
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def newcombe(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> tuple[float, float, float]:
    """(difference, low, high) of k1/n1 - k2/n2 with Newcombe's hybrid score interval."""
    if n1 <= 0 or n2 <= 0:
        return 0.0, 0.0, 0.0
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, max(-1.0, low), min(1.0, high)


def rate(k: int, n: int) -> dict[str, Any]:
    """A rate with its interval, as the benches' JSON carries it."""
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else 0.0, "low": lo, "high": hi}


def fmt_rate(k: int, n: int) -> str:
    """``41.0% [34.2, 48.1] (82/200)``."""
    lo, hi = wilson(k, n)
    return f"{100 * k / max(n, 1):.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({k}/{n})"


def fmt_diff(k1: int, n1: int, k2: int, n2: int) -> str:
    """``+12.5 points [+4.1, +20.6]``: k1/n1 - k2/n2 with its interval."""
    d, lo, hi = newcombe(k1, n1, k2, n2)
    return f"{100 * d:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def paired(base: list[bool], other: list[bool]) -> tuple[int, int]:
    """(won, lost) of ``other`` against ``base`` on the same tasks in the same order: the
    tasks only ``other`` solves, and those only ``base`` solves. Two policies on one
    held-out set differ on a few tasks; these discordant pairs carry the comparison."""
    if len(base) != len(other):
        raise ValueError(f"paired results of different lengths: {len(base)} and {len(other)}")
    won = sum(1 for a, b in zip(base, other, strict=True) if b and not a)
    lost = sum(1 for a, b in zip(base, other, strict=True) if a and not b)
    return won, lost


def sign_test(won: int, lost: int) -> float:
    """Two-sided exact sign test on the discordant pairs (McNemar's exact test): the chance
    of a split at least this uneven if each policy were as likely as the other to win a
    task. 1.0 when no task differs."""
    if won < 0 or lost < 0:
        raise ValueError(f"won={won} and lost={lost} must not be negative")
    n = won + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(won, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


def fmt_paired(base: list[bool], other: list[bool]) -> str:
    """``won 11, lost 1, sign test p = 0.006``."""
    won, lost = paired(base, other)
    return f"won {won}, lost {lost}, sign test p = {sign_test(won, lost):.3f}"
