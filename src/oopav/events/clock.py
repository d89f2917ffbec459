"""Injected clocks.

Handlers never call ``datetime.now()`` directly: they read time from a ``Clock`` so that
tests and replay can pin it (DESIGN invariant 10).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """Wall-clock time in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to, optionally by a fixed step on every read."""

    def __init__(self, start: datetime | None = None, step: timedelta | float = 0.0) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._step = step if isinstance(step, timedelta) else timedelta(seconds=step)
        self._mono = 0.0

    def now(self) -> datetime:
        current = self._now
        self._now = current + self._step
        return current

    def monotonic(self) -> float:
        self._mono += self._step.total_seconds()
        return self._mono

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._mono += seconds

    def set(self, when: datetime) -> None:
        self._now = when


SYSTEM_CLOCK = SystemClock()
