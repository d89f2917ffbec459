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
import contextlib
import functools
import json
import time
from typing import TYPE_CHECKING, Any, cast

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from oopav.bus import storage
from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.storage import Watermark
from oopav.bus.store import EventStore
from oopav.bus.streams import INTAKE_STREAM, INTAKE_SUBJECT
from oopav.decide.policy import STAMPED_DEFAULTS
from oopav.events.catalog import Event, IntakeSource, TaskRejected, TaskSubmitted
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.codec import REGISTRY
from oopav.events.factory import actor_name
from oopav.events.ids import id_timestamp_ms, uuid7_from
from oopav.handlers.replies import (
    ANY,
    ReplyMatcher,
    RespondingHandler,
    digest,
    refuse_other_subjects,
    request_id,
)
from oopav.handlers.support.submission import Accepted, Rejected, parse_submission, safe_text
from oopav.logging import get_logger
from oopav.reflection.groups import fan_out, group_info

if TYPE_CHECKING:
    from oopav.handlers.runtime import SessionCache

HANDLER = "intake"
STORAGE_FULL = "storage_full"
# How long a digest refused at once (storage full) stays refused for its stored copy.
REFUSED_TTL_S = 60.0
log = get_logger("oopav.handlers.intake", handler=HANDLER)


def decide(
    payload: bytes,
    stream_sequence: int,
    stored_at_ms: int,
    clock: Clock,
    *,
    check_repo: bool = True,
    max_event_bytes: int | None = None,
    default_model: bool = True,
) -> Event:
    """The intake's pure core: raw bytes and their stored position → one event (the first
    member of a group; :func:`decide_all` gives every member)."""
    return decide_all(
        payload,
        stream_sequence,
        stored_at_ms,
        clock,
        check_repo=check_repo,
        max_event_bytes=max_event_bytes,
        default_model=default_model,
    )[0]


def decide_all(
    payload: bytes,
    stream_sequence: int,
    stored_at_ms: int,
    clock: Clock,
    *,
    check_repo: bool = True,
    max_event_bytes: int | None = None,
    storage_full: str | None = None,
    default_model: bool = True,
) -> list[Event]:
    """Raw bytes → the events to append: one, or K ``task_submitted`` for a group.

    ``default_model``: whether the handlers have a model for a task that names none (a
    ``--model``, ``OOPAV_MODEL``); without one, a task with neither a model nor examples is
    refused here, before any baseline test runs.

    ``max_event_bytes``: the largest message the server stores (its ``max_payload``); a task
    whose event would be larger is rejected here rather than failing to append.
    ``storage_full``: the data directory is under its free-space watermark (the message why):
    the task is refused with ``code: "storage_full"`` whatever it holds."""
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
    if storage_full is not None:
        return [
            TaskRejected(
                schema=TaskRejected.SCHEMA,
                error=storage_full,
                field=None,
                code=STORAGE_FULL,
                excerpt=safe_text(payload[:200].decode("utf-8", "replace"), 200),
                source=source,
                **env,
            )
        ]
    result = parse_submission(payload, check_repo=check_repo)
    if isinstance(result, Rejected):
        return [
            TaskRejected(
                schema=TaskRejected.SCHEMA,
                error=result.error,
                field=result.field,
                code=result.code,
                excerpt=result.excerpt,
                source=source,
                **env,
            )
        ]
    assert isinstance(result, Accepted)
    if not result.model and not result.examples and not default_model:
        return [
            TaskRejected(
                schema=TaskRejected.SCHEMA,
                error="no model: the task names none, has no examples for synth:, and the "
                "handlers have no default; pass --model (or `model` in the task), set "
                "OOPAV_MODEL, or give before/after examples",
                field="model",
                code="missing",
                excerpt=safe_text(payload[:200].decode("utf-8", "replace"), 200),
                source=source,
                **env,
            )
        ]
    group = None
    if result.group is not None:
        group = group_info(result.group, stored_at_ms, f"{INTAKE_STREAM}:{stream_sequence}")
    first = TaskSubmitted(
        schema=TaskSubmitted.SCHEMA,
        instruction=result.instruction,
        repo=result.repo,
        mission=result.mission,
        budgets=result.budgets,
        policy=result.policy,
        # Today's values of defaults that changed since older sessions were recorded.
        policy_defaults=dict(STAMPED_DEFAULTS),
        model=result.model,
        test_command=result.test_command,
        examples=result.examples,
        environment=result.environment,
        source=source,
        group=group,
        **env,
    )
    problem: tuple[str, str] | None = None
    try:
        size = len(REGISTRY.encode(first))
    except (msgspec.EncodeError, UnicodeEncodeError, OverflowError, TypeError) as exc:
        # The contract should have refused whatever cannot be stored; if something slipped
        # through, the submitter still gets an answer and the stream a rejection.
        problem = (f"submission cannot be stored as an event: {exc}", "invalid")
    else:
        # Room for the envelope the store adds (prev_hash) and the message headers.
        if max_event_bytes is not None and size + 1024 > max_event_bytes:
            problem = (
                f"the task is {size} bytes as an event; the server stores at most "
                f"{max_event_bytes} (max_payload): send a shorter instruction or fewer examples",
                "too_large",
            )
    if problem is None:
        return list(fan_out(first, result.group))
    return [
        TaskRejected(
            schema=TaskRejected.SCHEMA,
            error=safe_text(problem[0]),
            field=None,
            code=problem[1],
            excerpt=safe_text(payload[:200].decode("utf-8", "replace"), 200),
            source=source,
            **env,
        )
    ]


def reply_for(event: Event) -> dict[str, Any]:
    if isinstance(event, TaskRejected):
        return {
            "error": event.error,
            "field": event.field,
            "code": event.code,
            "session_id": event.aggregate_id,
        }
    if isinstance(event, TaskSubmitted) and event.group is not None:
        g = event.group
        return {"session_id": event.aggregate_id, "group_id": g.group_id, "session_ids": g.members}
    return {"session_id": event.aggregate_id}


def answerable(data: bytes) -> Event | None:
    """The intake outcome a requester is answered with, from a ``task_submitted`` or
    ``task_rejected`` message: one made from a stored submission (it has a ``source``), and of
    a group only the first member (its reply lists them all). None for anything else."""
    try:
        event = REGISTRY.decode(data)
    except Exception:
        return None
    group = getattr(event, "group", None)
    if getattr(event, "source", None) is None or (group is not None and group.index != 0):
        return None
    return event


class Intake(RespondingHandler):
    """The intake handler process: durable consumer + reply responder."""

    def __init__(
        self,
        nc: NATS,
        *,
        clock: Clock = SYSTEM_CLOCK,
        check_repo: bool = True,
        cache: SessionCache | None = None,
        watermark: Watermark | None = None,
        default_model: bool = True,
    ) -> None:
        self.nc = nc
        self.default_model = default_model
        # The data directory's free-space watermark (bus/storage.py): under it, new tasks are
        # refused with storage_full, at once on the request and on the stored copy.
        if watermark is None:
            from oopav.config import Settings

            watermark = storage.configured() or storage.Watermark.from_env(Settings().data_dir)
        self.watermark = watermark
        # digest -> monotonic time of requests refused at once: their stored copy (if the
        # server could store it) is refused too, even if space came back meanwhile.
        self._refused: dict[str, float] = {}
        self.events = cache.events if cache is not None else EventStore(nc)
        # The loop handlers' session cache of this process (``run_handlers``): a new session
        # is put in as appended, so the observer here needs no read for it.
        self.cache = cache
        self.clock = clock
        self.check_repo = check_repo
        self.replies = ReplyMatcher(
            nc,
            json.dumps(
                {
                    "error": "the intake did not finish in time; check `oopav sessions`",
                    "field": None,
                    "code": "timeout",
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
        reading = self.watermark.read()
        full = reading.refusal() if reading.full else None
        if full is None and self._was_refused(digest(raw.data)):
            full = "storage was full when this task arrived; submit it again"
        for event in decide_all(
            raw.data,
            meta.sequence.stream,
            stored_ms,
            self.clock,
            check_repo=self.check_repo,
            max_event_bytes=self.nc.max_payload or None,
            storage_full=full,
            default_model=self.default_model,
        ):
            # The session id is fresh, so its aggregate must be empty (expected 0); a
            # redelivery finds its own event there and counts as a duplicate.
            appended = await self._append(event)
            log.info(
                "task_rejected" if isinstance(event, TaskRejected) else "task_submitted",
                session_id=event.aggregate_id,
                event_id=event.id,
                seq=appended.sequence,
                duplicate=appended.duplicate,
            )

    async def _append(self, event: Event) -> Any:
        if self.cache is None:
            return await self.events.append(event, expected=0)
        # Linked as `append` links a session's first event: this is what will be stored, and
        # what the cache holds (announced first: the observer may see it before the ack).
        sid = event.aggregate_id
        [event] = await self.events.link([event], 0)
        stored = self.events.canonical(event)
        self.cache.appending(sid, 0, [stored])
        try:
            appended = await self.events.append(event, expected=0)
        except BaseException:
            self.cache.appended(sid, 0, None)
            raise
        if appended.duplicate:
            self.cache.appended(sid, 0, None)
        else:
            self.cache.appended(sid, 0, [(appended.sequence, stored)])
            self.cache.started(sid, appended.sequence, stored)
        return appended

    # -- replies --------------------------------------------------------------------------

    def _was_refused(self, key: str) -> bool:
        now = time.monotonic()
        for k, at in list(self._refused.items()):
            if now - at > REFUSED_TTL_S:
                del self._refused[k]
        return key in self._refused

    async def _on_request(self, msg: Msg) -> None:
        """A request: under the watermark it is answered at once (the server may not even be
        able to store it, and then no outcome would ever come); otherwise it waits for the
        outcome of its stored copy."""
        if msg.reply:
            reading = self.watermark.read()
            if reading.full:
                self._refused[digest(msg.data)] = time.monotonic()
                log.warning("task_refused_storage_full", free=reading.free, min=reading.min_free)
                body = {
                    "error": reading.refusal(),
                    "field": None,
                    "code": STORAGE_FULL,
                    "session_id": None,
                }
                with contextlib.suppress(Exception):
                    await msg.respond(json.dumps(body).encode())
                return
        await self.replies.on_request(msg)

    async def _on_result(self, msg: Msg) -> None:
        event = answerable(msg.data)
        if event is None:
            return
        source = cast(IntakeSource, getattr(event, "source"))  # noqa: B009 - checked above
        await self.replies.on_outcome(
            source.digest,
            json.dumps(reply_for(event)).encode(),
            id_timestamp_ms(event.aggregate_id),
            ANY,
            functools.partial(self._stored_request_id, source.stream_sequence),
            functools.partial(self.events.wait_stored, "session", event.aggregate_id),
        )

    async def _stored_request_id(self, sequence: int) -> str | None:
        """The ``Oopav-Request`` header the stored copy was sent with: every process sees every
        outcome, so it is what tells whose request an outcome answers when two identical
        payloads arrive together. None when it was sent without one (the plain ``nats`` CLI);
        ANY when the copy cannot be read (matching falls back to the digest and the time)."""
        try:
            stored = await asyncio.wait_for(
                self.nc.jetstream().get_msg(INTAKE_STREAM, sequence), 5.0
            )
        except Exception:  # a lost lookup degrades to digest matching
            return ANY
        return request_id(stored.headers)

    def _subscriptions(self) -> list[tuple[str, str | None, Any]]:
        return [
            ("oopav.ev.session.*.task_submitted", None, self._on_result),
            ("oopav.ev.session.*.task_rejected", None, self._on_result),
            (INTAKE_SUBJECT, "oopav-intake", self._on_request),
            (
                INTAKE_SUBJECT.rsplit(".", 1)[0] + ".*",
                "oopav-intake-other",
                refuse_other_subjects(INTAKE_SUBJECT),
            ),
        ]
