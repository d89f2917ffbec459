"""EventStore on a real JetStream: dedup, optimistic concurrency, atomic batches, reads."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from helpers.events import NoteV1, NoteV2, NoteV3
from oopav.bus.errors import ConcurrencyConflict
from oopav.bus.store import EventStore
from oopav.bus.streams import EVENTS_STREAM, ensure_streams
from oopav.events import catalog as ev
from oopav.events.codec import EventDecodeError, Registry
from oopav.events.ids import derive_id

TS = datetime(2026, 1, 1, tzinfo=UTC)


def verdict(session: str, n: int, **kw: Any) -> ev.CriticVerdict:
    return ev.CriticVerdict(
        id=derive_id(session, "test", n),
        aggregate_id=session,
        correlation_id=session,
        actor="test/0",
        ts=TS,
        verdict="approve",
        reasons=[str(n)],
        **kw,
    )


async def count(nc: Any, stream: str = EVENTS_STREAM) -> int:
    info = await nc.jetstream().stream_info(stream)
    return int(info.state.messages)


async def test_same_event_twice_is_one_message(nc: Any) -> None:
    store = EventStore(nc)
    e = verdict("s1", 0)
    first = await store.append(e)
    second = await store.append(e)
    assert not first.duplicate and second.duplicate
    assert second.sequence == first.sequence
    assert await count(nc) == 1


async def test_concurrency_conflict(nc: Any) -> None:
    store = EventStore(nc)
    a = await store.append(verdict("s1", 0), expected=0)
    await store.append(verdict("other", 0), expected=0)  # another aggregate does not interfere
    with pytest.raises(ConcurrencyConflict) as info:
        await store.append(verdict("s1", 1), expected=0)
    assert "reload" in str(info.value) and "retry" in str(info.value)
    assert info.value.aggregate_id == "s1" and info.value.expected == 0
    ok = await store.append(verdict("s1", 1), expected=a.sequence)
    assert not ok.duplicate
    assert await count(nc) == 3


async def test_redelivered_append_with_stale_expected_is_a_duplicate(nc: Any) -> None:
    store = EventStore(nc)
    e = verdict("s1", 0)
    first = await store.append(e, expected=0)
    await store.append(verdict("s1", 1), expected=first.sequence)
    again = await store.append(e, expected=0)  # the handler reprocessed its input
    assert again.duplicate and again.sequence == first.sequence
    assert await count(nc) == 2


async def test_atomic_batch_all_or_nothing(nc: Any) -> None:
    store = EventStore(nc)
    head = await store.append(verdict("s1", 0), expected=0)
    batch = [verdict("s1", n) for n in range(1, 6)]
    with pytest.raises(ConcurrencyConflict):
        await store.append_batch(batch, expected=0)
    assert await count(nc) == 1  # nothing of the failed batch was stored
    done = await store.append_batch(batch, expected=head.sequence)
    assert [a.sequence for a in done] == list(range(head.sequence + 1, head.sequence + 6))
    assert [a.event_id for a in done] == [e.id for e in batch]
    assert await count(nc) == 6
    # A redelivered batch is recognised as already appended.
    again = await store.append_batch(batch, expected=head.sequence)
    assert all(a.duplicate for a in again)
    assert [a.sequence for a in again] == [a.sequence for a in done]
    assert await count(nc) == 6
    read = await store.read("session", "s1")
    assert [e.id for _, e in read] == [verdict("s1", 0).id] + [e.id for e in batch]


async def test_batch_larger_than_the_server_limit_is_chunked(nc: Any) -> None:
    store = EventStore(nc)
    batch = [verdict("big", n) for n in range(2500)]
    done = await store.append_batch(batch, expected=0)
    assert [a.sequence for a in done] == list(range(1, 2501))
    assert await count(nc) == 2500


async def test_batch_with_expected_needs_one_aggregate(nc: Any) -> None:
    with pytest.raises(ValueError, match="one aggregate"):
        await EventStore(nc).append_batch([verdict("a", 0), verdict("b", 0)], expected=0)


async def test_ensure_streams_is_idempotent(nc: Any) -> None:
    js = nc.jetstream()
    again = await ensure_streams(js)
    assert again and all(line.endswith(": unchanged") for line in again), again
    await js.delete_stream("OOPAV_DLQ")
    third = await ensure_streams(js)
    assert "OOPAV_DLQ: created" in third


async def test_a_stream_created_whose_answer_was_lost_is_reported_created(nc: Any) -> None:
    """A fresh cluster can store the stream and lose the answer (a timeout): the retry finds
    the stream as asked, and the call reports what it did — `created`, not `unchanged`."""
    import nats.errors

    js = nc.jetstream()
    await js.delete_stream("OOPAV_DLQ")
    real_add = js.add_stream

    async def add_then_lose_the_answer(*args: Any, **kwargs: Any) -> Any:
        await real_add(*args, **kwargs)
        raise nats.errors.TimeoutError

    js.add_stream = add_then_lose_the_answer
    done = await ensure_streams(js)
    assert "OOPAV_DLQ: created" in done, done
    assert "OOPAV_EVENTS: unchanged" in done, done
    assert (await js.stream_info("OOPAV_DLQ")).config.name == "OOPAV_DLQ"


async def test_ordered_read_from_a_sequence_and_last_sequence(nc: Any) -> None:
    store = EventStore(nc)
    assert await store.last_sequence("session", "s1") == 0
    assert await store.read("session", "s1") == []
    seqs = []
    for n in range(10):
        seqs.append((await store.append(verdict("s1", n))).sequence)
        await store.append(verdict("s2", n))  # interleaved aggregate
    got = await store.read("session", "s1", from_seq=seqs[4])
    assert [s for s, _ in got] == seqs[4:]
    assert [e.reasons for _, e in got] == [[str(n)] for n in range(4, 10)]
    assert await store.last_sequence("session", "s1") == seqs[-1]
    assert await store.last_sequence("session", "s2") == seqs[-1] + 1
    assert await store.read("session", "s1", from_seq=seqs[-1] + 100) == []


async def test_upcast_a_stored_event(nc: Any) -> None:
    reg = Registry((NoteV1,))
    old = NoteV1(id="n1", aggregate_id="s1", correlation_id="s1", actor="t/0", ts=TS, text="hi")
    await EventStore(nc, reg).append(old)
    reg.register(NoteV2, replace=True)

    @reg.upcaster("test_note", 1)
    def _(raw: dict[str, Any]) -> dict[str, Any]:
        return {**raw, "lang": "en"}

    [(seq, new)] = await EventStore(nc, reg).read("session", "s1")
    assert seq == 1
    assert isinstance(new, NoteV2)
    assert (new.schema, new.text, new.lang, new.id) == (2, "hi", "en", "n1")

    future = Registry((NoteV3,))
    with pytest.raises(EventDecodeError) as info:
        await EventStore(nc, future).read("session", "s1")
    assert info.value.reason == "schema_from_future"


@pytest.mark.parametrize("fast", [True, False])
async def test_append_frame_and_js_publish_paths_agree(
    nc: Any, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import oopav.bus.store as store_mod

    if not fast:
        monkeypatch.setattr(store_mod, "_fast_request_ok", lambda nc: False)
    else:
        assert store_mod._fast_request_ok(nc)  # the default path on nats-py
    store = EventStore(nc)
    a = await store.append(verdict("s9", 0), expected=0)
    dup = await store.append(verdict("s9", 0), expected=0)
    assert (a.sequence, a.duplicate) == (1, False) and (dup.sequence, dup.duplicate) == (1, True)
    with pytest.raises(ConcurrencyConflict):
        await store.append(verdict("s9", 1), expected=0)
    b = await store.append(verdict("s9", 1), expected=a.sequence)
    assert b.sequence == 2
    ((_, stored),) = await store.read("session", "s9", from_seq=2)
    # Both paths chain the event to the one before it (tamper evidence).
    assert stored.prev_hash and len(stored.prev_hash) == 64
    assert msgspec.structs.replace(stored, prev_hash=None) == verdict("s9", 1)


async def test_append_without_streams_says_what_to_do(nc: Any) -> None:
    from oopav.bus.errors import AppendRejected

    await nc.jetstream().delete_stream(EVENTS_STREAM)
    with pytest.raises(AppendRejected, match="oopav streams init"):
        await EventStore(nc).append(verdict("s1", 0))
    await ensure_streams(nc.jetstream())


async def test_wait_stored_returns_once_the_aggregate_is_in_the_stream(nc: Any) -> None:
    store = EventStore(nc)
    # Nothing stored: False at the deadline, not a hang.
    assert await store.wait_stored("session", "w1", timeout=0.1) is False
    waiting = asyncio.create_task(store.wait_stored("session", "w1", timeout=10.0))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await store.append(verdict("w1", 0))
    assert await waiting is True
