"""Events tests seed the stream with."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from oopav.events import catalog as ev

TS = datetime(2026, 1, 1, tzinfo=UTC)


def task_submitted(session: str, **fields: Any) -> ev.TaskSubmitted:
    """A session's root event, as the intake would have stored it (id = session id)."""
    values: dict[str, Any] = {"ts": TS, "instruction": "do it", "repo": "/r", **fields}
    return ev.TaskSubmitted(
        id=session, aggregate_id=session, correlation_id=session, actor="intake/0", **values
    )
