"""The gates between parse and unit tests in the victory chain: a compile / type check (only
where the project configures one) and doc tests (only where changed files carry them).

The compile gate is baseline-aware: when the check fails on the change, the same command runs
on the base commit's files, and only errors the baseline did not have fail the gate (a repository
that already carries type errors can still take a change that adds none).

Like every gate they run in the sandbox through the recorded exec port, so replay serves them
back; a check the project does not configure is skipped with the reason, never invented."""

from __future__ import annotations

import asyncio
import re
import shutil
import tomllib
from collections import Counter
from pathlib import Path

from oopav.events.catalog import ExecRecord
from oopav.handlers.common import decision_policy
from oopav.handlers.gates import GateOutcome
from oopav.handlers.ports import Ports, exec_key
from oopav.projections.session import SessionState


def _pyproject_tools(root: Path) -> dict:  # type: ignore[type-arg]
    f = root / "pyproject.toml"
    if not f.is_file():
        return {}
    try:
        return tomllib.loads(f.read_text()).get("tool", {})
    except (tomllib.TOMLDecodeError, OSError):
        return {}


def compile_command(root: Path, changed: list[str]) -> tuple[list[str] | None, str]:
    """The project's own compile or type check for this change, or (None, why none).
    mypy / pyright when configured, ``tsc --noEmit`` with a tsconfig.json, ``cargo check`` with
    Cargo.toml, ``go vet`` with go.mod; only when the change touches that language."""
    py = sorted(f for f in changed if f.endswith((".py", ".pyi")))
    tools = _pyproject_tools(root)
    if py and ("mypy" in tools or (root / "mypy.ini").is_file() or (root / ".mypy.ini").is_file()):
        return ["python", "-m", "mypy", "--no-incremental", *py], "mypy is configured"
    if py and ("pyright" in tools or (root / "pyrightconfig.json").is_file()):
        return ["pyright", *py], "pyright is configured"
    if any(f.endswith((".ts", ".tsx")) for f in changed) and (root / "tsconfig.json").is_file():
        return ["npx", "--no-install", "tsc", "--noEmit"], "tsconfig.json is present"
    if any(f.endswith(".rs") for f in changed) and (root / "Cargo.toml").is_file():
        return ["cargo", "check", "--quiet"], "Cargo.toml is present"
    if any(f.endswith(".go") for f in changed) and (root / "go.mod").is_file():
        return ["go", "vet", "./..."], "go.mod is present"
    return None, "no compile or type check is configured for the changed files"


def doctest_files(root: Path, changed: list[str]) -> list[str]:
    """Changed Python files (tests excluded) whose text holds a doctest prompt."""
    out = []
    for f in sorted(changed):
        if not f.endswith(".py") or "/tests/" in f"/{f}" or Path(f).name.startswith("test_"):
            continue
        try:
            if ">>> " in (root / f).read_text(errors="replace"):
                out.append(f)
        except OSError:
            continue
    return out


# Where a checker names a location: ``path:12:5`` (mypy, go vet, ruff), ``path(12,5)`` (tsc),
# ``--> src/x.rs:3:5`` (cargo), ``File "x.py", line 3`` (a Python traceback).
_LOCATION = re.compile(r"(?::\d+)+|\(\d+,\d+\)|, line \d+")


def error_keys(output: str, root_name: str) -> Counter[str]:
    """The error lines of a checker's output as a multiset of location-free keys: line and
    column numbers dropped (an edit above an old error moves it, it does not make it new) and
    the workspace or base-tree prefix of absolute paths removed. Lines without a location
    (summaries such as "Found 2 errors") are not keys."""
    prefix = re.compile(rf"\S*/{re.escape(root_name)}(?:\.base)?/")
    keys: Counter[str] = Counter()
    for line in output.splitlines():
        text = prefix.sub("", line.strip())
        if _LOCATION.search(text):
            keys[_LOCATION.sub("", text).removeprefix("./")] += 1
    return keys


async def _exec(
    gate: str, argv: list[str], state: SessionState, root: Path, ports: Ports, key: str
) -> ExecRecord:
    from oopav.handlers.baseline import environment_spec

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
