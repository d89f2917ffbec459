"""Gate verdicts as pure functions: a gate's outcome, the test run after a change against the baseline's (per test when both have a report), lint findings the change introduced, which tier of gates applies and which tests run.

The verifier runs the gates (``handlers/support/gates.py``) and these decide what their output means."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from oopav.decide.files import RepoFiles
from oopav.decide.policy import decision_policy
from oopav.decide.tests import (
    TestSelection,
    detect_test_command,
    effective_decision,
    select_tests,
)
from oopav.events.catalog import Event, ExecRecord, Finding
from oopav.projections.session import SessionState

GATES = ("stubs", "parse", "tests", "lint", "diagnostics", "harness", "critic", "confidence")


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
    # critic only: its structured report (the confidence tier reads it)
    confidence: float | None = None
    top_risks: list[str] = field(default_factory=list)
    missing_tests: list[str] = field(default_factory=list)
    model_events: list[Event] = field(default_factory=list)
    # What the session's outcome must say about this gate (a check that could not run, tests
    # skipped before and after): appended to the summary so a success is not over-read.
    note: str = ""
    error: bool = False  # the check itself misbehaved (edited the workspace): verdict void


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


def skipped_both(rec: ExecRecord, base: ExecRecord | None) -> list[str]:
    """Tests skipped at baseline and skipped again after the change: nothing verified them."""
    if rec.report is None or base is None or base.report is None:
        return []
    before = set(base.report.skipped_ids)
    return [t for t in rec.report.skipped_ids if t in before]


def uses_ruff(root: RepoFiles) -> bool:
    if root.is_file("ruff.toml") or root.is_file(".ruff.toml"):
        return True
    text = root.text("pyproject.toml")
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
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


TIER_GATES: dict[str, tuple[str, ...]] = {
    "compile_only": ("stubs", "parse", "compile"),
    "tests": ("stubs", "parse", "compile", "doctest", "tests", "residuals"),
    "full": (
        "stubs",
        "parse",
        "compile",
        "doctest",
        "tests",
        "residuals",
        "lint",
        "diagnostics",
        "harness",
        "critic",
        "confidence",
    ),
}


def confidence_outcome(critic: GateOutcome | None, threshold: float | None) -> GateOutcome:
    """The confidence tier: the critic's verdict of this verification must be at least
    ``threshold`` sure (``policy.critic.min_confidence``). Skipped, saying why, when there is no
    verdict, no confidence in it, or no threshold; a critic that refused or was unavailable
    never blocks, so neither does its missing confidence."""
    if critic is None or critic.skipped or critic.verdict is None:
        why = critic.evidence.splitlines()[0] if critic is not None and critic.evidence else ""
        return GateOutcome(
            "confidence",
            True,
            skipped=True,
            evidence="no critic verdict in this verification" + (f" ({why})" if why else ""),
        )
    if critic.confidence is None:
        return GateOutcome(
            "confidence",
            True,
            skipped=True,
            evidence=f"the critic's {critic.verdict} verdict gives no confidence",
        )
    if threshold is None:
        return GateOutcome(
            "confidence",
            True,
            skipped=True,
            evidence=f"critic confidence {critic.confidence:.2f}; no threshold set "
            "(policy.critic.min_confidence)",
        )
    said = f"the critic is {critic.confidence:.2f} sure of its {critic.verdict} verdict"
    if critic.confidence >= threshold:
        return GateOutcome(
            "confidence", True, evidence=f"{said} (policy.critic.min_confidence {threshold:.2f})"
        )
    lines = [f"{said}, below policy.critic.min_confidence {threshold:.2f}"]
    lines += [f"- risk: {r}" for r in critic.top_risks[:10]]
    lines += [f"- missing test: {t}" for t in critic.missing_tests[:10]]
    return GateOutcome("confidence", False, evidence="\n".join(lines))


def base_decision(state: SessionState) -> str:
    if state.orient is not None and state.orient.test_decision == "required":
        return "required"
    if state.plan is not None:
        return state.plan.test_decision
    return state.orient.test_decision if state.orient else "optional"


def choose_tests(
    state: SessionState, root: RepoFiles, changed: list[str], lines: int = 0
) -> TestSelection:
    """The tests the verifier runs for this session now (never silently none); ``lines``: the
    change's added plus deleted lines, a fact the caller reads from the workspace."""
    policy = decision_policy(state).tests
    task = state.task
    assert task is not None
    base = base_decision(state)
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


def rule_brief(action: object) -> str:
    """An action in one line for a small policy's feedback: for ``ast_grep`` what the rule
    matches and its fix (``rule kind identifier, regex ^close$ -> fix close_safe``; the
    compact prompt does not repeat the refused answer, so the feedback says what it was);
    any other action as :func:`describe_action`. Deterministic: the action's own text only."""
    if getattr(action, "type", "") != "ast_grep":
        return describe_action(action)
    pattern, fix = getattr(action, "pattern", None), getattr(action, "rewrite", None)
    parts: list[str] = []
    if pattern is not None:
        parts.append(f"pattern {pattern}")
    elif getattr(action, "rule", None):
        import yaml

        try:
            doc = yaml.safe_load(str(action.rule))  # type: ignore[attr-defined]
        except yaml.YAMLError:
            doc = None
        if not isinstance(doc, dict):
            return describe_action(action)
        rule = doc.get("rule")
        if isinstance(rule, dict):
            parts += [f"{k} {rule[k]}" for k in ("kind", "pattern", "regex") if k in rule]
            other = [str(k) for k in rule if k not in ("kind", "pattern", "regex")]
            if other:
                parts.append("with " + ", ".join(other))
        fix = doc.get("fix")
    text = "rule " + ", ".join(parts) if parts else "rule"
    if fix is not None:
        text += f" -> fix {fix}"
    return " ".join(text.split())[:120]


def first_change(diff: str) -> tuple[str, int, str, str, int] | None:
    """(path, line in the old file, first removed line, first added line, lines changed) of a
    unified diff (``-U0`` or any context); None when it changes nothing. A line only added or
    only removed has ``""`` on the other side; lines changed counts the larger of the removed
    and the added lines."""
    path = ""
    first: tuple[str, int, str, str] | None = None
    removed: tuple[int, str] | None = None
    minus = plus = at = 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else line[4:]
        elif line.startswith(("--- ", "diff ", "index ")):
            continue
        elif line.startswith("@@"):
            m = re.match(r"@@ -(\d+)", line)
            at = int(m.group(1)) if m else 0
        elif line.startswith("-"):
            minus += 1
            if first is None and removed is None:
                removed = (at, line[1:])
            at += 1
        elif line.startswith("+"):
            plus += 1
            if first is None:
                first = (path, *removed, line[1:]) if removed else (path, at, "", line[1:])
        else:
            if first is None and removed is not None:
                first = (path, removed[0], removed[1], "")
            at += 1
    if first is None and removed is not None:
        first = (path, removed[0], removed[1], "")
    return None if first is None else (*first, max(minus, plus))
