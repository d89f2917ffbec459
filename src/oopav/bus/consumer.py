"""The handler consumer runtime: a durable pull consumer per handler.

- explicit ack; ``max_deliver`` with a backoff between redeliveries;
- ``in_progress()`` heartbeats while a message takes long, so it is not redelivered mid-work;
- undecodable or unknown events are terminated and parked on ``oopav.dlq.<handler>`` with the
  reason in headers, and so is a message that failed on its last allowed delivery
  (poison messages are never retried forever, invariant 9);
- ``stop()`` (wired to SIGTERM/SIGINT by ``run_until_signalled``) drains: no new fetches, the
  message in hand finishes and is acked, then the subscription closes. The durable consumer
  stays, so a restart resumes where this one stopped.

Several processes running the same handler share its durable consumer: that is how a handler
scales out.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from oopav.bus.streams import EVENTS_STREAM, dlq_subject
from oopav.events.catalog import Event
from oopav.events.codec import REGISTRY, EventDecodeError, Registry
from oopav.logging import get_logger

log = get_logger("oopav.bus.consumer")


@dataclass(slots=True)
class Delivery:
    """What a handler knows about the message it is processing."""

    msg: Msg
    stream_sequence: int
    num_delivered: int
    max_deliver: int

    async def in_progress(self) -> None:
        await self.msg.in_progress()

    @property
    def last_attempt(self) -> bool:
        return self.num_delivered >= self.max_deliver


Handle = Callable[[Event, Delivery], Awaitable[None]]


@dataclass
class ConsumerOptions:
    max_deliver: int = 5
    ack_wait: float = 30.0
    # Delays between redeliveries after a failure (nak with delay), last value repeats.
    backoff: Sequence[float] = (0.5, 2.0, 10.0, 30.0)
    # One message per pull: nats-py's multi-message fetch keeps a lingering pull open until the
    # batch is full or the timeout passes, which adds up to fetch_timeout to every hop when
    # events trickle in one at a time (as a session's do).
    fetch_batch: int = 1
    fetch_timeout: float = 1.0
    heartbeat_every: float | None = None  # default: ack_wait / 3
    deliver_policy: DeliverPolicy = DeliverPolicy.ALL
    stream: str = EVENTS_STREAM


@dataclass
class HandlerConsumer:
    nc: NATS
    handler: str
    filter_subjects: list[str]
    handle: Handle
    options: ConsumerOptions = field(default_factory=ConsumerOptions)
    registry: Registry = REGISTRY
    decode: bool = True

    def __post_init__(self) -> None:
        self._stop = asyncio.Event()
        self._stopped = asyncio.Event()
        self.processed = 0
        self.parked = 0
        self.log = log.bind(handler=self.handler)

    @property
    def durable(self) -> str:
        return self.handler.replace(".", "_")

    async def ensure(self) -> None:
        js = self.nc.jetstream()
        cfg = ConsumerConfig(
            durable_name=self.durable,
            name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.options.ack_wait,
            max_deliver=self.options.max_deliver,
            deliver_policy=self.options.deliver_policy,
            max_ack_pending=1000,
        )
        if len(self.filter_subjects) == 1:
            cfg.filter_subject = self.filter_subjects[0]
        else:
            cfg.filter_subjects = list(self.filter_subjects)
        await js.add_consumer(self.options.stream, config=cfg)

    async def run(self) -> None:
        await self.ensure()
        js = self.nc.jetstream()
        sub = await js.pull_subscribe_bind(
            durable=self.durable, stream=self.options.stream, name=self.durable
        )
        self.log.info("consumer_started", filters=self.filter_subjects)
        try:
            while not self._stop.is_set():
                try:
                    msgs = await sub.fetch(
                        self.options.fetch_batch, timeout=self.options.fetch_timeout
                    )
                except (nats.errors.TimeoutError, TimeoutError):
                    continue
                except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                    break
                for i, msg in enumerate(msgs):
                    if self._stop.is_set():
                        # Hand the rest back at once rather than waiting for ack_wait.
                        for rest in msgs[i:]:
                            with contextlib.suppress(Exception):
                                await rest.nak()
                        break
                    await self._process(msg)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            self._stopped.set()
            self.log.info("consumer_stopped", processed=self.processed, parked=self.parked)

    def stop(self) -> None:
        self._stop.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def _process(self, msg: Msg) -> None:
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
                await self.park(msg, exc.reason, exc.detail)
                return
        else:
            event = msg  # type: ignore[assignment]
        heartbeat = asyncio.create_task(self._heartbeat(msg))
        try:
            await self.handle(event, delivery)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            bound = self.log.bind(
                event_id=getattr(event, "id", None), session_id=getattr(event, "aggregate_id", None)
            )
            if delivery.last_attempt:
                bound.error(
                    "handler_failed_parking", error=repr(exc), delivered=delivery.num_delivered
                )
                await self.park(msg, "handler_failed", f"{type(exc).__name__}: {exc}")
            else:
                delay = self._delay(delivery.num_delivered)
                bound.warning(
                    "handler_failed_retrying",
                    error=repr(exc),
                    delay=delay,
                    delivered=delivery.num_delivered,
                )
                with contextlib.suppress(Exception):
                    await msg.nak(delay=delay)
            return
        finally:
            heartbeat.cancel()
        await msg.ack_sync()
        self.processed += 1

    def _delay(self, num_delivered: int) -> float:
        backoff = list(self.options.backoff) or [1.0]
        return backoff[min(num_delivered - 1, len(backoff) - 1)]

    async def _heartbeat(self, msg: Msg) -> None:
        every = self.options.heartbeat_every or self.options.ack_wait / 3
        while True:
            await asyncio.sleep(every)
            with contextlib.suppress(Exception):
                await msg.in_progress()

    async def park(self, msg: Msg, reason: str, detail: str) -> None:
        """Move a message to the dead-letter subject with its reason, then terminate it."""
        meta = msg.metadata
        headers = {
            "Oopav-Dlq-Reason": reason,
            "Oopav-Dlq-Detail": detail[:1000].replace("\r", " ").replace("\n", " "),
            "Oopav-Dlq-Handler": self.handler,
            "Oopav-Original-Subject": msg.subject,
            "Oopav-Original-Stream": meta.stream,
            "Oopav-Original-Sequence": str(meta.sequence.stream),
            # The same message parked twice (a crash between park and term) is one dead letter.
            "Nats-Msg-Id": f"dlq:{self.handler}:{meta.stream}:{meta.sequence.stream}",
        }
        js = self.nc.jetstream()
        await js.publish(dlq_subject(self.handler), msg.data, headers=headers)
        await msg.term()
        self.parked += 1
        self.log.warning("message_parked", reason=reason, detail=detail[:200], subject=msg.subject)


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
        except asyncio.CancelledError:
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


async def run_until_signalled(
    services: Sequence[Service], stop: asyncio.Event | None = None
) -> None:
    """Run services until SIGINT/SIGTERM (or ``stop``), then drain them."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()

    def on_stop() -> None:
        stopping.set()
        for s in services:
            s.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_stop)
    watcher = None
    if stop is not None:

        async def watch() -> None:
            await stop.wait()
            on_stop()

        watcher = asyncio.create_task(watch())
    try:
        await asyncio.gather(*(supervise(s, stopping, _name(s)) for s in services))
    finally:
        if watcher is not None:
            watcher.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
