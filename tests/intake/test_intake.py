"""intake over a real nats-server, driven with raw bytes exactly as the `nats` CLI sends them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from nats.js.errors import NotFoundError

from helpers import waits
from helpers.handlers import in_background
from oopav.bus.store import EventStore
from oopav.bus.streams import EVENTS_STREAM, INTAKE_STREAM, INTAKE_SUBJECT
from oopav.events import catalog as ev
from oopav.handlers.intake import Intake

TS = datetime(2026, 1, 1, tzinfo=UTC)


async def request(nc: Any, payload: bytes) -> dict[str, Any]:
    msg = await nc.request(INTAKE_SUBJECT, payload, timeout=10)
    assert not msg.headers  # the intake's answer, not a JetStream publish ack
    return json.loads(msg.data)


async def session_events(nc: Any) -> list[ev.Event]:
    js = nc.jetstream()
    info = await js.stream_info(EVENTS_STREAM, subjects_filter="oopav.ev.session.>")
    out: list[ev.Event] = []
    for subject in sorted(info.state.subjects or {}):
        sid = subject.split(".")[3]
        out.extend(e for _, e in await EventStore(nc).read("session", sid))
    return out


async def until(cond: Any) -> None:
    await waits.until(cond, timeout=15.0, interval=0.05)


async def read_session(nc: Any, session_id: str) -> list[Any]:
    """The session's events once stored: the intake answers when it sees the outcome on the
    core subject, which can reach subscribers before the stream has stored it (CI under load:
    the read right after the answer found nothing)."""
    found: list[Any] = []

    async def stored() -> bool:
        found[:] = await EventStore(nc).read("session", session_id)
        return bool(found)

    await waits.until(stored, timeout=10.0, interval=0.05)
    return found


async def test_good_submission(nc: Any, intake: Intake, repo: Path) -> None:
    body = {"instruction": "rename fetch to fetch_page", "repo": str(repo), "mission": "renames"}
    reply = await request(nc, json.dumps(body).encode())
    assert set(reply) == {"session_id"}
    [(_, event)] = await read_session(nc, reply["session_id"])
    assert isinstance(event, ev.TaskSubmitted)
    assert event.id == event.aggregate_id == reply["session_id"]
    assert event.instruction == body["instruction"] and event.repo == str(repo.resolve())
    assert event.mission == "renames" and event.source is not None
    assert event.source.stream_sequence == 1
    # Today's values of changed defaults travel with the task, so it replays under them.
    assert event.policy_defaults == {"tests.split": "auto", "plan_adequacy.unnamed": "neutral"}
    assert event.policy is None


def test_a_session_recorded_before_a_default_changed_keeps_the_old_one() -> None:
    """`tests.split` became "auto" (one run, affected tests first); sessions recorded before
    carry no policy_defaults and must replay with the two runs they made."""
    from oopav.decide.policy import decision_policy
    from oopav.projections.session import SessionState

    def split(policy: dict[str, Any] | None, defaults: dict[str, Any] | None) -> str:
        task = ev.TaskSubmitted(
            id="s", aggregate_id="s", correlation_id="s", actor="intake/0", ts=TS,
            instruction="x", repo="/r", policy=policy, policy_defaults=defaults,
        )  # fmt: skip
        return decision_policy(SessionState(session_id="s", task=task)).tests.split

    assert split(None, None) == "always"  # recorded before: two runs, as it did
    assert split(None, {"tests.split": "auto"}) == "auto"  # a new task: today's default
    assert split({"tests": "affected"}, {"tests.split": "auto"}) == "auto"  # shorthand kept
    assert split({"tests": {"split": "always"}}, {"tests.split": "auto"}) == "always"  # asked


BAD = [
    pytest.param(b"{not json", "not valid JSON", None, "invalid_json", id="not-json"),
    pytest.param(
        b'["a", "b"]', "must be a JSON object, got an array", None, "not_an_object", id="array"
    ),
    pytest.param(
        b'{"instruction": 5, "repo": "/tmp"}',
        "instruction must be a string, got an integer",
        "instruction",
        "wrong_type",
        id="wrong-type",
    ),
    pytest.param(
        b'{"repo": "/tmp"}',
        "instruction is required",
        "instruction",
        "missing",
        id="missing-instruction",
    ),
    pytest.param(
        b'{"instruction": "x", "repo": "/tmp", "instructions": "y"}',
        "unknown field 'instructions'",
        "instructions",
        "unknown_field",
        id="unknown-field",
    ),
    pytest.param(
        b'{"instruction": "x", "repo": "/no/such/dir/anywhere"}',
        "does not exist",
        "repo",
        "not_found",
        id="missing-path",
    ),
    pytest.param(
        b'{"instruction": "caf\xe9", "repo": "/tmp"}',
        "not valid UTF-8",
        None,
        "invalid_utf8",
        id="invalid-utf8",
    ),
    pytest.param(
        b'{"instruction": "x", "repo": "/tmp", "budgets": {"iterations": "many"}}',
        "budgets.iterations must be an integer",
        "budgets.iterations",
        "wrong_type",
        id="budget-type",
    ),
]


@pytest.mark.parametrize(("payload", "error", "field", "code"), BAD)
async def test_bad_submission_gets_a_specific_error(
    nc: Any, intake: Intake, repo: Path, payload: bytes, error: str, field: str | None, code: str
) -> None:
    reply = await request(nc, payload)
    assert error in reply["error"], reply
    assert reply["field"] == field and reply["code"] == code
    [(_, rejected)] = await read_session(nc, reply["session_id"])
    assert isinstance(rejected, ev.TaskRejected)
    assert rejected.error == reply["error"] and rejected.field == field
    # The intake keeps working.
    good = await request(nc, json.dumps({"instruction": "next", "repo": str(repo)}).encode())
    assert "error" not in good and good["session_id"] != reply["session_id"]


async def test_huge_instruction(nc: Any, intake: Intake, repo: Path) -> None:
    body = {"instruction": "x" * (1024 * 1024), "repo": str(repo)}
    reply = await request(nc, json.dumps(body).encode())
    assert reply["field"] == "instruction" and reply["code"] == "too_large"
    assert "1048576 bytes; the limit is 65536" in reply["error"]
    rejected = (await read_session(nc, reply["session_id"]))[0][1]
    assert isinstance(rejected, ev.TaskRejected) and len(rejected.excerpt) <= 200
    good = await request(nc, json.dumps({"instruction": "ok", "repo": str(repo)}).encode())
    assert "session_id" in good and "error" not in good


async def test_same_payload_twice_makes_two_sessions(nc: Any, intake: Intake, repo: Path) -> None:
    payload = json.dumps({"instruction": "again", "repo": str(repo)}).encode()
    a, b = await asyncio.gather(request(nc, payload), request(nc, payload))
    assert a["session_id"] != b["session_id"]
    assert len(await session_events(nc)) == 2


async def test_plain_publish_is_processed(nc: Any, intake: Intake, repo: Path) -> None:
    await nc.publish(INTAKE_SUBJECT, json.dumps({"instruction": "pub", "repo": str(repo)}).encode())

    async def one() -> bool:
        return len(await session_events(nc)) == 1

    await until(one)
    [event] = await session_events(nc)
    assert isinstance(event, ev.TaskSubmitted) and event.instruction == "pub"


async def test_intake_started_after_publish(nc: Any, repo: Path) -> None:
    await nc.publish(
        INTAKE_SUBJECT, json.dumps({"instruction": "early", "repo": str(repo)}).encode()
    )
    await nc.flush()
    handler = Intake(nc)
    async with in_background(handler, 10):

        async def one() -> bool:
            return len(await session_events(nc)) == 1

        await until(one)
    [event] = await session_events(nc)
    assert isinstance(event, ev.TaskSubmitted) and event.instruction == "early"


async def test_redelivered_submission_creates_no_second_session(nc: Any, repo: Path) -> None:
    js = nc.jetstream()
    handler = Intake(nc)
    task = asyncio.create_task(handler.run())
    await asyncio.wait_for(handler.ready.wait(), 10)
    reply = await request(nc, json.dumps({"instruction": "once", "repo": str(repo)}).encode())
    handler.stop()
    await asyncio.wait_for(task, 10)
    # Lose the consumer's ack state, as if the ack never reached the server: every stored
    # submission is delivered again to a fresh intake.
    await js.delete_consumer(INTAKE_STREAM, "intake")
    again = Intake(nc)
    async with in_background(again, 10):

        async def redelivered() -> bool:
            try:
                info = await js.consumer_info(INTAKE_STREAM, "intake")
            except NotFoundError:  # not created yet
                return False
            return info.ack_floor.stream_seq >= 1

        await until(redelivered)
    assert again.consumer.processed == 1
    events = await session_events(nc)
    assert [e.id for e in events] == [reply["session_id"]]


async def test_a_request_on_a_misspelt_subject_is_answered_not_left_to_time_out(
    nc: Any, intake: Intake, repo: Path
) -> None:
    """`nats req oopav.tasks.sumbit …` is stored by the intake stream (`oopav.tasks.>`) but
    nothing processes it: the intake answers at once, naming the right subject."""
    body = json.dumps({"instruction": "x", "repo": str(repo)}).encode()
    msg = await nc.request("oopav.tasks.sumbit", body, timeout=5)
    answer = json.loads(msg.data)
    assert answer["code"] == "unknown_subject" and answer["field"] == "subject"
    assert "oopav.tasks.sumbit" in answer["error"] and INTAKE_SUBJECT in answer["error"]
    # The real subject is not answered twice (once by the refusal).
    ok = await request(nc, body)
    assert "session_id" in ok and "code" not in ok


async def test_a_new_session_is_in_the_shared_cache_as_stored(nc: Any, repo: Path) -> None:
    """With the loop handlers' cache of its process, the intake puts each new session in it
    as stored, so the observer's first decision needs no read of the stream."""
    from oopav.handlers.runtime import SessionCache
    from oopav.projections.session import fold

    cache = SessionCache(EventStore(nc))
    handler = Intake(nc, cache=cache)
    task = asyncio.create_task(handler.run())
    await asyncio.wait_for(handler.ready.wait(), 10)
    try:
        body = {"instruction": "rename fetch to fetch_page", "repo": str(repo)}
        reply = await request(nc, json.dumps(body).encode())
    finally:
        handler.stop()
        await asyncio.wait_for(task, 10)
    sid = reply["session_id"]
    stored = await EventStore(nc).read("session", sid)
    [(seq, event)] = stored
    state = await cache.load(sid, delivered=(seq, event))
    assert cache.reads == 0 and cache.followed == 1
    fresh = fold(stored)
    assert (state.event_ids, state.last_sequence, state.chain_hash, state.phase) == (
        fresh.event_ids,
        fresh.last_sequence,
        fresh.chain_hash,
        fresh.phase,
    )


async def test_two_intakes_answer_identical_requests_each_with_its_own_session(
    nc: Any, repo: Path
) -> None:
    """Two processes each running an intake (two `oopav run` sharing a server) and one task
    file submitted by both at the same moment: every intake sees both outcomes on the event
    stream, and each request reaches one of them. Each requester is answered with the session
    made from its own stored copy — the `Oopav-Request` header it sent is stored with the copy
    and read back — never the other one's (CI found two runs handed one session)."""
    from oopav.handlers.replies import REQUEST_HEADER

    js = nc.jetstream()
    payload = json.dumps({"instruction": "same file", "repo": str(repo)}).encode()
    first, second = Intake(nc), Intake(nc)
    async with in_background(first, 10), in_background(second, 10):
        await asyncio.wait_for(first.ready.wait(), 10)
        await asyncio.wait_for(second.ready.wait(), 10)
        for _round in range(3):
            ids = [f"req-{_round}-{i}" for i in range(4)]
            replies = await asyncio.gather(
                *(
                    nc.request(INTAKE_SUBJECT, payload, timeout=10, headers={REQUEST_HEADER: r})
                    for r in ids
                )
            )
            sessions = [json.loads(m.data)["session_id"] for m in replies]
            assert len(set(sessions)) == 4
            for rid, sid in zip(ids, sessions, strict=True):
                [(_, event)] = await EventStore(nc).read("session", sid)
                stored = await js.get_msg(INTAKE_STREAM, event.source.stream_sequence)
                assert stored.headers[REQUEST_HEADER] == rid
