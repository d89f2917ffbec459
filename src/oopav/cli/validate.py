"""``oopav validate FILE…``: the first gates of the chain — files parse, no stub markers, and
(``--compile``) the project's own compile or type check — on any files, outside a session.

It reuses the gates' own rules (``decide.stubs.scan_tree``, ``decide.checks.compile_command``),
so a file that passes here passes those gates in a session. The compile check runs in the
sandbox like every command oopav runs; a checker the project configures but has not installed
is reported as skipped with the reason, never as a failure."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import click

from oopav.decide.checks import compile_command
from oopav.decide.stubs import scan_tree
from oopav.sandbox.files import WorkspaceFiles

# Output of a checker that could not start: the check was not run, so it says nothing about
# the files (the same rule as the session gates).
_NOT_RUNNABLE = ("No module named", "command not found", "not found in PATH", "No such file")


def project_root(path: Path) -> Path:
    """The repository holding ``path`` (git's top level), else its directory."""
    start = path if path.is_dir() else path.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return start.resolve()
    return (
        Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else start.resolve()
    )


def validate(files: list[Path]) -> dict[str, Any]:
    """Parse errors and stub markers of ``files`` (all under one root), as plain data."""
    root = project_root(files[0].resolve())
    rel = []
    for f in files:
        try:
            rel.append(str(f.resolve().relative_to(root)))
        except ValueError:
            raise click.UsageError(
                f"{f} is not under {root}: validate files of one repository"
            ) from None
    stubs, errors, languages, _ = scan_tree(WorkspaceFiles(root), rel)
    return {
        "root": str(root),
        "files": rel,
        "languages": languages,
        "parse_errors": [{"path": e.path, "line": e.line, "message": e.message} for e in errors],
        "stubs": [{"path": s.path, "line": s.line, "message": s.message} for s in stubs],
    }


def run_compile(root: Path, rel: list[str], timeout_s: float) -> dict[str, Any]:
    from oopav.config import Settings
    from oopav.sandbox.runner import SandboxUnavailable, run_sandboxed

    argv, why = compile_command(WorkspaceFiles(root), rel)
    if argv is None:
        return {"status": "skipped", "why": why}
    settings = Settings()
    try:
        res = run_sandboxed(
            argv,
            workspace=root,
            artifacts_dir=settings.artifacts_dir / "validate",
            timeout_s=timeout_s,
        )
    except SandboxUnavailable as exc:
        return {"status": "skipped", "why": f"the sandbox is unavailable: {exc}", "argv": argv}
    tail = (res.stdout_tail + "\n" + res.stderr_tail).strip()
    if res.timed_out:
        return {"status": "fail", "why": f"timed out after {timeout_s:g} s", "argv": argv}
    if res.exit_code != 0 and any(m in tail for m in _NOT_RUNNABLE) and res.exit_code in (1, 127):
        first = next((ln for ln in tail.splitlines() if any(m in ln for m in _NOT_RUNNABLE)), tail)
        return {
            "status": "skipped",
            "why": f"{why}, but it cannot run here: {first.strip()[:200]}",
            "argv": argv,
        }
    return {
        "status": "pass" if res.exit_code == 0 else "fail",
        "why": why,
        "argv": argv,
        "output": tail[-3000:],
    }


@click.command("validate")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--compile",
    "with_compile",
    is_flag=True,
    help="Also run the project's configured compile/type check (sandboxed).",
)
@click.option(
    "--timeout", default=120.0, show_default=True, help="Seconds the compile check may take."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def validate_cmd(
    files: tuple[Path, ...], with_compile: bool, timeout: float, as_json: bool
) -> None:
    """Check FILES as the gates would: they parse, carry no new stub markers, and (--compile)
    pass the project's own compile or type check. Exits 1 when any check fails."""
    report = validate(list(files))
    if with_compile:
        report["compile"] = run_compile(Path(report["root"]), report["files"], timeout)
    failed = bool(report["parse_errors"] or report["stubs"]) or (
        report.get("compile", {}).get("status") == "fail"
    )
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        n = len(report["files"])
        for e in report["parse_errors"]:
            click.echo(f"{e['path']}:{e['line']}: parse error: {e['message']}")
        for s in report["stubs"]:
            click.echo(f"{s['path']}:{s['line']}: stub: {s['message']}")
        click.echo(
            f"parse: {'FAIL' if report['parse_errors'] else 'ok'} · "
            f"stubs: {'FAIL' if report['stubs'] else 'ok'} · {n} file(s)"
        )
        if "compile" in report:
            c = report["compile"]
            click.echo(f"compile: {c['status']} ({c['why']})")
            if c["status"] == "fail" and c.get("output"):
                click.echo(c["output"])
    raise SystemExit(1 if failed else 0)


def register(cli: click.Group) -> None:
    cli.add_command(validate_cmd)
