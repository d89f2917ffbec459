"""watchdog: ends sessions that wait on a person longer than their wall budget allows, or past
the deadline of a question put to a person (``human_input_requested``).

Handlers are driven by events, so a session waiting for a grant (``permission_requested``)
has nothing to wake it if nobody answers. The watchdog follows the session projection and, once
the wait exceeds ``wall_seconds_per_phase``, appends ``budget_exceeded`` and
``session_completed(aborted)``. Their ids derive from the event the session was waiting on, so
several watchdogs (one per ``oopav up``) append them once; replay injects them like a
person's grant, at the point they arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from nats.aio.client import Client as NATS

from oopav.bus.errors import ConcurrencyConflict
from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.factory import caused_event
from oopav.logging import get_logger
from oopav.projections.session import SessionState

NAME = "watchdog"
log = get_logger("oopav.handlers.watchdog", handler=NAME)


WAITING = ("waiting_permission", "waiting_for_human")


def overdue(state: SessionState, now: datetime) -> tuple[float, float] | None:
    """(waited seconds, limit) when ``state`` waits on a person beyond its wall budget, or
    beyond the deadline of the question it asked."""
    if state.task is None:
        return None
    if state.phase == "waiting_for_human":
        asked = state.human_request
        if asked is None or asked.deadline is None:
            return None
        waited = (now - asked.ts).total_seconds()
        limit = (asked.deadline - asked.ts).total_seconds()
        return (waited, limit) if now > asked.deadline else None
    if state.phase != "waiting_permission":
        return None
    started = state.phase_started.get("waiting_permission")
    if started is None:
        return None
    waited = (now - started).total_seconds()
    limit = state.task.budgets.wall_seconds_per_phase
    return (waited, limit) if waited > limit else None


def expire(state: SessionState, last: Event, now: datetime, clock: Clock) -> list[Event]:
    """The events that end an overdue session (pure: state and time in, events out)."""
    due = overdue(state, now)
    if due is None:
        return []
    waited, limit = due
    if state.phase == "waiting_for_human":
        asked = state.human_request
        assert asked is not None
        return [
            caused_event(
                ev.SessionCompleted,
                last,
                handler=NAME,
                index=0,
                clock=clock,
                outcome="aborted",
                summary=f"no answer to {asked.question!r} before its deadline ({limit:g} s)",
                reason="human_timeout",
            )
        ]
    exceeded = caused_event(
        ev.BudgetExceeded,
        last,
        handler=NAME,
        index=0,
        clock=clock,
        budget="wall_seconds_per_phase",
        limit=limit,
        used=round(waited, 3),
        phase="waiting_permission",
        response="abort",
    )
    done = caused_event(
        ev.SessionCompleted,
        last,
        handler=NAME,
        index=1,
        clock=clock,
        outcome="aborted",
        summary=f"no answer to {', '.join(state.pending_permissions) or 'a permission request'} "
        f"within {limit:g} s",
        reason="permission_timeout",
    )
    return [exceeded, done]


class Watchdog:
    """Tracks waiting sessions from projection updates and expires them on a timer."""

    def __init__(self, nc: NATS, *, interval: float = 5.0, clock: Clock = SYSTEM_CLOCK) -> None:
        self.events = EventStore(nc)
        self.interval = interval
        self.clock = clock
        self.waiting: dict[str, tuple[SessionState, Event]] = {}
        self._stop = asyncio.Event()

    def listener(self, seq: int, event: Event, state: SessionState) -> None:
        """For ``ProjectionRunner(listeners=[...])``: remember sessions that wait."""
        if state.phase in WAITING:
            self.waiting[state.session_id] = (state, event)
        else:
            self.waiting.pop(state.session_id, None)

    async def check(self) -> int:
        """Expire every overdue session now; returns how many were ended."""
        ended = 0
        now = self.clock.now()
        for sid, (state, last) in list(self.waiting.items()):
            outputs = expire(state, last, now, self.clock)
            if not outputs:
                continue
            try:
                await self.events.append_batch(outputs, expected=state.last_sequence)
                ended += 1
                log.warning("session_expired", session_id=sid, reason="permission_timeout")
            except ConcurrencyConflict:
                pass  # something happened meanwhile; the projection will tell us
            self.waiting.pop(sid, None)
        return ended

    async def run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.interval)
            if not self._stop.is_set():
                await self.check()

    def stop(self) -> None:
        self._stop.set()
