"""watchdog: ends sessions that wait on a person longer than their wall budget allows, or past
the deadline of a question put to a person (``human_input_requested``).

Handlers are driven by events, so a session waiting for a grant (``permission_requested``)
has nothing to wake it if nobody answers. The watchdog follows the session projection and, once
the wait exceeds ``wall_seconds_per_phase``, appends ``budget_exceeded`` and
``session_completed(aborted)``. Their ids derive from the event the session was waiting on, so
several watchdogs (one per ``oopav up``) append them once; replay injects them like a
person's grant, at the point they arrived.

It also dead-letters what the session projection refuses to apply (``events.chain``): a
terminal event after the session's first one, and the first broken link of a session's hash
chain, each once, on ``oopav.dlq.watchdog`` with the reason, so ``oopav dlq`` shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from nats.aio.client import Client as NATS

from oopav.bus.errors import ConcurrencyConflict
from oopav.bus.store import EventStore
from oopav.bus.streams import EVENTS_STREAM, dlq_subject
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.codec import encode
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
        self.flagged: list[tuple[int, Event, str, str]] = []
        self.dead_lettered = 0
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()

    def listener(self, seq: int, event: Event, state: SessionState) -> None:
        """For ``ProjectionRunner(listeners=[...])``: remember sessions that wait, and events
        the projection refused."""
        if state.phase in WAITING:
            self.waiting[state.session_id] = (state, event)
        else:
            self.waiting.pop(state.session_id, None)
        if state.late_terminals and f" {event.id} " in state.late_terminals[-1]:
            self.flagged.append((seq, event, "late_terminal", state.late_terminals[-1]))
            self._wake.set()
        elif state.chain_break and state.chain_break.startswith(f"seq {seq} ("):
            self.flagged.append((seq, event, "broken_link", state.chain_break))
            self._wake.set()

    async def flush(self) -> int:
        """Dead-letter the flagged events (a flag seen twice, e.g. after a projection rebuild,
        is one record: the message id is derived from the stream sequence)."""
        js = self.events.js
        done = 0
        while self.flagged:
            seq, event, reason, detail = self.flagged[0]
            headers = {
                "Oopav-Dlq-Reason": reason,
                "Oopav-Dlq-Detail": detail[:1000].replace("\r", " ").replace("\n", " "),
                "Oopav-Dlq-Handler": NAME,
                "Oopav-Original-Subject": event.subject,
                "Oopav-Original-Stream": EVENTS_STREAM,
                "Oopav-Original-Sequence": str(seq),
                "Nats-Msg-Id": f"dlq:{NAME}:{EVENTS_STREAM}:{seq}",
            }
            await js.publish(dlq_subject(NAME), encode(event), headers=headers)
            self.flagged.pop(0)
            done += 1
            self.dead_lettered += 1
            log.warning(
                "event_dead_lettered",
                reason=reason,
                session_id=event.aggregate_id,
                event_id=event.id,
                seq=seq,
            )
        return done

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
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
            if not self._stop.is_set():
                try:
                    await self.flush()
                except Exception as exc:  # NATS unavailable: keep the flags, try next round
                    log.warning("dead_letter_failed", error=repr(exc))
                await self.check()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
