"""Answering a ``nats req`` whose message is processed from a stream.

A submission published to a stored subject is processed exactly once by a durable consumer,
which does not see the requester's reply inbox. A core queue subscription on the same subject
sees the request; the two meet here, by a digest of the payload: a request waits for the
outcome of its stored copy, and an outcome that arrives first (the consumer was faster) waits
for its request. A request and an outcome only match when the outcome's stored time is within
a few seconds of the request's arrival, so a later submission of the same payload never gets
an earlier session's answer. A requester that sends a ``Oopav-Request`` header (``oopav run``,
``oopav submit``) is matched on it too — JetStream stores the header with the copy, so two
processes each answering one of two identical payloads sent at the same moment cannot both
hand out the first one's session (found by two ``oopav run`` of one task file at once under
load); identical payloads without the header, sent at the same moment by the plain ``nats``
CLI, are interchangeable.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

REPLY_TTL = 30.0
# The header a requester may set to make its submission its own (any unique string).
REQUEST_HEADER = "Oopav-Request"
# An outcome whose request id was not looked up (no request waited for it then): it matches
# a request with any id, as before ids (the lookup costs a round trip; most outcomes have no
# second identical request waiting anywhere).
ANY = "\x00any"
# How far apart (ms) a request's arrival and its stored copy's timestamp may be.
MATCH_WINDOW_MS = 5_000
# How long a stopping process waits for the outcomes of requests it already took. A stored
# copy its consumer handed back is redelivered elsewhere after fetch_timeout + 1 s (3 s).
HAND_OVER_S = 5.0
# The answer to a request still unanswered when its process stopped. ``queued``: the
# submission is stored and some intake turns it into a session; the requester must not
# submit it again (``submit_task`` keeps watching for its own outcome).
STOPPED_REPLY = json.dumps(
    {
        "error": "the process that took this request stopped before its outcome came; the "
        "submission is stored and becomes a session when an intake runs: see `oopav sessions`, "
        "and do not submit it again",
        "field": None,
        "code": "queued",
    }
).encode()


def refuse_other_subjects(known: str) -> Any:
    """A callback for ``<prefix>.*`` that answers a request on any subject but ``known`` with
    a specific error, instead of leaving it stored, unprocessed and unanswered until the
    requester times out (``nats req oopav.tasks.sumbit …``)."""
    from oopav.logging import get_logger

    log = get_logger("oopav.handlers.replies")

    async def refuse(msg: Msg) -> None:
        if msg.subject == known:
            return
        log.warning("unknown_subject", subject=msg.subject, expected=known, bytes=len(msg.data))
        if msg.reply:
            answer = {
                "error": f"nothing is served on {msg.subject}: submit on {known}",
                "field": "subject",
                "code": "unknown_subject",
            }
            with contextlib.suppress(Exception):
                await msg.respond(json.dumps(answer).encode())

    return refuse


def digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


class ReplyMatcher:
    def __init__(self, nc: NATS, late_reply: bytes, ttl: float = REPLY_TTL) -> None:
        self.nc = nc
        self.late_reply = late_reply
        self.ttl = ttl
        # digest -> (reply inbox, monotonic arrival, wall-clock arrival in ms, request id)
        self.waiting: dict[str, deque[tuple[str, float, int, str | None]]] = defaultdict(deque)
        # digest -> [reply body, monotonic arrival, stored time in ms or None, request id,
        # how to look the id up when it is ANY, what to wait for before answering or None]
        self.unclaimed: dict[str, deque[list[Any]]] = defaultdict(deque)
        # Set when a waiting request is answered (settle() waits on it).
        self._answered = asyncio.Event()
        # Answers matched but not sent yet (waiting for their outcome to be stored): a
        # stopping process settles them too.
        self._sending = 0

    async def on_request(self, msg: Msg) -> None:
        """A request arrived on the core subscription (a plain publish has no reply: ignore)."""
        if not msg.reply:
            return
        key = digest(msg.data)
        rid = request_id(msg.headers)
        now = time.monotonic()
        now_ms = int(time.time() * 1000)
        self.expire(now)
        seen: set[int] = set()
        while True:
            # Rescanned until nothing new came: while an id is looked up, this request's own
            # outcome may arrive (another subscription's callback) and join the unclaimed.
            ready = self.unclaimed.get(key)
            fresh = [entry for entry in ready or () if id(entry) not in seen]
            if not fresh:
                break
            for entry in fresh:
                seen.add(id(entry))
                body, _, stored_ms, stored_rid, lookup, stored = entry
                if not _close(stored_ms, now_ms):
                    continue
                if stored_rid == ANY and lookup is not None and rid is not None:
                    # Not looked up when it came (nobody waited): it may be another process's
                    # request's outcome, so ask whose it is now.
                    stored_rid = entry[3] = await lookup()
                    entry[4] = None
                if stored_rid in (rid, ANY):
                    try:
                        self.unclaimed[key].remove(entry)
                    except ValueError:
                        continue  # another request took it while the id was looked up
                    self._sending += 1
                    try:
                        if stored is not None:
                            await stored()
                        await self.nc.publish(msg.reply, body)
                    finally:
                        self._sending -= 1
                        self._answered.set()
                    return
        self.waiting[key].append((msg.reply, now, now_ms, rid))

    async def on_outcome(
        self,
        key: str,
        body: bytes,
        stored_ms: int | None = None,
        rid: str | None = None,
        lookup: Callable[[], Awaitable[str | None]] | None = None,
        stored: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """The outcome of the stored copy (stored at ``stored_ms``, sent with request id
        ``rid`` or none; ANY: not looked up yet, ``lookup`` tells it) of a payload with digest
        ``key``. ``stored``, awaited before the outcome is sent to a requester, waits until
        what it announces can be read (the outcome came on a core subject, which can be
        faster than the stream that stores it)."""
        if rid == ANY and lookup is not None and self.waits_for(key):
            rid, lookup = await lookup(), None
        waiting = self.waiting.get(key)
        if waiting:
            for i, (inbox, _, arrived_ms, waiting_rid) in enumerate(waiting):
                if _close(stored_ms, arrived_ms) and rid in (waiting_rid, ANY):
                    del waiting[i]
                    self._sending += 1
                    try:
                        if stored is not None:
                            await stored()
                        await self.nc.publish(inbox, body)
                    finally:
                        self._sending -= 1
                        self._answered.set()
                    return
        self.unclaimed[key].append([body, time.monotonic(), stored_ms, rid, lookup, stored])

    def has_waiting(self) -> bool:
        return self._sending > 0 or any(self.waiting.values())

    async def settle(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until no request waits for its outcome here."""
        deadline = time.monotonic() + timeout
        while self.has_waiting():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._answered.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._answered.wait(), left)

    def give_up(self) -> list[str]:
        """Forget every waiting request (this process stops); their reply inboxes."""
        inboxes = [item[0] for q in self.waiting.values() for item in q]
        self.waiting.clear()
        return inboxes

    def waits_for(self, key: str) -> bool:
        """Whether a request with payload digest ``key`` waits here (then an outcome's request
        id is worth looking up)."""
        return bool(self.waiting.get(key))

    def expire(self, now: float) -> list[str]:
        """Drop entries older than the TTL; the inboxes of requests that timed out."""
        timed_out: list[str] = []
        for store in (self.waiting, self.unclaimed):
            for key in list(store):
                q = store[key]
                while q and now - q[0][1] > self.ttl:
                    item = q.popleft()
                    if store is self.waiting:
                        timed_out.append(item[0])
                if not q:
                    del store[key]
        return timed_out

    async def expire_loop(self) -> None:
        """Tell requesters whose outcome never came, instead of leaving them to time out."""
        while True:
            await asyncio.sleep(1.0)
            for inbox in self.expire(time.monotonic()):
                with contextlib.suppress(Exception):
                    await self.nc.publish(inbox, self.late_reply)


def request_id(headers: dict[str, str] | None) -> str | None:
    """The requester's own id of a submission (its ``Oopav-Request`` header), if it sent one."""
    value = (headers or {}).get(REQUEST_HEADER)
    return value[:128] if value else None


def _close(stored_ms: int | None, arrived_ms: int) -> bool:
    return stored_ms is None or abs(stored_ms - arrived_ms) <= MATCH_WINDOW_MS


class RespondingHandler(ABC):
    """A handler that processes stored submissions with a durable consumer and answers their
    ``nats req`` through a ``ReplyMatcher`` (intake, grants). Subclasses set ``nc``,
    ``consumer`` and ``replies`` and list their core subscriptions."""

    nc: NATS
    consumer: Any
    replies: ReplyMatcher
    # Set once requests are answered: a request sent before that is stored and processed,
    # but nobody listens for its reply inbox.
    ready: asyncio.Event
    _subs: list[Any]
    # The queue subscriptions that take requests, and the task that leaves them (stop()).
    _taking: tuple[Any, ...] = ()
    _leaving: asyncio.Task[None] | None = None

    @abstractmethod
    def _subscriptions(self) -> list[tuple[str, str | None, Any]]:
        """(subject, queue group or None, callback) of the answering side."""

    async def start_responder(self) -> None:
        if self._subs:
            return
        subs = self._subscriptions()
        self._subs = [
            await self.nc.subscribe(subject, queue=queue or "", cb=cb)
            for subject, queue, cb in subs
        ]
        # The queue members take requests; stopping leaves those groups first (hand_over).
        self._taking = tuple(
            sub for sub, (_, queue, _) in zip(self._subs, subs, strict=True) if queue
        )
        await self.nc.flush()
        self.ready.set()

    async def run(self) -> None:
        await self.start_responder()
        expiry = asyncio.create_task(self.replies.expire_loop())
        try:
            await self.consumer.run()
        finally:
            expiry.cancel()
            with contextlib.suppress(Exception):
                await self.hand_over()
            for sub in self._subs:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
            self._subs = []
            self._taking = ()
            self._leaving = None
            self.ready.clear()

    def stop(self) -> None:
        # Leave the queue groups at once: a request sent while this process drains goes to
        # another member (found by two `oopav run` on one data dir, the second submitting as
        # the first exited: its request was taken by the exiting process and never answered).
        if self._taking and self._leaving is None:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to drain
                self._leaving = asyncio.get_running_loop().create_task(self._stop_taking())
        self.consumer.stop()

    async def _stop_taking(self) -> None:
        taking, self._taking = self._taking, ()
        for sub in taking:
            # drain, not unsubscribe: a request the server sent before it saw the UNSUB is
            # still handled (registered as waiting) instead of dropped.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(sub.drain(), 2.0)

    async def hand_over(self, wait: float | None = None) -> None:
        """Stopping: take no new requests, then answer the ones already taken. Their outcome
        may still come (from this process's consumer, or from another process's after ours
        handed the stored copy back); past ``wait`` seconds each requester is told that this
        process stopped and that its submission is stored, not lost."""
        if self._leaving is None:
            self._leaving = asyncio.create_task(self._stop_taking())
        await self._leaving
        await self.replies.settle(HAND_OVER_S if wait is None else wait)
        for inbox in self.replies.give_up():
            with contextlib.suppress(Exception):
                await self.nc.publish(inbox, STOPPED_REPLY)
        with contextlib.suppress(Exception):
            await self.nc.flush()
