"""Affected tests first (issue 28 §2): after a change, the test files that import the changed
modules run first (``context.affected``), so a breaking change fails in the time of those
tests; then the rest of the suite, unless the policy says ``tests: affected``.

Used by the observer (tests after an action) and the tests gate. Only for pytest commands; any
other command, ``tests: full``, a change whose tests cannot be told (non-Python files, a
``conftest.py``) or one that every test file imports runs the whole command as before. A run
of the whole command on this very tree already measured (the tests after the last action) is
reused first.

By default (``tests.split: auto``) it is one run of the whole command with oopav's pytest plugin
(``sandbox/pytest_plugins/oopav_first.py``): the affected files' tests first, and the run stops
after them when one fails — one interpreter start-up for a passing change, the rest of the suite
skipped for a breaking one. When only failures the baseline already had stopped it, the rest
runs in a second run. ``tests.split: always`` makes two runs (the affected files, then the
rest with ``--ignore``); ``tests: affected`` runs only the affected files. Every run is a
recorded execution; ``SuiteRun.evidence`` says which tests ran and why.
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

# What sandbox/pytest_plugins/oopav_first.py writes on stderr when it stops (it cannot import
# oopav, so the line is spelled in both places; tests/loop/test_affected_first.py ties them).
STOPPED = "oopav-first: stopped"


@dataclass
class SuiteRun:
    records: list[ExecRecord]
    passed: bool
    evidence: str
    stage: str
    """``full`` (the whole command), ``reused`` (a whole run of this tree), ``ordered`` (the
    whole command, the affected tests first), ``affected`` (the affected tests failed: fail
    fast, or the policy runs only those), ``affected+rest``."""
    affected: list[str] = field(default_factory=list)


def is_pytest(argv: list[str]) -> bool:
    return any(a == "pytest" or a.endswith("/pytest") or a == "py.test" for a in argv) or (
        "-m" in argv and "pytest" in argv
    )


def first_argv(argv: list[str], tests: list[str]) -> list[str]:
    """The whole command with oopav's plugin ordering ``tests`` first (and stopping after them
    when one fails)."""
    from oopav.sandbox.environment import PYTEST_PLUGINS

    out = [*argv, "-p", PYTEST_PLUGINS[0]]
    for t in tests:
        out += ["--oopav-first", t]
    return out


def stopped(rec: ExecRecord) -> bool:
    """Whether an ordered run stopped after the affected tests (the plugin's stderr line)."""
    return STOPPED in rec.stderr_tail


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

    async def rest_of(tests: list[str], note: str, records: list[ExecRecord]) -> SuiteRun:
        rest_argv = [*argv, *(f"--ignore={t}" for t in tests)]
        second = await run(rest_argv, "rest", "_rest")
        if second.exit_code == 5 and not _ran(second):
            ok2, evidence2 = True, "no other tests (pytest collected nothing else)"
        else:
            ok2, evidence2 = compare_tests(second, base)
        return SuiteRun(
            [*records, second],
            ok2,
            f"{note}\nthen the rest of the suite: {evidence2}",
            "affected+rest",
            tests,
        )

    async def ordered(head: str, tests: list[str]) -> SuiteRun:
        """One run of the whole command, the affected test files first; it stops after them
        when one fails (``sandbox/pytest_plugins/oopav_first.py``)."""
        rec = await run(first_argv(argv, tests), "ordered")
        if rec.report is None and not rec.timed_out:
            # No per-test results: the plugin could not load (a pytest without the hooks it
            # needs, a command that drops the options): the plain command decides.
            plain = await full(
                f"{head}\n(the ordered run gave no test results: exit {rec.exit_code}) — the "
                "whole suite runs as given"
            )
            plain.records.insert(0, rec)
            return plain
        passed, evidence = compare_tests(rec, base)
        if not stopped(rec):
            return SuiteRun(
                [rec],
                passed,
                f"{head}\none run, the affected tests first: none failed, the rest ran\n{evidence}",
                "ordered",
                tests,
            )
        if not passed:
            return SuiteRun(
                [rec],
                False,
                f"{head}\nthe affected tests fail (fail fast: the run stopped after them, the "
                f"rest of the suite did not run)\n{evidence}",
                "affected",
                tests,
            )
        # Only failures the baseline had stopped it: the rest of the suite still decides.
        return await rest_of(
            tests,
            f"{head}\nthe affected tests fail only where they failed at baseline: "
            f"{evidence.splitlines()[0] if evidence else ''}",
            [rec],
        )

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
        if len(found.tests) >= found.total:
            return await full(f"{head}\n(every test file is affected: the whole suite runs)")
        if decision_policy(state).tests.split != "always":
            return await ordered(head, found.tests)
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
    return await rest_of(
        found.tests, f"{head}\naffected: {evidence.splitlines()[0] if evidence else ''}", [first]
    )
