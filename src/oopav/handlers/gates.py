"""The done-gates, in order: no stubs → changed files parse → tests → lint → critic.

Each gate is a small function of the session and the workspace that returns a ``GateOutcome``;
the verifier runs them in order and stops at the first failure. Tests outrank lint and lint
outranks any model's opinion simply by coming first; a critic that refuses or is unavailable
is skipped, never blocking."""

from __future__ import annotations

import asyncio
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from oopav.events.catalog import ExecRecord, Finding
from oopav.handlers.ports import Ports, exec_key
from oopav.projections.session import SessionState

GATES = ("stubs", "parse", "tests", "lint", "critic")


@dataclass
class GateOutcome:
    gate: str
    passed: bool
    skipped: bool = False
    evidence: str = ""
    findings: list[Finding] = field(default_factory=list)
    execs: list[ExecRecord] = field(default_factory=list)
    verdict: str | None = None  # critic only: approve | reject | unavailable
    reasons: list[str] = field(default_factory=list)
    model_events: list = field(default_factory=list)


def _changed(state: SessionState, root: Path) -> list[str]:
    from oopav.handlers.common import workspace_info
    from oopav.sandbox.workspace import changed_files

    return [f for f in changed_files(workspace_info(state, None)) if (root / f).is_file()]


async def gate_stubs(state: SessionState, root: Path, changed: list[str]) -> GateOutcome:
    from oopav.handlers.rules import new_findings, scan_tree

    if not changed:
        return GateOutcome("stubs", True, evidence="no files changed")
    stubs, _, _, _ = await asyncio.to_thread(scan_tree, root, changed)
    base = [f for f in (state.baseline.stubs if state.baseline else []) if f.path in set(changed)]
    new = new_findings(base, stubs)
    if new:
        text = "\n".join(f"{f.path}:{f.line}: {f.message}" for f in new[:20])
        return GateOutcome(
            "stubs",
            False,
            evidence=f"{len(new)} new stub(s) in changed files:\n{text}",
            findings=new[:50],
        )
    return GateOutcome("stubs", True, evidence=f"no new stubs in {len(changed)} changed file(s)")


async def gate_parse(state: SessionState, root: Path, changed: list[str]) -> GateOutcome:
    from oopav.handlers.rules import new_findings, scan_tree

    if not changed:
        return GateOutcome("parse", True, evidence="no files changed")
    _, errors, _, _ = await asyncio.to_thread(scan_tree, root, changed)
    base = [
        f for f in (state.baseline.parse_errors if state.baseline else []) if f.path in set(changed)
    ]
    new = new_findings(base, errors)
    if new:
        text = "\n".join(f"{f.path}:{f.line}: {f.message}" for f in new[:20])
        return GateOutcome(
            "parse", False, evidence=f"{len(new)} new parse error(s):\n{text}", findings=new[:50]
        )
    return GateOutcome("parse", True, evidence=f"{len(changed)} changed file(s) parse")


def test_decision(state: SessionState) -> str:
    if state.orient is not None and state.orient.test_decision == "required":
        return "required"
    if state.plan is not None:
        return state.plan.test_decision
    return state.orient.test_decision if state.orient else "optional"


async def gate_tests(
    state: SessionState, root: Path, ports: Ports, cause_id: str, selection=None
) -> GateOutcome:  # type: ignore[no-untyped-def]
    task = state.task
    assert task is not None
    # -- decision core (issue 17): what runs is chosen by handlers/decide.choose_tests: the
    # task's test command always, a detected one when tests are needed, never silently none.
    if selection is None:
        from oopav.handlers.decide import choose_tests

        selection = choose_tests(state, root, _changed(state, root))
    if selection.argv is None:
        return GateOutcome("tests", True, skipped=True, evidence=selection.why)
    argv = list(selection.argv)
    # -- end decision core
    rec = await ports.sandbox.run(  # type: ignore[union-attr]
        argv,
        workspace=root,
        session_id=state.session_id,
        key=exec_key(cause_id, "gate_tests", argv),
        purpose="gate_tests",
        timeout_s=min(600.0, task.budgets.wall_seconds_per_phase),
    )
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    if rec.timed_out:
        return GateOutcome(
            "tests", False, evidence=f"`{' '.join(argv)}` timed out\n{tail}", execs=[rec]
        )
    if rec.exit_code != 0:
        return GateOutcome(
            "tests",
            False,
            evidence=f"`{' '.join(argv)}` exited {rec.exit_code}\n{tail}",
            execs=[rec],
        )
    return GateOutcome(
        "tests", True, evidence=f"`{' '.join(argv)}` passed\n{tail[-500:]}", execs=[rec]
    )


def uses_ruff(root: Path) -> bool:
    if (root / "ruff.toml").is_file() or (root / ".ruff.toml").is_file():
        return True
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text())
        except (tomllib.TOMLDecodeError, OSError):
            return False
        return "ruff" in data.get("tool", {})
    return False


async def gate_lint(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    policy = (state.task.policy if state.task else None) or {}
    if policy.get("lint") is False:
        return GateOutcome("lint", True, skipped=True, evidence="lint disabled by policy")
    py = sorted(f for f in changed if f.endswith((".py", ".pyi")))
    if not py:
        return GateOutcome("lint", True, skipped=True, evidence="no Python files changed")
    if not uses_ruff(root):
        return GateOutcome(
            "lint", True, skipped=True, evidence="the repository does not configure ruff"
        )
    argv = ["ruff", "check", "--no-cache", "--quiet", *py]
    rec = await ports.sandbox.run(  # type: ignore[union-attr]
        argv,
        workspace=root,
        session_id=state.session_id,
        key=exec_key(cause_id, "gate_lint", argv),
        purpose="gate_lint",
        timeout_s=120.0,
    )
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    if rec.exit_code == 127 or (rec.exit_code != 0 and "No such file" in tail and "ruff" in tail):
        return GateOutcome(
            "lint", True, skipped=True, evidence="ruff is not available in the sandbox", execs=[rec]
        )
    if rec.exit_code != 0 or rec.timed_out:
        return GateOutcome(
            "lint", False, evidence=f"ruff reports problems in changed files:\n{tail}", execs=[rec]
        )
    return GateOutcome("lint", True, evidence=f"ruff clean on {len(py)} file(s)", execs=[rec])
