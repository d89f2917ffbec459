"""Concurrency that follows load (``--concurrency auto``, oopav.bus.adaptive): the AIMD rule,
and a live consumer halving its limit under an overloaded machine while it keeps working."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from oopav.bus.adaptive import Adaptive, next_limit
from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.store import EventStore
from oopav.events import catalog as ev

A = Adaptive(minimum=2, maximum=16, step=2)


def test_overload_or_lag_halves_down_to_the_minimum() -> None:
    assert next_limit(8, 3.0, 0.0, True, A) == (4, "load 3.00 per core > 1.5")
    assert next_limit(8, 0.2, 0.6, False, A) == (4, "event loop 600 ms late")
    assert next_limit(3, 3.0, 0.0, False, A) == (2, "load 3.00 per core > 1.5")
    assert next_limit(2, 3.0, 0.0, False, A) == (2, "")


def test_an_idle_machine_grows_a_busy_limit_by_steps_up_to_the_maximum() -> None:
    assert next_limit(8, 0.3, 0.0, True, A) == (10, "load 0.30 per core < 0.7 and every slot busy")
    assert next_limit(8, 0.3, 0.0, False, A) == (8, "")  # not using what it has: no growth
    assert next_limit(16, 0.3, 0.0, True, A) == (16, "")
    assert next_limit(8, 1.0, 0.0, True, A) == (8, "")  # between the bounds: unchanged


async def test_a_consumer_under_load_halves_its_limit_and_keeps_working(nc: Any) -> None:
    store = EventStore(nc)
    done: list[str] = []

    async def handle(event: ev.Event, delivery: Delivery) -> None:
        done.append(event.aggregate_id)

    options = ConsumerOptions(
        concurrency=8, adaptive=Adaptive(minimum=2, every_s=0.3), load_probe=lambda: 4.0
    )
    c = HandlerConsumer(
        nc, "adaptive", ["oopav.ev.session.*.task_submitted"], handle, options=options
    )
    t = asyncio.create_task(c.run())
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while options.concurrency > 2:
            assert loop.time() < deadline, options.concurrency
            await asyncio.sleep(0.05)
        for i in range(5):
            await store.append(
                ev.TaskSubmitted(
                    id=f"a{i}",
                    aggregate_id=f"a{i}",
                    correlation_id=f"a{i}",
                    actor="intake/0",
                    ts=datetime(2026, 1, 1, tzinfo=UTC),
                    instruction="do it",
                    repo="/r",
                )
            )
        while len(done) < 5:
            assert loop.time() < deadline, done
            await asyncio.sleep(0.05)
    finally:
        c.stop()
        await asyncio.wait_for(t, 15)
    assert options.concurrency == 2 and sorted(done) == [f"a{i}" for i in range(5)]
