"""The handler runtime: a pure-ish core per handler, driven by a durable consumer.

For every delivered event the runtime loads the session's state (snapshot + tail from the
stream; the in-process cache is disposable), skips the event when this handler already
answered it (its first output id is derived, so it is in the state), asks the handler to
decide, and appends the outputs atomically with optimistic concurrency on the session. On a
conflict it reloads and decides again, within a bound (invariant 4).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from nats.aio.client import Client as NATS

from oopav.bus.consumer import ConsumerOptions, DeadLetter, Delivery, HandlerConsumer
from oopav.bus.errors import ConcurrencyConflict
from oopav.bus.store import MAX_ATOMIC_BATCH, EventStore, Undecodable
from oopav.events.catalog import Event
from oopav.events.ids import derive_id
from oopav.handlers.ports import Ports
from oopav.logging import get_logger
from oopav.projections.session import SessionState, evolve, initial

E = TypeVar("E", bound=Event)

log = get_logger("oopav.handlers")

MAX_CONFLICT_RETRIES = 5
TERMINAL_PHASES = ("completed", "rejected")


class Handler(Protocol):
    name: str

    # Read-only, so a handler's literal tuple of event types (a fixed-length tuple) matches.
    @property
    def subscribes(self) -> tuple[str, ...]: ...

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]: ...


class SessionCache:
    """Session states folded from the stream, kept current by reading only the tail.

    One cache may serve every handler of a process (``run_handlers`` shares it): a handler's
    outputs are folded in whole as they are appended (the linked events, at the sequences
    the server gave them), so when the next handler of the process receives one of them its
    state is already there, without a round trip to the server. Events another process
    stored later may be missing; the append's optimistic check catches those (a conflict,
    then a reload), as it catches a write between a read and an append."""

    def __init__(self, events: EventStore, max_sessions: int = 512) -> None:
        self.events = events
        self.max_sessions = max_sessions
        self._states: dict[str, SessionState] = {}
        # Per session, the batches being appended, by the sequence they were checked at
        # (two handlers may append to one session at once: one of them will conflict).
        self._pending: dict[str, dict[int, list[Event]]] = {}
        # Per session, the ids of the events this process appended (and folded).
        self._own: dict[str, set[str]] = {}
        self.reads = 0
        self.followed = 0

    async def load(
        self, session_id: str, delivered: tuple[int, Event] | None = None
    ) -> SessionState:
        """The session's state as of its last stored event. ``delivered``: the (stream
        sequence, event) just delivered; no read when the cache already holds its batch."""
        cached = self._states.get(session_id)
        if cached is None and delivered is not None and 0 in self._pending.get(session_id, {}):
            # A new session whose first event this process is appending (the intake's): its
            # delivery may come before the append returns.
            cached = initial(session_id)
        if (
            delivered is not None
            and cached is not None
            and self._fold_delivered(cached, *delivered)
        ):
            self.followed += 1
        else:
            if cached is None:
                cached = initial(session_id)
            start = cached.last_sequence + 1
            self.reads += 1
            for seq, event in await self.events.read_with_undecodable(
                "session", session_id, from_seq=start
            ):
                if isinstance(event, Undecodable):
                    # Garbage on the session's subjects is not part of its state, but it is
                    # part of the subject sequence the next append is checked against.
                    cached.last_sequence = max(cached.last_sequence, seq)
                    continue
                evolve(cached, event, seq)
        if cached.phase in TERMINAL_PHASES:
            # Handlers do nothing more for it: keep memory for the live sessions.
            self.forget(session_id)
            return _copy(cached)
        if len(self._states) >= self.max_sessions and session_id not in self._states:
            evicted = next(iter(self._states))
            self._states.pop(evicted)
            self._own.pop(evicted, None)
        self._states[session_id] = cached
        return _copy(cached)

    def started(self, session_id: str, sequence: int, event: Event) -> None:
        """A session's first event, appended by this process (the intake's ``task_submitted``,
        as stored): the observer of this process then decides on it without a read."""
        if session_id in self._states:
            return
        state = evolve(initial(session_id), event, sequence)
        if state.phase in TERMINAL_PHASES:
            return
        if len(self._states) >= self.max_sessions:
            evicted = next(iter(self._states))
            self._states.pop(evicted)
            self._own.pop(evicted, None)
        self._states[session_id] = state
        self._own.setdefault(session_id, set()).add(event.id)

    def _fold_delivered(self, cached: SessionState, sequence: int, event: Event) -> bool:
        """Bring ``cached`` up to the delivered event without a read, when that is exact."""
        if sequence <= cached.last_sequence:
            # Folded already: no read when this process appended it (the cache then stands
            # at its batch or later, as fresh as this process knows). An event the cache
            # only holds from an earlier read is read again, with whatever was stored since
            # (deciding on the older state would only conflict).
            return event.id in self._own.get(cached.session_id, ())
        # Delivered before its own append returned: it belongs to a batch this process is
        # appending on the cached state. The batch was stored whole, on consecutive sequences.
        # (An event from elsewhere is read, with the rest of its batch: deciding on part of a
        # batch would only conflict, after a model call.)
        pending = self._pending.get(cached.session_id, {}).get(cached.last_sequence)
        if pending is not None:
            ids = [e.id for e in pending]
            # Equal, not only the same id: another process may have stored its own decision
            # on the same input (same derived ids, another timestamp).
            if event.id in ids and pending[ids.index(event.id)] == event:
                first = sequence - ids.index(event.id)
                for i, e in enumerate(pending):
                    evolve(cached, e, first + i)
                self._own.setdefault(cached.session_id, set()).update(ids)
                return True
        return False

    def appending(self, session_id: str, expected: int, linked: Sequence[Event]) -> None:
        """A decision's outputs (as they will be stored) are being appended at ``expected``."""
        if len(linked) <= MAX_ATOMIC_BATCH:
            self._pending.setdefault(session_id, {})[expected] = list(linked)

    def appended(
        self, session_id: str, expected: int, stored: Sequence[tuple[int, Event]] | None
    ) -> None:
        """The append announced by ``appending`` ended (``stored``: the events with their
        sequences, None when it failed)."""
        batches = self._pending.get(session_id)
        if batches is not None:
            batches.pop(expected, None)
            if not batches:
                del self._pending[session_id]
        if stored is None:
            return
        # Folded when the cache still stands where the decision was checked (unless the
        # delivery of one of them folded the batch already); otherwise the next load reads.
        cached = self._states.get(session_id)
        if cached is None:
            return
        if cached.last_sequence == expected:
            for seq, event in stored:
                evolve(cached, event, seq)
        elif cached.last_sequence != stored[-1][0]:
            return  # moved on in between: the next load reads
        if cached.phase in TERMINAL_PHASES:
            self.forget(session_id)
            return
        self._own.setdefault(session_id, set()).update(e.id for _, e in stored)

    def forget(self, session_id: str) -> None:
        self._states.pop(session_id, None)
        self._own.pop(session_id, None)


def _copy(state: SessionState) -> SessionState:
    import msgspec

    # Handlers get their own copy: deciding must not disturb the cache if the append fails.
    return msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=SessionState)


@dataclass
class HandlerRunner:
    nc: NATS
    handler: Handler
    ports: Ports
    options: ConsumerOptions = field(default_factory=ConsumerOptions)
    # Shared by the handlers of one process (``run_handlers``); one of its own otherwise.
    cache: SessionCache | None = None

    def __post_init__(self) -> None:
        if self.cache is None:
            self.cache = SessionCache(EventStore(self.nc))
        self.events = self.cache.events
        if self.ports.guidance is None:
            from oopav.reflection.guidance import StreamGuidance

            self.ports.guidance = StreamGuidance(self.events)
        if self.ports.blobs is None:
            from oopav.history.blobs import BlobStore

            self.ports.blobs = BlobStore(self.nc)
        if self.ports.store is None:
            self.ports.store = self.events
        subjects = [f"oopav.ev.session.*.{t}" for t in self.handler.subscribes]
        self.consumer = HandlerConsumer(
            self.nc,
            self.handler.name,
            subjects,
            self.process,
            options=self.options,
            on_dead_letter=self.dead_lettered,
        )
        self.decisions = 0

    async def process(self, event: Event, delivery: Delivery | None) -> None:
        bound = log.bind(
            handler=self.handler.name, session_id=event.aggregate_id, event_id=event.id
        )
        # A first delivery may be in the cache already (no read); a redelivery, or a retry
        # after a conflict, reads the tail.
        delivered = (
            (delivery.stream_sequence, event)
            if delivery is not None and delivery.num_delivered == 1
            else None
        )
        cache = self.cache
        assert cache is not None
        for attempt in range(MAX_CONFLICT_RETRIES):
            state = await cache.load(event.aggregate_id, delivered if attempt == 0 else None)
            if state.has_event(derive_id(event.id, self.handler.name, 0)):
                bound.debug("already_handled")
                return
            if state.phase == "completed" or state.phase == "rejected":
                return
            outputs = await self.handler.handle(event, state, self.ports, delivery)
            if not outputs:
                return
            expected = state.last_sequence
            sid = event.aggregate_id
            # The state's chain hash is the hash of the event at `expected` (no read for it).
            prev = state.chain_hash if state.chained else None
            linked = await self.events.link(outputs, expected, prev_hash=prev)
            stored = [self.events.canonical(e) for e in linked]
            cache.appending(sid, expected, stored)
            try:
                appended = await self.events.append_batch(linked, expected=expected)
            except ConcurrencyConflict as exc:
                cache.appended(sid, expected, None)
                bound.info("conflict_retry", attempt=attempt, error=str(exc))
                await asyncio.sleep(0.01 * (attempt + 1))
                continue
            except BaseException:
                cache.appended(sid, expected, None)
                raise
            if any(a.duplicate for a in appended):
                cache.appended(sid, expected, None)
                cache.forget(sid)
            else:
                at = [(a.sequence, e) for a, e in zip(appended, stored, strict=True)]
                cache.appended(sid, expected, at)
            self.decisions += 1
            bound.info("decided", emitted=[e.type for e in outputs])
            return
        raise ConcurrencyConflict(
            event.aggregate_id, -1, f"gave up after {MAX_CONFLICT_RETRIES} conflicts"
        )

    async def dead_lettered(self, letter: DeadLetter) -> None:
        """A session input this handler gave up on (it failed on its last delivery, or every
        delivery crashed): end the session rather than leave it waiting forever for an answer
        that will not come. Undecodable payloads only park: the session goes on without them."""
        event = letter.event
        if event is None or event.aggregate != "session":
            return
        from oopav.events.catalog import SessionCompleted
        from oopav.events.factory import caused_event

        error = letter.error or letter.reason
        summary = f"the {self.handler.name} handler gave up on {event.type} (seq {letter.stream_sequence}): {error}"
        for attempt in range(MAX_CONFLICT_RETRIES):
            state = await self.cache.load(event.aggregate_id)  # type: ignore[union-attr]  # __post_init__ sets the cache
            if state.phase in ("completed", "rejected"):
                return
            # Salted: its id differs from the handler's own first output for this input.
            abort = caused_event(
                SessionCompleted,
                event,
                handler=self.handler.name,
                salt=":dead-letter",
                clock=self.ports.clock,
                outcome="aborted",
                summary=summary[:2000],
                # Out of space is its own reason: the session did nothing wrong, the disk did.
                reason="storage"
                if letter.reason == "storage"
                else f"dead_letter:{self.handler.name}",
            )
            try:
                await self.events.append_batch([abort], expected=state.last_sequence)
            except ConcurrencyConflict:
                await asyncio.sleep(0.01 * (attempt + 1))
                continue
            log.error(
                "session_aborted_dead_letter",
                handler=self.handler.name,
                session_id=event.aggregate_id,
                event_id=event.id,
                reason=letter.reason,
                error=error[:300],
            )
            return

    async def run(self) -> None:
        await self.consumer.run()

    def stop(self) -> None:
        self.consumer.stop()


class Emitter:
    """Collects a handler's outputs for one input, numbering them for derived ids."""

    def __init__(self, cause: Event, handler: str, ports: Ports) -> None:
        self.cause = cause
        self.handler = handler
        self.ports = ports
        self.events: list[Event] = []

    def emit(self, cls: type[E], **fields: Any) -> E:
        from oopav.events.factory import caused_event

        event = caused_event(
            cls,
            self.cause,
            handler=self.handler,
            index=len(self.events),
            clock=self.ports.clock,
            **fields,
        )
        recorded = self.ports.recorded_ts.get(event.id) if self.ports.recorded_ts else None
        if recorded is not None:
            import msgspec

            event = msgspec.structs.replace(event, ts=recorded)
        self.events.append(event)
        return event

    def now(self) -> datetime:
        """The time of the decision being made. Replay reads it from the recording, so time
        based decisions (grant expiry, wall budgets) come out the same."""
        if self.ports.recorded_ts:
            recorded = self.ports.recorded_ts.get(self.next_id)
            if recorded is not None:
                return recorded
        return self.ports.clock.now()

    @property
    def next_id(self) -> str:
        return derive_id(self.cause.id, self.handler, len(self.events))


def handler_names(handlers: Sequence[Handler]) -> list[str]:
    return [h.name for h in handlers]
