"""Tamper evidence end to end: a finished loop session is chained and replays; a
``session_completed`` forged by hand with a raw publish is named by ``replay --verify`` and
ignored by the projection."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from loop_harness import finish_session, loop, rename_script, start, task

from oopav.bus.store import EventStore
from oopav.events.chain import GENESIS, check_chain, event_hash
from oopav.projections.session import fold


async def test_forged_completion_on_a_live_session_is_detected(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from oopav.replay import verify_session

    script = rename_script()
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo))
        state, _ = await finish_session(bus, sid)
        recorded = await bus.events.read("session", sid)
    assert state.outcome == "success", state.summary
    assert recorded[0][1].prev_hash == GENESIS
    for (_, before), (_, after) in itertools.pairwise(recorded):
        assert after.prev_hash == event_hash(before), after.type
    assert check_chain(recorded) == [] and fold(recorded).chain_break is None

    forged = {
        "type": "session_completed",
        "id": "forged",
        "aggregate": "session",
        "aggregate_id": sid,
        "correlation_id": sid,
        "actor": "verifier/0.1.0",
        "ts": "2026-01-01T00:00:00Z",
        "outcome": "failed",
        "summary": "forged",
    }
    ack = await nc.jetstream().publish(
        f"oopav.ev.session.{sid}.session_completed", json.dumps(forged).encode()
    )
    report = await verify_session(nats_url, sid, idle_timeout=10.0, total_timeout=120.0)
    assert not report.ok
    first = report.tampering[0]
    assert first.sequence == ack.seq and first.kind == "broken_link", report.tampering
    assert f"seq {ack.seq}" in report.describe() and "TAMPERED" in report.describe()
    assert any(f.kind == "late_terminal" for f in report.tampering)
    stored = fold(await EventStore(nc).read("session", sid))
    assert stored.outcome == "success" and stored.late_terminals
    assert stored.chain_break is not None and stored.chain_break.startswith(f"seq {ack.seq} (")
