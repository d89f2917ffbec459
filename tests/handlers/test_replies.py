"""ReplyMatcher: a `nats req` gets the outcome of its own stored copy, never an older one."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from oopav.handlers.replies import MATCH_WINDOW_MS, ReplyMatcher, digest


async def test_outcome_first_then_request_is_answered(nc) -> None:
    matcher = ReplyMatcher(nc, b'{"error": "late"}')
    sub = await nc.subscribe("test.replies.a", cb=matcher.on_request)
    payload = b'{"instruction": "x"}'
    await matcher.on_outcome(digest(payload), b'{"session_id": "s1"}', int(time.time() * 1000))
    reply = await nc.request("test.replies.a", payload, timeout=2)
    assert json.loads(reply.data) == {"session_id": "s1"}
    await sub.unsubscribe()


async def test_a_stale_outcome_is_not_given_to_a_later_identical_request(nc) -> None:
    matcher = ReplyMatcher(nc, b'{"error": "late"}')
    sub = await nc.subscribe("test.replies.b", cb=matcher.on_request)
    payload = b'{"instruction": "same"}'
    key = digest(payload)
    old = int(time.time() * 1000) - 10 * MATCH_WINDOW_MS
    await matcher.on_outcome(key, b'{"session_id": "old"}', old)  # a `nats pub` long ago
    pending = asyncio.create_task(nc.request("test.replies.b", payload, timeout=3))
    for _ in range(100):  # the request reaches the matcher
        if matcher.waiting.get(key):
            break
        await asyncio.sleep(0.01)
    assert matcher.waiting.get(key), "the request must wait for its own outcome"
    await matcher.on_outcome(key, b'{"session_id": "new"}', int(time.time() * 1000))
    reply = await pending
    assert json.loads(reply.data) == {"session_id": "new"}
    await sub.unsubscribe()


async def test_requests_that_time_out_are_told(nc) -> None:
    matcher = ReplyMatcher(nc, b'{"error": "late"}', ttl=0.0)
    sub = await nc.subscribe("test.replies.c", cb=matcher.on_request)
    pending = asyncio.create_task(nc.request("test.replies.c", b"{}", timeout=3))
    for _ in range(100):
        if matcher.waiting:
            break
        await asyncio.sleep(0.01)
    expired = matcher.expire(time.monotonic() + 1)
    assert len(expired) == 1
    await nc.publish(expired[0], matcher.late_reply)
    assert json.loads((await pending).data) == {"error": "late"}
    await sub.unsubscribe()


async def test_two_processes_answering_identical_requests_each_hand_out_their_own(nc) -> None:
    """Two `oopav run` of one task file at once (found under CI load): the two requests reach
    different processes (a queue group), and every process sees both outcomes. Matched by the
    payload alone, the process holding the second request handed it the first session; with
    the requester's id (the `Oopav-Request` header, stored with the copy) each request gets
    the outcome of its own stored copy, whichever arrives first."""
    from oopav.handlers.replies import ANY, REQUEST_HEADER

    a = ReplyMatcher(nc, b'{"error": "late"}')
    b = ReplyMatcher(nc, b'{"error": "late"}')
    sub_a = await nc.subscribe("test.replies.d1", cb=a.on_request)
    sub_b = await nc.subscribe("test.replies.d2", cb=b.on_request)
    payload = b'{"instruction": "same task file"}'
    key = digest(payload)
    first = asyncio.create_task(
        nc.request("test.replies.d1", payload, timeout=3, headers={REQUEST_HEADER: "r1"})
    )
    second = asyncio.create_task(
        nc.request("test.replies.d2", payload, timeout=3, headers={REQUEST_HEADER: "r2"})
    )
    for _ in range(200):
        if a.waits_for(key) and b.waits_for(key):
            break
        await asyncio.sleep(0.01)
    now = int(time.time() * 1000)
    # Both processes see both outcomes, the first request's first.
    for matcher in (a, b):
        await matcher.on_outcome(key, b'{"session_id": "s1"}', now, "r1")
    for matcher in (a, b):
        await matcher.on_outcome(key, b'{"session_id": "s2"}', now, "r2")
    assert json.loads((await first).data) == {"session_id": "s1"}
    assert json.loads((await second).data) == {"session_id": "s2"}
    # An outcome whose id was not looked up (nobody waited then) still answers a request.
    await a.on_outcome(digest(b"{}"), b'{"session_id": "s3"}', int(time.time() * 1000), ANY)
    reply = await nc.request("test.replies.d1", b"{}", timeout=2, headers={REQUEST_HEADER: "r3"})
    assert json.loads(reply.data) == {"session_id": "s3"}
    # A plain `nats req` (no header) is matched by its payload as before.
    await a.on_outcome(digest(b"[]"), b'{"session_id": "s4"}', int(time.time() * 1000), None)
    assert json.loads((await nc.request("test.replies.d1", b"[]", timeout=2)).data) == {
        "session_id": "s4"
    }
    await sub_a.unsubscribe()
    await sub_b.unsubscribe()


@pytest.mark.parametrize("order", ["request first", "outcome first"])
async def test_an_answer_waits_until_its_outcome_is_stored(nc, order: str) -> None:
    """The intake sees an outcome on the core subject, which can reach it before the stream
    has stored the event; the requester's `oopav show` right after the answer must find the
    session, so the answer waits for ``stored`` — whichever came first, request or outcome."""
    matcher = ReplyMatcher(nc, b'{"error": "late"}')
    subject = f"test.replies.stored.{order.split()[0]}"
    sub = await nc.subscribe(subject, cb=matcher.on_request)
    payload = f'{{"instruction": "{order}"}}'.encode()
    key = digest(payload)
    release = asyncio.Event()
    waited: list[bool] = []

    async def stored() -> bool:
        waited.append(True)
        await release.wait()
        return True

    async def outcome() -> None:
        await matcher.on_outcome(
            key, b'{"session_id": "s"}', int(time.time() * 1000), stored=stored
        )

    if order == "outcome first":
        await outcome()
    pending = asyncio.create_task(nc.request(subject, payload, timeout=3))
    sending = None
    if order == "request first":
        for _ in range(100):
            if matcher.waiting.get(key):
                break
            await asyncio.sleep(0.01)
        sending = asyncio.create_task(outcome())
    for _ in range(100):
        if waited:
            break
        await asyncio.sleep(0.01)
    assert waited
    await asyncio.sleep(0.2)
    assert not pending.done(), "answered before the outcome was stored"
    # A stopping process settles an answer that is matched but not sent yet.
    assert matcher.has_waiting()
    release.set()
    assert json.loads((await pending).data) == {"session_id": "s"}
    if sending is not None:
        await sending
    assert not matcher.has_waiting()
    await sub.unsubscribe()
