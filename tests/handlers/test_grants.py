"""The grants handler on a real nats-server: raw JSON as the `nats` CLI sends it becomes a
permission event of the session, and the request gets the grant id or a specific error.
Also `oopav grant` / `oopav deny`."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from helpers.handlers import in_background
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import DLQ_STREAM, GRANT_SUBJECT, ensure_streams
from oopav.events.catalog import PermissionDenied, PermissionGranted, TaskSubmitted
from oopav.events.clock import ManualClock
from oopav.handlers.grants import GrantRejected, Grants, parse_request
from oopav.handlers.intake import decide
from oopav.sandbox.capabilities import check, fold_grants

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


async def new_session(events: EventStore, n: int = 1) -> str:
    payload = json.dumps({"instruction": f"task {n}", "repo": "/tmp"}).encode()
    event = decide(payload, n, int(T0.timestamp() * 1000) + n, ManualClock(T0), check_repo=False)
    assert isinstance(event, TaskSubmitted)
    await events.append(event, expected=0)
    return event.aggregate_id


async def ask(nc: Any, body: dict[str, Any] | bytes) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(GRANT_SUBJECT, data, timeout=10)
    return json.loads(msg.data)


@pytest.fixture
async def grants(nc: Any):
    handler = Grants(nc, clock=ManualClock(T0))
    await handler.start_responder()
    task = asyncio.create_task(handler.run())
    yield handler
    handler.stop()
    await asyncio.wait_for(task, 10)


async def test_grant_over_nats_becomes_an_event(nc, grants):
    events = EventStore(nc)
    sid = await new_session(events)
    reply = await ask(nc, {"session_id": sid, "scope": "exec:pytest", "uses": 1, "by": "alice"})
    assert "error" not in reply, reply
    assert reply["type"] == "permission_granted" and reply["max_uses"] == 1
    stored = [e for _, e in await events.read("session", sid)]
    grant = stored[-1]
    assert isinstance(grant, PermissionGranted)
    assert grant.id == reply["grant_id"]
    assert (grant.scope, grant.granted_by, grant.max_uses) == ("exec:pytest", "alice", 1)
    assert grant.actor.startswith("grants/")
    state = fold_grants(stored)
    assert check(["exec:pytest -q"], state, None, T0).allowed

    timed = await ask(nc, {"session_id": sid, "scope": "net.http:pypi.org", "for": "60s"})
    assert timed["expires_at"] == (T0 + timedelta(seconds=60)).isoformat()
    stored = [e for _, e in await events.read("session", sid)]
    assert stored[-1].granted_by == "nats"  # type: ignore[union-attr]
    state = fold_grants(stored)
    assert check(["net.http:pypi.org"], state, None, T0 + timedelta(seconds=59)).allowed
    assert not check(["net.http:pypi.org"], state, None, T0 + timedelta(seconds=60)).allowed


async def test_deny_over_nats_withdraws_the_grant(nc, grants):
    events = EventStore(nc)
    sid = await new_session(events)
    await ask(nc, {"session_id": sid, "scope": "net.any", "by": "alice"})
    reply = await ask(
        nc, {"session_id": sid, "scope": "net.any", "deny": True, "by": "bob", "reason": "no"}
    )
    assert reply["type"] == "permission_denied"
    stored = [e for _, e in await events.read("session", sid)]
    assert isinstance(stored[-1], PermissionDenied)
    decision = check(["net.http:pypi.org"], fold_grants(stored), None, T0)
    assert decision.outcome == "denied" and "bob: no" in decision.reason


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (b"not json", None, "not JSON"),
        (b"[1, 2]", None, "JSON object"),
        ({"scope": "net.any"}, "session_id", "required"),
        ({"session_id": "S", "scope": "exec"}, "scope", "needs an argument"),
        ({"session_id": "S", "scope": "net.http:a/b"}, "scope", "host name"),
        ({"session_id": "S", "scope": "net.any", "uses": 0}, "uses", ">= 1"),
        ({"session_id": "S", "scope": "net.any", "uses": True}, "uses", ">= 1"),
        ({"session_id": "S", "scope": "net.any", "for": "soon"}, "for", "cannot read duration"),
        ({"session_id": "S", "scope": "net.any", "for": "1m", "uses": 2}, "uses", "not both"),
        ({"session_id": "S", "scope": "net.any", "deny": True, "uses": 1}, "uses", "denial"),
        ({"session_id": "S", "scope": "net.any", "deny": "yes"}, "deny", "true or false"),
        ({"session_id": "S", "scope": "net.any", "by": ""}, "by", "non-empty"),
        ({"session_id": "S", "scope": "net.any", "who": "x"}, "who", "unknown field"),
    ],
)
def test_parse_request_names_the_field(body, field, words):
    with pytest.raises(GrantRejected) as exc:
        parse_request(body)
    assert exc.value.field == field
    assert words in exc.value.error


async def test_bad_submissions_get_a_specific_error_and_a_dead_letter(nc, grants):
    events = EventStore(nc)
    sid = await new_session(events)
    bad_scope = await ask(nc, {"session_id": sid, "scope": "exec:"})
    assert bad_scope["field"] == "scope" and "exec" in bad_scope["error"]
    unknown = await ask(nc, {"session_id": "0197-no-such-session", "scope": "net.any"})
    assert unknown["field"] == "session_id" and "no session" in unknown["error"]
    garbage = await ask(nc, b"\xff\xfe{")
    assert garbage["field"] is None and "not JSON" in garbage["error"]
    # No event reached the session or created the unknown one.
    assert [e.type for _, e in await events.read("session", sid)] == ["task_submitted"]
    assert await events.last_sequence("session", "0197-no-such-session") == 0
    # Each rejected submission is kept on the DLQ with its reason.
    info = await events.js.stream_info(DLQ_STREAM)
    assert info.state.messages == 3
    # The handler keeps working after bad input.
    assert "grant_id" in await ask(nc, {"session_id": sid, "scope": "net.any"})


async def test_published_while_down_is_processed_on_start_exactly_once(nc):
    events = EventStore(nc)
    sid = await new_session(events)
    # A plain `nats pub` with no handler running: stored durably in OOPAV_INTAKE.
    body = json.dumps({"session_id": sid, "scope": "fs.write:docs/**", "by": "carol"}).encode()
    await nc.publish(GRANT_SUBJECT, body)
    await nc.publish(GRANT_SUBJECT, body)  # two submissions are two grants
    await nc.flush()

    async def run_until(n_grants: int) -> None:
        handler = Grants(nc, clock=ManualClock(T0))
        async with in_background(handler, 10):
            for _ in range(200):
                got = [e for _, e in await events.read("session", sid)]
                if sum(isinstance(e, PermissionGranted) for e in got) >= n_grants:
                    break
                await asyncio.sleep(0.05)

    await run_until(2)
    first = [e.id for _, e in await events.read("session", sid)]
    # Reprocessing the same stored messages (a redelivery after a crash) appends nothing new.
    await nc.jetstream().delete_consumer("OOPAV_INTAKE", "grants")
    await run_until(2)
    assert [e.id for _, e in await events.read("session", sid)] == first
    assert len(first) == 3


def _session_via(url: str) -> str:
    async def go() -> str:
        conn = await connect(url, name="test-cli")
        try:
            await ensure_streams(conn.jetstream())
            return await new_session(EventStore(conn), n=42)
        finally:
            await conn.close()

    return asyncio.run(go())


def _read_via(url: str, sid: str) -> list[Any]:
    async def go() -> list[Any]:
        conn = await connect(url, name="test-cli")
        try:
            return [e for _, e in await EventStore(conn).read("session", sid)]
        finally:
            await conn.close()

    return asyncio.run(go())


def test_cli_grant_and_deny(nats_url: str, tmp_path: Path):
    from oopav.cli import cli

    sid = _session_via(nats_url)
    runner = CliRunner()
    base = ["--nats-url", nats_url, "--data-dir", str(tmp_path / "data")]
    r = runner.invoke(cli, [*base, "grant", sid, "exec:pytest", "--uses", "2", "--by", "dana"])
    assert r.exit_code == 0, r.output
    grant_id = r.output.strip().splitlines()[-1]
    r = runner.invoke(cli, [*base, "grant", sid, "net.http:pypi.org", "--for", "5m", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.strip().splitlines()[-1])["expires_at"]
    r = runner.invoke(cli, [*base, "deny", sid, "net.any", "--by", "dana", "--reason", "offline"])
    assert r.exit_code == 0, r.output
    stored = _read_via(nats_url, sid)
    assert [e.type for e in stored[-3:]] == [
        "permission_granted",
        "permission_granted",
        "permission_denied",
    ]
    assert stored[-3].id == grant_id and stored[-3].max_uses == 2
    assert stored[-3].actor.startswith("cli.grant/")
    assert stored[-1].actor.startswith("cli.deny/")

    bad = runner.invoke(cli, [*base, "grant", sid, "exec"])
    assert bad.exit_code == 2
    assert "needs an argument" in bad.output and "field: scope" in bad.output
    missing = runner.invoke(cli, [*base, "grant", "0" * 36, "net.any"])
    assert missing.exit_code == 2 and "no session" in missing.output
    assert len(_read_via(nats_url, sid)) == len(stored)


async def test_a_grant_on_a_misspelt_subject_is_answered(nc, grants):
    msg = await nc.request("oopav.grants.grant", b'{"session_id": "x"}', timeout=5)
    answer = json.loads(msg.data)
    assert answer["code"] == "unknown_subject" and "oopav.grants.submit" in answer["error"]
