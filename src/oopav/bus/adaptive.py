"""Concurrency that follows load (``--concurrency auto``): how many messages of different
sessions a handler process works on at once, adjusted while it runs.

The rule is additive increase, multiplicative decrease (AIMD), the same shape TCP uses: when
the machine is overloaded (load average per usable core above ``high``) or the process's event
loop lags (a timer fires more than ``max_lag_s`` late), the limit halves, never below
``minimum``; when the machine has room (load per core below ``low``) and the process is using
its whole limit, the limit grows by ``step``, never above ``maximum``; otherwise it stays.
Halving fast and growing slowly keeps a shared two-core machine responsive under a burst and
still lets an idle one fill its cores. Pure: the consumer measures, this decides."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Adaptive:
    minimum: int = 2
    maximum: int = 64
    high: float = 1.5
    low: float = 0.7
    max_lag_s: float = 0.25
    step: int = 2
    every_s: float = 5.0


def next_limit(
    current: int, load_per_core: float, lag_s: float, busy: bool, a: Adaptive
) -> tuple[int, str]:
    """The new limit and why (empty when unchanged). ``busy``: the process held as many
    messages as its limit allowed since the last adjustment."""
    if load_per_core > a.high or lag_s > a.max_lag_s:
        new = max(a.minimum, current // 2)
        why = (
            f"load {load_per_core:.2f} per core > {a.high}"
            if load_per_core > a.high
            else f"event loop {lag_s * 1000:.0f} ms late"
        )
        return new, (why if new != current else "")
    if load_per_core < a.low and busy:
        new = min(a.maximum, current + a.step)
        return new, (
            f"load {load_per_core:.2f} per core < {a.low} and every slot busy"
            if new != current
            else ""
        )
    return current, ""


def load_per_core() -> float:
    """The 1-minute load average over the cores this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return os.getloadavg()[0] / max(1, cores)
