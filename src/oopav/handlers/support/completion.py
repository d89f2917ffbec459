"""Ending a session: the one ``session_completed`` with the final diff and the session's counters."""

from __future__ import annotations

from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.workspace import cap_diff, final_diff
from oopav.projections.session import SessionState


async def complete(
    out: Emitter, state: SessionState, outcome: str, summary: str, reason: str = ""
) -> Event:
    diff = cap_diff(await final_diff(state, out.ports), out.ports, state.session_id, "final.diff")
    b = state.budgets_used
    metrics = {
        "iterations": b.iterations,
        "model_calls": b.model_calls,
        "model_tokens": b.model_tokens,
        "bounces": b.bounces,
        "replans": b.replans,
        "actions": len(state.actions),
        "actions_applied": sum(1 for a in state.actions if a.status == "applied"),
        "events": state.event_count + len(out.events) + 1,
    }
    return out.emit(
        ev.SessionCompleted,
        outcome=outcome,
        summary=summary,
        diff=diff,
        metrics=metrics,
        reason=reason,
    )
