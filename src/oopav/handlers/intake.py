"""intake: validates submissions on ``oopav.tasks.submit`` into ``task_submitted`` or
``task_rejected`` (DESIGN "The loop", step 1).

Two paths, so that both ``nats pub`` and ``nats req`` work with the plain CLI:

- every submission is stored in ``OOPAV_INTAKE`` (a ``no_ack`` stream, so a request gets our
  answer and not a publish ack) and processed exactly once by the durable ``intake`` consumer;
  the session id is derived from the stored message, so a redelivery creates nothing new;
- a core queue subscription on the same subject sees requests (those with a reply inbox) and
  answers each with the outcome of its stored copy, matched by a digest of the payload. Results
  are observed on the event stream, so the answering and the processing process may differ.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.store import EventStore
from oopav.bus.streams import INTAKE_STREAM, INTAKE_SUBJECT
from oopav.events.catalog import Event, IntakeSource, TaskRejected, TaskSubmitted
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.codec import REGISTRY
from oopav.events.factory import actor_name
from oopav.events.ids import id_timestamp_ms, uuid7_from
from oopav.handlers.contract import Accepted, Rejected, parse_submission
from oopav.handlers.replies import ReplyMatcher, RespondingHandler, digest
from oopav.logging import get_logger

HANDLER = "intake"
log = get_logger("oopav.handlers.intake", handler=HANDLER)


def decide(
    payload: bytes,
    stream_sequence: int,
    stored_at_ms: int,
    clock: Clock,
    *,
    check_repo: bool = True,
) -> Event:
    """The intake's pure core: raw bytes and their stored position → one event."""
    source = IntakeSource(
        stream_sequence=stream_sequence, digest=digest(payload), size=len(payload)
    )
    session_id = uuid7_from(stored_at_ms, f"{INTAKE_STREAM}:{stream_sequence}:{source.digest}")
    env: dict[str, Any] = {
        "id": session_id,
        "aggregate": "session",
        "aggregate_id": session_id,
        "causation_id": None,
        "correlation_id": session_id,
        "actor": actor_name(HANDLER),
        "ts": clock.now(),
    }
    result = parse_submission(payload, check_repo=check_repo)
    if isinstance(result, Rejected):
        return TaskRejected(
            schema=TaskRejected.SCHEMA,
            error=result.error,
            field=result.field,
            code=result.code,
            excerpt=result.excerpt,
            source=source,
            **env,
        )
    assert isinstance(result, Accepted)
    return TaskSubmitted(
        schema=TaskSubmitted.SCHEMA,
        instruction=result.instruction,
        repo=result.repo,
        mission=result.mission,
        budgets=result.budgets,
        policy=result.policy,
        model=result.model,
        test_command=result.test_command,
        examples=result.examples,
        environment=result.environment,
        source=source,
        **env,
    )


def reply_for(event: Event) -> dict[str, Any]:
    if isinstance(event, TaskRejected):
        return {
            "error": event.error,
            "field": event.field,
            "code": event.code,
            "session_id": event.aggregate_id,
        }
    return {"session_id": event.aggregate_id}


class Intake(RespondingHandler):
    """The intake handler process: durable consumer + reply responder."""

    def __init__(self, nc: NATS, *, clock: Clock = SYSTEM_CLOCK, check_repo: bool = True) -> None:
        self.nc = nc
        self.events = EventStore(nc)
        self.clock = clock
        self.check_repo = check_repo
        self.replies = ReplyMatcher(
            nc,
            json.dumps(
                {
                    "error": "the intake did not finish in time; check `oopav sessions`",
                    "field": None,
                }
            ).encode(),
        )
        self.consumer = HandlerConsumer(
            nc,
            HANDLER,
            [INTAKE_SUBJECT],
            self._handle,
            options=ConsumerOptions(stream=INTAKE_STREAM, deliver_policy=DeliverPolicy.ALL),
            decode=False,
        )
        self._subs: list[Any] = []
        # Set once requests are answered: a `nats req` sent before that is stored and
        # processed, but nobody is listening for its reply inbox.
        self.ready = asyncio.Event()

    async def _handle(self, msg: Any, delivery: Delivery) -> None:
        raw: Msg = msg
        meta = raw.metadata
        stored_ms = int(meta.timestamp.timestamp() * 1000) if meta.timestamp else 0
        event = decide(
            raw.data, meta.sequence.stream, stored_ms, self.clock, check_repo=self.check_repo
        )
        # The session id is fresh, so its aggregate must be empty (expected 0); a redelivery
        # finds its own event there and counts as a duplicate.
        appended = await self.events.append(event, expected=0)
        log.info(
            "task_rejected" if isinstance(event, TaskRejected) else "task_submitted",
            session_id=event.aggregate_id,
            event_id=event.id,
            seq=appended.sequence,
            duplicate=appended.duplicate,
        )

    # -- replies --------------------------------------------------------------------------

    async def _on_result(self, msg: Msg) -> None:
        try:
            event = REGISTRY.decode(msg.data)
        except Exception:
            return
        source = getattr(event, "source", None)
        if source is not None:
            await self.replies.on_outcome(
                source.digest,
                json.dumps(reply_for(event)).encode(),
                id_timestamp_ms(event.aggregate_id),
            )

    def _subscriptions(self) -> list[tuple[str, str | None, Any]]:
        return [
            ("oopav.ev.session.*.task_submitted", None, self._on_result),
            ("oopav.ev.session.*.task_rejected", None, self._on_result),
            (INTAKE_SUBJECT, "oopav-intake", self.replies.on_request),
        ]
