"""The actor's ``ask`` action at the edge: the answered questions a new one may reuse — the
session's own (from its state) and its mission's (``question_answered`` events of the mission's
other sessions, read from the stream) — and, in replay, the mission's answers as the recording
used them (:class:`RecordedAnswers`), so a replayed session decides the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oopav.decide.asks import Answered
from oopav.events import catalog as ev
from oopav.logging import get_logger
from oopav.projections.session import SessionState

log = get_logger("oopav.handlers.asks")

SUBJECT = "oopav.ev.session.*.question_answered"
MAX_MISSION_ANSWERS = 500


def session_answers(state: SessionState) -> list[Answered]:
    return [
        Answered(
            question=q.question,
            answer=q.answer,
            answered_by=q.answered_by,
            event_id=q.id,
            session_id=state.session_id,
        )
        for q in state.answered_questions
    ]


class RecordedAnswers:
    """Replay: the mission answers a recorded session reused, served as the mission's."""

    def __init__(self, answers: Sequence[Answered]) -> None:
        self.answers = list(answers)

    @classmethod
    def from_events(cls, events: Sequence[Any]) -> RecordedAnswers:
        return cls(
            [
                Answered(
                    question=e.reused_question or e.question,
                    answer=e.answer,
                    answered_by=e.answered_by,
                    event_id=e.reused_from,
                    session_id=e.reused_session,
                )
                for e in events
                if isinstance(e, ev.QuestionAnswered) and e.reused_session and e.reused_from
            ]
        )

    async def mission_answers(self, mission: str, session_id: str) -> list[Answered]:
        return [a for a in self.answers if a.session_id != session_id]


async def mission_answers(ports: Any, mission: str | None, session_id: str) -> list[Answered]:
    """The mission's answered questions from its other sessions, oldest first (none without a
    mission or a store; a read that fails costs the reuse, never the step)."""
    if not mission:
        return []
    source = getattr(ports, "answers", None)
    if source is not None:
        result: list[Answered] = await source.mission_answers(mission, session_id)
        return result
    store = getattr(ports, "store", None)
    if store is None:
        return []
    from oopav.events.codec import decode

    out: list[Answered] = []
    try:
        async for _, data in store.iter_raw(SUBJECT):
            try:
                e = decode(data)
            except Exception:
                continue
            if not isinstance(e, ev.QuestionAnswered) or e.mission != mission:
                continue
            if e.aggregate_id == session_id or e.reused_from:
                continue  # this session's own are in its state; reuses repeat an original
            out.append(
                Answered(
                    question=e.question,
                    answer=e.answer,
                    answered_by=e.answered_by,
                    event_id=e.id,
                    session_id=e.aggregate_id,
                )
            )
    except Exception as exc:
        log.warning("mission_answers_unavailable", mission=mission, error=repr(exc)[:300])
    return out[-MAX_MISSION_ANSWERS:]
