"""The done-gates, run through the recorded sandbox port: no stubs → changed files parse → compile → doctest → tests → lint → critic.

Each gate is a small function of the session and the workspace that returns a ``GateOutcome`` (``decide/gates.py``); the verifier runs them in order and stops at the first failure. Tests outrank lint and lint outranks any model's opinion simply by coming first; a critic that refuses or is unavailable is skipped, never blocking. The compile gate is baseline-aware: when the check fails on the change, the same command runs on the base commit's files, and only errors the baseline did not have fail the gate. A check the project does not configure is skipped with the reason, never invented."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

from oopav.decide.checks import compile_command, doctest_files, error_keys
from oopav.decide.gates import (
    MAX_LINT_BASE_FILES,
    GateOutcome,
    baseline_tests,
    introduced,
    ruff_findings,
    uses_ruff,
)
from oopav.decide.policy import decision_policy
from oopav.decide.tests import TestSelection
from oopav.events.catalog import ExecRecord
from oopav.handlers.ports import Ports, exec_key
from oopav.projections.session import SessionState


def _changed(state: SessionState, root: Path) -> list[str]:
    from oopav.handlers.support.workspace import workspace_info
    from oopav.sandbox.workspace import changed_files

    return [f for f in changed_files(workspace_info(state, None)) if (root / f).is_file()]


def choose_tests(state: SessionState, root: Path, changed: list[str]) -> TestSelection:
    """``decide.gates.choose_tests`` with the change's size read from the workspace."""
    from oopav.decide.gates import choose_tests as decide_tests
    from oopav.sandbox.workspace import changed_lines

    lines = changed_lines(root, state.workspace.base_commit) if state.workspace else 0
    return decide_tests(state, root, changed, lines)


async def gate_stubs(state: SessionState, root: Path, changed: list[str]) -> GateOutcome:
    from oopav.decide import new_findings, scan_tree

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
    from oopav.decide import new_findings, scan_tree

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


async def gate_tests(
    state: SessionState, root: Path, ports: Ports, cause_id: str, selection=None
) -> GateOutcome:  # type: ignore[no-untyped-def]

    task = state.task
    assert task is not None
    # -- decision core (issue 17): what runs is chosen by handlers/decide.choose_tests: the
    # task's test command always, a detected one when tests are needed, never silently none.
    if selection is None:
        selection = choose_tests(state, root, _changed(state, root))
    if selection.argv is None:
        return GateOutcome("tests", True, skipped=True, evidence=selection.why)
    argv = list(selection.argv)
    # -- end decision core
    from oopav.handlers.support.affected import run_suite

    # issue 28: the affected tests first (fail fast), then the rest; identical runs reused.
    suite = await run_suite(
        ports,
        state,
        argv,
        root=root,
        changed=await asyncio.to_thread(_changed, state, root),
        cause_id=cause_id,
        purpose="gate_tests",
        timeout_s=min(600.0, task.budgets.wall_seconds_per_phase),
        base=baseline_tests(state),
    )
    return GateOutcome("tests", suite.passed, evidence=suite.evidence, execs=suite.records)


async def gate_lint(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    """ruff, with the project's configuration and (when its env has one) its own ruff, on the
    changed Python files; only findings the change introduced fail the gate. Findings already
    in the base version of a file (fed to ruff on stdin under the file's own name, so the same
    configuration applies) are reported, not blamed."""
    from oopav.handlers.support.baseline import environment_spec
    from oopav.sandbox.workspace import git

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
    env = environment_spec(state.task)
    argv = ["ruff", "check", "--no-cache", "--output-format", "concise", "--exit-zero", *py]
    rec = await ports.sandbox.run(  # type: ignore[union-attr]
        argv,
        workspace=root,
        session_id=state.session_id,
        key=exec_key(cause_id, "gate_lint", argv),
        purpose="gate_lint",
        timeout_s=120.0,
        environment=env,
    )
    execs = [rec]
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    if rec.exit_code in (125, 126, 127) or (
        rec.exit_code != 0 and "No such file" in tail and "ruff" in tail
    ):
        return GateOutcome(
            "lint", True, skipped=True, evidence="ruff is not available in the sandbox", execs=execs
        )
    if rec.timed_out or rec.exit_code not in (0, None):
        # With --exit-zero, a non-zero exit is ruff itself failing (an old ruff without
        # `--output-format concise`, a broken config): not a finding of the change.
        return GateOutcome(
            "lint",
            True,
            skipped=True,
            evidence=f"ruff could not run in the project's environment (exit {rec.exit_code}):\n{tail}",
            execs=execs,
        )
    sources = {}
    for f in py:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            sources[f] = (root / f).read_text()
    after = ruff_findings(rec.stdout_tail, sources)
    if not after:
        return GateOutcome("lint", True, evidence=f"ruff clean on {len(py)} file(s)", execs=execs)
    before: list[tuple[str, str, str, str, int]] = []
    base_commit = state.workspace.base_commit if state.workspace else None
    for f in sorted({a[0] for a in after})[:MAX_LINT_BASE_FILES]:
        try:
            content = await asyncio.to_thread(git, root, "show", f"{base_commit}:{f}")
        except Exception:
            continue  # a new file: everything in it is the change's
        base_argv = [
            "ruff", "check", "--no-cache", "--output-format", "concise", "--exit-zero",
            "--stdin-filename", f, "-",
        ]  # fmt: skip
        base = await ports.sandbox.run(  # type: ignore[union-attr]
            base_argv,
            workspace=root,
            session_id=state.session_id,
            key=exec_key(cause_id, "gate_lint_base", base_argv),
            purpose="gate_lint_base",
            timeout_s=60.0,
            environment=env,
            stdin=content.encode(),
        )
        execs.append(base)
        # ruff names stdin findings by --stdin-filename; normalise to the relative path.
        text = "\n".join(
            f + line[line.index(":") :] if ":" in line else line
            for line in base.stdout_tail.splitlines()
        )
        before += ruff_findings(text, {f: content})
    new = introduced(after, before)
    old = len(after) - len(new)
    note = f"; {old} finding(s) already in the base version (not blamed)" if old else ""
    if new:
        text = "\n".join(f"{p}:{n}: {c} {m}" for p, c, m, _, n in new[:30])
        return GateOutcome(
            "lint",
            False,
            evidence=f"ruff: {len(new)} finding(s) introduced by the change{note}:\n{text}",
            execs=execs,
        )
    return GateOutcome(
        "lint",
        True,
        evidence=f"ruff: no finding introduced in {len(py)} file(s){note}",
        execs=execs,
    )


async def _exec(
    gate: str, argv: list[str], state: SessionState, root: Path, ports: Ports, key: str
) -> ExecRecord:
    from oopav.handlers.support.baseline import environment_spec

    task = state.task
    assert task is not None
    return await ports.sandbox.run(  # type: ignore[union-attr]
        argv,
        workspace=root,
        session_id=state.session_id,
        key=key,
        purpose=f"gate_{gate}",
        timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),
        environment=environment_spec(task),
    )


async def _run(
    gate: str, argv: list[str], state: SessionState, root: Path, ports: Ports, cause_id: str
) -> GateOutcome:
    rec = await _exec(gate, argv, state, root, ports, exec_key(cause_id, f"gate_{gate}", argv))
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    shown = " ".join(argv)
    if rec.exit_code == 127:
        return GateOutcome(
            gate, True, skipped=True, evidence=f"`{argv[0]}` is not available", execs=[rec]
        )
    if rec.timed_out or rec.exit_code != 0:
        what = "timed out" if rec.timed_out else f"exited {rec.exit_code}"
        return GateOutcome(gate, False, evidence=f"`{shown}` {what}\n{tail}", execs=[rec])
    return GateOutcome(gate, True, evidence=f"`{shown}` passed\n{tail[-500:]}", execs=[rec])


async def gate_compile(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    if not changed:
        return GateOutcome("compile", True, skipped=True, evidence="no files changed")
    policy = decision_policy(state)
    if policy.compile_command:
        argv, why = list(policy.compile_command), "policy.compile_command"
    else:
        argv, why = compile_command(root, changed)
    if argv is None:
        return GateOutcome("compile", True, skipped=True, evidence=why)
    result = await _run("compile", argv, state, root, ports, cause_id)
    if result.passed or state.workspace is None or not result.execs[0].exit_code:
        return result  # passed, skipped, or timed out (no output to compare)
    return await _against_baseline(result, argv, state, root, ports, cause_id)


async def _against_baseline(
    failed: GateOutcome,
    argv: list[str],
    state: SessionState,
    root: Path,
    ports: Ports,
    cause_id: str,
) -> GateOutcome:
    """The failed check again on the base commit's files; the gate fails only on errors the
    baseline did not have. A baseline that passed the check makes every error new."""
    from oopav.sandbox.workspace import export_tree

    assert state.workspace is not None
    rec = failed.execs[0]
    base_dir = root.with_name(root.name + ".base")
    try:
        await asyncio.to_thread(export_tree, root, state.workspace.base_commit, base_dir)
        base = await _exec(
            "compile_base",
            argv,
            state,
            base_dir,
            ports,
            exec_key(cause_id, "gate_compile_base", argv),
        )
    finally:
        await asyncio.to_thread(shutil.rmtree, base_dir, True)
    execs = [rec, base]
    if base.exit_code == 0 or base.timed_out:
        failed.evidence += "\n(the baseline passes this check: every error is new)"
        failed.execs = execs
        return failed
    after = error_keys(rec.stdout_tail + "\n" + rec.stderr_tail, root.name)
    before = error_keys(base.stdout_tail + "\n" + base.stderr_tail, root.name)
    new = after - before
    old = sum(after.values()) - sum(new.values())
    shown = " ".join(argv)
    if not after or new:
        listed = "\n".join(sorted(new)[:30]) if new else "(no error locations to compare)"
        return GateOutcome(
            "compile",
            False,
            evidence=f"`{shown}`: {sum(new.values())} error(s) the baseline did not have "
            f"({old} pre-existing):\n{listed}",
            execs=execs,
        )
    return GateOutcome(
        "compile",
        True,
        evidence=f"`{shown}`: {old} error(s), all already in the baseline; none new",
        execs=execs,
    )


async def gate_doctest(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    if not decision_policy(state).doctest:
        return GateOutcome("doctest", True, skipped=True, evidence="doc tests off (policy)")
    files = doctest_files(root, changed)
    if not files:
        return GateOutcome(
            "doctest", True, skipped=True, evidence="no doc tests in the changed files"
        )
    return await _run("doctest", ["python", "-m", "doctest", *files], state, root, ports, cause_id)
