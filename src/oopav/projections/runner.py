"""Projection runners: fold the stream into LMDB snapshots and keep them current.

The runner reads ``OOPAV_EVENTS`` with an ordered consumer from ``last_sequence + 1``, folds
each event into the state of its key, and commits the changed states together with the new
position in one LMDB transaction (per batch). A missing snapshot, or one written under another
projection schema, rebuilds from sequence 1. ``wait_for(seq)`` gives read-your-writes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nats.aio.client import Client as NATS
from nats.js.api import ConsumerConfig, DeliverPolicy

from oopav.events.catalog import Event
from oopav.events.codec import REGISTRY, EventDecodeError, Registry
from oopav.logging import get_logger
from oopav.projections import ordered
from oopav.projections import session as session_fold
from oopav.projections.store import Snapshots, SnapshotStore

S = TypeVar("S")
_HIGH_WATER = 20_000  # buffered deliveries before the callback waits for the folder
_YIELD_EVERY = 2_000  # folded events between yields to the event loop
CACHE_STATES = 256  # folded states kept in memory after a commit (the rest are in LMDB)
# ... after a commit while catching up: the map of states changed since the last commit can
# hold ``commit_every`` states anyway, so this adds little to the peak, and a stream that
# interleaves more sessions than CACHE_STATES would otherwise read most of them back from
# LMDB after every commit.
CATCH_UP_STATES = 4096
log = get_logger("oopav.projections")


@dataclass(frozen=True)
class Projection(Generic[S]):
    """A fold keyed by some id: how to key, start and evolve a state."""

    name: str
    schema: int
    state_type: type[S]
    subject: str
    key: Callable[[Event], str | None]
    initial: Callable[[str], S]
    evolve: Callable[[S, Event, int], S]
    # The last sequence folded into a state; lets two runners share one snapshot store.
    version: Callable[[S], int] | None = None


SESSIONS: Projection[session_fold.SessionState] = Projection(
    name="sessions",
    schema=session_fold.SCHEMA,
    state_type=session_fold.SessionState,
    subject="oopav.ev.session.>",
    key=lambda e: e.aggregate_id,
    initial=session_fold.initial,
    evolve=session_fold.evolve,
    version=lambda s: s.last_sequence,
)


class ProjectionRunner(Generic[S]):
    def __init__(
        self,
        nc: NATS,
        store: SnapshotStore,
        projection: Projection[S],
        *,
        registry: Registry = REGISTRY,
        commit_every: int = 25_000,  # while catching up; at the head every event commits
        listeners: list[Callable[[int, Event, S], None]] | None = None,
        on_undecodable: Callable[[Any, EventDecodeError], None] | None = None,
    ) -> None:
        self.nc = nc
        self.projection = projection
        self.snapshots: Snapshots[S] = Snapshots(
            store, projection.name, projection.schema, projection.state_type
        )
        self.registry = registry
        self.commit_every = commit_every
        self.position = 0
        self.skipped = 0
        self.listeners = listeners or []
        # Told about every message the fold skips (``oopav up`` dead-letters them).
        self.on_undecodable = on_undecodable
        self._cache: dict[str, S] = {}
        self._dirty: dict[str, S] = {}
        self._pending = 0  # folded since the last commit
        self._cond = asyncio.Condition()
        self._stop = asyncio.Event()
        self._sub: Any = None
        self._stream = ""  # the stream read (for the undecodable hook)

    # -- state access ---------------------------------------------------------------------

    def get(self, key: str) -> S | None:
        if key in self._cache:
            return self._cache[key]
        return self.snapshots.get(key)

    async def wait_for(self, sequence: int, timeout: float = 10.0) -> None:
        """Return once every event up to ``sequence`` is folded (read-your-writes)."""
        async with self._cond:
            await asyncio.wait_for(self._cond.wait_for(lambda: self.position >= sequence), timeout)

    # -- running --------------------------------------------------------------------------

    def _start_position(self) -> int:
        if not self.snapshots.valid():
            meta = self.snapshots.meta()
            if meta is not None:
                log.info(
                    "projection_schema_changed",
                    projection=self.projection.name,
                    old=meta.schema,
                    new=self.projection.schema,
                )
            self.snapshots.reset()
            return 0
        return self.snapshots.last_sequence()

    async def catch_up(self) -> int:
        """Fold everything currently in the stream and commit; returns the position."""
        self.position = self._start_position()
        await self._consume(follow=False)
        return self.position

    async def run(self) -> None:
        """Catch up, then follow the stream until ``stop()``."""
        self.position = self._start_position()
        await self._consume(follow=True)

    def stop(self) -> None:
        self._stop.set()

    async def _consume(self, follow: bool) -> None:
        # Deliveries are only buffered as (reply subject, payload) when they arrive; a folding
        # task drains the buffer in stream order, so the server keeps sending while we decode
        # and fold (nats-py answers flow control only once its callback has taken the message
        # before, so folding inside the callback stalled delivery). With ``ordered.OrderedReader``
        # deliveries also skip nats-py's per-message header parsing and Msg objects (half of
        # the client time); a client without the internals it needs gets nats-py's ordered
        # consumer. The buffer is bounded: past ``_HIGH_WATER`` messages flow control is held
        # back, and so is the server. The states changed since the last commit are written with
        # the position in one LMDB transaction, every ``commit_every`` events and whenever the
        # runner reaches the head of the stream.
        caught_up = asyncio.Event()
        failure: list[BaseException] = []
        buf: list[tuple[int, int, bytes]] = []  # (stream sequence, pending after it, payload)
        ready = asyncio.Event()
        drained = asyncio.Event()
        drained.set()
        reader: ordered.OrderedReader | None = None

        def fail(exc: BaseException) -> None:
            failure.append(exc)
            caught_up.set()
            drained.set()

        def on_data(seq: int, pending: int, data: bytes) -> None:
            buf.append((seq, pending, data))
            ready.set()
            if len(buf) >= _HIGH_WATER and reader is not None:
                reader.pause()

        async def on_msg(msg: Any) -> None:
            if failure:
                return
            try:
                seq, pending = _position(msg.reply)
            except ValueError as exc:
                fail(exc)
                return
            if not self._stream:
                self._stream = _stream_of(msg.reply)
            buf.append((seq, pending, msg.data))
            ready.set()
            if len(buf) >= _HIGH_WATER:
                drained.clear()
                await drained.wait()

        async def folder() -> None:
            while True:
                await ready.wait()
                ready.clear()
                while buf:
                    chunk = buf[:]
                    buf.clear()
                    drained.set()
                    if reader is not None and reader._paused:
                        await reader.resume()
                    try:
                        await self._fold_chunk(chunk, caught_up)
                    except Exception as exc:  # surface it in the runner
                        fail(exc)
                        return

        sub: Any = None
        if ordered.available(self.nc):
            # Deliveries below nats-py's message objects (see projections/ordered.py).
            reader = ordered.OrderedReader(
                self.nc, self.projection.subject, self.position + 1, on_data, fail
            )
            try:
                pending_at_start = await reader.start()
                self._stream = reader.stream
                if pending_at_start == 0:
                    caught_up.set()
            except BaseException:
                await reader.stop()
                raise
        else:
            sub = await self.nc.jetstream().subscribe(
                self.projection.subject,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                config=ConsumerConfig(opt_start_seq=self.position + 1),
                cb=on_msg,
            )
        fold_task = asyncio.create_task(folder())
        try:
            if sub is not None:
                info = await sub.consumer_info()
                if info.num_pending == 0 and not (info.delivered and info.delivered.consumer_seq):
                    caught_up.set()
            stop = asyncio.create_task(self._stop.wait())
            waiter: asyncio.Task[bool] | None = None
            try:
                while not self._stop.is_set() and not failure:
                    if caught_up.is_set() and not follow:
                        break
                    waiter = asyncio.create_task(caught_up.wait())
                    await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
                    waiter.cancel()
                    if follow:
                        caught_up.clear()
            finally:
                # Also when this task is cancelled: leave no pending waiters behind.
                stop.cancel()
                if waiter is not None:
                    waiter.cancel()
        finally:
            fold_task.cancel()
            drained.set()
            if reader is not None:
                await reader.stop()
            if sub is not None:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
            with contextlib.suppress(asyncio.CancelledError):
                await fold_task
            if self._dirty:
                await self._commit()
        if failure:
            raise failure[0]

    async def _fold_chunk(
        self, chunk: list[tuple[int, int, bytes]], caught_up: asyncio.Event
    ) -> None:
        """Decode and fold buffered deliveries in order; commit at the head of the stream
        and every ``commit_every`` events."""
        decode = self.registry.decode
        key_of = self.projection.key
        evolve = self.projection.evolve
        initial = self.projection.initial
        snapshot_of = self.snapshots.get
        cache = self._cache
        dirty = self._dirty
        listeners = self.listeners
        commit_every = self.commit_every
        # The position and the count since the last commit live in locals in the loop and are
        # stored back before anything that reads them (a commit, a yield, the end).
        position = self.position
        since_commit = self._pending
        for n, (seq, num_pending, data) in enumerate(chunk, start=1):
            if seq <= position:
                continue  # an ordered consumer's reset redelivered what we folded already
            try:
                event = decode(data)
            except EventDecodeError as exc:
                self.skipped += 1
                log.warning("projection_skipped_event", seq=seq, reason=exc.reason)
                if self.on_undecodable is not None:
                    self.on_undecodable(_Skipped(data, self._stream, seq), exc)
                event = None
            if event is not None:
                key = key_of(event)
                if key is not None:
                    state = cache.pop(key, None)  # re-inserted: most recently folded last
                    if state is None:
                        state = snapshot_of(key) or initial(key)
                    state = evolve(state, event, seq)
                    cache[key] = state
                    dirty[key] = state
                    for listener in listeners:
                        listener(seq, event, state)
            position = seq
            since_commit += 1
            if num_pending == 0 or since_commit >= commit_every:
                self.position = position
                self._pending = since_commit = 0
                await self._commit(CACHE_STATES if num_pending == 0 else CATCH_UP_STATES)
                dirty = self._dirty
                if num_pending == 0:
                    caught_up.set()
            elif n % _YIELD_EVERY == 0:
                self.position = position
                self._pending = since_commit
                await asyncio.sleep(0)  # let deliveries (and flow control) through
        self.position = position
        self._pending = since_commit

    async def _commit(self, keep: int = CACHE_STATES) -> None:
        version = self.projection.version
        self.snapshots.commit(
            self._dirty,
            self.position,
            {k: version(v) for k, v in self._dirty.items()} if version else None,
        )
        self._dirty = {}
        # Committed states are in LMDB; the cache keeps the most recently folded ones only,
        # so memory does not grow with the number of sessions a process has seen.
        cache = self._cache
        while len(cache) > keep:
            cache.pop(next(iter(cache)))
        await self._notify()

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()


def _position(reply: str) -> tuple[int, int]:
    """(stream sequence, messages pending) from a JetStream delivery's reply subject, without
    building nats-py's full metadata object (a tenth of a rebuild's time)."""
    tokens = reply.split(".")
    if len(tokens) == 9:  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        return int(tokens[5]), int(tokens[8])
    if len(tokens) >= 12:  # with domain and account hash first
        return int(tokens[7]), int(tokens[10])
    raise ValueError(f"not a JetStream delivery reply subject: {reply!r}")


async def load_session(
    events: Any, snapshots: Snapshots[session_fold.SessionState] | None, session_id: str
) -> session_fold.SessionState:
    """One session's current state: its snapshot (if any) plus the events after it.

    ``events`` is an ``oopav.bus.EventStore``."""
    state = snapshots.get(session_id) if snapshots is not None else None
    start = state.last_sequence + 1 if state is not None else 1
    st = state or session_fold.initial(session_id)
    for seq, event in await events.read(
        "session", session_id, from_seq=start, skip_undecodable=True
    ):
        session_fold.evolve(st, event, seq)
    return st


def _stream_of(reply: str) -> str:
    # $JS.ACK.<stream>.<consumer>... (with or without a domain).
    parts = reply.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "ACK" else ""


class _Skipped:
    """An undecodable delivery as the ``on_undecodable`` hook sees it: the payload and its
    stream position (the fast reader keeps no subject; the hook looks it up when it needs it)."""

    def __init__(self, data: bytes, stream: str, seq: int) -> None:
        from types import SimpleNamespace

        self.subject: str | None = None
        self.data = data
        self.metadata = SimpleNamespace(stream=stream, sequence=SimpleNamespace(stream=seq))
