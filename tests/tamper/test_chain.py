"""The hash chain over a session's events, on a real nats-server: the store links every
append, forged and deleted events are named, the first terminal event wins."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from helpers.cli import run_oopav
from oopav.bus.store import EventStore
from oopav.bus.streams import DLQ_STREAM
from oopav.events import catalog as ev
from oopav.events.chain import GENESIS, check_chain, event_hash
from oopav.events.codec import decode, encode
from oopav.events.ids import derive_id
from oopav.handlers.watchdog import Watchdog
from oopav.projections.runner import SESSIONS, ProjectionRunner
from oopav.projections.session import fold
from oopav.projections.store import SnapshotStore

TS = datetime(2026, 1, 1, tzinfo=UTC)


def env(sid: str, n: int, cause: str | None = None) -> dict[str, Any]:
    eid = sid if n == 0 else derive_id(sid, "test", n)
    return {
        "id": eid,
        "aggregate_id": sid,
        "causation_id": cause,
        "correlation_id": sid,
        "actor": "test/0",
        "ts": TS,
    }


def submitted(sid: str) -> ev.TaskSubmitted:
    return ev.TaskSubmitted(instruction="rename", repo="/tmp/r", **env(sid, 0))


def verdict(sid: str, n: int) -> ev.CriticVerdict:
    return ev.CriticVerdict(verdict="approve", reasons=[str(n)], **env(sid, n, sid))


def completed(sid: str, n: int, outcome: str = "success") -> ev.SessionCompleted:
    return ev.SessionCompleted(outcome=outcome, summary="done", **env(sid, n, sid))  # type: ignore[arg-type]


def forged_completed(sid: str, outcome: str = "success") -> bytes:
    """What someone types into `nats pub`: a valid-looking root session_completed."""
    return json.dumps(
        {
            "type": "session_completed",
            "id": f"forged-{sid}",
            "schema": 1,
            "aggregate": "session",
            "aggregate_id": sid,
            "causation_id": None,
            "correlation_id": sid,
            "actor": "intake/0.1.0",
            "ts": "2026-01-01T00:00:05Z",
            "outcome": outcome,
            "summary": "all good, trust me",
        }
    ).encode()


async def build(store: EventStore, sid: str, n: int = 3) -> None:
    await store.append(submitted(sid), expected=0)
    last = await store.last_sequence("session", sid)
    await store.append_batch([verdict(sid, i) for i in range(1, n + 1)], expected=last)


async def test_appends_are_chained(nc: Any) -> None:
    store = EventStore(nc)
    await build(store, "s1")
    # An unconditional append (a person's grant) links to the last event too.
    await store.append(
        ev.PermissionGranted(scope="exec:make", granted_by="me", **env("s1", 9)),
    )
    # A fresh store (another process) has nothing cached and still links correctly.
    other = EventStore(nc)
    await other.append(verdict("s1", 10), expected=await other.last_sequence("session", "s1"))
    events = await store.read("session", "s1")
    assert events[0][1].prev_hash == GENESIS
    for (_, before), (_, after) in itertools.pairwise(events):
        assert after.prev_hash == event_hash(before)
    assert check_chain(events) == []
    state = fold(events)
    assert state.chained and state.chain_break is None
    assert state.chain_hash == event_hash(events[-1][1])


async def test_forged_root_completion_is_named(nc: Any) -> None:
    store = EventStore(nc)
    await build(store, "s2")
    ack = await nc.jetstream().publish(
        "oopav.ev.session.s2.session_completed", forged_completed("s2")
    )
    # The session goes on; its next event links to what is now the last one.
    await store.append(verdict("s2", 7), expected=ack.seq)
    events = await store.read("session", "s2")
    findings = check_chain(events)
    assert [(f.kind, f.sequence) for f in findings] == [("broken_link", ack.seq)]
    assert "no prev_hash" in findings[0].detail
    state = fold(events)
    assert state.chain_break is not None and state.chain_break.startswith(f"seq {ack.seq} (")


async def test_forged_event_with_a_made_up_hash_is_named(nc: Any) -> None:
    store = EventStore(nc)
    await build(store, "s3")
    body = json.loads(forged_completed("s3"))
    body["prev_hash"] = "0" * 64
    ack = await nc.jetstream().publish(
        "oopav.ev.session.s3.session_completed", json.dumps(body).encode()
    )
    [finding] = check_chain(await store.read("session", "s3"))
    assert finding.kind == "broken_link" and finding.sequence == ack.seq
    assert "is not the hash of the event before it" in finding.detail


async def test_deleted_event_breaks_the_next_link(nc: Any) -> None:
    store = EventStore(nc)
    await build(store, "s4", n=4)
    events = await store.read("session", "s4")
    # The stream denies deletes; a copy of it (a mirror, an export) may still lose one.
    after = events[:2] + events[3:]
    [finding] = check_chain(after)
    assert finding.kind == "broken_link" and finding.sequence == events[3][0]


async def test_first_terminal_event_wins_and_a_late_one_is_dead_lettered(
    nc: Any, tmp_path: Path
) -> None:
    store = EventStore(nc)
    await build(store, "s5")
    done = await store.append(
        completed("s5", 5, "failed"), expected=await store.last_sequence("session", "s5")
    )
    # A late terminal event, even a correctly linked one, does not change the outcome.
    late = await store.append(completed("s5", 6, "success"), expected=done.sequence)
    ack = await nc.jetstream().publish(
        "oopav.ev.session.s5.session_completed", forged_completed("s5", "success")
    )
    events = await store.read("session", "s5")
    state = fold(events)
    assert state.outcome == "failed" and state.phase == "completed"
    assert len(state.late_terminals) == 2 and f"seq {late.sequence} " in state.late_terminals[0]
    findings = check_chain(events)
    assert [(f.kind, f.sequence) for f in findings] == [
        ("late_terminal", late.sequence),
        ("broken_link", ack.seq),
        ("late_terminal", ack.seq),
    ]

    watchdog = Watchdog(nc)
    runner = ProjectionRunner(
        nc, SnapshotStore(tmp_path / "snap"), SESSIONS, listeners=[watchdog.listener]
    )
    await runner.catch_up()
    stored = runner.get("s5")
    assert stored is not None and stored.outcome == "failed"
    assert await watchdog.flush() == 2  # the late terminals; the broken link is the same seq
    js = nc.jetstream()
    info = await js.stream_info(DLQ_STREAM)
    assert info.state.messages == 2
    letters = [await js.get_msg(DLQ_STREAM, seq=s) for s in (1, 2)]
    assert {m.headers["Oopav-Dlq-Reason"] for m in letters} == {"late_terminal"}  # type: ignore[index]
    assert {int(m.headers["Oopav-Original-Sequence"]) for m in letters} == {  # type: ignore[index]
        late.sequence,
        ack.seq,
    }
    # Seen again (a projection rebuild), the same events are not dead-lettered twice.
    watchdog.flagged.clear()
    again = ProjectionRunner(
        nc, SnapshotStore(tmp_path / "snap2"), SESSIONS, listeners=[watchdog.listener]
    )
    await again.catch_up()
    await watchdog.flush()
    assert (await js.stream_info(DLQ_STREAM)).state.messages == 2


def test_events_without_prev_hash_still_decode_and_are_unchained() -> None:
    old = {
        "type": "critic_verdict",
        "id": "e1",
        "schema": 1,
        "aggregate": "session",
        "aggregate_id": "legacy",
        "causation_id": None,
        "correlation_id": "legacy",
        "actor": "critic/0.0.1",
        "ts": "2025-01-01T00:00:00Z",
        "verdict": "approve",
    }
    events = [(i + 1, decode(json.dumps({**old, "id": f"e{i}"}).encode())) for i in range(3)]
    assert all(e.prev_hash is None for _, e in events)
    assert check_chain(events) == []
    state = fold(events)
    assert not state.chained and state.chain_break is None


def test_a_chain_starting_after_legacy_events_verifies() -> None:
    legacy = [(1, verdict("m", 1)), (2, verdict("m", 2))]
    linked = msgspec.structs.replace(verdict("m", 3), prev_hash=event_hash(legacy[-1][1]))
    assert check_chain([*legacy, (3, linked)]) == []
    wrong = msgspec.structs.replace(linked, prev_hash=event_hash(legacy[0][1]))
    [finding] = check_chain([*legacy, (3, wrong)])
    assert finding.sequence == 3


async def test_show_warns_about_a_forged_event(nc: Any, nats_url: str, tmp_path: Path) -> None:
    store = EventStore(nc)
    await build(store, "s6")
    ack = await nc.jetstream().publish(
        "oopav.ev.session.s6.session_completed", forged_completed("s6")
    )
    rc, out, err = await run_oopav("show", "s6", url=nats_url, data_dir=tmp_path, timeout=60)
    assert rc == 0, err
    warnings = [line for line in out.splitlines() if line.startswith("WARNING:")]
    assert len(warnings) == 1 and f"broken link at seq {ack.seq}" in warnings[0]


async def test_the_chain_links_past_undecodable_junk(nc: Any) -> None:
    store = EventStore(nc)
    await build(store, "s7")
    before = await store.read("session", "s7")
    junk = await nc.jetstream().publish("oopav.ev.session.s7.critic_verdict", b"\x00junk")
    done = await EventStore(nc).append(verdict("s7", 8), expected=junk.seq)
    stored = decode((await nc.jetstream().get_msg("OOPAV_EVENTS", seq=done.sequence)).data)
    # Junk is dead-lettered and shown as undecodable where it sits (the consumers' job); the
    # chain runs over the session's events, so it does not break on it.
    assert stored.prev_hash == event_hash(before[-1][1])
    assert check_chain([*before, (done.sequence, stored)]) == []


def _older_model_called(sid: str, prev_hash: str) -> bytes:
    """A ``model_called`` as oopav wrote it before the type gained ``notes``, ``profile`` and
    ``prompt_state``: it decodes (the new fields take their defaults) but re-encodes longer."""
    return json.dumps(
        {
            "type": "model_called",
            "id": f"old-call-{sid}",
            "schema": 2,
            "aggregate": "session",
            "aggregate_id": sid,
            "causation_id": sid,
            "correlation_id": sid,
            "actor": "planner/0.1.0",
            "ts": "2026-01-01T00:00:03Z",
            "prev_hash": prev_hash,
            "role": "planner",
            "backend": "scripted",
            "request_hash": "r" * 64,
            "request": {"messages": []},
            "response": "ok",
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "latency_ms": 2.0,
            "finish_reason": "stop",
            "error": None,
            "guidance_step": None,
        },
        separators=(",", ":"),
    ).encode()


async def test_an_event_recorded_by_an_older_schema_keeps_its_hash(nc: Any) -> None:
    """Upgrading oopav must not break old sessions' chains: the link is the stored bytes'
    hash, not a re-encoding under today's schema (which adds the new defaulted fields)."""
    store = EventStore(nc)
    await build(store, "s8")
    before = await store.read("session", "s8")
    old = _older_model_called("s8", event_hash(before[-1][1]))
    ack = await nc.jetstream().publish("oopav.ev.session.s8.model_called", old)
    decoded = decode(old)
    assert decode(old).prev_hash == event_hash(before[-1][1])
    # Today's encoding differs, which is what broke the next link before.
    assert encode(decoded) != old
    assert event_hash(decoded) == hashlib.sha256(old).hexdigest()
    # The store links the next append to the stored bytes, and the whole chain checks.
    done = await store.append(verdict("s8", 9), expected=ack.seq)
    events = await store.read("session", "s8")
    assert events[-1][0] == done.sequence
    assert events[-1][1].prev_hash == hashlib.sha256(old).hexdigest()
    assert check_chain(events) == []
    assert fold(events).chain_break is None
    # A changed stored byte still breaks it: the hash is of what was stored, not a lax one.
    tampered = old.replace(b'"response":"ok"', b'"response":"OK"')
    swapped = [*events[:-2], (ack.seq, decode(tampered)), events[-1]]
    [finding] = check_chain(swapped)
    assert finding.sequence == done.sequence


def test_a_link_to_an_events_re_encoding_from_before_stored_hashes_still_verifies() -> None:
    """Sessions recorded before links hashed stored bytes linked some events by their
    re-encoding (an int stored in a float field reads back as 1.0); both hashes are fixed by
    the stored content, so both verify, and anything else still breaks."""
    first = submitted("s9")
    first_bytes = encode(msgspec.structs.replace(first, prev_hash=GENESIS))
    stored = json.dumps(
        {
            "type": "budget_exceeded",
            "budget": "bounces",
            "limit": 0,
            "used": 1,
            "phase": "verifying",
            "response": "abort",
            **{k: v for k, v in env("s9", 1, "s9").items() if k != "ts"},
            "ts": "2026-01-01T00:00:01Z",
            "schema": 1,
            "aggregate": "session",
            "prev_hash": hashlib.sha256(first_bytes).hexdigest(),
        }
    ).encode()
    budget = decode(stored)
    assert encode(budget) != stored  # "limit": 0 comes back as 0.0
    old_link = hashlib.sha256(encode(budget)).hexdigest()
    for link, ok in (
        (old_link, True),
        (hashlib.sha256(stored).hexdigest(), True),
        ("f" * 64, False),
    ):
        end = msgspec.structs.replace(completed("s9", 2), prev_hash=link)
        events = [(1, decode(first_bytes)), (2, budget), (3, end)]
        assert (check_chain(events) == []) is ok
        assert (fold(events).chain_break is None) is ok
