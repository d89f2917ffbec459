"""The done-gates, run through the recorded sandbox port: no stubs → changed files parse → compile → doctest → tests → lint → critic.

Each gate is a small function of the session and the workspace that returns a ``GateOutcome`` (``decide/gates.py``); the verifier runs them in order and stops at the first failure. Tests outrank lint and lint outranks any model's opinion simply by coming first; a critic that refuses or is unavailable is skipped, never blocking. The compile gate is baseline-aware: when the check fails on the change, the same command runs on the base commit's files, and only errors the baseline did not have fail the gate. A check the project does not configure is skipped with the reason, never invented."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oopav.decide.checks import (
    DOCTEST_SCRIPT,
    cannot_run,
    compile_command,
    doctest_command,
    doctest_failures,
    doctest_files,
    environment_name,
    error_keys,
)
from oopav.decide.gates import (
    MAX_LINT_BASE_FILES,
    GateOutcome,
    baseline_tests,
    introduced,
    ruff_findings,
    skipped_both,
    uses_ruff,
)
from oopav.decide.policy import decision_policy
from oopav.decide.tests import TestSelection
from oopav.events.catalog import ExecRecord
from oopav.handlers.ports import Ports, exec_key
from oopav.handlers.support.guard import run_check
from oopav.projections.session import SessionState
from oopav.sandbox.files import WorkspaceFiles


def edited(gate: str, argv: list[str], rec: ExecRecord, execs: list[ExecRecord]) -> GateOutcome:
    """The outcome of a check that changed the workspace: an error of the check (its verdict
    is void, the files were restored), not a failure of the change."""
    files = ", ".join(rec.workspace_changed[:10])
    return GateOutcome(
        gate,
        True,
        skipped=True,
        error=True,
        evidence=f"error: `{' '.join(argv)[:200]}` changed the workspace ({files}); the files "
        "were restored and its verdict is not used (a gate must not edit: use read-only "
        "flags, or policy.format for a formatter)",
        note=f"{gate}: error: the check edited {files}; restored, not judged",
        execs=execs,
    )


def where(state: SessionState) -> str:
    """The project's environment as a reason names it (``.venv``), from the baseline probe."""
    from oopav.sandbox.environment import read_probe

    base = state.baseline
    rec = next((r for r in (base.execs if base else []) if r.purpose == "env_probe"), None)
    probe = read_probe(rec.stdout_tail) if rec is not None else None
    return environment_name(probe.get("executable") if probe else None)


def _changed(state: SessionState, root: Path) -> list[str]:
    from oopav.handlers.support.workspace import workspace_info
    from oopav.sandbox.workspace import changed_files

    files = WorkspaceFiles(root)
    return [f for f in changed_files(workspace_info(state, None)) if files.is_file(f)]


def choose_tests(state: SessionState, root: Path, changed: list[str]) -> TestSelection:
    """``decide.gates.choose_tests`` with the change's size read from the workspace."""
    from oopav.decide.gates import choose_tests as decide_tests
    from oopav.sandbox.workspace import changed_lines

    lines = changed_lines(root, state.workspace.base_commit) if state.workspace else 0
    return decide_tests(state, WorkspaceFiles(root), changed, lines)


async def gate_stubs(state: SessionState, root: Path, changed: list[str]) -> GateOutcome:
    from oopav.decide import new_findings, scan_tree

    if not changed:
        return GateOutcome("stubs", True, evidence="no files changed")
    stubs, _, _, _ = await asyncio.to_thread(scan_tree, WorkspaceFiles(root), changed)
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
    _, errors, _, _ = await asyncio.to_thread(scan_tree, WorkspaceFiles(root), changed)
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
    state: SessionState,
    root: Path,
    ports: Ports,
    cause_id: str,
    selection: TestSelection | None = None,
) -> GateOutcome:

    task = state.task
    assert task is not None
    # -- decision core (issue 17): what runs is chosen by handlers/support/gates.choose_tests: the
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
    base = baseline_tests(state)
    evidence = suite.evidence
    notes = []
    last = suite.records[-1] if suite.records else None
    both = skipped_both(last, base) if last is not None else []
    if both:
        notes.append(
            f"{len(both)} test(s) skipped both before and after: not verified ("
            + ", ".join(both[:10])
            + (", …" if len(both) > 10 else "")
            + ")"
        )
        evidence += f"\n{notes[-1]}"
    wrote = sorted({p for r in suite.records for p in r.workspace_changed})
    if wrote:
        # The project's own tests are the judge: their verdict stands, their writes do not.
        notes.append(f"tests: the test run wrote {', '.join(wrote[:10])}; restored")
        evidence += f"\n{notes[-1]}"
    return GateOutcome(
        "tests", suite.passed, evidence=evidence, execs=suite.records, note="; ".join(notes)
    )


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
    if not uses_ruff(WorkspaceFiles(root)):
        return GateOutcome(
            "lint", True, skipped=True, evidence="the repository does not configure ruff"
        )
    env = environment_spec(state.task)
    # --no-fix: a project's `fix = true` must not let the check rewrite what the tests judged.
    argv = [
        "ruff", "check", "--no-fix", "--no-cache", "--output-format", "concise", "--exit-zero",
        *py,
    ]  # fmt: skip
    rec = await run_check(
        ports,
        root,
        argv,
        session_id=state.session_id,
        key=exec_key(cause_id, "gate_lint", argv),
        purpose="gate_lint",
        timeout_s=120.0,
        environment=env,
    )
    execs = [rec]
    if rec.workspace_changed:
        return edited("lint", argv, rec, execs)
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
    tree = WorkspaceFiles(root)
    for f in py:
        text = tree.text(f)
        if text is not None:
            sources[f] = text
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
            "ruff", "check", "--no-fix", "--no-cache", "--output-format", "concise",
            "--exit-zero", "--stdin-filename", f, "-",
        ]  # fmt: skip
        base = await ports.sandbox.run(
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
    gate: str,
    argv: list[str],
    state: SessionState,
    root: Path,
    ports: Ports,
    key: str,
    *,
    guard: bool = True,
    report: bool = False,
) -> ExecRecord:
    """One run of a check; ``guard``: in the workspace, proven not to edit it (``run_check``);
    a run on an exported base tree needs no proof."""
    from oopav.handlers.support.baseline import environment_spec

    task = state.task
    assert task is not None
    kw: dict[str, Any] = dict(
        session_id=state.session_id,
        key=key,
        purpose=f"gate_{gate}",
        timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),
        environment=environment_spec(task),
        report=report,
    )
    if guard:
        return await run_check(ports, root, argv, **kw)
    return await ports.sandbox.run(argv, workspace=root, **kw)


def shown(argv: list[str]) -> str:
    """A command as the timeline shows it: an inline ``python -c`` script by a short name."""
    if len(argv) >= 3 and argv[1] == "-c" and "\n" in argv[2]:
        head = "doc tests by package name" if argv[2] == DOCTEST_SCRIPT else "script"
        return " ".join([argv[0], "-c", f"<{head}>", *argv[3:]])
    return " ".join(argv)


def _not_run(
    gate: str, argv: list[str], rec: ExecRecord, state: SessionState
) -> GateOutcome | None:
    """A skipped outcome when the command could not run at all, with what to do about it."""
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    why = cannot_run(argv, rec.exit_code, tail, where(state))
    if why is None:
        return None
    fix = {"compile": "policy.compile_command", "doctest": "policy.doctest = false"}.get(gate)
    why += f": install it or set {fix}" if fix else ""
    return GateOutcome(
        gate,
        True,
        skipped=True,
        evidence=f"skipped: {why}\n{tail[-1000:]}",
        note=f"{gate} skipped: {why}",
        execs=[rec],
    )


async def _run(
    gate: str, argv: list[str], state: SessionState, root: Path, ports: Ports, cause_id: str
) -> GateOutcome:
    rec = await _exec(gate, argv, state, root, ports, exec_key(cause_id, f"gate_{gate}", argv))
    if rec.workspace_changed:
        return edited(gate, argv, rec, [rec])
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    shown_ = shown(argv)
    not_run = _not_run(gate, argv, rec, state)
    if not_run is not None:
        return not_run
    if rec.timed_out or rec.exit_code != 0:
        what = "timed out" if rec.timed_out else f"exited {rec.exit_code}"
        return GateOutcome(gate, False, evidence=f"`{shown_}` {what}\n{tail}", execs=[rec])
    return GateOutcome(gate, True, evidence=f"`{shown_}` passed\n{tail[-500:]}", execs=[rec])


async def gate_compile(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    if not changed:
        return GateOutcome("compile", True, skipped=True, evidence="no files changed")
    policy = decision_policy(state)
    argv: list[str] | None
    if policy.compile_command:
        argv, why = list(policy.compile_command), "policy.compile_command"
    else:
        argv, why = compile_command(WorkspaceFiles(root), changed)
    if argv is None:
        return GateOutcome("compile", True, skipped=True, evidence=why)
    result = await _run("compile", argv, state, root, ports, cause_id)
    if result.passed or state.workspace is None or not result.execs[0].exit_code:
        return result  # passed, skipped, or timed out (no output to compare)
    return await _against_baseline(result, argv, state, root, ports, cause_id, error_keys)


async def _against_baseline(
    failed: GateOutcome,
    argv: list[str],
    state: SessionState,
    root: Path,
    ports: Ports,
    cause_id: str,
    keys_of: Callable[[str, str], Counter[str]],
) -> GateOutcome:
    """The failed check again on the base commit's files; the gate fails only on findings the
    baseline did not have. A baseline that passed the check makes every error new; a check
    that fails the same way on the base commit cannot judge the change (skipped, never
    failed: a gate never fails with zero new findings)."""
    from oopav.sandbox.workspace import export_tree

    assert state.workspace is not None
    gate = failed.gate
    rec = failed.execs[0]
    base_dir = root.with_name(root.name + ".base")
    try:
        await asyncio.to_thread(export_tree, root, state.workspace.base_commit, base_dir)
        base = await _exec(
            f"{gate}_base",
            argv,
            state,
            base_dir,
            ports,
            exec_key(cause_id, f"gate_{gate}_base", argv),
            guard=False,
        )
    finally:
        await asyncio.to_thread(shutil.rmtree, base_dir, True)
    execs = [rec, base]
    if base.exit_code == 0 or base.timed_out:
        failed.evidence += "\n(the baseline passes this check: every error is new)"
        failed.execs = execs
        return failed
    after = keys_of(rec.stdout_tail + "\n" + rec.stderr_tail, root.name)
    before = keys_of(base.stdout_tail + "\n" + base.stderr_tail, root.name)
    new = after - before
    old = sum(after.values()) - sum(new.values())
    cmd = shown(argv)
    if new:
        listed = "\n".join(sorted(new)[:30])
        output = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-1500:]
        return GateOutcome(
            gate,
            False,
            evidence=f"`{cmd}`: {sum(new.values())} error(s) the baseline did not have "
            f"({old} pre-existing):\n{listed}\n--- output ---\n{output}",
            execs=execs,
        )
    if not after:
        why = (
            f"`{cmd[:200]}` fails on the base commit too (exit {base.exit_code}) and names "
            "no finding to compare: it cannot judge the change"
        )
        tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-1500:]
        return GateOutcome(
            gate,
            True,
            skipped=True,
            evidence=f"skipped: {why}\n{tail}",
            note=f"{gate} skipped: {why}",
            execs=execs,
        )
    return GateOutcome(
        gate,
        True,
        evidence=f"`{cmd}`: {old} error(s), all already in the baseline; none new",
        execs=execs,
    )


def _doctest_keys(output: str, root_name: str):  # type: ignore[no-untyped-def]
    """Failing doc tests of either mode: the import mode's keyed lines, else pytest's."""
    keys = doctest_failures(output)
    return keys if keys else error_keys(output, root_name)


async def gate_doctest(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    """The changed modules' doc tests, run as the project runs them (``decide.checks.
    doctest_command``: pytest ``--doctest-modules`` where configured, else imported by package
    name so relative imports work), and baseline-aware like the compile gate."""
    if not decision_policy(state).doctest:
        return GateOutcome("doctest", True, skipped=True, evidence="doc tests off (policy)")
    files = doctest_files(WorkspaceFiles(root), changed)
    if not files:
        return GateOutcome(
            "doctest", True, skipped=True, evidence="no doc tests in the changed files"
        )
    argv, mode = doctest_command(WorkspaceFiles(root), files)
    if len(argv) <= 3:
        return GateOutcome(
            "doctest", True, skipped=True, evidence="the changed files are not importable modules"
        )
    result = await _run("doctest", argv, state, root, ports, cause_id)
    if mode == "pytest" and result.execs and result.execs[0].exit_code == 5:
        return GateOutcome(
            "doctest", True, evidence="pytest collected no doc tests", execs=result.execs
        )
    if result.passed or state.workspace is None or not result.execs[0].exit_code:
        return result
    return await _against_baseline(result, argv, state, root, ports, cause_id, _doctest_keys)


MAX_RESIDUAL_FILES = 5000
MAX_RESIDUAL_BYTES = 512 * 1024


def _tracked_texts(root: Path) -> dict[str, str]:
    """The work tree's tracked text files (binary and very large ones left out)."""
    from oopav.sandbox.workspace import git

    out: dict[str, str] = {}
    tree = WorkspaceFiles(root)
    names = [n for n in git(root, "ls-files", "-z").split("\0") if n][:MAX_RESIDUAL_FILES]
    for name in names:
        data = tree.read_bytes(name, MAX_RESIDUAL_BYTES) if tree.is_file(name) else None
        if data is None or b"\0" in data[:8192]:
            continue
        out[name] = data.decode("utf-8", "replace")
    return out


async def gate_residuals(state: SessionState, root: Path, changed: list[str]) -> GateOutcome:
    """After a rename-like change, the old name's occurrences the change did not cover (other
    languages, docs, strings, comments): reported in the outcome (``policy.residuals:
    report``, the default) or failing the gate (``fail``). Reads the workspace only."""
    from oopav.decide.residuals import describe, find_residuals, rename_pairs
    from oopav.handlers.support.workspace import workspace_info
    from oopav.sandbox.workspace import final_diff

    mode = decision_policy(state).residuals
    if mode == "off":
        return GateOutcome("residuals", True, skipped=True, evidence="residuals off (policy)")
    if not changed:
        return GateOutcome("residuals", True, skipped=True, evidence="no files changed")
    diff = await asyncio.to_thread(final_diff, workspace_info(state, None))
    pairs = rename_pairs(diff)
    if not pairs:
        return GateOutcome(
            "residuals", True, skipped=True, evidence="the change renames no identifier"
        )
    texts = await asyncio.to_thread(_tracked_texts, root)
    found = find_residuals(texts, pairs)
    names = ", ".join(f"`{o}` → `{n}`" for o, n in pairs)
    if not found:
        return GateOutcome(
            "residuals", True, evidence=f"renamed {names}: the old name appears nowhere else"
        )
    text = describe(found)
    files = sorted({r.path for r in found})
    note = (
        f"residuals: {len(found)} occurrence(s) of the old name(s) left in "
        f"{', '.join(files[:5])}{', …' if len(files) > 5 else ''} (not covered by the change)"
    )
    if mode == "fail":
        return GateOutcome(
            "residuals", False, evidence=f"renamed {names}, but (policy.residuals: fail):\n{text}"
        )
    return GateOutcome(
        "residuals", True, evidence=f"renamed {names}; reported, not failed:\n{text}", note=note
    )
