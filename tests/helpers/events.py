"""Events tests seed the stream with."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from oopav.events import catalog as ev

TS = datetime(2026, 1, 1, tzinfo=UTC)


def task_submitted(session: str, **fields: Any) -> ev.TaskSubmitted:
    """A session's root event, as the intake would have stored it (id = session id)."""
    values: dict[str, Any] = {"ts": TS, "instruction": "do it", "repo": "/r", **fields}
    return ev.TaskSubmitted(
        id=session, aggregate_id=session, correlation_id=session, actor="intake/0", **values
    )


# Three versions of one test-only event type, for the upcaster tests (each test builds its own
# Registry, so the shared catalog never sees them).
class NoteV1(ev.Event, tag="test_note", frozen=True):
    text: str


class NoteV2(ev.Event, tag="test_note", frozen=True):
    text: str
    lang: str

    SCHEMA: ClassVar[int] = 2


class NoteV3(ev.Event, tag="test_note", frozen=True):
    text: str

    SCHEMA: ClassVar[int] = 0  # an older oopav reading a newer event
