"""Affected tests first (issue 28 §2): after a change, the test files that import the changed
modules run first (``context.affected``), so a breaking change fails in the time of those
tests; then the rest of the suite, unless the policy says ``tests: affected``.

Used by the observer (tests after an action) and the tests gate. Only for pytest commands (the
affected files are passed as arguments, the rest excluded with ``--ignore``); any other
command, ``tests: full``, or a change whose tests cannot be told (non-Python files, a
``conftest.py``) runs the whole command as before. A run of the whole command on this very
tree already measured (the tests after the last action) is reused first. The split is made only
when it can pay (``worth_splitting``): at most half the test files affected, and the rest of the
suite's own test time at baseline longer than one more start-up; else the whole command runs at
once. Every run is a recorded execution; ``SuiteRun.evidence`` says which tests ran and why.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.decide.gates import compare_tests
from oopav.decide.policy import decision_policy
from oopav.events.catalog import ExecRecord
from oopav.handlers.ports import exec_key
from oopav.handlers.support.baseline_cache import run_tests
from oopav.sandbox.files import WorkspaceFiles


@dataclass
class SuiteRun:
    records: list[ExecRecord]
    passed: bool
    evidence: str
    stage: str
    """``full`` (the whole command), ``reused`` (a whole run of this tree), ``affected`` (the
    affected tests failed: fail fast, or the policy runs only those), ``affected+rest``."""
    affected: list[str] = field(default_factory=list)


def is_pytest(argv: list[str]) -> bool:
    return any(a == "pytest" or a.endswith("/pytest") or a == "py.test" for a in argv) or (
        "-m" in argv and "pytest" in argv
    )


def worth_splitting(affected: int, total: int, base: ExecRecord | None) -> tuple[bool, str]:
    """Whether two runs (affected, then the rest) beat one. A second run pays the start-up
    again (the interpreter, pytest and its plugins: seconds in a sandbox without bytecode
    caches); what the first run saves when it fails is the rest's share of the test session
    (collection and tests, taken as proportional to the files). Both come from the baseline
    run: junit's session time, and the run's duration less it (the start-up). Without a
    baseline report, split when at most half the test files are affected."""
    if affected * 2 > total:
        return False, f"{affected} of {total} test files affected: more than half the suite"
    report = base.report if base is not None else None
    if report is None or not report.time_s or not base or not base.duration_ms:
        return True, "no baseline timing"
    own = report.time_s
    startup = max(0.0, base.duration_ms / 1000 - own)
    rest = own * (1 - affected / max(total, 1))
    if rest <= startup:
        return False, (
            f"the rest of the suite's share of the test session at baseline (~{rest:.1f} s) "
            f"is less than one more start-up (~{startup:.1f} s)"
        )
    return True, f"the rest's share ~{rest:.1f} s > a start-up ~{startup:.1f} s"


# pytest options that take a value (the value is not a test path).
VALUED = frozenset(
    {"-p", "-k", "-m", "-c", "-o", "-W", "--rootdir", "--confcutdir", "--basetemp", "--ignore",
     "--deselect", "--ignore-glob", "--junitxml", "--override-ini", "--maxfail", "--tb", "-r"}
)  # fmt: skip


def without_paths(argv: list[str], root: Path) -> list[str]:
    """The command without the test paths it names (``tests``, ``tests/unit``): the affected
    files take their place, else the run would still collect the whole suite."""
    out: list[str] = []
    seen_pytest = False
    for i, arg in enumerate(argv):
        is_value = i > 0 and argv[i - 1] in VALUED
        if seen_pytest and not arg.startswith("-") and not is_value:
            target = arg.split("::", 1)[0]
            if target and WorkspaceFiles(root).exists(target):
                continue
        if arg == "pytest" or arg.endswith("/pytest") or arg == "py.test":
            seen_pytest = True
        out.append(arg)
    return out


def _ran(rec: ExecRecord) -> int | None:
    r = rec.report
    return None if r is None else r.passed + len(r.failed) + r.skipped


async def run_suite(
    ports: Any,
    state: Any,
    argv: list[str],
    *,
    root: Path,
    changed: list[str],
    cause_id: str,
    purpose: str,
    timeout_s: float,
    base: ExecRecord | None,
) -> SuiteRun:
    from oopav.context.affected import affected_tests

    scope = decision_policy(state).tests.scope

    async def run(args: list[str], what: str, suffix: str = "") -> ExecRecord:
        rec = await run_tests(
            ports,
            state,
            args,
            root=root,
            key=exec_key(cause_id, purpose + suffix, args),
            purpose=purpose + suffix,
            timeout_s=timeout_s,
            report=True,
        )
        assert rec is not None
        return rec

    async def full(note: str) -> SuiteRun:
        rec = await run(argv, "full")
        passed, evidence = compare_tests(rec, base)
        return SuiteRun([rec], passed, f"{note}\n{evidence}".strip(), "full")

    if scope == "full" or not is_pytest(argv) or not changed:
        why = "tests: full (policy)" if scope == "full" else ""
        return await full(why)
    # The whole command on this very tree already ran (the tests after the action): reuse it.
    seen = await run_tests(
        ports,
        state,
        argv,
        root=root,
        key=exec_key(cause_id, purpose + "_reuse", argv),
        purpose=purpose,
        timeout_s=timeout_s,
        report=True,
        peek=True,
    )
    if seen is not None:
        passed, evidence = compare_tests(seen, base)
        note = f"the whole suite's verdict on this tree is reused ({seen.reused_from})"
        return SuiteRun([seen], passed, f"{note}\n{evidence}", "reused")
    found = await asyncio.to_thread(affected_tests, root, changed)
    if found is None:
        return await full(
            "affected tests: cannot tell which tests exercise "
            f"{', '.join(changed[:5])} (not only Python modules, or no test imports them): "
            "the whole suite runs"
        )
    why = "\n".join(f"  {t}: {found.why[t]}" for t in found.tests[:30])
    head = (
        f"affected tests first: {len(found.tests)} of {found.total} test file(s) exercise "
        f"the change\n{why}"
    )
    if scope != "affected":
        worth, reason = worth_splitting(len(found.tests), found.total, base)
        if decision_policy(state).tests.split == "always" and len(found.tests) < found.total:
            worth = True
        if not worth:
            return await full(f"{head}\n({reason}: the whole suite runs at once)")
    first = await run([*without_paths(argv, root), *found.tests], "affected", "_affected")
    passed, evidence = compare_tests(first, base)
    ran = _ran(first)
    conclusive = first.report is not None and bool(ran) and not first.timed_out
    if not conclusive and not first.timed_out:
        # No per-test results (the command did not take the paths), or nothing collected:
        # say so, and let the whole suite decide.
        rest = await full(
            f"{head}\n(the affected run was inconclusive: exit {first.exit_code}, "
            f"{ran if ran is not None else 'no'} test result(s)) — the whole suite runs"
        )
        rest.records.insert(0, first)
        return rest
    if not passed:
        return SuiteRun(
            [first],
            False,
            f"{head}\nthe affected tests fail (fail fast: the rest of the suite did not run)\n"
            f"{evidence}",
            "affected",
            found.tests,
        )
    if scope == "affected":
        return SuiteRun(
            [first],
            True,
            f"{head}\ntests: affected (policy): the rest of the suite is not run\n{evidence}",
            "affected",
            found.tests,
        )
    rest_argv = [*argv, *(f"--ignore={t}" for t in found.tests)]
    second = await run(rest_argv, "rest", "_rest")
    if second.exit_code == 5 and not _ran(second):
        ok2, evidence2 = True, "no other tests (pytest collected nothing else)"
    else:
        ok2, evidence2 = compare_tests(second, base)
    return SuiteRun(
        [first, second],
        ok2,
        f"{head}\naffected: {evidence.splitlines()[0] if evidence else ''}\n"
        f"then the rest of the suite: {evidence2}",
        "affected+rest",
        found.tests,
    )
