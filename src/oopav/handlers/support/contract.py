"""Two tiers of the verifier's chain, run like the other checks (in the sandbox, in the
project's environment, recorded with an ``exec_key`` so replay serves them back, proven not to
edit the workspace) and judged against the baseline:

- **harness** (the project's contract): every check command the project declares
  (``decide/checks.declared_checks``) runs; one that fails where the base commit passed fails
  the gate, one that fails the same way on the base commit is not blamed;
- **diagnostics** (per file): a type checker or language server per changed language —
  pyright for Python (oopav installs it), gopls for Go where it is on PATH — on the changed
  files; only errors the base version of those files did not have fail the gate.

Where nothing is declared or installed, the gate is skipped with the reason."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from oopav.decide.checks import declared_checks, diagnostic_keys, diagnostics_plan, error_keys
from oopav.decide.gates import GateOutcome
from oopav.decide.policy import decision_policy
from oopav.handlers.ports import Ports, exec_key
from oopav.handlers.support.gates import _against_baseline, _exec, _not_run, edited, shown
from oopav.projections.session import SessionState
from oopav.sandbox.files import WorkspaceFiles


async def gate_harness(state: SessionState, root: Path, ports: Ports, cause_id: str) -> GateOutcome:
    """The project's declared check commands, all of them, each against the baseline."""
    if not decision_policy(state).harness:
        return GateOutcome("harness", True, skipped=True, evidence="harness off (policy)")
    checks, looked = await asyncio.to_thread(declared_checks, WorkspaceFiles(root))
    if not checks:
        return GateOutcome(
            "harness",
            True,
            skipped=True,
            evidence=f"the project declares no check commands (looked for {looked})",
        )
    lines: list[str] = []
    execs = []
    notes = []
    for where, argv in checks:
        key = exec_key(cause_id, "gate_harness", argv)
        rec = await _exec("harness", argv, state, root, ports, key)
        execs.append(rec)
        if rec.workspace_changed:
            return edited("harness", argv, rec, execs)
        not_run = _not_run("harness", argv, rec, state)
        if not_run is not None:
            lines.append(f"- {where}: `{shown(argv)}` skipped: {not_run.note}")
            notes.append(not_run.note)
            continue
        if rec.exit_code == 0 and not rec.timed_out:
            lines.append(f"- {where}: `{shown(argv)}` passed")
            continue
        tail = (rec.stdout_tail + "\n" + rec.stderr_tail).strip()[-2000:]
        what = "timed out" if rec.timed_out else f"exited {rec.exit_code}"
        failed = GateOutcome("harness", False, evidence=f"`{shown(argv)}` {what}\n{tail}")
        failed.execs = [rec]
        judged = await _against_baseline(failed, argv, state, root, ports, cause_id, error_keys)
        execs += judged.execs[1:]
        if not judged.passed:
            head = f"- {where}: FAILED"
            return GateOutcome(
                "harness",
                False,
                evidence="\n".join([*lines, head, judged.evidence]),
                execs=execs,
            )
        lines.append(f"- {where}: `{shown(argv)}` {what}, as on the base commit (not blamed)")
    return GateOutcome(
        "harness",
        True,
        evidence=f"{len(checks)} declared check(s):\n" + "\n".join(lines),
        execs=execs,
        note="; ".join(notes),
    )


def diagnostic_tools() -> dict[str, list[str] | None]:
    """The diagnostics tools on this machine, as the argv prefix that runs each in the sandbox:
    pyright, oopav's own dependency, is its JavaScript bundle bound into the sandbox and run by
    ``node`` (sandbox/environment.tool_tree), gopls from PATH."""
    from oopav.sandbox.environment import PYRIGHT_ENTRY, tool_tree

    pyright = ["node", PYRIGHT_ENTRY] if tool_tree("pyright") and shutil.which("node") else None
    gopls = shutil.which("gopls")
    return {"pyright": pyright, "gopls": [gopls, "check"] if gopls else None}


async def gate_diagnostics(
    state: SessionState, root: Path, changed: list[str], ports: Ports, cause_id: str
) -> GateOutcome:
    """Per-file diagnostics of the changed files; fails on errors their base versions did not
    have (the checker runs on the base commit's copy of the files that existed there)."""
    from oopav.sandbox.workspace import export_tree

    if not decision_policy(state).diagnostics:
        return GateOutcome("diagnostics", True, skipped=True, evidence="diagnostics off (policy)")
    present = [f for f in changed if WorkspaceFiles(root).is_file(f)]
    runs, skipped = diagnostics_plan(present, diagnostic_tools())
    if not runs:
        why = "; ".join(skipped) or "no changed file in a language with a diagnostics tool"
        return GateOutcome("diagnostics", True, skipped=True, evidence=f"skipped: {why}")
    lines = [f"- skipped: {s}" for s in skipped]
    execs = []
    for language, argv in runs:
        rec = await _exec(
            "diagnostics", argv, state, root, ports, exec_key(cause_id, "gate_diagnostics", argv)
        )
        execs.append(rec)
        if rec.workspace_changed:
            return edited("diagnostics", argv, rec, execs)
        not_run = _not_run("diagnostics", argv, rec, state)
        if not_run is not None:
            lines.append(f"- {language}: {not_run.note}")
            continue
        output = rec.stdout_tail + "\n" + rec.stderr_tail
        after = diagnostic_keys(output, root.name)
        if not after and rec.exit_code == 0 and not rec.timed_out:
            lines.append(f"- {language}: `{shown(argv)}`: no errors")
            continue
        if not after:
            # It failed and named no error: it did not judge the files (it could not start,
            # or it broke), which says nothing about the change.
            tail = output.strip()[-500:]
            why = "timed out" if rec.timed_out else f"exited {rec.exit_code} naming no error"
            lines.append(f"- {language}: skipped: `{shown(argv)}` {why}: {tail}")
            continue
        assert state.workspace is not None
        base_dir = root.with_name(root.name + ".base")
        try:
            await asyncio.to_thread(export_tree, root, state.workspace.base_commit, base_dir)
            files = [a for a in argv if a in present]
            new_files = {f for f in files if not WorkspaceFiles(base_dir).is_file(f)}
            before = diagnostic_keys("", root.name)
            if len(new_files) < len(files):
                # Only the files the base commit has: a missing file stops some checkers.
                base_argv = [a for a in argv if a not in new_files]
                base = await _exec(
                    "diagnostics_base",
                    base_argv,
                    state,
                    base_dir,
                    ports,
                    exec_key(cause_id, "gate_diagnostics_base", base_argv),
                    guard=False,
                )
                execs.append(base)
                before = diagnostic_keys(base.stdout_tail + "\n" + base.stderr_tail, root.name)
        finally:
            await asyncio.to_thread(shutil.rmtree, base_dir, True)
        new = after - before
        old = sum(after.values()) - sum(new.values())
        if new:
            listed = "\n".join(sorted(new)[:30])
            return GateOutcome(
                "diagnostics",
                False,
                evidence=f"{language}: `{shown(argv)}`: {sum(new.values())} error(s) the base "
                f"version did not have ({old} pre-existing):\n{listed}",
                execs=execs,
            )
        lines.append(f"- {language}: {old} error(s), all already in the base version; none new")
    return GateOutcome("diagnostics", True, evidence="\n".join(lines), execs=execs)
