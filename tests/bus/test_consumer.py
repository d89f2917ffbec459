"""The handler consumer runtime: idempotent redelivery, DLQ, poison messages, graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from helpers.events import task_submitted as task
from helpers.waits import drain, until
from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.store import EventStore
from oopav.bus.streams import DLQ_STREAM, EVENTS_STREAM, dlq_subject
from oopav.events import catalog as ev
from oopav.events.codec import encode
from oopav.events.factory import caused_event

INPUT = "oopav.ev.session.*.task_submitted"


async def subject_count(nc: Any, subject: str, stream: str = EVENTS_STREAM) -> int:
    info = await nc.jetstream().stream_info(stream, subjects_filter=subject)
    return sum((info.state.subjects or {}).values())


async def dead_letters(nc: Any, handler: str) -> list[Any]:
    return await drain(nc, dlq_subject(handler))


async def stop_and_wait(consumer: HandlerConsumer, task_: asyncio.Task[None]) -> None:
    consumer.stop()
    await asyncio.wait_for(task_, 10)


async def test_crash_between_publish_and_ack_makes_no_duplicate(nc: Any) -> None:
    store = EventStore(nc)
    await store.append(task("s1"))
    published = asyncio.Event()
    calls: list[int] = []

    async def crashing(event: ev.Event, d: Delivery) -> None:
        calls.append(d.num_delivered)
        out = caused_event(ev.CriticVerdict, event, handler="critic", verdict="approve")
        await store.append(out)
        published.set()
        await asyncio.Event().wait()  # "killed" here: never returns, never acks

    opts = ConsumerOptions(ack_wait=1.0, max_deliver=5, backoff=(0.1,))
    first = HandlerConsumer(nc, "critic", [INPUT], crashing, options=opts)
    t1 = asyncio.create_task(first.run())
    await asyncio.wait_for(published.wait(), 10)
    t1.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await t1

    async def well_behaved(event: ev.Event, d: Delivery) -> None:
        calls.append(d.num_delivered)
        out = caused_event(ev.CriticVerdict, event, handler="critic", verdict="approve")
        await store.append(out)

    second = HandlerConsumer(nc, "critic", [INPUT], well_behaved, options=opts)
    t2 = asyncio.create_task(second.run())
    await until(lambda: second.processed == 1)
    await stop_and_wait(second, t2)
    assert calls == [1, 2]  # the input was redelivered after ack_wait and processed again
    assert await subject_count(nc, "oopav.ev.session.s1.critic_verdict") == 1
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, "critic")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_undecodable_event_is_parked_and_the_consumer_goes_on(nc: Any) -> None:
    js = nc.jetstream()
    seen: list[str] = []

    async def handle(event: ev.Event, d: Delivery) -> None:
        seen.append(event.id)

    c = HandlerConsumer(nc, "orient", [INPUT], handle)
    t = asyncio.create_task(c.run())
    await js.publish("oopav.ev.session.bad.task_submitted", b"{not json")
    unknown = encode(task("u")).replace(b'"task_submitted"', b'"task_teleported"')
    await js.publish("oopav.ev.session.u.task_submitted", unknown)
    await js.publish("oopav.ev.session.good.task_submitted", encode(task("good")))
    await until(lambda: seen == ["good"])
    await until(lambda: c.parked == 2)
    await stop_and_wait(c, t)
    letters = await dead_letters(nc, "orient")
    assert [m.subject for m in letters] == ["oopav.dlq.orient"] * 2
    reasons = [m.headers["Oopav-Dlq-Reason"] for m in letters]
    assert reasons == ["undecodable", "unknown_event_type"]
    assert letters[0].data == b"{not json"
    assert letters[0].headers["Oopav-Original-Subject"] == "oopav.ev.session.bad.task_submitted"
    assert letters[0].headers["Oopav-Original-Sequence"] == "1"
    assert "task_teleported" in letters[1].headers["Oopav-Dlq-Detail"]
    assert (await js.stream_info(DLQ_STREAM)).state.messages == 2
    info = await js.consumer_info(EVENTS_STREAM, "orient")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_poison_message_is_parked_after_max_deliver(nc: Any) -> None:
    attempts: list[int] = []

    async def always_fails(event: ev.Event, d: Delivery) -> None:
        attempts.append(d.num_delivered)
        if event.id == "poison":
            raise RuntimeError("boom")

    opts = ConsumerOptions(max_deliver=3, backoff=(0.05,), ack_wait=5.0)
    c = HandlerConsumer(nc, "planner", [INPUT], always_fails, options=opts)
    t = asyncio.create_task(c.run())
    await EventStore(nc).append(task("poison"))
    await until(lambda: c.parked == 1)
    await EventStore(nc).append(task("fine"))
    await until(lambda: c.processed == 1)
    await stop_and_wait(c, t)
    assert attempts == [1, 2, 3, 1]
    [letter] = await dead_letters(nc, "planner")
    assert letter.headers["Oopav-Dlq-Reason"] == "handler_failed"
    assert "RuntimeError: boom" in letter.headers["Oopav-Dlq-Detail"]
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, "planner")
    assert info.num_ack_pending == 0 and info.num_pending == 0 and info.num_redelivered == 0


async def test_graceful_stop_drains_and_keeps_the_durable(nc: Any) -> None:
    store = EventStore(nc)
    started = asyncio.Event()
    release = asyncio.Event()
    handled: list[str] = []

    async def slow(event: ev.Event, d: Delivery) -> None:
        started.set()
        await release.wait()
        handled.append(event.id)

    c = HandlerConsumer(nc, "actor", [INPUT], slow, options=ConsumerOptions(fetch_batch=1))
    t = asyncio.create_task(c.run())
    await store.append(task("a"))
    await asyncio.wait_for(started.wait(), 10)
    c.stop()
    await store.append(task("b"))  # arrives during the drain: not taken
    release.set()
    await asyncio.wait_for(t, 10)
    assert handled == ["a"]
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, "actor")  # the durable remains
    assert info.ack_floor.stream_seq == 1
    # "b" is untouched: still pending, or (when the open pull delivered it during the drain)
    # handed back at once with a nak, not held until ack_wait.
    assert info.num_pending + info.num_ack_pending == 1

    # A restart resumes with the message that arrived during the drain.
    again = HandlerConsumer(nc, "actor", [INPUT], slow)
    t2 = asyncio.create_task(again.run())
    await until(lambda: handled == ["a", "b"])
    await stop_and_wait(again, t2)
