"""Commands that start work: ``oopav submit``, ``oopav run``, ``oopav resume``."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oopav.cli.common import (
    _environment,
    _exit_status,
    _fork,
    _print_outcome,
    _submission,
    task_options,
)
from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async

if TYPE_CHECKING:
    from oopav.projections.session import SessionState


# Answers that are not a rejection: stored and not yet answered, the connection lost, or
# nothing on the server to take it (exit 1, not 2: the task itself was not refused).
UNANSWERED = {"queued": "queued", "disconnected": "unanswered", "no_intake": "unanswered"}


def _refusal_word(reply: dict[str, Any]) -> str:
    return UNANSWERED.get(str(reply.get("code")), "rejected")


# The intake consumer's ack_wait (ConsumerOptions: 30 s) and a margin.
RUN_SUBMIT_TIMEOUT_S = 45.0


@click.command()
@task_options
@click.option(
    "--wait/--no-wait",
    default=False,
    help="Wait for the session to complete and print its outcome.",
)
@click.option(
    "--timeout", type=float, default=600.0, show_default=True, help="With --wait: seconds to wait."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--fresh-baseline",
    is_flag=True,
    help="Measure the baseline even when this tree, environment and test command were "
    "measured before (policy fresh_baseline; default: reuse it, `baseline_reused`).",
)
@pass_ctx
@run_async
async def submit(
    c: Ctx,
    instruction: str | None,
    repo: Path | None,
    task_file: Path | None,
    mission: str | None,
    model: str | None,
    test_command: str | None,
    budget: tuple[str, ...],
    env: str | None,
    env_var: tuple[str, ...],
    wait: bool,
    timeout: float,
    as_json: bool,
    fresh_baseline: bool,
) -> None:
    """Submit a task to the intake handler and print the session id it created.

    Equivalent to `nats req oopav.tasks.submit '<json>'`."""
    from oopav.app import open_bus
    from oopav.services import submit_task, wait_session

    body = _submission(task_file, instruction, repo, mission, model, test_command, budget)
    body = _environment(body, env, env_var, task_file)
    if fresh_baseline:
        body.setdefault("policy", {})["fresh_baseline"] = True
    async with open_bus(c.settings, name="oopav-submit") as bus:
        reply = await submit_task(bus, body)
        if "error" in reply:
            queued = reply.get("code") in UNANSWERED
            if as_json:
                _json_out(reply)
            else:
                click.echo(
                    f"{_refusal_word(reply)}: {reply['error']}"
                    + (f" (field: {reply['field']})" if reply.get("field") else ""),
                    err=True,
                )
            sys.exit(1 if queued else 2)
        if not wait:
            _json_out(reply) if as_json else click.echo(reply["session_id"])
            return
        state = await wait_session(bus, reply["session_id"], timeout)
        _print_outcome(state, as_json)
        sys.exit(_exit_status(state.outcome))


@click.command()
@task_options
@click.option(
    "--timeout",
    type=float,
    default=900.0,
    show_default=True,
    help="Seconds to wait for the session.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print {session_id, outcome, diff, ...} as JSON."
)
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the session's worktree and oopav/<id> branch after it completes (default: "
    "removed; `oopav apply` still works from the kept result).",
)
@click.option(
    "--allow",
    multiple=True,
    metavar="SCOPE",
    help="Allow a capability up front, e.g. 'exec:make test' (for runs without a terminal).",
)
@click.option(
    "--fresh-baseline",
    is_flag=True,
    help="Measure the baseline even when this tree, environment and test command were "
    "measured before (policy fresh_baseline; default: reuse it, `baseline_reused`).",
)
@pass_ctx
@run_async
async def run(
    c: Ctx,
    instruction: str | None,
    repo: Path | None,
    task_file: Path | None,
    model: str | None,
    test_command: str | None,
    mission: str | None,
    budget: tuple[str, ...],
    env: str | None,
    env_var: tuple[str, ...],
    allow: tuple[str, ...],
    timeout: float,
    as_json: bool,
    quiet: bool,
    keep: bool,
    fresh_baseline: bool,
) -> None:
    """Run one task end to end: the embedded NATS server (unless --nats-url), every handler in
    this process, the task; shows progress and prints the outcome and the diff.

    \b
    oopav run --task examples/rename_fetch/task.json
    oopav run --repo ~/src/app --model openai:http://localhost:8000/v1#qwen "Rename foo to bar"
    """
    from oopav.app import open_bus
    from oopav.bus.consumer import install_stop_signals
    from oopav.services import (
        abort_interrupted,
        describe_event,
        run_handlers,
        submit_task,
        wait_session,
    )

    body = _submission(task_file, instruction, repo, mission, model, test_command, budget)
    body = _environment(body, env, env_var, task_file)
    if fresh_baseline:
        body.setdefault("policy", {})["fresh_baseline"] = True
    if allow:
        policy = body.setdefault("policy", {})
        policy["allow"] = [*policy.get("allow", []), *allow]
    model = body.get("model") if model else None
    log_file = c.log_to_file("run")
    if log_file is not None and not quiet:
        click.echo(f"log: {log_file}", err=True)
    if body.get("examples") and not (body.get("model") or c.settings.model) and not as_json:
        click.echo("model: synth: (the task has examples and no model is configured)", err=True)
    async with open_bus(c.settings, embedded=True, name="oopav-run") as bus:
        stop = asyncio.Event()
        ready = asyncio.Event()
        interrupted = asyncio.Event()
        # One Ctrl-C / SIGTERM: abort this run's session (reason: interrupted), drain, stop
        # the embedded server; a second exits at once.
        remove_signals = install_stop_signals(interrupted.set)
        handlers = asyncio.create_task(
            run_handlers(bus, stop, model=model, ready=ready, signals=False)
        )
        await asyncio.wait(
            {handlers, asyncio.create_task(ready.wait())}, return_when=asyncio.FIRST_COMPLETED
        )
        if handlers.done():
            handlers.result()  # set-up failed: raise its error
        progress = asking = None
        try:
            # This process runs an intake, so an outcome always comes: wait past the durable
            # consumer's ack_wait, the longest a stored copy held by a killed process waits
            # before it is redelivered here (a "queued" exit would leave a session nobody runs).
            submitting = asyncio.create_task(submit_task(bus, body, timeout=RUN_SUBMIT_TIMEOUT_S))
            stopped = asyncio.create_task(interrupted.wait())
            await asyncio.wait({submitting, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not submitting.done():  # Ctrl-C before any answer: say where the task is
                submitting.cancel()
                with contextlib.suppress(BaseException):
                    await submitting
                click.echo(
                    "interrupted before the intake answered: the submission is stored in "
                    "OOPAV_INTAKE and becomes a session when an intake runs (see `oopav "
                    "sessions`); do not submit it again",
                    err=True,
                )
                sys.exit(130)
            reply = submitting.result()
            if "error" in reply:
                click.echo(
                    f"{_refusal_word(reply)}: {reply['error']}"
                    + (f" (field: {reply['field']})" if reply.get("field") else ""),
                    err=True,
                )
                sys.exit(2)
            sid = reply["session_id"]
            if not quiet and not as_json:
                click.echo(f"session {sid}", err=True)
                from oopav.events.codec import decode as decode_event

                async def show(msg: Any) -> None:
                    try:
                        e = decode_event(msg.data)
                    except Exception:
                        return
                    click.echo(f"  {e.type:24} {describe_event(e)}", err=True)

                progress = await bus.nc.subscribe(f"oopav.ev.session.{sid}.>", cb=show)
            from oopav.cli.asks import PermissionAsks

            if sys.stdin.isatty() and not as_json:
                from oopav.cli.decision import ask_inline

                asking = await ask_inline(bus, sid)  # questions to a person, asked right here
            asks = PermissionAsks(bus, sid, interactive=sys.stdin.isatty() and not as_json)
            await asks.start()
            waiting = asyncio.create_task(asks.race(wait_session(bus, sid, timeout)))
            stopped = asyncio.create_task(interrupted.wait())
            await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            state: SessionState | None
            if not waiting.done():
                waiting.cancel()
                with contextlib.suppress(BaseException):
                    await waiting
                await asks.stop()
                state = await abort_interrupted(bus, sid)
                from oopav.bus.server import kill_child_groups

                # The session is over: its running sandboxed commands need not finish.
                kill_child_groups()
                click.echo(
                    f"interrupted: session {sid} ended as aborted; "
                    f"`oopav resume {sid[:13]}` continues it",
                    err=True,
                )
                exit_code = 130
            else:
                state = waiting.result()
                await asks.stop()
                if state is None:
                    click.echo(f"error: {asks.failed}", err=True)
                    sys.exit(3)
                exit_code = _exit_status(state.outcome)
        finally:
            if asking is not None:
                await asking.unsubscribe()
            if progress is not None:
                with contextlib.suppress(Exception):
                    await progress.unsubscribe()
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 15)
            remove_signals()
        if keep:
            from oopav.sandbox.workspace import keep_workspace

            keep_workspace(c.settings, sid)
        elif state.phase in ("completed", "rejected"):
            _remove_workspace(c, sid, quiet or as_json, state.outcome)
        _print_outcome(state, as_json)
        sys.exit(exit_code)


def _remove_workspace(c: Ctx, session_id: str, quiet: bool, outcome: str | None = None) -> None:
    """Remove a finished session's worktree and branch (its result is kept for `apply`)."""
    from oopav.sandbox.workspace import WorkspaceError, find_workspace, remove_workspace

    try:
        info = find_workspace(session_id, c.settings)
    except WorkspaceError:
        return  # the handlers ran elsewhere (--nats-url): their host keeps the workspace
    try:
        remove_workspace(info, c.settings)
    except (WorkspaceError, OSError) as exc:
        click.echo(f"warning: could not remove the workspace {info.path}: {exc}", err=True)
        return
    if not quiet:
        # Only a result that passed its gates is worth applying; a failed or aborted session's
        # hint pointed at `apply`, which then said it changed nothing.
        hint = (
            f"; `oopav apply {session_id[:13]}` applies the result"
            if outcome in ("success", "success_unverified")
            else ""
        )
        click.echo(f"workspace removed (--keep keeps it){hint}", err=True)


@click.command()
@click.argument("session")
@click.option("--model", help="The model to continue with (default: the session's).")
@click.option("--timeout", type=float, default=900.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
@run_async
async def resume(c: Ctx, session: str, model: str | None, timeout: float, as_json: bool) -> None:
    """Continue a session that `oopav run` left interrupted (or that lost its process): a
    child session replays its recorded answers up to the interruption and goes on live."""
    from oopav.app import open_bus
    from oopav.services import resolve_session, resume_point

    # Like `oopav run`: the timeline on the terminal, the handlers' log lines in a file.
    log_file = c.log_to_file("resume")
    if log_file is not None and not as_json:
        click.echo(f"log: {log_file}", err=True)
    async with open_bus(c.settings, embedded=True, name="oopav-resume") as bus:
        sid = await resolve_session(bus, session)
        try:
            at = await resume_point(bus, sid)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    await _fork(c, sid, at, model, timeout, as_json)


def register(cli: click.Group) -> None:
    cli.add_command(submit)
    cli.add_command(run)
    cli.add_command(resume)
