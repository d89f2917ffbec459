"""The ``oopav`` command. Subcommands live next to what they drive; this module wires them
and holds the spine's own commands (up, submit, sessions, show, replay, streams, dlq)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from oopav import __version__

T = TypeVar("T")


class Ctx:
    def __init__(self, nats_url: str | None, data_dir: Path | None, log_level: str | None) -> None:
        from oopav.config import Settings
        from oopav.logging import configure

        configure(log_level)
        kwargs: dict[str, Any] = {}
        if nats_url:
            kwargs["nats_url"] = nats_url
        if data_dir:
            kwargs["data_dir"] = data_dir
        self.settings = Settings(**kwargs)


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async command; turn the errors a user can hit into one line and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        from oopav.app import NoServer
        from oopav.bus.errors import BusError
        from oopav.bus.server import ServerError

        try:
            return asyncio.run(fn(*args, **kwargs))
        except (NoServer, BusError, ServerError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            sys.exit(130)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="oopav")
@click.option(
    "--nats-url",
    envvar="OOPAV_NATS_URL",
    metavar="URL",
    help="Use this NATS server (env OOPAV_NATS_URL). Default: the server of a running `oopav up`.",
)
@click.option(
    "--data-dir",
    envvar="OOPAV_DATA_DIR",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where oopav keeps the embedded server's store, snapshots and workspaces (env OOPAV_DATA_DIR).",
)
@click.option(
    "--log-level",
    envvar="OOPAV_LOG_LEVEL",
    default=None,
    help="DEBUG, INFO (default), WARNING, ERROR.",
)
@click.pass_context
def cli(
    ctx: click.Context, nats_url: str | None, data_dir: Path | None, log_level: str | None
) -> None:
    """oopav: an event-sourced agent kernel for code changes.

    Tasks arrive on NATS JetStream; handlers run Observe, Orient, Plan, Act, Verify; every step
    is an immutable event that projections fold back into state.

    \b
    Start here:
      oopav up                       embedded NATS + streams + handlers, in the foreground
      oopav submit --repo . "..."    submit a task (or: nats req oopav.tasks.submit '{...}')
      oopav sessions                 list sessions
      oopav show <session>           the timeline of one session
    """
    ctx.obj = Ctx(nats_url, data_dir, log_level)


pass_ctx = click.make_pass_decorator(Ctx)


def _json_out(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))


# -- up ------------------------------------------------------------------------------------


def service_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options of the long-running commands (`up`, `handler`): docs/operations.md."""
    fn = click.option(
        "--give-up-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Exit (status 1) when NATS stays unreachable this long. Default: retry forever.",
    )(fn)
    fn = click.option(
        "--concurrency",
        type=click.IntRange(1, 4096),
        default=None,
        help="Messages of different sessions each handler works on at once (default 32); "
        "one session's messages are always handled in order.",
    )(fn)
    return fn


@cli.command()
@pass_ctx
@run_async
@click.option("--model", help="Default model spec for sessions that name none (else OOPAV_MODEL).")
@service_options
async def up(
    c: Ctx, model: str | None, concurrency: int | None, give_up_after: float | None
) -> None:
    """Run oopav in the foreground: the embedded NATS server (unless --nats-url is given), the
    streams, every handler and the session projection. Ctrl-C (or SIGTERM) drains and stops,
    the embedded server included; a second Ctrl-C exits at once."""
    from oopav.app import open_bus
    from oopav.bus.consumer import install_stop_signals
    from oopav.runtime import run_handlers

    # Signals are ours from the start: a SIGTERM during start-up still stops the server.
    stop = asyncio.Event()
    remove_signals = install_stop_signals(stop.set)
    async with open_bus(
        c.settings,
        embedded=True,
        name="oopav-up",
        give_up_after=give_up_after or float("inf"),
        owns_server=True,
    ) as bus:
        click.echo(
            f"oopav {__version__} up: NATS at {bus.url}" + (" (embedded)" if bus.embedded else ""),
            err=True,
        )
        click.echo(
            f'submit with: nats --server {bus.url} req oopav.tasks.submit \'{{"instruction": "...", "repo": "/abs/path"}}\'',
            err=True,
        )
        try:
            await run_handlers(bus, stop, model=model, concurrency=concurrency, signals=False)
        finally:
            remove_signals()


# -- streams -------------------------------------------------------------------------------


@cli.group()
def streams() -> None:
    """Create or export the JetStream streams."""


@streams.command("init")
@pass_ctx
@run_async
async def streams_init(c: Ctx) -> None:
    """Create OOPAV_EVENTS, OOPAV_INTAKE and OOPAV_DLQ (idempotent; updates changed definitions)."""
    from oopav.app import open_bus
    from oopav.bus.streams import ensure_streams

    async with open_bus(c.settings, setup=False) as bus:
        for line in await ensure_streams(bus.events.js):
            click.echo(line)


@streams.command("export")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("ops/nats"),
    show_default=True,
)
def streams_export(out: Path) -> None:
    """Write the stream definitions as JSON for `nats stream add --config <file>`."""
    from oopav.bus.streams import export_definitions

    for path in export_definitions(out):
        click.echo(str(path))


# -- submit --------------------------------------------------------------------------------


def task_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options that describe a task, shared by `submit` and `run`."""
    options = [
        click.argument("instruction", required=False),
        click.option(
            "--repo",
            type=click.Path(path_type=Path, exists=True, file_okay=False),
            help="Repository to change (default: the task file's).",
        ),
        click.option(
            "--task",
            "task_file",
            type=click.Path(path_type=Path, exists=True, dir_okay=False),
            help="A JSON task file (fields as in the submission contract), e.g. "
            "examples/rename_fetch/task.json.",
        ),
        click.option("--mission", help="Mission name (groups sessions for reflection)."),
        click.option(
            "--model",
            help="Model spec, e.g. scripted:policy.yaml or openai:http://host:8000/v1#model "
            "(default: the task's, else OOPAV_MODEL).",
        ),
        click.option(
            "--test-command", help="How to run the repository's tests, e.g. 'python -m pytest -q'."
        ),
        click.option(
            "--budget",
            multiple=True,
            metavar="NAME=VALUE",
            help="Override a budget, e.g. iterations=10.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _submission(
    task_file: Path | None,
    instruction: str | None,
    repo: Path | None,
    mission: str | None,
    model: str | None,
    test_command: str | None,
    budget: tuple[str, ...],
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    base = Path.cwd()
    if task_file is not None:
        try:
            body = json.loads(task_file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise click.UsageError(f"cannot read task file {task_file}: {exc}") from None
        if not isinstance(body, dict):
            raise click.UsageError(f"task file {task_file} must hold a JSON object")
        base = task_file.resolve().parent
    if instruction:
        body["instruction"] = instruction
    if repo is not None:
        body["repo"] = str(repo)
    if "repo" in body:
        # Paths are resolved on the intake host; make a local relative path absolute here.
        body["repo"] = str((base / Path(body["repo"]).expanduser()).resolve())
    if mission:
        body["mission"] = mission
    if model:
        body["model"] = model
        base_for_model = Path.cwd()
    else:
        base_for_model = base
    spec = body.get("model")
    if isinstance(spec, str) and spec.startswith("scripted:"):
        # A script path is read by the handlers: make it absolute like the repo.
        body["model"] = "scripted:" + str(
            (base_for_model / Path(spec.removeprefix("scripted:")).expanduser()).resolve()
        )
    if test_command:
        body["test_command"] = test_command
    for item in budget:
        key, _, value = item.partition("=")
        if not value:
            raise click.UsageError(f"--budget takes NAME=VALUE, got {item!r}")
        body.setdefault("budgets", {})[key] = float(value) if "." in value else int(value)
    if "instruction" not in body:
        raise click.UsageError("give an INSTRUCTION or --task FILE")
    return body


@cli.command()
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
    wait: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Submit a task to the intake handler and print the session id it created.

    Equivalent to `nats req oopav.tasks.submit '<json>'`."""
    from oopav.app import open_bus
    from oopav.runtime import submit_task, wait_session

    body = _submission(task_file, instruction, repo, mission, model, test_command, budget)
    async with open_bus(c.settings, name="oopav-submit") as bus:
        reply = await submit_task(bus, body)
        if "error" in reply:
            if as_json:
                _json_out(reply)
            else:
                click.echo(
                    f"rejected: {reply['error']}"
                    + (f" (field: {reply['field']})" if reply.get("field") else ""),
                    err=True,
                )
            sys.exit(2)
        if not wait:
            _json_out(reply) if as_json else click.echo(reply["session_id"])
            return
        state = await wait_session(bus, reply["session_id"], timeout)
        _print_outcome(state, as_json)
        sys.exit(0 if state.outcome == "success" else 1)


def _print_outcome(state: Any, as_json: bool) -> None:
    from oopav.runtime import outcome_dict

    out = outcome_dict(state)
    if as_json:
        _json_out(out)
        return
    click.echo(f"session {out['session_id']}: {out['outcome']} ({out['phase']})")
    if out.get("summary"):
        click.echo(f"summary: {out['summary']}")
    if out.get("diff"):
        click.echo(out["diff"].rstrip())


# -- sessions / show / replay --------------------------------------------------------------


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", type=int, default=50, show_default=True)
@pass_ctx
@run_async
async def sessions(c: Ctx, as_json: bool, limit: int) -> None:
    """List sessions, newest first, from the session projection."""
    from oopav.app import open_bus
    from oopav.runtime import list_sessions

    async with open_bus(c.settings, name="oopav-sessions") as bus:
        rows = await list_sessions(bus, limit)
    if as_json:
        _json_out(rows)
        return
    if not rows:
        click.echo("no sessions yet")
        return
    click.echo(f"{'SESSION':36}  {'PHASE':10}  {'OUTCOME':8}  {'EVENTS':>6}  INSTRUCTION")
    for r in rows:
        click.echo(
            f"{r['session_id']:36}  {r['phase']:10}  {r['outcome'] or '-':8}  {r['events']:>6}  {r['instruction'][:60]}"
        )


@cli.command()
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON.")
@pass_ctx
@run_async
async def show(c: Ctx, session: str, as_json: bool) -> None:
    """Show the timeline of one session's events."""
    import msgspec

    from oopav.app import open_bus
    from oopav.bus.store import Undecodable
    from oopav.runtime import describe_event, resolve_session

    async with open_bus(c.settings, name="oopav-show") as bus:
        sid = await resolve_session(bus, session)
        events = await bus.events.read_with_undecodable("session", sid)
    if not events:
        raise click.ClickException(f"no events for session {session}")
    if as_json:
        _json_out(
            [
                {"seq": seq, "type": e.type, "reason": e.reason, "detail": e.detail}
                if isinstance(e, Undecodable)
                else {"seq": seq, **msgspec.to_builtins(e), "type": e.type}
                for seq, e in events
            ]
        )
        return
    click.echo(f"session {sid}: {len(events)} events")
    t0 = next((e.ts for _, e in events if not isinstance(e, Undecodable)), None)
    for seq, e in events:
        if isinstance(e, Undecodable):
            # Garbage on the session's subjects: shown where it sits, never a traceback.
            click.echo(
                f"{seq:>7}  {'':10} {'(undecodable)':24} {'-':18} {e.reason}: {e.detail[:90]}"
            )
            continue
        dt = (e.ts - t0).total_seconds() if t0 is not None else 0.0
        click.echo(f"{seq:>7}  +{dt:8.3f}s  {e.type:24} {e.actor:18} {describe_event(e)}")


@cli.command()
@click.argument("session")
@click.option(
    "--verify",
    is_flag=True,
    help="Re-run the handlers on a fresh temporary stream, serving recorded model answers and "
    "sandbox results, and check they reproduce the recorded events (volatile fields excluded); "
    "also rebuild the projection from scratch and compare it with the stored snapshot.",
)
@click.option(
    "--fork-at",
    type=int,
    metavar="SEQ",
    help="Replay up to this stream sequence, then continue live as a new session.",
)
@click.option("--model", help="With --fork-at: the model to continue with (default: the parent's).")
@click.option(
    "--timeout",
    type=float,
    default=900.0,
    show_default=True,
    help="With --fork-at: seconds to wait.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
@run_async
async def replay(
    c: Ctx,
    session: str,
    verify: bool,
    fork_at: int | None,
    model: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Re-fold a session from the stream and print its state; check that it replays
    deterministically (--verify); or fork it from a step (--fork-at SEQ [--model SPEC])."""
    from oopav.app import open_bus
    from oopav.runtime import replay_projection, resolve_session

    if fork_at is not None:
        await _fork(c, session, fork_at, model, timeout, as_json)
        return
    async with open_bus(c.settings, name="oopav-replay") as bus:
        sid = await resolve_session(bus, session)
        report = await replay_projection(bus, sid, verify=verify)
        recorded = await bus.events.read("session", sid, skip_undecodable=True) if verify else []
        url = bus.url
    handlers_report = None
    if verify:
        from oopav.replay import verify_session

        handlers_report = await verify_session(url, sid, recorded=recorded)
        report["handlers"] = handlers_report.to_dict()
    if as_json:
        _json_out(report)
    elif not verify:
        click.echo(json.dumps(report["state"], indent=2, default=str))
    else:
        if report["matches"]:
            click.echo(
                f"projection: OK, a rebuild equals the stored snapshot ({report['events']} events)"
            )
        else:
            click.echo(f"projection: MISMATCH in {', '.join(report['differences'][:10])}", err=True)
        assert handlers_report is not None
        click.echo(f"handlers: {handlers_report.describe()}")
    if verify and (
        not report["matches"] or (handlers_report is not None and not handlers_report.ok)
    ):
        sys.exit(1)


async def _fork(
    c: Ctx, session: str, fork_at: int, model: str | None, timeout: float, as_json: bool
) -> None:
    from oopav.app import open_bus
    from oopav.handlers.registry import LOOP_HANDLERS
    from oopav.replay import fork_session
    from oopav.runtime import resolve_session, run_handlers, wait_session

    async with open_bus(c.settings, embedded=True, name="oopav-fork") as bus:
        sid = await resolve_session(bus, session)
        stop = asyncio.Event()
        handlers = asyncio.create_task(run_handlers(bus, stop, names=LOOP_HANDLERS))
        try:
            try:
                child = await fork_session(bus, sid, fork_at, model)
            except ValueError as exc:
                raise click.ClickException(str(exc)) from None
            click.echo(f"fork {child} of {sid} at sequence {fork_at}", err=True)
            state = await wait_session(bus, child, timeout)
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 15)
    _print_outcome(state, as_json)
    sys.exit(0 if state.outcome == "success" else 1)


# -- run / handler -------------------------------------------------------------------------


@cli.command()
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
    timeout: float,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run one task end to end: the embedded NATS server (unless --nats-url), every handler in
    this process, the task; shows progress and prints the outcome and the diff.

    \b
    oopav run --task examples/rename_fetch/task.json
    oopav run --repo ~/src/app --model openai:http://localhost:8000/v1#qwen "Rename foo to bar"
    """
    from oopav.app import open_bus
    from oopav.bus.consumer import install_stop_signals
    from oopav.runtime import (
        abort_interrupted,
        describe_event,
        run_handlers,
        submit_task,
        wait_session,
    )

    body = _submission(task_file, instruction, repo, mission, model, test_command, budget)
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
        progress = None
        try:
            reply = await submit_task(bus, body)
            if "error" in reply:
                click.echo(
                    f"rejected: {reply['error']}"
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
            waiting = asyncio.create_task(wait_session(bus, sid, timeout))
            stopped = asyncio.create_task(interrupted.wait())
            await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not waiting.done():
                waiting.cancel()
                with contextlib.suppress(BaseException):
                    await waiting
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
                exit_code = 0 if state.outcome == "success" else 1
        finally:
            if progress is not None:
                with contextlib.suppress(Exception):
                    await progress.unsubscribe()
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 15)
            remove_signals()
        _print_outcome(state, as_json)
        sys.exit(exit_code)


@cli.command()
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
    from oopav.runtime import resolve_session, resume_point

    async with open_bus(c.settings, embedded=True, name="oopav-resume") as bus:
        sid = await resolve_session(bus, session)
        try:
            at = await resume_point(bus, sid)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    await _fork(c, sid, at, model, timeout, as_json)


@cli.command("handler")
@click.argument(
    "name",
    type=click.Choice(["intake", "grants", "observer", "orient", "planner", "actor", "verifier"]),
)
@click.option(
    "--model", help="Default model spec for sessions that name none (planner, actor, verifier)."
)
@service_options
@pass_ctx
@run_async
async def handler_cmd(
    c: Ctx, name: str, model: str | None, concurrency: int | None, give_up_after: float | None
) -> None:
    """Run one handler as its own process. Several processes of one handler share its durable
    consumer, which is how a handler scales out. It survives NATS outages (reconnects and
    resumes); Ctrl-C drains and stops."""
    from oopav.app import open_bus
    from oopav.bus.consumer import install_stop_signals
    from oopav.runtime import run_handlers

    stop = asyncio.Event()
    remove_signals = install_stop_signals(stop.set)
    async with open_bus(
        c.settings, name=f"oopav-{name}", give_up_after=give_up_after or float("inf")
    ) as bus:
        click.echo(f"handler {name}: NATS at {bus.url}", err=True)
        try:
            await run_handlers(
                bus,
                stop,
                names=(name,),
                model=model,
                projection=False,
                concurrency=concurrency,
                signals=False,
            )
        finally:
            remove_signals()


# -- dlq -----------------------------------------------------------------------------------


@cli.command()
@click.option("--handler", help="Only this handler's dead letters.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", type=int, default=100, show_default=True)
@pass_ctx
@run_async
async def dlq(c: Ctx, handler: str | None, as_json: bool, limit: int) -> None:
    """List dead letters: messages a handler could not decode or process, with the reason."""
    from oopav.app import open_bus
    from oopav.runtime import read_dlq

    async with open_bus(c.settings, name="oopav-dlq") as bus:
        rows = await read_dlq(bus, handler, limit)
    if as_json:
        _json_out(rows)
        return
    if not rows:
        click.echo("no dead letters")
        return
    for r in rows:
        click.echo(
            f"{r['seq']:>6}  {r['handler']:10} {r['reason']:20} {r['subject']}  {r['detail'][:80]}"
        )


# -- events --------------------------------------------------------------------------------


@cli.group()
def events() -> None:
    """The event catalog."""


@events.command("docs")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("docs/events.md"),
    show_default=True,
)
@click.option("--check", is_flag=True, help="Exit 1 if the file is stale instead of writing it.")
def events_docs(out: Path, check: bool) -> None:
    """Generate docs/events.md from the catalog."""
    from oopav.events.docs import render

    text = render()
    if check:
        if not out.exists() or out.read_text() != text:
            raise click.ClickException(f"{out} is stale: run `oopav events docs`")
        click.echo(f"{out} is up to date")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    click.echo(str(out))


def _register() -> None:
    # Each area owns its commands; keep imports here cheap (no torch, no vllm).
    from oopav.models.commands import register as register_models
    from oopav.sandbox.commands import register as register_sandbox
    from oopav.tui.commands import register as register_tui

    register_sandbox(cli)
    register_models(cli)
    register_tui(cli)


_register()


def main() -> None:
    cli(prog_name="oopav")


if __name__ == "__main__":
    main()
