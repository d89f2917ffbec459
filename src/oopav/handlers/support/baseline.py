"""Before the baseline: check that the project's package imports from the workspace; at the
baseline: whether the test suite can run at all. Used by the observer; the comparison with
the baseline after a change lives in ``gates.gate_tests``.

Both are plain functions of recorded executions (``ExecRecord``), so replay decides the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oopav.events.catalog import ExecRecord
from oopav.handlers.ports import Ports, exec_key
from oopav.projections.session import SessionState


def environment_spec(task: Any) -> dict[str, Any] | None:
    """The task's environment spec plus its repo (what the sandbox port resolves)."""
    from oopav.sandbox.environment import spec_for_task

    return spec_for_task(task)


async def probe_environment(
    state: SessionState, task: Any, root: Path, ports: Ports, cause_id: str
) -> tuple[ExecRecord | None, str | None]:
    """(the probe's record, a stop message or None). The probe asks the project's interpreter,
    inside the sandbox, where the project's top-level package resolves from; anything other
    than the workspace stops the session before a misleading baseline is recorded."""
    from oopav.sandbox.environment import probe_argv, top_level_package

    env = getattr(task, "environment", None) or {}
    wanted = env.get("probe")
    if wanted is False:
        return None, None
    package = wanted if isinstance(wanted, str) else top_level_package(root)
    if not package:
        return None, None
    argv = probe_argv(package)
    rec = await ports.sandbox.run(
        argv,
        workspace=root,
        session_id=state.session_id,
        key=exec_key(cause_id, "env_probe", argv),
        purpose="env_probe",
        timeout_s=60.0,
        environment=environment_spec(task),
    )
    return rec, probe_verdict(rec, package)


def probe_verdict(rec: ExecRecord, package: str) -> str | None:
    from oopav.sandbox.environment import read_probe

    if rec.exit_code != 0:
        out = (rec.stderr_tail or rec.stdout_tail).strip()[-1500:]
        return (
            f"the project's environment cannot run Python (exit {rec.exit_code}): {out}. "
            "Fix: pass environment / --env with the project's venv or interpreter, or "
            "`--env uv` to build one"
        )
    data = read_probe(rec.stdout_tail) or {}
    if data.get("inside"):
        return None
    where = data.get("origin") or f"nowhere ({data.get('error') or 'not found'})"
    return (
        f"package {package!r} does not import from the workspace: it resolved from {where} "
        f"(interpreter {data.get('executable')}). The tests would not exercise the edited "
        "code. Fix: pass environment / --env with the project's own env, declare "
        "environment.pythonpath, or set environment.probe to the right package (false to skip)"
    )


def baseline_unrunnable(rec: ExecRecord) -> str | None:
    """A message when the suite cannot run at baseline, else None. Pre-existing failures are
    fine (a fix-the-bug task starts with some); a suite that runs no test at all, or ends
    without any report after an error, is not."""
    tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-3000:]
    argv = " ".join(rec.argv)
    if rec.timed_out:
        return f"the test suite cannot run at baseline: `{argv}` timed out\n{tail}"
    if rec.exit_code == 0:
        return None
    report = rec.report
    if report is not None:
        if report.passed + len(report.failed) + report.skipped == 0:
            return (
                f"the test suite cannot run at baseline: `{argv}` exited {rec.exit_code} "
                f"without running any test ({len(report.errors)} error(s))\n{tail}"
            )
        return None
    if "bwrap: execvp " in rec.stderr_tail:
        return f"the test suite cannot run at baseline: `{argv}` cannot start\n{tail}"
    # A pytest that ran a session always writes its per-test report (oopav's plugin, or junit
    # XML through PYTEST_ADDOPTS); none after a failure means it never got that far (not
    # installed, a usage error, a crash).
    pytest = any("pytest" in a or "py.test" in a for a in rec.argv)
    if rec.exit_code in (125, 126, 127) or rec.exit_code is None or pytest:
        return f"the test suite cannot run at baseline: `{argv}` exited {rec.exit_code}\n{tail}"
    return None
