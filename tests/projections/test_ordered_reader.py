"""The projection runner's ordered reader: gap recovery, back-pressure, and the nats-py fallback
all give exactly the fold of the stream, in order, without duplicates."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_session_projection import interleave, session_events

from oopav.bus.store import EventStore
from oopav.projections import ordered
from oopav.projections import runner as runner_mod
from oopav.projections.runner import SESSIONS, ProjectionRunner
from oopav.projections.session import fold
from oopav.projections.store import SnapshotStore


async def _append(nc: Any, sessions: int, per: int) -> list[Any]:
    store = EventStore(nc)
    events = interleave(*(session_events(f"s{k}", per) for k in range(sessions)))
    await store.append_batch(events)
    return events


async def test_out_of_order_delivery_recreates_the_consumer_without_loss(nc: Any) -> None:
    await _append(nc, 3, 40)  # sequences 1..120
    got: list[int] = []
    done = asyncio.Event()
    failures: list[BaseException] = []
    before: list[str] = []
    reader: ordered.OrderedReader

    def on_data(seq: int, pending: int, data: bytes) -> None:
        got.append(seq)
        if seq == 30:
            before.append(reader.consumer)
            # Pretend delivery 31 went missing: the next delivery is out of order.
            reader._next_dseq += 1
        if seq == 120:
            done.set()

    reader = ordered.OrderedReader(nc, SESSIONS.subject, 1, on_data, failures.append)
    assert await reader.start() == 120
    try:
        await asyncio.wait_for(done.wait(), 10)
    finally:
        await reader.stop()
    assert not failures
    assert got == list(range(1, 121))  # resumed at 31, nothing twice, nothing skipped
    assert before and reader.consumer != before[0]  # a new consumer took over


async def test_held_back_flow_control_still_folds_everything(
    nc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = await _append(nc, 5, 60)
    monkeypatch.setattr(runner_mod, "_HIGH_WATER", 7)
    paused = []
    original = ordered.OrderedReader.pause

    def pause(self: ordered.OrderedReader) -> None:
        paused.append(True)
        original(self)

    monkeypatch.setattr(ordered.OrderedReader, "pause", pause)
    runner = ProjectionRunner(nc, SnapshotStore(tmp_path / "snap"), SESSIONS)
    assert await runner.catch_up() == len(events)
    assert paused  # the bound was reached
    store = EventStore(nc)
    for k in range(5):
        # Folded from the stored events: the store chains them (prev_hash) on append.
        want = fold(await store.read("session", f"s{k}"))
        assert want.last_sequence > 0
        assert runner.get(f"s{k}") == want


async def test_fallback_to_nats_py_ordered_consumer(
    nc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = await _append(nc, 2, 30)
    monkeypatch.setattr(ordered, "available", lambda nc: False)
    runner = ProjectionRunner(nc, SnapshotStore(tmp_path / "snap"), SESSIONS)
    assert await runner.catch_up() == len(events)
    want = fold(await EventStore(nc).read("session", "s1"))  # as stored: chained
    assert want.last_sequence > 0 and runner.get("s1") == want


async def test_a_lost_consumer_is_recreated_from_the_last_sequence(
    nc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ordered, "_HEARTBEAT", 0.2)
    store = EventStore(nc)
    events = session_events("s1", 20)
    await store.append_batch(events[:10])
    got: list[int] = []
    failures: list[BaseException] = []
    reader = ordered.OrderedReader(
        nc, SESSIONS.subject, 1, lambda seq, pending, d: got.append(seq), failures.append
    )
    await reader.start()
    try:
        for _ in range(100):
            if len(got) == 10:
                break
            await asyncio.sleep(0.05)
        lost = reader.consumer
        await nc.jetstream().delete_consumer(reader.stream, lost)  # e.g. a server restart
        for _ in range(100):  # three missed heartbeats, then a new consumer
            if reader.consumer not in ("", lost):
                break
            await asyncio.sleep(0.05)
        await store.append_batch(events[10:])
        for _ in range(100):
            if len(got) == 20:
                break
            await asyncio.sleep(0.05)
    finally:
        await reader.stop()
    assert not failures
    assert got == list(range(1, 21))
