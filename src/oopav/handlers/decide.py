"""Glue between a session's state and the pure decision rules: which tests run, which tier of
gates applies, where a rollback goes, what a person is asked. Handlers call these; the rules
they apply live in ``handlers/rules``."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from oopav.events import catalog as ev
from oopav.handlers.common import decision_policy
from oopav.handlers.rules.tests import (
    TestSelection,
    changed_lines,
    detect_test_command,
    effective_decision,
    select_tests,
)
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState

TIER_GATES: dict[str, tuple[str, ...]] = {
    "compile_only": ("stubs", "parse", "compile"),
    "tests": ("stubs", "parse", "compile", "doctest", "tests"),
    "full": ("stubs", "parse", "compile", "doctest", "tests", "lint", "critic"),
}


def base_decision(state: SessionState) -> str:
    if state.orient is not None and state.orient.test_decision == "required":
        return "required"
    if state.plan is not None:
        return state.plan.test_decision
    return state.orient.test_decision if state.orient else "optional"


def choose_tests(state: SessionState, root: Path, changed: list[str]) -> TestSelection:
    """The tests the verifier runs for this session now (never silently none)."""
    policy = decision_policy(state).tests
    task = state.task
    assert task is not None
    base = base_decision(state)
    lines = changed_lines(root, state.workspace.base_commit) if state.workspace else 0
    decision, why = effective_decision(
        base,
        manifest=list(state.plan.files) if state.plan else [],
        changed=changed,
        lines=lines,
        policy=policy,
        complexity=state.orient.complexity if state.orient else 1,
    )
    detected = None
    if not task.test_command and decision in ("required", "recommended") and policy.detect:
        detected = detect_test_command(root)
    return select_tests(decision, task.test_command, detected, policy, why)


def tier_of(state: SessionState) -> tuple[str, str]:
    """The victory tier and why: the policy's, else orient's default — ``compile_only`` for
    docs/config tasks whose tests are skipped, ``full`` otherwise."""
    policy = decision_policy(state)
    if policy.tier is not None:
        return policy.tier, f"tier {policy.tier} (policy)"
    o = state.orient
    if o is not None and o.test_decision == "skip" and o.category in ("docs", "config"):
        if not (state.task and state.task.test_command):
            return "compile_only", f"tier compile_only (orient: {o.category}, tests skipped)"
    return "full", "tier full (default)"


def ask_person(
    out: Emitter,
    state: SessionState,
    *,
    question: str,
    options: list[str],
    kind: str,
    context: str = "",
) -> ev.Event:
    """``human_input_requested`` with the policy's deadline; the session waits for an answer
    (``oopav answer``) and the watchdog ends it ``aborted`` past the deadline."""
    import msgspec

    asked = out.emit(
        ev.HumanInputRequested,
        question=question,
        options=options,
        kind=kind,
        context=context[:4000],
    )
    # The deadline derives from the event's own time, which replay restores exactly.
    deadline = asked.ts + timedelta(seconds=decision_policy(state).human_deadline_s)
    asked = msgspec.structs.replace(asked, deadline=deadline)
    out.events[-1] = asked
    return asked


def remembered_rejections(orient: object | None, limit: int = 5) -> list[str]:
    """The attempts similar past sessions rolled back (from the retrieval memory, as orient
    recorded them in ``memory_examples``), for the prompts' "do not repeat" list."""
    out: list[str] = []
    for x in getattr(orient, "memory_examples", None) or []:
        for r in x.get("rejected") or []:
            text = str(r)
            if text not in out:
                out.append(text)
    return out[:limit]


def describe_action(action: object) -> str:
    """A short description of an action for a prompt's list of rejected attempts."""
    kind = getattr(action, "type", "?")
    if kind == "search_replace":
        paths = sorted({e.path for e in getattr(action, "edits", [])})
        return f"search_replace on {', '.join(paths)}"
    if kind == "ast_grep":
        rule = str(getattr(action, "rule", "")).strip().splitlines()
        return f"ast_grep rule {rule[0] if rule else ''}"[:200]
    if kind == "write_file":
        return f"write_file {getattr(action, 'path', '')}"
    if kind == "run_command":
        return "run_command " + " ".join(getattr(action, "argv", []))[:200]
    return str(kind)


async def roll_back(
    out: Emitter,
    state: SessionState,
    target: str,
    undone: list,  # type: ignore[type-arg]
    *,
    reason: str,
    rejected: list[str] | None = None,
) -> ev.Event:
    """Reset the workspace to ``target`` and record ``workspace_rolled_back``. The projection
    marks the undone actions ``rolled_back``, so the actor's next apply starts from there too."""
    import asyncio

    from oopav.handlers.common import workspace_info
    from oopav.sandbox.workspace import rollback

    await asyncio.to_thread(rollback, workspace_info(state, out.ports), target)
    return out.emit(
        ev.WorkspaceRolledBack,
        to_checkpoint=target,
        reason=reason,
        actions=[a.id for a in undone],
        rejected=rejected if rejected is not None else [],
        source=out.handler,
    )
