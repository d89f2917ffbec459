"""Competing plans (issue 17 §9): with ``policy.plan_candidates: N`` the planner samples N plans
instead of one, each with a candidate id derived from the planning's cause before any is graded,
grades each with the plan judge, and proposes the winner by (score, candidate id).

The plan judge, per candidate (the sum is its score); it reads the workspace only, runs
nothing and asks no model, so replay (which serves the same N answers by request hash and
rebuilds the same workspace) grades and chooses exactly as the live session did:

- ``valid``: 1 when the plan has steps and honours a required test decision (a step that runs
  the tests, ``test_decision`` not lowered); otherwise the candidate scores 0;
- ``grounded``: the share of the plan's files (manifest and steps) that exist in the workspace;
- ``coverage``: the share of the files the instruction points at — the paths it names and the
  files holding the identifiers it names (whole words) — that the plan lists; only when the
  instruction points at any;
- ``size``: ``1 / (1 + steps / 10)``, so the shorter of two otherwise equal plans wins.

Every candidate is a ``plan_candidate_evaluated`` event and the choice a ``candidate_selected``
(kind ``plan``) event. When no candidate is valid the planner asks once more the ordinary way,
where a refused plan is retried with the reason."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oopav.events import catalog as ev
from oopav.events.catalog import PlanStep
from oopav.events.ids import derive_id
from oopav.handlers.candidates import copy_state
from oopav.handlers.common import ask_model
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState, evolve


def manifest(plan: Any) -> list[str]:
    """Every file a plan names (its manifest and its steps' files), normalised and sorted."""
    names = set(getattr(plan, "files", []) or [])
    for step in getattr(plan, "steps", []) or []:
        names.update(step.files or [])
    return sorted({n.strip().removeprefix("./") for n in names if n.strip()})


def pointed_files(root: Path, instruction: str) -> list[str]:
    """The files an instruction points at: the paths it names that exist, and the files where
    an identifier it names occurs as a whole word."""
    from oopav.handlers.rules.evidence import _files, _text, mentioned_symbols
    from oopav.handlers.rules.orient import mentioned_paths

    out = {p for p in mentioned_paths(instruction) if (root / p).is_file()}
    symbols = mentioned_symbols(instruction)
    if symbols:
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(s) for s in symbols) + r")\b")
        for f in _files(root):
            text = _text(f)
            if text is not None and pattern.search(text):
                out.add(str(f.relative_to(root)))
    return sorted(out)


def judge_plan(
    plan: Any, refuse: Callable[[Any], str | None], root: Path, pointed: list[str]
) -> tuple[bool, dict[str, float], str]:
    """(valid, components, reason) of one candidate plan (see the module docstring);
    ``refuse`` is the planner's own check (a required test decision honoured)."""
    steps = list(getattr(plan, "steps", []) or [])
    if not steps:
        return False, {"valid": 0.0}, "the plan has no steps"
    refused = refuse(plan)
    if refused is not None:
        return False, {"valid": 0.0}, refused[:300]
    files = manifest(plan)
    components = {"valid": 1.0}
    existing = [f for f in files if (root / f).is_file()]
    components["grounded"] = round(len(existing) / len(files), 4) if files else 0.0
    reasons = []
    if len(existing) < len(files):
        reasons.append(f"{len(files) - len(existing)} named file(s) do not exist")
    if pointed:
        covered = sorted(set(pointed) & set(files))
        components["coverage"] = round(len(covered) / len(pointed), 4)
        missed = sorted(set(pointed) - set(files))
        if missed:
            reasons.append("leaves out " + ", ".join(missed[:5]))
    components["size"] = round(1.0 / (1.0 + len(steps) / 10.0), 4)
    return True, components, "; ".join(reasons)


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
    root = Path(state.workspace.path)
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
                PlanStep(id=s.id, description=s.description, files=list(s.files))
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
