"""An ordered push consumer read below nats-py's message objects, for projection rebuilds.

nats-py spends most of a delivery's client time on things a projection does not need: parsing
every message's headers into a dict (``Nats-Msg-Id`` and the atomic-batch headers are stored
with each event), building a ``Msg``, the ordered-consumer bookkeeping (the reply subject is
parsed twice) and a queue hand-off to the subscription's task. Here this one subscription is
routed below nats-py (``bus.direct``): a delivery arrives as (reply subject, payload), and
everything else on the connection goes through nats-py unchanged.

What nats-py's ordered consumer does is kept: an ephemeral consumer with no acks, flow control
and idle heartbeats; a delivery out of order (its consumer sequence is not the next one, or a
heartbeat says the consumer is ahead) recreates the consumer from the last stream sequence
taken + 1, and deliveries of the old consumer are ignored. Flow control is answered at once
unless the reader is behind (``paused()``), in which case the answer waits for ``resume()``:
that is what holds the server back, never the connection's reader.

``available(nc)`` (``bus.direct``) says whether the client exposes what this needs; otherwise
the runner uses nats-py's ordered consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from oopav.bus import direct
from oopav.logging import get_logger

log = get_logger("oopav.projections")

available = direct.available
# (stream sequence, messages pending after it, payload)
OnData = Callable[[int, int, bytes], None]
_STATUS_100 = b"NATS/1.0 100"
_HEARTBEAT = 5.0  # seconds between the server's idle heartbeats
_now = time.monotonic


class OrderedReader:
    """Deliveries of ``subject`` from ``start_seq`` on, in stream order, to ``on_data``."""

    def __init__(
        self,
        nc: Any,
        subject: str,
        start_seq: int,
        on_data: OnData,
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self.nc = nc
        self.on_failure = on_failure
        self.js = nc.jetstream()
        self.subject = subject
        self.on_data = on_data
        self.last_stream_seq = start_seq - 1
        self.stream = ""
        self.consumer = ""
        self._consumer_b = b""
        self._created = ""
        self._next_dseq = 1
        self._sub: Any = None
        self._held_fc: list[str] = []
        self._paused = False
        self._resetting: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._last_seen = 0.0

    async def start(self) -> int:
        """Create the consumer; returns the number of messages pending at its start."""
        self.stream = await self.js.find_stream_name_by_subject(self.subject)
        self._sub = await self.nc.subscribe(self.nc.new_inbox())
        direct.route(self.nc, self._sub._id, self._on_msg)
        pending = await self._create()
        self._last_seen = _now()
        self._watchdog = asyncio.get_running_loop().create_task(self._watch())
        return pending

    async def _watch(self) -> None:
        """Heartbeats come every ``_HEARTBEAT`` s when idle: three missed ones mean the
        consumer is gone (a server restart, a reconnect), so it is created again from the last
        stream sequence taken; a failure is retried at the next check."""
        while True:
            await asyncio.sleep(_HEARTBEAT)
            if _now() - self._last_seen > 3 * _HEARTBEAT:
                self._last_seen = _now()
                self._reset("no heartbeat", fatal=False)

    async def _create(self) -> int:
        old = self._created
        # Named by us before it exists: its first deliveries can arrive before the API's answer.
        # Deliveries of the old consumer are ignored from here on.
        self.consumer = self._created = f"oopav_proj_{uuid.uuid4().hex[:16]}"
        self._consumer_b = self.consumer.encode()
        self._next_dseq = 1
        if old:
            with contextlib.suppress(Exception):
                await self.js.delete_consumer(self.stream, old)
        info = await self.js.add_consumer(
            self.stream,
            ConsumerConfig(
                name=self.consumer,
                deliver_subject=self._sub.subject,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self.last_stream_seq + 1,
                filter_subject=self.subject,
                ack_policy=AckPolicy.NONE,
                flow_control=True,
                idle_heartbeat=_HEARTBEAT,
                mem_storage=True,
                inactive_threshold=300.0,
                max_deliver=1,
            ),
        )
        return int(info.num_pending or 0)

    async def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._resetting is not None:
            self._resetting.cancel()
        if self._sub is not None:
            direct.unroute(self.nc, self._sub._id)
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if self._created:
            with contextlib.suppress(Exception):
                await self.js.delete_consumer(self.stream, self._created)

    # -- back-pressure --------------------------------------------------------------------

    def pause(self) -> None:
        """Hold flow-control answers (the server stops after its window) until ``resume``."""
        self._paused = True

    async def resume(self) -> None:
        self._paused = False
        held, self._held_fc = self._held_fc, []
        for reply in held:
            await self.nc.publish(reply, b"")

    # -- deliveries -----------------------------------------------------------------------

    def _on_msg(
        self, subject: bytes, reply: bytes, data: bytes, headers: bytes
    ) -> Awaitable[None] | None:
        # Called from the connection's read loop for every delivery (``bus.direct``): no
        # coroutine unless a control message has to be answered.
        self._last_seen = _now()
        if headers and not data and headers.startswith(_STATUS_100):
            return self._on_control(reply, headers)
        if not self.consumer or not reply:
            return None
        tokens = reply.split(b".")
        if len(tokens) == 9:  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>
            consumer, sseq, dseq, pending = tokens[3], tokens[5], tokens[6], tokens[8]
        elif len(tokens) >= 12:  # with domain and account hash first
            consumer, sseq, dseq, pending = tokens[5], tokens[7], tokens[8], tokens[10]
        else:
            return None
        if consumer != self._consumer_b:
            return None
        if int(dseq) != self._next_dseq:
            self._reset("out of order delivery")
            return None
        self._next_dseq += 1
        seq = self.last_stream_seq = int(sseq)
        self.on_data(seq, int(pending), data)
        return None

    async def _on_control(self, reply: bytes, headers: bytes) -> None:
        text = headers.decode(errors="replace")
        if "FlowControl" in text and reply:
            if self._paused:
                self._held_fc.append(reply.decode())
            else:
                await self.nc.publish(reply.decode(), b"")
            return
        fields: dict[str, str] = {}
        for line in text.split("\r\n")[1:]:
            name, sep, value = line.partition(":")
            if sep:
                fields[name.strip()] = value.strip()
        stalled = fields.get("Nats-Consumer-Stalled")
        if stalled:  # a flow-control request we missed: answered like one
            if self._paused:
                self._held_fc.append(stalled)
            else:
                await self.nc.publish(stalled, b"")
        last = fields.get("Nats-Last-Consumer")
        if last is not None and self.consumer and int(last) != self._next_dseq - 1:
            self._reset("heartbeat shows a missed delivery")

    def _reset(self, why: str, fatal: bool = True) -> None:
        if self._resetting is not None and not self._resetting.done():
            return
        log.info("projection_consumer_reset", reason=why, from_seq=self.last_stream_seq + 1)
        self.consumer = ""
        self._consumer_b = b""

        async def again() -> None:
            try:
                await self._create()
            except Exception as exc:
                if fatal:
                    self.on_failure(exc)  # the runner raises it
                else:
                    log.warning("projection_consumer_reset_failed", error=str(exc))

        self._resetting = asyncio.get_running_loop().create_task(again())
