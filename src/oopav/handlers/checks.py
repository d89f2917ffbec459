"""The gates between parse and unit tests in the victory chain: a compile / type check (only
where the project configures one) and doc tests (only where changed files carry them).

Like every gate they run in the sandbox through the recorded exec port, so replay serves them
back; a check the project does not configure is skipped with the reason, never invented."""

from __future__ import annotations

import tomllib
from pathlib import Path

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


async def _run(
    gate: str, argv: list[str], state: SessionState, root: Path, ports: Ports, cause_id: str
) -> GateOutcome:
    task = state.task
    assert task is not None
    rec = await ports.sandbox.run(  # type: ignore[union-attr]
        argv,
        workspace=root,
        session_id=state.session_id,
        key=exec_key(cause_id, f"gate_{gate}", argv),
        purpose=f"gate_{gate}",
        timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),
    )
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
    return await _run("compile", argv, state, root, ports, cause_id)


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
