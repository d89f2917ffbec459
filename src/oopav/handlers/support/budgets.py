"""Wall-clock and token budgets: the ``budget_exceeded`` a handler emits when one is spent."""

from __future__ import annotations

from datetime import datetime

from oopav.events import catalog as ev
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState


def phase_started_at(state: SessionState, phase: str) -> datetime | None:
    """When the current phase began (the latest event that entered it)."""
    return state.phase_started.get(phase)


def over_wall_budget(out: Emitter, state: SessionState, phase: str) -> ev.BudgetExceeded | None:
    """``budget_exceeded`` when ``phase`` has run longer than its wall budget."""
    if state.task is None:
        return None
    started = phase_started_at(state, phase)
    if started is None:
        return None
    elapsed = (out.now() - started).total_seconds()
    limit = state.task.budgets.wall_seconds_per_phase
    if elapsed > limit:
        return out.emit(
            ev.BudgetExceeded,
            budget="wall_seconds_per_phase",
            limit=limit,
            used=round(elapsed, 3),
            phase=phase,
            response="abort",
        )
    return None


def tokens_exceeded(out: Emitter, state: SessionState) -> ev.BudgetExceeded | None:
    if state.task is None:
        return None
    limit = state.task.budgets.model_tokens
    used = state.budgets_used.model_tokens
    if used >= limit:
        return out.emit(
            ev.BudgetExceeded, budget="model_tokens", limit=limit, used=used, response="abort"
        )
    return None
