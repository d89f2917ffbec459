"""Plan candidates: several plans asked of the model, each judged (``decide/plans.py``), the best one chosen by score then id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oopav.decide.plans import judge_plan, pointed_files
from oopav.events import catalog as ev
from oopav.events.catalog import PlanStep
from oopav.events.ids import derive_id
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.candidates import copy_state
from oopav.handlers.support.model_calls import ask_model
from oopav.projections.session import SessionState, evolve
from oopav.sandbox.files import WorkspaceFiles


@dataclass(frozen=True)
class NoValidPlan:
    """No candidate was valid: ask the ordinary way, with ``state`` — the session as of the
    candidates' calls (so budgets and the recorded call order count them)."""

    state: SessionState


async def choose_plan(
    state: SessionState,
    out: Emitter,
    context: str,
    refuse: Callable[[Any], str | None],
    n: int,
) -> tuple[Any, str] | NoValidPlan | None:
    """Sample ``n`` plans, grade them, emit the evaluations and the selection. Returns the
    winner as ``ask_model`` would (parsed answer, model call id); None when the session ended
    (model unavailable, retries spent); ``NoValidPlan`` when no candidate is valid."""
    task = state.task
    assert task is not None and state.workspace is not None
    ids = [derive_id(out.cause.id, "planner.candidate", i) for i in range(n)]
    work = copy_state(state)
    answers: list[tuple[str, Any, str]] = []
    for i, cid in enumerate(ids):
        asked = (
            context + f"\n\n### Candidate plan {i + 1} of {n}\nSeveral candidate plans are "
            "sampled and graded (validity, files that exist, coverage of what the task names, "
            "length); propose your best one."
        )
        start = len(out.events)
        answer = await ask_model(out, work, "planner", asked, "planning")
        for e in out.events[start:]:
            evolve(work, e)
        if answer is None:
            return None
        parsed, call_id = answer
        # An accepted candidate is not a retry: the next candidate keeps the phase's budget.
        planning = work.budgets_used.retries.get("planning", 0)
        work.budgets_used.retries["planning"] = max(0, planning - 1)
        answers.append((cid, parsed, call_id))
    root = WorkspaceFiles(state.workspace.path)
    pointed = await asyncio.to_thread(pointed_files, root, task.instruction)
    graded: list[tuple[str, float, bool, Any, str]] = []
    for i, (cid, parsed, call_id) in enumerate(answers):
        plan = parsed.payload
        valid, components, reason = judge_plan(plan, refuse, root, pointed)
        score = round(sum(components.values()), 4) if valid else 0.0
        out.emit(
            ev.PlanCandidateEvaluated,
            candidate_id=cid,
            position=i,
            steps=[
                PlanStep(
                    id=s.id,
                    description=s.description,
                    files=list(s.files),
                    tests_may_fail=s.tests_may_fail,
                )
                for s in plan.steps
            ],
            files=list(plan.files),
            test_decision=plan.test_decision,
            rationale=plan.rationale,
            model_call_id=call_id,
            valid=valid,
            score=score,
            components=components,
            reason=reason,
        )
        graded.append((cid, score, valid, parsed, call_id))
    ranking = sorted(graded, key=lambda g: (-g[1], g[0]))
    out.emit(
        ev.CandidateSelected,
        candidate_id=ranking[0][0],
        ranking=[(cid, score) for cid, score, _, _, _ in ranking],
        kind="plan",
    )
    _, _, valid, parsed, call_id = ranking[0]
    if not valid:
        for e in out.events[-(n + 1) :]:
            evolve(work, e)
        return NoValidPlan(work)
    return parsed, call_id
