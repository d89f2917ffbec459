"""Deliveries of chosen subscriptions taken below nats-py's message objects.

nats-py turns every delivery into a parsed header dict and a ``Msg``, queues it for the
subscription's task and only then calls back: per message that is a header parse, an object
and one or two extra turns of the event loop. The two hot paths that need none of it route
their subscription here instead: the connection's message dispatch is wrapped once, a routed
subscription's deliveries reach its handler as raw ``(subject, reply, data, headers)`` bytes in
the connection's read loop, and every other delivery goes through nats-py unchanged.

- ``Responses``: one response inbox per connection for request frames the caller builds
  itself (``EventStore.append``): an answer resolves the waiting future straight from the read
  loop, with a timer instead of ``asyncio.wait_for`` (no extra task, no waiter future).
- ``projections.ordered.OrderedReader`` routes its ordered consumer's deliveries here.

``available(nc)`` says whether the client exposes what this needs; callers keep nats-py's own
path for a client that does not.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

# subject, reply, data, raw headers -> None, or an awaitable when the handler has to wait.
Handler = Callable[[bytes, bytes, bytes, bytes], Awaitable[None] | None]


_EXPECTED = ("sid", "subject", "reply", "data", "headers")
_checked: dict[type, bool] = {}


def available(nc: Any) -> bool:
    """nats-py's private dispatch as this module knows it (checked by its signature, once
    per client class): a client that changed it keeps nats-py's own, public path."""
    kind = type(nc)
    ok = _checked.get(kind)
    if ok is None:
        import inspect

        fn = getattr(kind, "_process_msg", None)
        try:
            names = tuple(inspect.signature(fn).parameters)[1:] if callable(fn) else ()
        except (TypeError, ValueError):
            names = ()
        ok = _checked[kind] = names == _EXPECTED
    return ok and hasattr(nc, "_subs")


def route(nc: Any, sid: int, handler: Handler) -> None:
    """Deliver subscription ``sid``'s messages to ``handler`` from now on."""
    table: dict[int, Handler] | None = getattr(nc, "_oopav_direct_subs", None)
    if table is None:
        table = {}
        original = nc._process_msg
        # The parser awaits what this returns: nats-py's own coroutine for every other
        # subscription (no extra frame for them), an already finished future when the
        # routed handler had nothing to wait for (awaiting it does not suspend).
        done = asyncio.get_running_loop().create_future()
        done.set_result(None)

        def process_msg(
            sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes
        ) -> Awaitable[None]:
            h = table.get(sid)
            if h is None:
                return original(sid, subject, reply, data, headers)
            pending = h(subject, reply, data, headers)
            return done if pending is None else pending

        nc._process_msg = process_msg
        nc._oopav_direct_subs = table
    table[sid] = handler


def unroute(nc: Any, sid: int) -> None:
    table = getattr(nc, "_oopav_direct_subs", None)
    if table is not None:
        table.pop(sid, None)


def request_ok(nc: Any) -> bool:
    """Whether ``Responses`` can be used on ``nc`` now (a nats-py client, connected)."""
    return (
        nc.is_connected
        and available(nc)
        and hasattr(nc, "_flush_queue")
        and callable(getattr(nc, "_send_command", None))
        and callable(getattr(nc, "_flush_pending", None))
    )


def _expire(future: asyncio.Future[tuple[bytes, bytes]]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class Responses:
    """A connection's response inbox for ``request``; ``await Responses.of(nc)`` makes it once."""

    def __init__(self, nc: Any, prefix: bytes) -> None:
        self.nc = nc
        self.prefix = prefix  # b"_INBOX.<nuid>."
        self._tokens = itertools.count(1)
        self._waiting: dict[bytes, asyncio.Future[tuple[bytes, bytes]]] = {}

    @staticmethod
    def ready(nc: Any) -> Responses | None:
        """``nc``'s inbox when it is made already (no await on the hot path)."""
        made = getattr(nc, "_oopav_responses", None)
        return made if isinstance(made, Responses) else None

    @classmethod
    async def of(cls, nc: Any) -> Responses:
        made: Responses | asyncio.Future[Responses] | None = getattr(nc, "_oopav_responses", None)
        if isinstance(made, Responses):
            return made
        if made is not None:  # another task is subscribing: wait for it
            return await asyncio.shield(made)
        pending: asyncio.Future[Responses] = asyncio.get_running_loop().create_future()
        nc._oopav_responses = pending
        try:
            prefix = nc.new_inbox() + "."
            sub = await nc.subscribe(prefix + "*")
            responses = cls(nc, prefix.encode())
            route(nc, sub._id, responses._on_msg)
        except BaseException as exc:
            nc._oopav_responses = None
            pending.set_exception(exc)
            pending.exception()  # retrieved: a waiter re-raises it, nobody else has to
            raise
        nc._oopav_responses = responses
        pending.set_result(responses)
        return responses

    def _on_msg(self, subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
        future = self._waiting.get(subject[len(self.prefix) :])
        if future is not None and not future.done():
            future.set_result((data, headers))

    async def request(
        self, subject: bytes, headers: bytes, payload: bytes, timeout: float
    ) -> tuple[bytes, bytes]:
        """Publish ``payload`` with raw ``headers`` (a ``NATS/1.0`` block) and wait for the
        answer: ``(data, raw headers)``; ``TimeoutError`` after ``timeout`` seconds."""
        nc = self.nc
        token = b"%x" % next(self._tokens)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[bytes, bytes]] = loop.create_future()
        self._waiting[token] = future
        try:
            await nc._send_command(
                b"HPUB %s %s%s %d %d\r\n%s%s\r\n"
                % (
                    subject,
                    self.prefix,
                    token,
                    len(headers),
                    len(headers) + len(payload),
                    headers,
                    payload,
                )
            )
            if nc._flush_queue is not None and nc._flush_queue.empty():
                await nc._flush_pending()
            timer = loop.call_later(timeout, _expire, future)
            try:
                return await future
            finally:
                timer.cancel()
        finally:
            self._waiting.pop(token, None)


def status_of(headers: bytes) -> str:
    """The status code of a ``NATS/1.0 <code> ...`` header block ("" when it has none)."""
    first = headers.split(b"\r\n", 1)[0].split()
    return first[1].decode(errors="replace") if len(first) > 1 else ""
