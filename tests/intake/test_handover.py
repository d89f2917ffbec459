"""A request taken by an intake process that stops before its outcome comes.

Found with two `oopav run` on one data dir, the second submitting as the first exited: the
exiting process's queue subscription took the request, its consumer handed the stored copy
back, the other process made the session, and nobody answered the requester (`no intake
answered within 10s`), which then exited and left the session `submitted` with nobody to run
it. Two fixes, each tested here: a stopping process leaves the queue group first and answers
what it already took (server side), and ``submit_task`` finds its own outcome on the event
stream whoever answers (client side)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nats.errors
import pytest

from helpers import waits
from helpers.handlers import in_background
from oopav.bus.store import EventStore
from oopav.bus.streams import INTAKE_SUBJECT
from oopav.events import catalog as ev
from oopav.handlers.intake import Intake
from oopav.handlers.replies import REQUEST_HEADER, digest
from oopav.services import submit_task


def _payload(repo: Path, text: str = "rename fetch to fetch_page") -> bytes:
    return json.dumps({"instruction": text, "repo": str(repo)}).encode()


async def test_a_stopping_intake_answers_the_request_it_took_with_the_other_process_outcome(
    nc: Any, repo: Path
) -> None:
    """Process A took the request (it waits for the outcome); A stops; process B's consumer
    makes the session. A still answers with B's outcome, and takes no request after stop()."""
    a = Intake(nc)
    await a.start_responder()  # A answers requests; no consumer anywhere yet
    reply = asyncio.create_task(nc.request(INTAKE_SUBJECT, _payload(repo), timeout=15))
    await waits.until(a.replies.has_waiting, timeout=10.0, interval=0.02)

    a.stop()  # leaves the queue group at once
    handing_over = asyncio.create_task(a.hand_over(wait=10.0))
    await asyncio.sleep(0.2)
    # A takes no more requests (they go to other members; here there is none left).
    with pytest.raises(nats.errors.TimeoutError):
        await nc.request(INTAKE_SUBJECT, _payload(repo, "another"), timeout=1)
    assert digest(_payload(repo, "another")) not in a.replies.waiting
    assert digest(_payload(repo)) in a.replies.waiting  # the one it took still waits

    b = Intake(nc)
    async with in_background(b.consumer, 10):  # B's consumer only: it makes the session
        answer = json.loads((await reply).data)
    await handing_over
    [(_, event)] = await EventStore(nc).read("session", answer["session_id"])
    assert isinstance(event, ev.TaskSubmitted) and event.instruction == "rename fetch to fetch_page"


async def test_a_stopping_intake_tells_a_request_it_cannot_answer_that_it_is_stored(
    nc: Any, repo: Path
) -> None:
    a = Intake(nc)
    await a.start_responder()
    reply = asyncio.create_task(nc.request(INTAKE_SUBJECT, _payload(repo), timeout=15))
    await waits.until(a.replies.has_waiting, timeout=10.0, interval=0.02)
    a.stop()
    await a.hand_over(wait=0.3)  # nobody processes the stored copy in time
    answer = json.loads((await reply).data)
    assert answer["code"] == "queued" and "stored" in answer["error"]
    assert "do not submit it again" in answer["error"]


async def _swallowing_responder(nc: Any) -> Any:
    """A queue member that takes requests and never answers (a process killed mid-request)."""

    async def swallow(msg: Any) -> None:
        return None

    return await nc.subscribe(INTAKE_SUBJECT, queue="oopav-intake", cb=swallow)


async def test_submit_task_finds_its_own_outcome_when_the_answering_process_is_gone(
    nc: Any, repo: Path
) -> None:
    """The request went to a process that never answers; another process's consumer made the
    session: ``submit_task`` reads it off the event stream, by the id stored with its copy."""
    sub = await _swallowing_responder(nc)
    b = Intake(nc)
    async with in_background(b.consumer, 10):
        reply = await submit_task(SimpleNamespace(nc=nc), json.loads(_payload(repo)), timeout=10)
    await sub.unsubscribe()
    assert set(reply) == {"session_id"}, reply
    [(_, event)] = await EventStore(nc).read("session", reply["session_id"])
    assert isinstance(event, ev.TaskSubmitted)


async def test_identical_submissions_each_find_their_own_session(nc: Any, repo: Path) -> None:
    """Two requesters, one payload, nobody answering: each is matched by its request id, so
    they never share a session (and an outcome sent with another id is not taken)."""
    sub = await _swallowing_responder(nc)
    body = json.loads(_payload(repo, "same task"))
    b = Intake(nc)
    async with in_background(b.consumer, 10):
        replies = await asyncio.gather(
            *(submit_task(SimpleNamespace(nc=nc), body, timeout=10) for _ in range(3))
        )
    await sub.unsubscribe()
    sessions = [r["session_id"] for r in replies]
    assert len(set(sessions)) == 3
    js = nc.jetstream()
    seen = set()
    for sid in sessions:
        [(_, event)] = await EventStore(nc).read("session", sid)
        stored = await js.get_msg("OOPAV_INTAKE", event.source.stream_sequence)
        seen.add(stored.headers[REQUEST_HEADER])
    assert len(seen) == 3


async def test_submit_task_still_says_queued_when_no_outcome_comes(nc: Any, repo: Path) -> None:
    sub = await _swallowing_responder(nc)
    reply = await submit_task(SimpleNamespace(nc=nc), json.loads(_payload(repo)), timeout=1)
    await sub.unsubscribe()
    assert reply["code"] == "queued" and "do not submit it again" in reply["error"]


async def test_submit_task_says_it_cannot_tell_when_the_connection_is_lost(tmp_path: Path) -> None:
    """The server went away before any answer: the submission may or may not be stored, so
    the reply does not say "stored, do not resubmit" (`oopav submit` while `oopav up`
    stopped under it)."""
    from oopav.bus.server import EmbeddedServer
    from oopav.bus.store import connect
    from oopav.bus.streams import ensure_streams

    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    url = server.start()
    nc = await connect(url, give_up_after=30.0)
    try:
        await ensure_streams(nc.jetstream())
        repo = tmp_path / "repo"
        repo.mkdir()
        body = json.loads(_payload(repo))
        # Someone takes the request and never answers (an intake about to die): without a
        # responder the server answers "no responders" at once, and under load that answer
        # could come before the server stopped (CI flake).
        await _swallowing_responder(nc)
        submitting = asyncio.create_task(submit_task(SimpleNamespace(nc=nc, url=url), body, 3))
        await asyncio.to_thread(server.stop)
        reply = await submitting
    finally:
        server.stop()
        with contextlib.suppress(OSError):  # closing flushes to the server this test stopped
            await nc.close()
    assert reply["code"] == "disconnected", reply
    assert url in reply["error"] and "may not have been stored" in reply["error"]


async def test_submit_task_says_nothing_took_it_when_no_stream_and_no_intake(
    nc: Any, repo: Path
) -> None:
    """Without the OOPAV_INTAKE stream (deleted, or a server oopav never set up) and without an
    intake, the server answers "no responders": nothing was stored, so the reply has its own
    code (the CLI says `unanswered:`, exit 1) and tells the user to submit it again."""
    await nc.jetstream().delete_stream("OOPAV_INTAKE")
    reply = await submit_task(SimpleNamespace(nc=nc), json.loads(_payload(repo)), timeout=3)
    assert reply["code"] == "no_intake", reply
    assert "submit it again" in reply["error"] and "oopav up" in reply["error"]
