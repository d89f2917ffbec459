"""Per-session lanes: sessions in parallel, one session in order, a failed lane holds; dead
letters become session outcomes; garbage on a live session subject is parked and shown."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.events import task_submitted as task
from helpers.waits import drain, until
from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer, lane_key
from oopav.bus.store import EventStore, Undecodable
from oopav.bus.streams import EVENTS_STREAM, dlq_subject
from oopav.config import Settings
from oopav.events import catalog as ev
from oopav.events.codec import encode
from oopav.events.factory import caused_event
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import HandlerRunner
from oopav.projections.session import SessionState

INPUT = "oopav.ev.session.*.task_submitted"
NOTES = "oopav.ev.session.*.critic_verdict"


def verdict(cause: ev.Event, index: int) -> ev.CriticVerdict:
    return caused_event(
        ev.CriticVerdict,
        cause,
        handler="test",
        index=index,
        verdict="approve",
        reasons=[str(index)],
    )


async def stop(consumer: HandlerConsumer, t: asyncio.Task[None]) -> None:
    consumer.stop()
    await asyncio.wait_for(t, 15)


async def letters(nc: Any, handler: str) -> list[Any]:
    return await drain(nc, dlq_subject(handler))


def test_lane_key_is_the_aggregate() -> None:
    assert lane_key("oopav.ev.session.abc.plan_proposed") == "session.abc"
    assert lane_key("oopav.ev.mission.m1.guidance_updated") == "mission.m1"
    assert lane_key("oopav.tasks.submit") == "oopav.tasks.submit"


async def test_a_blocked_session_does_not_hold_up_another(nc: Any) -> None:
    store = EventStore(nc)
    release = asyncio.Event()
    done: list[str] = []

    async def handle(event: ev.Event, d: Delivery) -> None:
        if event.aggregate_id == "slow":
            await release.wait()  # a 30 s test command, say
        done.append(event.aggregate_id)

    c = HandlerConsumer(nc, "verifier", [INPUT], handle, options=ConsumerOptions(concurrency=4))
    t = asyncio.create_task(c.run())
    await store.append(task("slow"))
    await store.append(task("fast1"))
    await store.append(task("fast2"))
    await until(lambda: sorted(done) == ["fast1", "fast2"])
    assert "slow" not in done  # still in work while the others finished
    release.set()
    await until(lambda: len(done) == 3)
    await stop(c, t)
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, "verifier")
    assert info.num_ack_pending == 0 and info.num_pending == 0
    assert info.config.max_ack_pending >= 4


async def test_one_session_is_handled_strictly_in_order(nc: Any) -> None:
    store = EventStore(nc)
    roots = [task(f"s{i}") for i in range(4)]
    for r in roots:
        await store.append(r)
    for i in range(8):
        for r in roots:
            await store.append(verdict(r, i))
    seen: dict[str, list[int]] = {}
    active: dict[str, int] = {}
    overlap: list[str] = []
    peak = 0

    async def handle(event: ev.Event, d: Delivery) -> None:
        nonlocal peak
        sid = event.aggregate_id
        active[sid] = active.get(sid, 0) + 1
        if active[sid] > 1:
            overlap.append(sid)
        peak = max(peak, sum(active.values()))
        # Later sessions' messages take longer: completion order differs from stream order.
        await asyncio.sleep(0.002 * (int(event.reasons[0]) % 3) + 0.001 * int(sid[1:]))
        seen.setdefault(sid, []).append(int(event.reasons[0]))
        active[sid] -= 1

    c = HandlerConsumer(nc, "critic", [NOTES], handle, options=ConsumerOptions(concurrency=16))
    t = asyncio.create_task(c.run())
    await until(lambda: sum(len(v) for v in seen.values()) == 32)
    await stop(c, t)
    assert overlap == []
    assert seen == {f"s{i}": list(range(8)) for i in range(4)}
    assert peak > 1  # sessions did run side by side


async def test_a_failed_message_holds_its_lane_until_the_redelivery_succeeds(nc: Any) -> None:
    store = EventStore(nc)
    root, other = task("a"), task("b")
    await store.append(root)
    await store.append(other)
    await store.append(verdict(root, 0))
    await store.append(verdict(root, 1))
    await store.append(verdict(other, 0))
    log: list[tuple[str, int, int]] = []
    failed = asyncio.Event()

    async def handle(event: ev.Event, d: Delivery) -> None:
        n = int(event.reasons[0])
        log.append((event.aggregate_id, n, d.num_delivered))
        if event.aggregate_id == "a" and n == 0 and d.num_delivered == 1:
            failed.set()
            raise RuntimeError("transient")

    opts = ConsumerOptions(concurrency=8, backoff=(0.5,), hold_timeout=30.0)
    c = HandlerConsumer(nc, "critic", [NOTES], handle, options=opts)
    t = asyncio.create_task(c.run())
    await until(lambda: len(log) == 4)
    await stop(c, t)
    a = [(n, k) for sid, n, k in log if sid == "a"]
    assert a == [(0, 1), (0, 2), (1, 1)]  # message 1 waited for the redelivery of message 0
    assert ("b", 0, 1) in log


async def test_ack_failures_do_not_crash_the_consumer(nc: Any) -> None:
    """A message whose ack cannot be sent (here: its reply subject is broken) is logged and
    the loop goes on with the next sessions."""
    store = EventStore(nc)
    done: list[str] = []

    async def handle(event: ev.Event, d: Delivery) -> None:
        if event.aggregate_id == "x":
            d.msg.reply = "$JS.ACK.nowhere"  # the ack request gets no responder
        done.append(event.aggregate_id)

    c = HandlerConsumer(nc, "orient", [INPUT], handle, options=ConsumerOptions(ack_wait=5.0))
    t = asyncio.create_task(c.run())
    await store.append(task("x"))
    await store.append(task("y"))
    await until(lambda: "x" in done and "y" in done)
    await until(lambda: c.processed == 2, timeout=40)
    assert not t.done()
    await stop(c, t)


class Exploding:
    name = "planner"
    subscribes = ("task_submitted",)

    async def handle(self, event: Any, state: Any, ports: Any, delivery: Any) -> list[Any]:
        raise ValueError("the model server is on fire")


async def test_exhausted_deliveries_abort_the_session_and_leave_a_dead_letter(
    nc: Any, tmp_path: Any
) -> None:
    store = EventStore(nc)
    opts = ConsumerOptions(max_deliver=2, backoff=(0.05,))
    runner = HandlerRunner(nc, Exploding(), Ports(settings=Settings(data_dir=tmp_path)), opts)
    t = asyncio.create_task(runner.run())
    await store.append(task("doomed"))
    await until(lambda: runner.consumer.parked == 1)
    # `parked` counts the dead letter; the abort is appended right after it.
    for _ in range(200):
        events = [e for _, e in await store.read("session", "doomed")]
        if len(events) > 1:
            break
        await asyncio.sleep(0.05)
    assert [e.type for e in events] == ["task_submitted", "session_completed"]
    end = events[-1]
    assert end.outcome == "aborted"
    assert end.reason == "dead_letter:planner"
    assert "planner" in end.summary and "ValueError: the model server is on fire" in end.summary
    assert end.causation_id == "doomed"
    [letter] = await letters(nc, "planner")
    h = letter.headers
    assert h["Oopav-Dlq-Reason"] == "handler_failed"
    assert h["Oopav-Original-Subject"] == "oopav.ev.session.doomed.task_submitted"
    assert h["Oopav-Original-Sequence"] == "1"
    assert "the model server is on fire" in h["Oopav-Dlq-Detail"]
    assert len(h["Oopav-Dlq-Traceback-Digest"]) == 16
    runner.stop()
    await asyncio.wait_for(t, 15)


async def test_max_deliveries_advisory_aborts_a_session_whose_handler_always_crashes(
    nc: Any, tmp_path: Any
) -> None:
    """Every delivery dies with its process (no process sees a last attempt fail): the
    server's max-deliveries advisory still ends the session."""
    store = EventStore(nc)
    opts = ConsumerOptions(max_deliver=2, ack_wait=1.0, backoff=(0.05,))
    ports = Ports(settings=Settings(data_dir=tmp_path))
    started = asyncio.Event()

    class Hangs:
        name = "actor"
        subscribes = ("task_submitted",)

        async def handle(self, event: Any, state: Any, ports: Any, delivery: Any) -> list[Any]:
            started.set()
            await asyncio.Event().wait()
            return []

    await store.append(task("crashy"))
    for _ in range(2):  # two deliveries, each "killed" mid-work
        started.clear()
        doomed = HandlerRunner(nc, Hangs(), ports, opts)
        t = asyncio.create_task(doomed.run())
        await asyncio.wait_for(started.wait(), 20)
        t.cancel()
        await asyncio.gather(t, return_exceptions=True)
    watcher = HandlerRunner(nc, Hangs(), ports, opts)
    t = asyncio.create_task(watcher.run())
    await until(lambda: watcher.consumer.parked == 1, timeout=30)
    events = [e for _, e in await store.read("session", "crashy")]
    assert events[-1].type == "session_completed" and events[-1].outcome == "aborted"
    assert "actor" in events[-1].summary and "without an ack" in events[-1].summary
    [letter] = await letters(nc, "actor")
    assert letter.headers["Oopav-Dlq-Reason"] == "max_deliveries"
    watcher.stop()
    await asyncio.wait_for(t, 15)


async def test_garbage_on_a_live_session_is_parked_shown_and_the_session_goes_on(
    nc: Any, tmp_path: Any
) -> None:
    store = EventStore(nc)
    js = nc.jetstream()
    seen: list[str] = []

    class Notes:
        name = "orient"
        subscribes = ("task_submitted", "critic_verdict")

        async def handle(
            self, event: Any, state: SessionState, ports: Any, delivery: Any
        ) -> list[Any]:
            seen.append(f"{event.type}@{state.event_count}")
            return []

    runner = HandlerRunner(nc, Notes(), Ports(settings=Settings(data_dir=tmp_path)))
    t = asyncio.create_task(runner.run())
    root = task("live")
    await store.append(root)
    good = verdict(root, 0)
    await js.publish("oopav.ev.session.live.critic_verdict", b"\xff not json")
    wrong_fields = encode(good).replace(b'"verdict":"approve"', b'"verdict":42')
    await js.publish("oopav.ev.session.live.critic_verdict", wrong_fields)
    future = encode(verdict(root, 1)).replace(b'"schema":1', b'"schema":99')
    await js.publish("oopav.ev.session.live.critic_verdict", future)
    unknown = encode(verdict(root, 2)).replace(b'"critic_verdict"', b'"critic_teleported"')
    await js.publish("oopav.ev.session.live.critic_verdict", unknown)
    await store.append(good)
    await until(lambda: len(seen) == 2 and runner.consumer.parked == 4)
    runner.stop()
    await asyncio.wait_for(t, 15)
    # The handler saw the good events, with the garbage left out of the session's state.
    assert seen == ["task_submitted@1", "critic_verdict@2"]
    reasons = [m.headers["Oopav-Dlq-Reason"] for m in await letters(nc, "orient")]
    assert reasons == ["undecodable", "invalid_event", "schema_from_future", "unknown_event_type"]
    timeline = await store.read_with_undecodable("session", "live")
    kinds = [e.reason if isinstance(e, Undecodable) else e.type for _, e in timeline]
    assert kinds == [
        "task_submitted",
        "undecodable",
        "invalid_event",
        "schema_from_future",
        "unknown_event_type",
        "critic_verdict",
    ]
    assert [s for s, _ in timeline] == [1, 2, 3, 4, 5, 6]
    # The next append is checked against the subject's real last sequence, garbage included.
    runner.cache.forget("live")
    state = await runner.cache.load("live")
    assert state.last_sequence == 6 and state.event_count == 2


async def test_garbage_no_handler_subscribes_to_is_parked_by_the_projection(
    nc: Any, nats_url: str, tmp_path: Any
) -> None:
    from oopav.app import open_bus
    from oopav.services import run_handlers

    settings = Settings(data_dir=tmp_path, nats_url=nats_url)
    async with open_bus(settings, name="test-guard") as bus:
        stop = asyncio.Event()
        ports = Ports(settings=settings)
        t = asyncio.create_task(
            run_handlers(bus, stop, names=("intake",), ports=ports, signals=False)
        )
        try:
            await EventStore(nc).append(task("quiet"))
            await nc.jetstream().publish(
                "oopav.ev.session.quiet.bogus_type", b'{"type": "bogus_type", "schema": 1}'
            )
            found: list[Any] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while not found:
                assert loop.time() < deadline, "not parked"
                found = await letters(nc, "projection")
        finally:
            stop.set()
            await asyncio.wait_for(t, 30)
    [letter] = found
    assert letter.headers["Oopav-Dlq-Reason"] == "unknown_event_type"
    assert letter.headers["Oopav-Original-Subject"] == "oopav.ev.session.quiet.bogus_type"
