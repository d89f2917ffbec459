"""ReplyMatcher: a `nats req` gets the outcome of its own stored copy, never an older one."""

from __future__ import annotations

import asyncio
import json
import time

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
