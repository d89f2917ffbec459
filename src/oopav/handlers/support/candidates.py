"""Competing candidates (issue 17 §9): with ``policy.candidates: N`` the actor samples N
actions for a step instead of one, each with a candidate id fixed before any is tried, applies
each in a trial on top of the current checkpoint, grades it with the composite judge, rolls
the trial back, and proposes the winner by (score, candidate id).

The judge, per candidate (the sum is its score):

- ``valid``: 1 when the action passes pre-emit validation (the rule parses, the SEARCH block
  matches once, the file still parses), else the candidate scores 0;
- ``clean``: 1 when the trial introduced no parse errors and no stub markers;
- ``tests``: 1 when the task's test command passes on the trial (only with a test command);
- ``size``: ``1 / (1 + changed lines / 50)``, so a smaller change wins a tie of the rest.

Actions that change no file (finish, a command, a read) are judged on the workspace as it is;
a write that needs a permission nobody gave is not tried (judged valid, unclean-unknown). Every
candidate is a ``candidate_evaluated`` event and the choice a ``candidate_selected`` event; the
model calls and test runs are recorded, so replay reproduces the choice exactly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from oopav.events import catalog as ev
from oopav.events.actions import action_hash
from oopav.events.ids import derive_id
from oopav.handlers.ports import exec_key
from oopav.handlers.runtime import Emitter
from oopav.handlers.runtime import _copy as copy_state  # a handler's own copy of a state
from oopav.handlers.support.model_calls import ask_model
from oopav.handlers.support.workspace import sandbox_policy, workspace_info
from oopav.projections.session import SessionState, evolve

FILE_ACTIONS = ("ast_grep", "search_replace", "write_file")


def _lines(root: Path) -> int:
    from oopav.sandbox.workspace import git

    out = git(root, "diff", "--numstat", "HEAD")
    total = 0
    for line in out.splitlines():
        added, deleted, *_ = line.split("\t")
        if added.isdigit() and deleted.isdigit():
            total += int(added) + int(deleted)
    return total


async def _grade(
    actor: Any, cid: str, action: Any, state: SessionState, out: Emitter
) -> tuple[bool, dict[str, float], str, list[ev.ExecRecord]]:
    from oopav.decide import new_findings, scan_tree
    from oopav.sandbox.apply import Rejection, apply_plan, plan_action
    from oopav.sandbox.files import WorkspaceFiles
    from oopav.sandbox.workspace import git, rollback

    task = state.task
    assert task is not None and state.workspace is not None
    root = Path(state.workspace.path)
    components: dict[str, float] = {"valid": 1.0}
    reason = ""
    execs: list[ev.ExecRecord] = []
    head = (await asyncio.to_thread(git, root, "rev-parse", "HEAD")).strip()
    changed: list[str] = []
    tried = True
    if action.type in FILE_ACTIONS:
        policy = sandbox_policy(state)
        plan = await asyncio.to_thread(plan_action, root, action, policy=policy)
        if isinstance(plan, Rejection):
            return False, {"valid": 0.0}, f"rejected ({plan.reason}): {plan.message}"[:300], []
        if not actor._check(plan.scopes, state, policy, out).allowed:
            tried = False
            reason = "needs a permission: not tried"
        else:
            await asyncio.to_thread(apply_plan, root, plan)
            changed = plan.files_changed
    try:
        if tried:
            stubs: list[ev.Finding] = []
            errors: list[ev.Finding] = []
            if changed:
                stubs, errors, _, _ = await asyncio.to_thread(
                    scan_tree, WorkspaceFiles(root), changed
                )
            base = state.baseline
            keep = set(changed)
            new = new_findings(
                [f for f in (base.stubs if base else []) if f.path in keep], stubs
            ) + new_findings(
                [f for f in (base.parse_errors if base else []) if f.path in keep], errors
            )
            components["clean"] = 0.0 if new else 1.0
            if new:
                reason = f"{len(new)} new parse error(s) or stub(s)"
            if task.test_command:
                argv = list(task.test_command)
                rec = await out.ports.sandbox.run(
                    argv,
                    workspace=root,
                    session_id=state.session_id,
                    key=exec_key(cid, "candidate_tests", argv),
                    purpose="candidate_tests",
                    timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),
                )
                execs.append(rec)
                components["tests"] = 1.0 if rec.exit_code == 0 and not rec.timed_out else 0.0
            lines = await asyncio.to_thread(_lines, root)
            components["size"] = round(1.0 / (1.0 + lines / 50.0), 4)
    finally:
        if changed:
            await asyncio.to_thread(rollback, workspace_info(state, None), head)
    return True, components, reason, execs


async def choose(
    actor: Any,
    state: SessionState,
    out: Emitter,
    step: int,
    n: int,
    build_context: Callable[[SessionState, int], str],
) -> tuple[Any, str | None, str, dict[str, Any] | None]:
    """Sample ``n`` candidate actions, grade them, emit the evaluations and the selection, and
    return the winner as ``Actor._ask`` would (action, model call id, think, state update).
    ``build_context`` builds the actor's context for a state and step (the actor passes its own)."""
    ids = [derive_id(out.cause.id, "actor.candidate", i) for i in range(n)]
    work = copy_state(state)
    answers: list[tuple[str, Any, str]] = []
    for i, cid in enumerate(ids):
        context = (
            build_context(work, step)
            + f"\n### Candidate {i + 1} of {n}\nSeveral candidate actions are sampled for this "
            "step and graded (validity, no new errors, tests, size); propose your best one."
        )
        start = len(out.events)
        answer = await ask_model(out, work, "actor", context, "acting")
        for e in out.events[start:]:
            evolve(work, e)
        if answer is None:
            return None, None, "", None
        parsed, call_id = answer
        # An accepted candidate is not a retry (the projection says the same once it sees
        # candidate_evaluated); without this the later candidates would have fewer retries.
        acting = work.budgets_used.retries.get("acting", 0)
        work.budgets_used.retries["acting"] = max(0, acting - 1)
        answers.append((cid, parsed, call_id))
    graded: list[tuple[str, float, Any, str]] = []
    for i, (cid, parsed, call_id) in enumerate(answers):
        action = parsed.payload
        valid, components, reason, execs = await _grade(actor, cid, action, state, out)
        score = round(sum(components.values()), 4) if valid else 0.0
        out.emit(
            ev.CandidateEvaluated,
            candidate_id=cid,
            position=i,
            action=action,
            action_hash=action_hash(action),
            model_call_id=call_id,
            valid=valid,
            score=score,
            components=components,
            reason=reason,
            execs=execs,
        )
        graded.append((cid, score, parsed, call_id))
    ranking = sorted(graded, key=lambda g: (-g[1], g[0]))
    out.emit(
        ev.CandidateSelected,
        candidate_id=ranking[0][0],
        ranking=[(cid, score) for cid, score, _, _ in ranking],
    )
    _, _, parsed, call_id = ranking[0]
    update = msgspec.to_builtins(parsed.state_update) if parsed.state_update else None
    return parsed.payload, call_id, parsed.think, update
