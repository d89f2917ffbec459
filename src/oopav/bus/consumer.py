"""The handler consumer runtime: a durable pull consumer per handler, with per-session lanes.

- Messages of different sessions are processed concurrently, up to ``concurrency`` messages
  held by this process (``max_ack_pending`` bounds the consumer across processes); messages of
  ONE session (one *lane*, keyed by the aggregate id in the subject) strictly in stream order.
  A lane whose message failed holds its later messages until the redelivery of the failed one
  succeeds or is dead-lettered (or ``hold_timeout`` passes: the redelivery went elsewhere).
- Explicit ack (retried on timeouts: under load an ack that times out is sent again, never a
  crash); ``max_deliver`` with a backoff between redeliveries; ``in_progress()`` heartbeats for
  every held message, queued or in work, so none is redelivered while we still hold it.
- Undecodable or unknown events are terminated and parked on ``oopav.dlq.<handler>`` with the
  reason in headers, and so is a message that failed on its last allowed delivery, or that the
  server gave up on (the max-deliveries advisory: a handler that crashed on it every time).
  ``on_dead_letter`` then turns the dead letter into an outcome (a session abort).
- The pull loop survives outages: any error is logged and retried with backoff; the client
  reconnects and the durable consumer resumes where it stopped. Only a closed connection (the
  client gave up, see ``connect(give_up_after=...)``) ends ``run()``, with ``ConnectionLost``.
- ``stop()`` (wired to SIGTERM/SIGINT by ``run_until_signalled``) drains: no new pulls, every
  lane finishes the message in hand and acks it, queued messages are handed back (nak) in
  order. The durable consumer stays, so a restart resumes where this one stopped.

Several processes running the same handler share its durable consumer: that is how a handler
scales out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import signal
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from oopav import metrics
from oopav.bus import spool, storage
from oopav.bus.adaptive import Adaptive
from oopav.bus.errors import ConnectionLost
from oopav.bus.streams import EVENTS_STREAM, dlq_subject
from oopav.events.catalog import Event
from oopav.events.codec import REGISTRY, EventDecodeError, Registry
from oopav.logging import get_logger

log = get_logger("oopav.bus.consumer")

DEFAULT_CONCURRENCY = 32
# Redeliveries the server gave up on: ``$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>``.
MAX_DELIVERIES_ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"


@dataclass(slots=True)
class Delivery:
    """What a handler knows about the message it is processing."""

    msg: Msg
    stream_sequence: int
    num_delivered: int
    max_deliver: int

    async def in_progress(self) -> None:
        with contextlib.suppress(Exception):
            await self.msg.in_progress()

    @property
    def last_attempt(self) -> bool:
        return self.num_delivered >= self.max_deliver


Handle = Callable[[Event, Delivery], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message given up on, as ``on_dead_letter`` sees it."""

    handler: str
    subject: str
    stream_sequence: int
    reason: str  # undecodable | unknown_event_type | invalid_event | ... | handler_failed | max_deliveries
    error: str
    traceback_digest: str
    event: Event | None  # None when the payload could not be decoded


OnDeadLetter = Callable[[DeadLetter], Awaitable[None]]
# How often a consumer tries to store the dead letters it had to spool (bus/spool.py).
SPOOL_EVERY_S = 2.0


@dataclass
class ConsumerOptions:
    max_deliver: int = 5
    ack_wait: float = 30.0
    # Delays between redeliveries after a failure (nak with delay), last value repeats.
    backoff: Sequence[float] = (0.5, 2.0, 10.0, 30.0)
    # Messages this process holds at once (in work or queued in a lane behind their session's
    # previous message): the bound on concurrency across sessions.
    concurrency: int = DEFAULT_CONCURRENCY
    # The consumer-wide bound (all processes sharing the durable).
    max_ack_pending: int = 1000
    # Kept for compatibility: pulls now ask for as many messages as there is room for.
    fetch_batch: int = 1
    # How long one pull request waits on the server for messages (also the longest a stop
    # waits for the open request to end).
    fetch_timeout: float = 2.0
    heartbeat_every: float | None = None  # default: ack_wait / 3
    # How long a lane waits for the redelivery of its failed message before going on without it
    # (it went to another process). Default: the longest backoff + ack_wait.
    hold_timeout: float | None = None
    deliver_policy: DeliverPolicy = DeliverPolicy.ALL
    stream: str = EVENTS_STREAM
    # ``--concurrency auto``: ``concurrency`` is the starting point and follows the load
    # (bus/adaptive.py); ``load_probe`` measures load per core (tests inject one).
    adaptive: Adaptive | None = None
    load_probe: Callable[[], float] | None = None


def lane_key(subject: str) -> str:
    """Messages with the same key are processed in order: the aggregate of an event subject
    (``oopav.ev.<aggregate>.<id>.<type>``), else the subject itself."""
    parts = subject.split(".")
    if len(parts) >= 5 and parts[0] == "oopav" and parts[1] == "ev":
        return f"{parts[2]}.{parts[3]}"
    return subject


def is_transient(exc: BaseException) -> bool:
    """Errors that mean "the server is away or slow right now", not "this message is bad"."""
    from nats.js.errors import ServiceUnavailableError

    from oopav.bus.errors import AppendRejected

    transient = (
        TimeoutError,
        nats.errors.TimeoutError,
        nats.errors.ConnectionClosedError,
        nats.errors.ConnectionReconnectingError,
        nats.errors.NoRespondersError,
        nats.errors.OutboundBufferLimitError,
        nats.errors.StaleConnectionError,
        ServiceUnavailableError,
        ConnectionError,
    )
    if isinstance(exc, transient):
        return True
    return isinstance(exc, AppendRejected) and "no answer reading" in str(exc)


def traceback_digest(exc: BaseException | None) -> str:
    """A short, stable digest of where an error came from (frames, not values): the same bug
    gives the same digest across deliveries and processes, so dead letters group by cause."""
    if exc is None:
        return ""
    frames = traceback.extract_tb(exc.__traceback__)
    where = "|".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.name}:{f.lineno}" for f in frames)
    return hashlib.sha256(f"{type(exc).__name__}|{where}".encode()).hexdigest()[:16]


class _Lane:
    __slots__ = ("blocked_on", "blocked_since", "current", "extra", "key", "queue", "task")

    def __init__(self, key: str) -> None:
        self.key = key
        self.queue: deque[Msg] = deque()
        self.current: Msg | None = None
        self.extra: list[Msg] = []  # redeliveries of the message in work: acked with it
        self.task: asyncio.Task[None] | None = None
        self.blocked_on: int | None = None
        self.blocked_since = 0.0

    def held(self) -> list[Msg]:
        out = list(self.queue) + self.extra
        if self.current is not None:
            out.append(self.current)
        return out


def _seq(msg: Msg) -> int:
    return int(msg.metadata.sequence.stream)


@dataclass
class HandlerConsumer:
    nc: NATS
    handler: str
    filter_subjects: list[str]
    handle: Handle
    options: ConsumerOptions = field(default_factory=ConsumerOptions)
    registry: Registry = REGISTRY
    decode: bool = True
    on_dead_letter: OnDeadLetter | None = None

    def __post_init__(self) -> None:
        self._stop = asyncio.Event()
        self._stopped = asyncio.Event()
        self._room = asyncio.Event()
        self._pull_done = asyncio.Event()
        # Set when the server has closed the open pull request (filled, expired, refused).
        self._request_closed = asyncio.Event()
        self._request_closed.set()
        self._lanes: dict[str, _Lane] = {}
        self._held = 0
        self._outstanding = 0
        self.processed = 0
        self.parked = 0
        self.failures = 0
        self.peak_lanes = 0
        self.log = log.bind(handler=self.handler)

    @property
    def durable(self) -> str:
        return self.handler.replace(".", "_")

    @property
    def in_flight(self) -> int:
        return self._held

    async def ensure(self) -> None:
        js = self.nc.jetstream()
        cfg = ConsumerConfig(
            durable_name=self.durable,
            name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.options.ack_wait,
            max_deliver=self.options.max_deliver,
            deliver_policy=self.options.deliver_policy,
            max_ack_pending=max(self.options.max_ack_pending, self.options.concurrency),
        )
        if len(self.filter_subjects) == 1:
            cfg.filter_subject = self.filter_subjects[0]
        else:
            cfg.filter_subjects = list(self.filter_subjects)
        await js.add_consumer(self.options.stream, config=cfg)

    # -- the pull loop ---------------------------------------------------------------------

    async def run(self) -> None:
        await self._with_retry("ensure", self.ensure)
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox, cb=self._on_pulled)
        advisory = await self.nc.subscribe(
            f"{MAX_DELIVERIES_ADVISORY}.{self.options.stream}.{self.durable}", cb=self._on_advisory
        )
        heartbeat = asyncio.create_task(self._heartbeat())
        adapting = (
            asyncio.create_task(self._adapt(self.options.adaptive))
            if self.options.adaptive is not None
            else None
        )
        spooler = asyncio.create_task(self._spool_loop())
        self.log.info(
            "consumer_started", filters=self.filter_subjects, concurrency=self.options.concurrency
        )
        next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{self.options.stream}.{self.durable}"
        expires = self.options.fetch_timeout
        errors = 0
        try:
            while not self._stop.is_set():
                if self.nc.is_closed:
                    raise ConnectionLost(_url(self.nc), "the client closed its connection")
                free = self.options.concurrency - self._held
                if free <= 0:
                    self._room.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._room.wait(), 1.0)
                    continue
                if not self.nc.is_connected:
                    # Reconnecting: a pull now would only sit in the client's buffer.
                    await self._sleep(0.2)
                    continue
                self._pull_done.clear()
                self._request_closed.clear()
                self._outstanding = free
                request = {"batch": free, "expires": int(expires * 1e9)}
                try:
                    await self.nc.publish(next_subject, json.dumps(request).encode(), reply=inbox)
                except Exception as exc:
                    errors += 1
                    await self._error_pause("pull_failed", exc, errors)
                    continue
                # The request ends when filled or when the server says it expired (408); if
                # that status is lost (an outage), give it up a little after it expired.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._pull_done.wait(), expires + 2.0)
                if self._missing_consumer:
                    self._missing_consumer = False
                    errors += 1
                    await self._error_pause("consumer_missing", None, errors)
                    with contextlib.suppress(Exception):
                        await self.ensure()
                    continue
                errors = 0
        except asyncio.CancelledError:
            # Cancelled, not stopped: abandon the lanes (their messages come back after
            # ack_wait) rather than wait on work that may never end.
            for lane in self._lanes.values():
                if lane.task is not None:
                    lane.task.cancel()
            raise
        finally:
            await self._let_pull_expire()
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            with contextlib.suppress(Exception):
                await advisory.unsubscribe()
            await self._drain()
            heartbeat.cancel()
            if adapting is not None:
                adapting.cancel()
            spooler.cancel()
            with contextlib.suppress(BaseException):
                await heartbeat
            with contextlib.suppress(BaseException):
                await spooler
            self._stopped.set()
            self.log.info(
                "consumer_stopped",
                processed=self.processed,
                parked=self.parked,
                peak_lanes=self.peak_lanes,
            )

    _missing_consumer = False

    async def _on_pulled(self, msg: Msg) -> None:
        headers = msg.headers or {}
        status = headers.get("Status")
        if status is not None or not msg.reply:
            if status == "100":  # an idle heartbeat
                return
            if status == "503" or (
                status == "409" and "deleted" in headers.get("Description", "").lower()
            ):
                self._missing_consumer = True
            self._outstanding = 0
            self._pull_done.set()
            self._request_closed.set()
            return
        self._outstanding -= 1
        if self._outstanding <= 0:
            self._pull_done.set()
            self._request_closed.set()
        if self._stop.is_set():
            # Pulled while stopping: hand it back now rather than after ack_wait, delayed past
            # the end of our open pull request (an immediate nak would come straight back to
            # it, again and again, until max_deliver ran out).
            with contextlib.suppress(Exception):
                await msg.nak(delay=self.options.fetch_timeout + 1.0)
            return
        self._dispatch(msg)

    async def _let_pull_expire(self) -> None:
        """Before unsubscribing, let the open pull request end (messages it still brings are
        handed back with a nak): a message the server sent to an inbox we already left would
        sit unacknowledged until ack_wait."""
        if self._request_closed.is_set() or not self.nc.is_connected:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._request_closed.wait(), self.options.fetch_timeout + 1.0)

    def _dispatch(self, msg: Msg) -> None:
        try:
            seq = _seq(msg)
        except Exception:  # not a JetStream delivery: nothing to ack
            return
        key = lane_key(msg.subject)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(key)
            self.peak_lanes = max(self.peak_lanes, len(self._lanes))
        self._held += 1
        if lane.current is not None and _seq(lane.current) == seq:
            lane.extra.append(msg)  # redelivered while in work (an outage): ack both
            return
        for i, queued in enumerate(lane.queue):
            if _seq(queued) == seq:
                # A newer delivery of a queued message: keep the newer one, release the old.
                lane.queue[i] = msg
                self._release(1)
                return
        if lane.blocked_on == seq:
            lane.blocked_on = None
        # Keep the lane in stream order (a redelivery comes back behind later messages).
        position = len(lane.queue)
        while position > 0 and _seq(lane.queue[position - 1]) > seq:
            position -= 1
        lane.queue.insert(position, msg)
        self._wake(lane)

    def _wake(self, lane: _Lane) -> None:
        if lane.task is None and lane.blocked_on is None and lane.queue:
            lane.task = asyncio.create_task(self._work(lane))

    async def _work(self, lane: _Lane) -> None:
        try:
            while lane.queue and lane.blocked_on is None:
                if self._stop.is_set():
                    return
                msg = lane.current = lane.queue.popleft()
                try:
                    settled = await self._process(msg)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # never let one message kill the lane
                    self.log.exception("lane_error", error=repr(exc), subject=msg.subject)
                    settled = False
                extra, lane.extra = lane.extra, []
                lane.current = None
                if settled and extra:
                    for dup in extra:
                        await self._ack(dup)
                self._release(1 + len(extra))
                if not settled:
                    lane.blocked_on = _seq(msg)
                    lane.blocked_since = time.monotonic()
        finally:
            lane.task = None
            if not lane.queue and lane.blocked_on is None and lane.current is None:
                self._lanes.pop(lane.key, None)

    def _release(self, n: int) -> None:
        self._held -= n
        self._room.set()

    async def _process(self, msg: Msg) -> bool:
        """Handle one message; True when it is settled (acked or parked), False when it was
        handed back for a redelivery (its lane then waits for it)."""
        meta = msg.metadata
        delivery = Delivery(
            msg=msg,
            stream_sequence=meta.sequence.stream,
            num_delivered=meta.num_delivered,
            max_deliver=self.options.max_deliver,
        )
        if self.decode:
            try:
                event = self.registry.decode(msg.data)
            except EventDecodeError as exc:
                return await self.park(msg, exc.reason, exc.detail)
        else:
            event = msg  # type: ignore[assignment]  # decode=False hands handlers the raw Msg
        started = time.monotonic()
        kind = getattr(event, "type", None) or "submission"  # intake and grants get raw messages
        if delivery.num_delivered > 1:
            metrics.redelivered(self.handler)
        try:
            await self._handle_through_outages(event, delivery)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            metrics.handled(self.handler, kind, time.monotonic() - started, "error")
            self.failures += 1
            bound = self.log.bind(
                event_id=getattr(event, "id", None), session_id=getattr(event, "aggregate_id", None)
            )
            if isinstance(exc, storage.StorageFull):
                bound.error("storage_full_parking", error=repr(exc)[:300])
                return await self.park(
                    msg, "storage", str(exc), event=event if self.decode else None, exc=exc
                )
            if delivery.last_attempt:
                bound.error(
                    "handler_failed_parking", error=repr(exc), delivered=delivery.num_delivered
                )
                return await self.park(
                    msg,
                    "handler_failed",
                    f"{type(exc).__name__}: {exc}",
                    event=event if self.decode else None,
                    exc=exc,
                )
            delay = self._delay(delivery.num_delivered)
            bound.warning(
                "handler_failed_retrying",
                error=repr(exc),
                delay=delay,
                delivered=delivery.num_delivered,
            )
            with contextlib.suppress(Exception):
                await msg.nak(delay=delay)
            return False
        await self._ack(msg)
        self.processed += 1
        metrics.handled(self.handler, kind, time.monotonic() - started)
        return True

    async def _handle_through_outages(self, event: Any, delivery: Delivery) -> None:
        """Handle; when it fails because the server is away (a timeout, a reconnect), wait for
        the connection and try again in place: an outage is not the message's fault, so it
        neither uses up a delivery nor makes the lane wait for a redelivery after ack_wait.
        Handlers are idempotent, so a retry after a publish that did land is a no-op."""
        pause = 0.2
        while_connected = 0
        for _ in range(60):
            try:
                await self._handle_with_space(event, delivery)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not is_transient(exc) or self.nc.is_closed or self._stop.is_set():
                    raise
                if self.nc.is_connected:
                    # A timeout on a healthy connection may be the handler's own: a few
                    # tries, then the normal redelivery path.
                    while_connected += 1
                    if while_connected > 3:
                        raise
                self.log.warning("handler_outage_retry", error=repr(exc), retry_in=pause)
            deadline = time.monotonic() + 600
            while not self.nc.is_connected and time.monotonic() < deadline:
                if self.nc.is_closed:
                    raise ConnectionLost(_url(self.nc), "while handling a message")
                await asyncio.sleep(0.2)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)
        await self._handle_with_space(event, delivery)

    async def _handle_with_space(self, event: Any, delivery: Delivery) -> None:
        """Handle; when a write fails for lack of space, hold the message (the heartbeat keeps
        it in progress, so no delivery is used up) and retry in place until space returns,
        for at most ``OOPAV_STORAGE_PAUSE`` seconds; then StorageFull, which dead-letters it
        with reason ``storage`` (bus/storage.py)."""
        deadline: float | None = None
        pause = 0.5
        while True:
            try:
                await self.handle(event, delivery)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._stop.is_set() or not storage.storage_problem(exc):
                    raise
                now = time.monotonic()
                if deadline is None:
                    limit = storage.pause_from_env()
                    deadline = now + limit
                    self.log.error(
                        "storage_full_paused",
                        error=repr(exc)[:300],
                        session_id=getattr(event, "aggregate_id", None),
                        pause_s=limit,
                    )
                if now >= deadline:
                    raise storage.StorageFull(
                        f"no space to store this handler's output; waited "
                        f"{storage.pause_from_env():.0f}s for space: {exc}"
                    ) from exc
                await self._sleep(min(pause, max(0.0, deadline - now)))
                pause = min(pause * 2, 10.0)
                continue
            if deadline is not None:
                self.log.warning("storage_resumed", session_id=getattr(event, "aggregate_id", None))
            return

    async def _ack(self, msg: Msg) -> None:
        """Ack, retrying timeouts: under load the server may answer late. If it never does the
        message is redelivered, and the handler's idempotency makes that a no-op."""
        delay = 0.1
        for attempt in range(5):
            try:
                await msg.ack_sync(timeout=2.0 + attempt)
                return
            except nats.errors.MsgAlreadyAckdError:
                return
            except Exception as exc:
                if attempt == 4 or self.nc.is_closed:
                    self.log.warning("ack_failed", error=repr(exc), subject=msg.subject)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _delay(self, num_delivered: int) -> float:
        backoff = list(self.options.backoff) or [1.0]
        return backoff[min(num_delivered - 1, len(backoff) - 1)]

    async def _adapt(self, a: Adaptive) -> None:
        """``--concurrency auto``: every ``a.every_s`` seconds, measure the load and how late
        this loop's timer fired, and let ``adaptive.next_limit`` set the limit (logged)."""
        from oopav.bus.adaptive import load_per_core, next_limit

        probe = self.options.load_probe or load_per_core
        step = min(0.5, a.every_s)
        while True:
            busy = False
            lag = 0.0  # the latest this loop's timer fired in the period: the loop's own lag
            deadline = time.monotonic() + a.every_s
            while time.monotonic() < deadline:
                before = time.monotonic()
                await asyncio.sleep(step)
                lag = max(lag, time.monotonic() - before - step)
                busy = busy or self._held >= self.options.concurrency
            current = self.options.concurrency
            new, why = next_limit(current, probe(), lag, busy, a)
            if new != current:
                self.options.concurrency = new
                self.log.info("concurrency_adapted", was=current, now=new, why=why)
                self._room.set()

    async def _heartbeat(self) -> None:
        """``in_progress`` for every held message (in work or queued behind its session's
        previous one), and release lanes whose failed message's redelivery went elsewhere."""
        every = self.options.heartbeat_every or self.options.ack_wait / 3
        hold = self.options.hold_timeout
        if hold is None:
            hold = max(self.options.backoff or [1.0]) + self.options.ack_wait
        lag_at = 0.0
        while True:
            await asyncio.sleep(min(every, 1.0) if hold < every else every)
            now = time.monotonic()
            if metrics.enabled():
                metrics.inflight(
                    self.handler, sum(1 for lane in self._lanes.values() if lane.held())
                )
                if now - lag_at > 5.0:  # one consumer-info request per 5 s, only when scraped
                    lag_at = now
                    with contextlib.suppress(Exception):
                        info = await self.nc.jetstream().consumer_info(
                            self.options.stream, self.durable
                        )
                        metrics.consumer_lag(self.handler, info.num_pending, info.num_ack_pending)
            for lane in list(self._lanes.values()):
                if lane.blocked_on is not None and now - lane.blocked_since > hold:
                    self.log.info("lane_released", lane=lane.key, waited_for=lane.blocked_on)
                    lane.blocked_on = None
                    self._wake(lane)
                for msg in lane.held():
                    with contextlib.suppress(Exception):
                        await msg.in_progress()

    async def _drain(self) -> None:
        """Let every lane finish its message in hand; hand back what is queued, in order."""
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        if tasks:
            await asyncio.wait(tasks)
        queued = sorted(
            (m for lane in self._lanes.values() for m in lane.queue), key=lambda m: _seq(m)
        )
        for msg in queued:
            with contextlib.suppress(Exception):
                await msg.nak()
        self._lanes.clear()
        self._held = 0

    def stop(self) -> None:
        self._stop.set()
        self._pull_done.set()
        self._room.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    async def _error_pause(self, what: str, exc: BaseException | None, errors: int) -> None:
        delay = min(0.1 * 2 ** min(errors, 6), 5.0)
        self.log.warning(what, error=repr(exc) if exc else None, retry_in=delay)
        await self._sleep(delay)

    async def _with_retry(self, what: str, fn: Callable[[], Awaitable[Any]]) -> Any:
        """Set-up calls survive a server that is restarting: retry until stopped or closed."""
        errors = 0
        while True:
            try:
                return await fn()
            except Exception as exc:
                if self.nc.is_closed:
                    raise ConnectionLost(_url(self.nc), repr(exc)) from None
                if self._stop.is_set():
                    raise
                errors += 1
                if errors > 3 and not self.nc.is_reconnecting and self.nc.is_connected:
                    raise  # a real error (a bad config), not an outage
                await self._error_pause(f"{what}_failed", exc, errors)

    # -- dead letters ------------------------------------------------------------------------

    async def _on_advisory(self, msg: Msg) -> None:
        """The server gave up redelivering a message (every delivery crashed or timed out, so
        no process saw a last attempt fail): park it and make it an outcome."""
        try:
            info = json.loads(msg.data)
            seq = int(info["stream_seq"])
            stored = await self.nc.jetstream().get_msg(self.options.stream, seq)
        except Exception as exc:
            self.log.warning("advisory_unreadable", error=repr(exc))
            return
        event = None
        with contextlib.suppress(EventDecodeError):
            event = self.registry.decode(stored.data or b"")
        detail = (
            f"delivered {info.get('deliveries', '?')} times without an ack "
            "(the handler crashed or exceeded ack_wait every time)"
        )
        await self._publish_dead_letter(
            stored.subject or "", seq, stored.data or b"", "max_deliveries", detail, "", event
        )

    async def park(
        self,
        msg: Msg,
        reason: str,
        detail: str,
        *,
        event: Event | None = None,
        exc: BaseException | None = None,
    ) -> bool:
        """Move a message to the dead-letter subject with its reason, turn it into an outcome
        (``on_dead_letter``), then terminate it. False when that could not be done (an outage):
        the message stays unacked and comes back."""
        meta = msg.metadata
        digest = traceback_digest(exc)
        try:
            await self._publish_dead_letter(
                msg.subject, meta.sequence.stream, msg.data, reason, detail, digest, event
            )
            await msg.term()
        except Exception as err:
            self.log.warning("park_failed", error=repr(err), subject=msg.subject)
            return False
        return True

    async def _publish_dead_letter(
        self,
        subject: str,
        seq: int,
        data: bytes,
        reason: str,
        detail: str,
        digest: str,
        event: Event | None,
    ) -> None:
        headers = {
            "Oopav-Dlq-Reason": reason,
            "Oopav-Dlq-Detail": _one_line(detail, 1000),
            "Oopav-Dlq-Handler": self.handler,
            "Oopav-Dlq-Traceback-Digest": digest,
            "Oopav-Original-Subject": subject,
            "Oopav-Original-Stream": self.options.stream,
            "Oopav-Original-Sequence": str(seq),
            # The same message parked twice (a crash between park and term, or the advisory
            # seen by several processes) is one dead letter.
            "Nats-Msg-Id": f"dlq:{self.handler}:{self.options.stream}:{seq}",
        }
        js = self.nc.jetstream()
        record = spool.Letter(self.handler, subject, seq, reason, detail, digest, headers, data)
        try:
            await js.publish(dlq_subject(self.handler), data, headers=headers)
        except Exception as exc:
            # Not lost: kept on local disk (fsynced) and stored when the server can take it.
            # If even that fails, the error goes up and the message stays unacked.
            where = spool.write(record, self.options.stream)
            self.log.error(
                "dead_letter_spooled", error=repr(exc)[:300], subject=subject, spool=str(where)
            )
        else:
            record.published = True
        metrics.dead_letter(self.handler, reason)
        self.log.warning("message_parked", reason=reason, detail=detail[:200], subject=subject)
        await self._outcome(record, event)
        # Counted once its outcome (the session abort) is stored too: whoever waits on the
        # count (a test, the TUI) then sees the session already ended.
        self.parked += 1

    async def _outcome(self, record: spool.Letter, event: Event | None) -> None:
        """Turn a dead letter into its outcome (a session abort); if that cannot be stored for
        lack of space, the spool keeps the letter and the outcome is tried again later."""
        if self.on_dead_letter is None:
            return
        letter = DeadLetter(
            self.handler,
            record.subject,
            record.seq,
            record.reason,
            record.detail,
            record.digest,
            event,
        )
        try:
            await self.on_dead_letter(letter)
        except Exception as exc:  # the DLQ has it; the abort is best effort
            self.log.error("dead_letter_outcome_failed", error=repr(exc), subject=record.subject)
            if storage.storage_problem(exc):
                with contextlib.suppress(OSError):
                    spool.write(record, self.options.stream)

    async def flush_spool(self) -> int:
        """Store the spooled dead letters of this handler and run their outcomes; returns how
        many were settled. Stops at the first that still cannot be stored."""
        settled = 0
        for path, record in spool.pending(self.handler, self.options.stream):
            if not record.published:
                try:
                    await self.nc.jetstream().publish(
                        dlq_subject(self.handler), record.data, headers=record.headers
                    )
                except Exception as exc:
                    self.log.info("dead_letter_spool_waiting", error=repr(exc)[:200])
                    return settled
                record.published = True
                spool.write(record, self.options.stream)
            event = None
            with contextlib.suppress(EventDecodeError):
                event = self.registry.decode(record.data)
            if self.on_dead_letter is not None:
                letter = DeadLetter(
                    self.handler,
                    record.subject,
                    record.seq,
                    record.reason,
                    record.detail,
                    record.digest,
                    event,
                )
                try:
                    await self.on_dead_letter(letter)
                except Exception as exc:
                    self.log.info("dead_letter_outcome_waiting", error=repr(exc)[:200])
                    return settled
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            settled += 1
            self.log.warning("dead_letter_unspooled", subject=record.subject, reason=record.reason)
        return settled

    async def _spool_loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                if spool.has_pending(self.handler, self.options.stream):
                    await self.flush_spool()
            await self._sleep(SPOOL_EVERY_S)


def _one_line(text: str, limit: int) -> str:
    return text[:limit].replace("\r", " ").replace("\n", " ")


def _url(nc: NATS) -> str:
    server = getattr(nc, "_current_server", None)
    uri = getattr(server, "uri", None)
    return uri.geturl() if uri is not None else "the configured server"


class Service(Protocol):
    """Anything ``run_until_signalled`` can run: ``run()`` returns once ``stop()`` was called."""

    def stop(self) -> None: ...

    async def run(self) -> None: ...


async def supervise(service: Service, stopping: asyncio.Event, name: str = "") -> None:
    """Run a service; if it crashes (not on a stop), log why and start it again with a growing
    delay, so one bad moment does not leave a handler silently dead while sessions wait."""
    delay = 1.0
    while True:
        try:
            await service.run()
            return
        except (asyncio.CancelledError, ConnectionLost):
            raise
        except Exception as exc:
            if stopping.is_set():
                return
            log.exception(
                "service_crashed_restarting",
                service=name or type(service).__name__,
                error=repr(exc),
                delay=delay,
            )
            try:
                await asyncio.wait_for(stopping.wait(), delay)
                return
            except TimeoutError:
                delay = min(delay * 2, 30.0)


def _name(service: object) -> str:
    handler = getattr(service, "handler", None)
    return str(getattr(handler, "name", None) or handler or type(service).__name__)


def hard_exit(code: int = 130) -> None:
    """A second Ctrl-C: stop the servers this process started and exit now, no drain."""
    import os
    import sys

    from oopav.bus.server import kill_child_groups, kill_started

    sys.stderr.write("interrupted again: exiting now without draining\n")
    sys.stderr.flush()
    kill_child_groups()
    kill_started()
    os._exit(code)


def install_stop_signals(on_first: Callable[[], None]) -> Callable[[], None]:
    """SIGINT/SIGTERM: the first calls ``on_first`` (drain and stop), a second exits at once.
    Returns the function that removes the handlers."""
    loop = asyncio.get_running_loop()
    count = 0

    def on_signal() -> None:
        nonlocal count
        count += 1
        if count == 1:
            import sys

            sys.stderr.write("stopping: draining handlers (Ctrl-C again to exit at once)\n")
            sys.stderr.flush()
            on_first()
        else:
            hard_exit()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)

    def remove() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)

    return remove


async def run_until_signalled(
    services: Sequence[Service], stop: asyncio.Event | None = None, *, signals: bool = True
) -> None:
    """Run services until SIGINT/SIGTERM (or ``stop``), then drain them. ``signals=False``:
    the caller owns the signals and sets ``stop``."""
    stopping = asyncio.Event()

    def on_stop() -> None:
        stopping.set()
        for s in services:
            s.stop()

    remove_signals = install_stop_signals(on_stop) if signals else None
    watcher = None
    if stop is not None:

        async def watch() -> None:
            await stop.wait()
            on_stop()

        watcher = asyncio.create_task(watch())

    async def one(service: Service) -> None:
        try:
            await supervise(service, stopping, _name(service))
        except ConnectionLost:
            on_stop()  # the connection is gone for good: stop the others, then report it
            raise

    try:
        results = await asyncio.gather(*(one(s) for s in services), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
    finally:
        if watcher is not None:
            watcher.cancel()
        if remove_signals is not None:
            remove_signals()
