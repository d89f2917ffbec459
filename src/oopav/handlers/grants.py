"""grants: permission grants and denials submitted on ``oopav.grants.submit`` become
``permission_granted`` / ``permission_denied`` events of the session (DESIGN invariant 7).

The plain ``nats`` CLI is enough::

    nats req oopav.grants.submit '{"session_id": "0197...", "scope": "exec:pytest",
                                   "uses": 1, "by": "alice"}'

Fields: ``session_id`` and ``scope`` (required); ``for`` (a duration such as ``"60s"``, or a
number of seconds) or ``uses`` (an integer >= 1), or neither for a grant that lasts the
session; ``by`` (who decides, default ``"nats"``); ``deny`` (true: refuse the scope instead);
``reason`` (with ``deny``). The reply is ``{"grant_id": ...}`` (the event's id) or
``{"error": ..., "field": ...}``.

Same two paths as the intake: every submission is stored in ``OOPAV_INTAKE`` and processed
once by the durable ``grants`` consumer (the event id is derived from the stored message, so a
redelivery appends nothing new); a core queue subscription answers requests with the outcome
of their stored copy, matched by payload digest. The processor announces each outcome on
``oopav.grants_outcome.<digest>`` (core NATS, not stored), so the answering process and the
processing process may differ. A rejected submission is also parked on ``oopav.dlq.grants``
with the reason, so ``oopav dlq grants`` shows it.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.store import EventStore
from oopav.bus.streams import GRANT_SUBJECT, INTAKE_STREAM, dlq_subject
from oopav.events.catalog import PermissionDenied, PermissionGranted
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.ids import uuid7_from
from oopav.handlers.replies import ReplyMatcher, RespondingHandler, digest, refuse_other_subjects
from oopav.logging import get_logger
from oopav.sandbox.capabilities import (
    ScopeError,
    build_denial,
    build_grant,
    parse_duration,
    parse_scope,
)

HANDLER = "grants"
OUTCOME_PREFIX = "oopav.grants_outcome"
MAX_PAYLOAD = 64 * 1024
FIELDS = ("session_id", "scope", "for", "uses", "by", "deny", "reason")
log = get_logger("oopav.handlers.grants", handler=HANDLER)


class GrantRejected(ValueError):
    """A submission that cannot become an event: what is wrong, and in which field."""

    def __init__(self, error: str, field: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.field = field

    def reply(self) -> dict[str, Any]:
        return {"error": self.error, "field": self.field}


@dataclass(frozen=True)
class GrantRequest:
    """A validated submission (the session's existence is checked separately)."""

    session_id: str
    scope: str
    for_seconds: float | None = None
    uses: int | None = None
    by: str = "nats"
    deny: bool = False
    reason: str = ""


def parse_request(payload: bytes | dict[str, Any]) -> GrantRequest:
    """Validate raw submission bytes (as the ``nats`` CLI sends them) or a decoded dict.
    Raises GrantRejected naming the field."""
    if isinstance(payload, bytes):
        if len(payload) > MAX_PAYLOAD:
            raise GrantRejected(f"submission is {len(payload)} bytes; the limit is {MAX_PAYLOAD}")
        try:
            body = json.loads(payload)
        except (ValueError, UnicodeDecodeError) as exc:
            raise GrantRejected(
                f"not JSON ({exc}); send e.g. "
                '{"session_id": "<id>", "scope": "exec:pytest", "uses": 1, "by": "alice"}'
            ) from None
    else:
        body = payload
    if not isinstance(body, dict):
        raise GrantRejected(f"submission must be a JSON object, got {type(body).__name__}")
    for key in body:
        if key not in FIELDS:
            raise GrantRejected(f"unknown field {key!r} (allowed: {', '.join(FIELDS)})", key)

    session_id = body.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        raise GrantRejected(
            "session_id is required: the session's id (see `oopav sessions`)", "session_id"
        )
    scope_text = body.get("scope")
    if not isinstance(scope_text, str):
        raise GrantRejected("scope is required, e.g. exec:pytest or net.http:pypi.org", "scope")
    try:
        scope = str(parse_scope(scope_text))
    except ScopeError as exc:
        raise GrantRejected(str(exc), "scope") from None

    deny = body.get("deny", False)
    if not isinstance(deny, bool):
        raise GrantRejected(f"deny must be true or false, got {deny!r}", "deny")
    by = body.get("by", "nats")
    if not isinstance(by, str) or not by.strip() or len(by) > 200:
        raise GrantRejected("by must be a non-empty name of at most 200 characters", "by")
    reason = body.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 2000:
        raise GrantRejected("reason must be a string of at most 2000 characters", "reason")
    if reason and not deny:
        raise GrantRejected("reason only goes with deny: true", "reason")

    for_seconds: float | None = None
    raw_for = body.get("for")
    if raw_for is not None:
        if deny:
            raise GrantRejected("a denial has no duration; drop 'for'", "for")
        if isinstance(raw_for, bool) or not isinstance(raw_for, (str, int, float)):
            raise GrantRejected(
                f"for must be a duration like '60s' or '5m', got {raw_for!r}", "for"
            )
        try:
            for_seconds = parse_duration(str(raw_for))
        except ValueError as exc:
            raise GrantRejected(str(exc), "for") from None
        if not math.isfinite(for_seconds):
            raise GrantRejected(f"for must be finite, got {raw_for!r}", "for")
    uses = body.get("uses")
    if uses is not None:
        if deny:
            raise GrantRejected("a denial has no use count; drop 'uses'", "uses")
        if isinstance(uses, bool) or not isinstance(uses, int) or uses < 1:
            raise GrantRejected(f"uses must be an integer >= 1, got {uses!r}", "uses")
    if for_seconds is not None and uses is not None:
        raise GrantRejected("give either 'for' or 'uses', not both", "uses")
    return GrantRequest(
        session_id=session_id.strip(),
        scope=scope,
        for_seconds=for_seconds,
        uses=uses,
        by=by.strip(),
        deny=deny,
        reason=reason,
    )


def build_event(
    req: GrantRequest,
    *,
    clock: Clock = SYSTEM_CLOCK,
    handler: str = HANDLER,
    event_id: str | None = None,
) -> PermissionGranted | PermissionDenied:
    if req.deny:
        return build_denial(
            req.session_id,
            req.scope,
            denied_by=req.by,
            reason=req.reason,
            clock=clock,
            handler=handler,
            event_id=event_id,
        )
    return build_grant(
        req.session_id,
        req.scope,
        for_seconds=req.for_seconds,
        uses=req.uses,
        granted_by=req.by,
        clock=clock,
        handler=handler,
        event_id=event_id,
    )


def reply_for(event: PermissionGranted | PermissionDenied) -> dict[str, Any]:
    body: dict[str, Any] = {
        "grant_id": event.id,
        "type": event.type,
        "session_id": event.aggregate_id,
        "scope": event.scope,
    }
    if isinstance(event, PermissionGranted):
        body["expires_at"] = event.expires_at.isoformat() if event.expires_at else None
        body["max_uses"] = event.max_uses
    return body


async def submit_grant(
    events: EventStore,
    payload: bytes | dict[str, Any],
    *,
    clock: Clock = SYSTEM_CLOCK,
    handler: str = HANDLER,
    event_id: str | None = None,
) -> dict[str, Any]:
    """Validate, check that the session exists, append; the reply body either way. Used by
    the handler (with a derived id) and by ``oopav grant`` / ``oopav deny`` (fresh id)."""
    try:
        req = parse_request(payload)
    except GrantRejected as exc:
        return exc.reply()
    if await events.last_sequence("session", req.session_id) == 0:
        return GrantRejected(
            f"no session {req.session_id!r} in the event stream; see `oopav sessions`",
            "session_id",
        ).reply()
    event = build_event(req, clock=clock, handler=handler, event_id=event_id)
    appended = await events.append(event)
    log.info(
        event.type,
        session_id=event.aggregate_id,
        event_id=event.id,
        scope=event.scope,
        seq=appended.sequence,
        duplicate=appended.duplicate,
    )
    return reply_for(event)


class Grants(RespondingHandler):
    """The grants handler process: durable consumer + reply responder (like ``Intake``)."""

    def __init__(self, nc: NATS, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.nc = nc
        self.events = EventStore(nc)
        self.clock = clock
        self.replies = ReplyMatcher(
            nc,
            json.dumps(
                {
                    "error": "the grants handler did not finish in time; check `oopav show`",
                    "field": None,
                }
            ).encode(),
        )
        self.consumer = HandlerConsumer(
            nc,
            HANDLER,
            [GRANT_SUBJECT],
            self._handle,
            options=ConsumerOptions(stream=INTAKE_STREAM, deliver_policy=DeliverPolicy.ALL),
            decode=False,
        )
        self._subs: list[Any] = []
        self.ready = asyncio.Event()

    async def _handle(self, msg: Any, delivery: Delivery) -> None:
        raw: Msg = msg
        meta = raw.metadata
        stored_ms = int(meta.timestamp.timestamp() * 1000) if meta.timestamp else 0
        key = digest(raw.data)
        event_id = uuid7_from(stored_ms, f"{INTAKE_STREAM}:{meta.sequence.stream}:{key}")
        body = await submit_grant(self.events, raw.data, clock=self.clock, event_id=event_id)
        if "error" in body:
            log.warning("grant_rejected", error=body["error"], field=body["field"])
            await self._dead_letter(raw, body)
        await self.nc.publish(
            f"{OUTCOME_PREFIX}.{key}",
            json.dumps(body).encode(),
            headers={"Oopav-Stored-Ms": str(stored_ms)},
        )

    async def _dead_letter(self, raw: Msg, body: dict[str, Any]) -> None:
        """Keep a rejected submission on ``oopav.dlq.grants`` with the reason (the consumer
        then acks it: it was handled, not failed)."""
        meta = raw.metadata
        detail = str(body["error"]) + (f" (field: {body['field']})" if body.get("field") else "")
        headers = {
            "Oopav-Dlq-Reason": "grant_rejected",
            "Oopav-Dlq-Detail": detail[:1000].replace("\r", " ").replace("\n", " "),
            "Oopav-Dlq-Handler": HANDLER,
            "Oopav-Original-Subject": raw.subject,
            "Oopav-Original-Stream": meta.stream,
            "Oopav-Original-Sequence": str(meta.sequence.stream),
            "Nats-Msg-Id": f"dlq:{HANDLER}:{meta.stream}:{meta.sequence.stream}",
        }
        await self.events.js.publish(dlq_subject(HANDLER), raw.data, headers=headers)

    # -- replies --------------------------------------------------------------------------

    async def _on_outcome(self, msg: Msg) -> None:
        stored = (msg.headers or {}).get("Oopav-Stored-Ms")
        await self.replies.on_outcome(
            msg.subject.rsplit(".", 1)[-1], msg.data, int(stored) if stored else None
        )

    def _subscriptions(self) -> list[tuple[str, str | None, Any]]:
        return [
            (f"{OUTCOME_PREFIX}.*", None, self._on_outcome),
            (GRANT_SUBJECT, "oopav-grants", self.replies.on_request),
            (
                GRANT_SUBJECT.rsplit(".", 1)[0] + ".*",
                "oopav-grants-other",
                refuse_other_subjects(GRANT_SUBJECT),
            ),
        ]
