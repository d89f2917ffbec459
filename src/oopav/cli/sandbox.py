"""CLI commands of oopav.sandbox (registered by oopav.cli): ``oopav sandbox exec`` runs one
command exactly as the agent would; ``oopav apply`` applies a session's diff to the user's
repository; ``oopav grant`` / ``oopav deny`` record a permission decision for a session.

``grant`` and ``deny`` append the event directly (after the same validation as the grants
handler on ``oopav.grants.submit``), so they work whether or not a grants handler runs. They do
not go through the subject: a submission stored there while no handler answers would be
processed again when one starts, granting twice."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import click
import msgspec

from oopav.sandbox.capabilities import ScopeError, needs_network, parse_scope
from oopav.sandbox.limits import Limits
from oopav.sandbox.runner import SandboxUnavailable, default_config, run_sandboxed


@click.group("sandbox")
def sandbox_group() -> None:
    """Run commands in the bwrap sandbox the agent uses."""


@sandbox_group.command("exec", context_settings={"ignore_unknown_options": True})
@click.option(
    "--workspace",
    "workspace",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="The directory mounted writable (the only one).",
)
@click.option(
    "--grant", "grants", multiple=True, help="A scope to allow, e.g. net.any (repeatable)."
)
@click.option(
    "--timeout", "timeout", type=float, default=60.0, show_default=True, help="Wall-clock seconds."
)
@click.option(
    "--artifacts",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where full output is kept (default: a temp dir).",
)
@click.option(
    "--backend",
    type=click.Choice(["bwrap", "none"]),
    default="bwrap",
    show_default=True,
    help="'none' runs WITHOUT isolation (logged as a warning).",
)
@click.option(
    "--env",
    "env",
    metavar="PATH|uv",
    help="The project's environment (default: as the agent finds it: the workspace's "
    ".venv/venv, $VIRTUAL_ENV, the host python; never oopav's own).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result struct as JSON.")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_cmd(
    workspace: Path,
    grants: tuple[str, ...],
    timeout: float,
    artifacts: Path | None,
    backend: str,
    env: str | None,
    as_json: bool,
    argv: tuple[str, ...],
) -> None:
    """Run ARGV in the sandbox and exit with its exit code (124 on timeout).

    Example: oopav sandbox exec --workspace . --grant net.any -- curl -sI https://pypi.org
    """
    import tempfile

    try:
        scopes = [parse_scope(g) for g in grants]
    except ScopeError as exc:
        raise click.BadParameter(str(exc), param_hint="--grant") from exc
    network = needs_network(str(s) for s in scopes)
    art = artifacts or Path(tempfile.mkdtemp(prefix="oopav-exec-"))
    from oopav.config import Settings
    from oopav.sandbox.environment import (
        EnvironmentError_,
        resolve,
        sandbox_config_for,
        with_environment,
    )

    cfg = default_config(backend=backend, limits=Limits())
    try:
        spec = with_environment({}, env).get("environment", {})
        penv = resolve(spec, workspace.resolve(), cache_root=Settings().data_dir / "envs")
    except EnvironmentError_ as exc:
        raise click.BadParameter(str(exc), param_hint="--env") from exc
    cfg = sandbox_config_for(cfg, penv, workspace.resolve())
    try:
        result = run_sandboxed(
            list(argv),
            workspace=workspace,
            artifacts_dir=art,
            config=cfg,
            timeout_s=timeout,
            network=network,
        )
    except SandboxUnavailable as exc:
        click.echo(f"oopav: sandbox unavailable: {exc}", err=True)
        sys.exit(125)
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
    else:
        if result.stdout_tail:
            click.echo(result.stdout_tail, nl=not result.stdout_tail.endswith("\n"))
        if result.stderr_tail:
            click.echo(result.stderr_tail, nl=not result.stderr_tail.endswith("\n"), err=True)
        status = "timed out" if result.timed_out else f"exit {result.exit_code}"
        if result.signal:
            status += f" (signal {result.signal})"
        click.echo(
            f"[oopav sandbox: {status}, {result.duration_ms:.0f} ms, "
            f"{result.output_bytes} bytes of output in {result.artifact}]",
            err=True,
        )
    sys.exit(result.cli_exit_code)


@click.command("apply")
@click.argument("session", required=False)
@click.option(
    "--last",
    is_flag=True,
    help="The newest session (of the repository in the current directory, if it has one).",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Dry run: report what would change and refuse on conflicts; write nothing.",
)
@click.option("--print", "print_diff", is_flag=True, help="Print the diff instead of applying it.")
@click.option(
    "--force",
    is_flag=True,
    help="Apply the result of a session that did not succeed (failed, aborted, still running).",
)
@click.pass_context
def apply_cmd(
    ctx: click.Context,
    session: str | None,
    last: bool,
    check_only: bool,
    print_diff: bool,
    force: bool,
) -> None:
    """Apply SESSION's final result to the directory it was made from.

    Only a session that succeeded is applied (its verdict passed the gates); --force applies
    another's last state. Each file the session changed must still hold what the session
    started from; otherwise nothing is written and the conflicting files are named. Files are
    read back afterwards to verify that the tree matches the session's result."""
    from oopav.config import Settings
    from oopav.sandbox.workspace import (
        WorkspaceError,
        apply_to_repo,
        find_workspace,
        last_workspace,
        session_result,
    )

    settings = getattr(ctx.obj, "settings", None) or Settings()
    if bool(session) == last:
        raise click.UsageError("give a SESSION id (or a prefix of it) or --last, not both")
    try:
        if last:
            info = last_workspace(settings, Path.cwd())
        else:
            info = find_workspace(session or "", settings)
        if print_diff:
            click.echo(session_result(info, settings).diff, nl=False)
            return
        if not force:
            _refuse_unless_succeeded(settings, info.session_id)
        report = apply_to_repo(info, check_only=check_only, settings=settings)
    except WorkspaceError as exc:
        raise click.ClickException(str(exc)) from exc
    if not report.applied and not report.already:
        click.echo(f"session {info.session_id} changed nothing")
        return
    if report.applied:
        verb = "would apply" if check_only else "applied"
        what = ", ".join(report.applied)
        done = "" if check_only else " (verified: they now match the session's result)"
        click.echo(f"{verb} {len(report.applied)} file(s) to {report.repo}: {what}{done}")
    if report.already:
        click.echo(f"already applied: {', '.join(report.already)}")


def _refuse_unless_succeeded(settings: Any, session_id: str) -> None:
    """A failed or aborted session's workspace holds whatever its last attempt left, which the
    gates rejected: applying it silently would put a change the verifier refused into the
    user's tree. The outcome is on the stream; where no stream can be reached (the handlers ran
    elsewhere and no --nats-url was given), say so and go on, as before."""
    from oopav.app import NoServer
    from oopav.bus.errors import BusError

    try:
        state = asyncio.run(_session_state(settings, session_id))
    except (NoServer, BusError, OSError) as exc:
        click.echo(
            f"warning: could not check session {session_id}'s outcome ({exc}); applying its "
            "last state",
            err=True,
        )
        return
    if state.outcome == "success":
        return
    if state.event_count == 0:
        click.echo(
            f"warning: session {session_id} is not on this server's stream (pass the --nats-url "
            "its handlers used); applying its last state without checking its outcome",
            err=True,
        )
        return
    if state.outcome is None:
        what = "has not finished yet"
    else:
        what = f"ended {state.outcome}" + (f" ({state.end_reason})" if state.end_reason else "")
    raise click.ClickException(
        f"session {session_id} {what}: its result did not pass the gates, so it is not applied. "
        f"Look at it with `oopav show {session_id}` and `oopav apply {session_id} --print`; "
        "--force applies it anyway."
    )


async def _session_state(settings: Any, session_id: str) -> Any:
    from oopav.app import open_bus
    from oopav.services import session_state

    async with open_bus(settings, setup=False, name="oopav-apply") as bus:
        return await session_state(bus, session_id)


async def _record(settings: Any, body: dict[str, Any]) -> dict[str, Any]:
    from oopav.app import open_bus
    from oopav.handlers.grants import submit_grant
    from oopav.services import resolve_session

    async with open_bus(settings, name="oopav-grant") as bus:
        body["session_id"] = await resolve_session(bus, body["session_id"])
        handler = "cli.deny" if body.get("deny") else "cli.grant"
        return await submit_grant(bus.events, body, handler=handler)


def _run_record(ctx: click.Context, body: dict[str, Any], as_json: bool) -> None:
    from oopav.app import NoServer
    from oopav.bus.errors import BusError
    from oopav.config import Settings

    settings = getattr(ctx.obj, "settings", None) or Settings()
    try:
        reply = asyncio.run(_record(settings, body))
    except (NoServer, BusError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(msgspec.json.encode(reply).decode())
    if "error" in reply:
        if not as_json:
            where = f" (field: {reply['field']})" if reply.get("field") else ""
            click.echo(f"rejected: {reply['error']}{where}", err=True)
        sys.exit(2)
    if not as_json:
        click.echo(reply["grant_id"])


@click.command("grant")
@click.argument("session")
@click.argument("scope")
@click.option("--for", "for_", metavar="DURATION", help="Expire after e.g. 60s, 5m, 1h.")
@click.option("--uses", type=int, default=None, help="Expire after this many uses.")
@click.option("--by", default=None, help="Who grants it (default: $USER).")
@click.option("--json", "as_json", is_flag=True, help="Print the reply as JSON.")
@click.pass_context
def grant_cmd(
    ctx: click.Context,
    session: str,
    scope: str,
    for_: str | None,
    uses: int | None,
    by: str | None,
    as_json: bool,
) -> None:
    """Grant SCOPE to SESSION (a permission_granted event) and print the grant id.

    SCOPE is net.any, net.http:<host>, net.http.read:<host>, git.fetch:<remote>,
    fs.write:<glob> or exec:<argv prefix>. Without --for
    or --uses the grant lasts the session. Equivalent to
    `nats req oopav.grants.submit '{"session_id": ..., "scope": ..., "uses": 1, "by": ...}'`.
    """
    import getpass

    body: dict[str, Any] = {"session_id": session, "scope": scope, "by": by or getpass.getuser()}
    if for_ is not None:
        body["for"] = for_
    if uses is not None:
        body["uses"] = uses
    _run_record(ctx, body, as_json)


@click.command("deny")
@click.argument("session")
@click.argument("scope")
@click.option("--reason", default="", help="Why (shown to the agent).")
@click.option("--by", default=None, help="Who denies it (default: $USER).")
@click.option("--json", "as_json", is_flag=True, help="Print the reply as JSON.")
@click.pass_context
def deny_cmd(
    ctx: click.Context, session: str, scope: str, reason: str, by: str | None, as_json: bool
) -> None:
    """Deny SCOPE to SESSION (a permission_denied event): withdraws its grants and refuses it."""
    import getpass

    body: dict[str, Any] = {
        "session_id": session,
        "scope": scope,
        "by": by or getpass.getuser(),
        "deny": True,
    }
    if reason:
        body["reason"] = reason
    _run_record(ctx, body, as_json)


def register(cli: click.Group) -> None:
    """Add this area's commands to the top-level group."""
    cli.add_command(sandbox_group)
    cli.add_command(apply_cmd)
    cli.add_command(grant_cmd)
    cli.add_command(deny_cmd)
