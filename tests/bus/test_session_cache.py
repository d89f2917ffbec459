"""The session cache shared by the handlers of one process: a handler's outputs are folded in
as appended, so the next handler's input is folded without a read; a stale cache never leads
to a wrong decision (the append's optimistic check, then a reload)."""

from __future__ import annotations

import asyncio
from typing import Any

from test_lanes import task, until

from helpers.handlers import in_background
from oopav.bus.store import EventStore
from oopav.config import Settings
from oopav.events import catalog as ev
from oopav.events.factory import caused_event
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import HandlerRunner, SessionCache
from oopav.projections.session import SessionState, fold


def verdict(cause: ev.Event, handler: str, index: int, text: str = "") -> ev.CriticVerdict:
    return caused_event(
        ev.CriticVerdict,
        cause,
        handler=handler,
        index=index,
        verdict="approve",
        reasons=[text or f"{handler}{index}"],
    )


class First:
    """task_submitted -> two verdicts (an atomic batch of two)."""

    name = "orient"
    subscribes = ("task_submitted",)

    async def handle(self, event: Any, state: SessionState, ports: Any, delivery: Any) -> list[Any]:
        return [verdict(event, self.name, 0), verdict(event, self.name, 1)]


class Second:
    """The second verdict of orient -> one plan_rejected-like note (a verdict of its own)."""

    name = "planner"
    subscribes = ("critic_verdict",)

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, list[str]]] = []

    async def handle(self, event: Any, state: SessionState, ports: Any, delivery: Any) -> list[Any]:
        self.seen.append((event.id, state.event_count, list(state.event_ids)))
        if event.actor.startswith("orient") and event.reasons == ["orient1"]:
            return [verdict(event, self.name, 0)]
        return []


async def test_a_shared_cache_folds_each_handlers_outputs_without_reading(
    nc: Any, tmp_path: Any
) -> None:
    store = EventStore(nc)
    cache = SessionCache(store)
    ports = Ports(settings=Settings(data_dir=tmp_path))
    second = Second()
    runners = [
        HandlerRunner(nc, First(), ports, cache=cache),
        HandlerRunner(nc, second, ports, cache=cache),
    ]
    tasks = [asyncio.create_task(r.run()) for r in runners]
    sessions = [f"cache{i}" for i in range(5)]
    try:
        for sid in sessions:
            await store.append(task(sid))
        # Ten decisions with outputs, and every delivery loaded: the planner's own verdict
        # comes back to it after its last decision (stopping before that load, under load,
        # counted 14 followed instead of 15).
        await until(
            lambda: (
                sum(r.decisions for r in runners) == 2 * len(sessions)
                and cache.reads + cache.followed >= 4 * len(sessions)
            )
        )
    finally:
        for r in runners:
            r.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), 15)
    # One read per session (orient's first look); every later input followed the cache.
    assert cache.reads == len(sessions)
    assert cache.followed == 3 * len(sessions)
    for sid in sessions:
        stored = await store.read("session", sid)
        assert [e.type for _, e in stored] == ["task_submitted"] + ["critic_verdict"] * 3
        # The planner decided on the state as stored, its input included.
        mine = [s for s in second.seen if s[2][0] == sid]
        assert mine and all(ids == [e.id for _, e in stored][:count] for _, count, ids in mine)
        # What the cache holds is exactly the fold of the stream (chain and sequences too).
        fresh = fold(stored)
        held = await cache.load(sid)
        assert (held.event_ids, held.last_sequence, held.chain_hash, held.chain_break) == (
            fresh.event_ids,
            fresh.last_sequence,
            fresh.chain_hash,
            None,
        )


async def test_a_stale_cache_conflicts_and_the_decision_is_made_again_on_the_stream(
    nc: Any, tmp_path: Any
) -> None:
    store = EventStore(nc)
    cache = SessionCache(store)
    seen: list[list[str]] = []

    class Decides:
        name = "planner"
        subscribes = ("critic_verdict",)

        async def handle(
            self, event: Any, state: SessionState, ports: Any, delivery: Any
        ) -> list[Any]:
            if not event.actor.startswith("orient"):
                return []
            seen.append(list(state.event_ids))
            if len(seen) == 1:
                # Someone else appends to the session while this handler decides.
                await EventStore(nc).append(verdict(event, "other", 0, "meanwhile"))
            return [verdict(event, self.name, 0)]

    root = task("stale")
    await store.append(root)
    first = verdict(root, "orient", 0)
    await store.append(first)
    await cache.load("stale")  # the cache knows the session up to `first`
    runner = HandlerRunner(nc, Decides(), Ports(settings=Settings(data_dir=tmp_path)), cache=cache)
    async with in_background(runner, 15):
        await until(lambda: runner.decisions == 1)
    stored = [e for _, e in await store.read("session", "stale")]
    other = verdict(first, "other", 0, "meanwhile")
    # The first decision saw the cached state; its append conflicted; the second decision was
    # made on a reload that includes the other writer's event, and it was stored after it.
    assert seen[0] == [root.id, first.id]
    assert seen[-1] == [root.id, first.id, other.id]
    assert [e.id for e in stored][:3] == [root.id, first.id, other.id] and len(stored) == 4
    assert stored[-1].actor.startswith("planner") and stored[-1].causation_id == first.id
    assert fold(stored).chain_break is None
