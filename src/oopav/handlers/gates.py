"""The done-gates, in order: no stubs → changed files parse → tests → lint → critic.

Each gate is a small function of the session and the workspace that returns a ``GateOutcome``;
the verifier runs them in order and stops at the first failure. Tests outrank lint and lint
outranks any model's opinion simply by coming first; a critic that refuses or is unavailable
is skipped, never blocking."""

from __future__ import annotations

import asyncio
import contextlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from oopav.events.catalog import ExecRecord, Finding
from oopav.handlers.ports import Ports, exec_key
from oopav.projections.session import SessionState

GATES = ("stubs", "parse", "tests", "lint", "critic")
MAX_LINT_BASE_FILES = 20


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


def baseline_tests(state: SessionState) -> ExecRecord | None:
    """The baseline's test run, as the observer recorded it."""
    base = state.baseline
    if base is None:
        return None
    return next((r for r in reversed(base.execs) if r.purpose == "baseline_tests"), None)


def compare_tests(rec: ExecRecord, base: ExecRecord | None) -> tuple[bool, str]:
    """(passed, evidence): the run after the change against the baseline. Per test when both
    have a report: no test that passed at baseline fails, nothing new errors; failures that
    were there before are reported, not blamed. Otherwise by exit code."""
    argv = " ".join(rec.argv)
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    if rec.timed_out:
        return False, f"`{argv}` timed out\n{tail}"
    after, before = rec.report, base.report if base is not None else None
    if after is not None and before is not None:
        known = set(before.failed) | set(before.errors)
        new_fail = [t for t in after.failed if t not in known]
        new_err = [t for t in after.errors if t not in known]
        still = [t for t in after.failed + after.errors if t in known]
        fixed = len(known - set(after.failed) - set(after.errors))
        ran = after.passed + len(after.failed) + after.skipped
        lost = before.passed > 0 and ran == 0
        summary = (
            f"{after.passed} passed, {len(after.failed)} failed, {len(after.errors)} errors "
            f"(baseline: {before.passed} passed, {len(before.failed)} failed, "
            f"{len(before.errors)} errors)"
        )
        if new_fail or new_err or lost:
            lines = [f"`{argv}`: the change broke tests that passed at baseline. {summary}"]
            lines += [f"- newly failing: {t}" for t in new_fail[:30]]
            lines += [f"- new error: {t}" for t in new_err[:30]]
            if lost:
                lines.append("- no test ran any more")
            return False, "\n".join(lines) + f"\n{tail}"
        note = f"`{argv}`: no test that passed at baseline fails. {summary}"
        if still:
            note += f"\npre-existing failures (not caused by the change, not blamed): {len(still)}"
            note += "".join(f"\n- {t}" for t in still[:20])
        if fixed:
            note += f"\nfixed by the change: {fixed}"
        return True, note
    if rec.exit_code == 0:
        return True, f"`{argv}` passed\n{tail[-500:]}"
    if base is not None and base.exit_code not in (0, None) and after is None:
        return False, (
            f"`{argv}` exited {rec.exit_code} (it exited {base.exit_code} at baseline too; the "
            f"runner gives no per-test results, so the change cannot be cleared)\n{tail}"
        )
    return False, f"`{argv}` exited {rec.exit_code}\n{tail}"


async def gate_tests(
    state: SessionState, root: Path, ports: Ports, cause_id: str, selection=None
) -> GateOutcome:  # type: ignore[no-untyped-def]
    from oopav.handlers.baseline import environment_spec

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
        environment=environment_spec(task),
        report=True,
    )
    passed, evidence = compare_tests(rec, baseline_tests(state))
    return GateOutcome("tests", passed, evidence=evidence, execs=[rec])


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


_CONCISE = re.compile(
    r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+[0-9]*) (?P<msg>.*)$"
)


def ruff_findings(output: str, sources: dict[str, str]) -> list[tuple[str, str, str, str, int]]:
    """(path, code, message, source line text, line) per finding of ``ruff --output-format
    concise``. The line's text, not its number, identifies a finding across an edit that moved
    it; ``sources`` maps each path to the file content the finding refers to."""
    out = []
    for line in output.splitlines():
        m = _CONCISE.match(line.strip())
        if not m:
            continue
        path, no = m["path"], int(m["line"])
        if path.startswith("./"):
            path = path[2:]
        lines = sources.get(path, "").splitlines()
        text = lines[no - 1].strip() if 0 < no <= len(lines) else ""
        msg = m["msg"].removeprefix("[*] ").strip()
        out.append((path, m["code"], msg, text, no))
    return out


def introduced(
    after: list[tuple[str, str, str, str, int]], before: list[tuple[str, str, str, str, int]]
) -> list[tuple[str, str, str, str, int]]:
    """Findings of ``after`` beyond the baseline's, matched as a multiset of (path, code,
    message, line text)."""
    from collections import Counter

    left = Counter(f[:4] for f in before)
    new = []
    for f in after:
        if left[f[:4]] > 0:
            left[f[:4]] -= 1
        else:
            new.append(f)
    return new


async def gate_lint(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    """ruff, with the project's configuration and (when its env has one) its own ruff, on the
    changed Python files; only findings the change introduced fail the gate. Findings already
    in the base version of a file (fed to ruff on stdin under the file's own name, so the same
    configuration applies) are reported, not blamed."""
    from oopav.handlers.baseline import environment_spec
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
