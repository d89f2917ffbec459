"""The ``oopav`` command. Subcommands live next to what they drive; this module wires them
and holds the spine's own commands (up, submit, sessions, show, replay, streams, dlq)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from oopav import __version__
from oopav.clikit import run_async

T = TypeVar("T")


# Options of the top-level group that may also be written after the subcommand
# (`oopav sessions --data-dir D`); the value says whether the option takes one.
GLOBAL_OPTIONS: dict[str, bool] = {
    "--nats-url": True,
    "--data-dir": True,
    "--log-level": True,
    "--verbose": False,
    "-v": False,
}
# Commands whose trailing arguments are another program's argv, and their options that take a
# value: hoisting stops at the first argument of that argv.
PASSTHROUGH: dict[tuple[str, ...], frozenset[str]] = {
    ("sandbox", "exec"): frozenset(
        {"--workspace", "--grant", "--timeout", "--artifacts", "--backend"}
    ),
}


def hoist_global_options(args: list[str]) -> list[str]:
    """Move global options found anywhere before a `--` (or a passed-on argv) to the front,
    where click expects them, so every command accepts them in either place."""
    front: list[str] = []
    rest: list[str] = []
    words: list[str] = []  # the non-option words so far: the command path
    valued: frozenset[str] | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if arg == "--" or (
            valued is not None and not arg.startswith("-") and rest and rest[-1] not in valued
        ):
            rest.extend(args[i:])
            break
        if name in GLOBAL_OPTIONS:
            front.append(arg)
            if GLOBAL_OPTIONS[name] and "=" not in arg and i + 1 < len(args):
                front.append(args[i + 1])
                i += 1
        else:
            rest.append(arg)
            if not arg.startswith("-") and valued is None:
                words.append(arg)
                valued = PASSTHROUGH.get(tuple(words[-2:]))
        i += 1
    return front + rest


class OopavGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_global_options(list(args))
        return super().parse_args(ctx, args)


class Ctx:
    def __init__(
        self,
        nats_url: str | None,
        data_dir: Path | None,
        log_level: str | None,
        verbose: bool = False,
    ) -> None:
        from oopav.config import Settings
        from oopav.logging import configure

        self.log_level = log_level
        self.verbose = verbose
        configure(log_level)
        kwargs: dict[str, Any] = {}
        if nats_url:
            kwargs["nats_url"] = nats_url
        if data_dir:
            kwargs["data_dir"] = data_dir.expanduser().resolve()
        self.settings = Settings(**kwargs)

    def environment(self) -> dict[str, str]:
        """The global options as OOPAV_* variables: code that builds its own ``Settings()``
        (sandbox, replay, model backends) sees the same choices as the command."""
        env = {"OOPAV_DATA_DIR": str(self.settings.data_dir)}
        if self.settings.nats_url:
            env["OOPAV_NATS_URL"] = self.settings.nats_url
        if self.log_level:
            env["OOPAV_LOG_LEVEL"] = self.log_level
        return env

    def log_to_file(self, command: str) -> Path | None:
        """Send log lines to a file under the data directory (stderr keeps warnings and
        errors, everything with -v); returns the file, or None with -v."""
        import datetime

        from oopav.logging import configure

        if self.verbose:
            configure(self.log_level)
            return None
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = self.settings.data_dir / "logs" / f"{command}-{stamp}-{os.getpid()}.log"
        configure(self.log_level, log_file=path, stderr_level="WARNING")
        return path


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Any:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@click.group(
    cls=OopavGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
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
    help="DEBUG, INFO (default), WARNING, ERROR (env OOPAV_LOG_LEVEL).",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show log lines on stderr (`oopav run` otherwise writes them to a log file).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    nats_url: str | None,
    data_dir: Path | None,
    log_level: str | None,
    verbose: bool,
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
      oopav doctor                   check that the tools oopav needs are in place

    Global options (--nats-url, --data-dir, --log-level, -v) go before or after the command.
    """
    ctx.obj = Ctx(nats_url, data_dir, log_level, verbose)
    ctx.with_resource(_environ(ctx.obj.environment()))


pass_ctx = click.make_pass_decorator(Ctx)


def _json_out(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))


# -- up ------------------------------------------------------------------------------------


def _reflector_options(fn: Any) -> Any:
    fn = click.option(
        "--reflector-config",
        envvar="OOPAV_REFLECTOR_CONFIG",
        type=click.Path(path_type=Path, dir_okay=False, exists=True),
        help="Reflector settings, YAML (docs/reflection.md; env OOPAV_REFLECTOR_CONFIG).",
    )(fn)
    return click.option(
        "--critic-model",
        envvar="OOPAV_CRITIC_MODEL",
        help="Model spec of the reflector's critic and consolidator (else the default model).",
    )(fn)


def _reflector_config(path: Path | None, critic_model: str | None) -> Any:
    from oopav.handlers.reflector import ReflectorConfig

    try:
        return ReflectorConfig.load(path, critic_model=critic_model)
    except ValueError as exc:
        raise click.ClickException(f"reflector config: {exc}") from None


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
@click.option(
    "--keep",
    is_flag=True,
    help="Keep each session's worktree and oopav/<id> branch after it completes (default: "
    "removed; `oopav apply` still works from the kept result).",
)
@click.option(
    "--metrics-port",
    type=int,
    envvar="OOPAV_METRICS_PORT",
    help="Serve Prometheus metrics on 127.0.0.1:PORT/metrics (docs/operations.md).",
)
@_reflector_options
@service_options
async def up(
    c: Ctx,
    model: str | None,
    keep: bool,
    metrics_port: int | None,
    critic_model: str | None,
    reflector_config: Path | None,
    concurrency: int | None,
    give_up_after: float | None,
) -> None:
    """Run oopav in the foreground: the embedded NATS server (unless --nats-url is given), the
    streams, every handler and the session projection. Ctrl-C (or SIGTERM) drains and stops,
    the embedded server included; a second Ctrl-C exits at once."""
    if metrics_port:
        from oopav.metrics import serve

        serve(metrics_port)
    from oopav.app import open_bus
    from oopav.bus.consumer import install_stop_signals
    from oopav.services import run_handlers

    model = cli_model_spec(model)
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
            await run_handlers(
                bus,
                stop,
                model=model,
                concurrency=concurrency,
                signals=False,
                cleanup=not keep,
                reflector_config=_reflector_config(reflector_config, critic_model),
            )
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
        click.option(
            "--env",
            "env",
            metavar="PATH|uv",
            help="The project's environment: a venv or interpreter path, or 'uv' to build one "
            "(default: the repo's .venv/venv, else $VIRTUAL_ENV; docs/sandbox.md).",
        ),
        click.option(
            "--env-var",
            multiple=True,
            metavar="NAME=VALUE",
            help="An extra variable for the project's commands.",
        ),
        *_decision_options(),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def cli_model_spec(
    spec: str | None, base: Path | None = None, *, param: str = "--model"
) -> str | None:
    """A model spec given on the command line: relative paths made absolute against the
    caller's directory (the handlers may run elsewhere), and checked offline, so a bad spec
    is a usage error here instead of an aborted session later."""
    from oopav.models.registry import absolute_spec, check_spec

    if spec is None:
        return None
    spec = absolute_spec(spec, base)
    problem = check_spec(spec)
    if problem is not None:
        raise click.BadParameter(problem, param_hint=param)
    return spec


def _decision_options() -> list[Callable[..., Any]]:
    from oopav.handlers.commands import decision_options

    return decision_options()


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
    if (
        task_file is None
        and instruction
        and instruction.endswith(".json")
        and " " not in instruction
    ):
        if Path(instruction).is_file():
            # `oopav submit examples/rename_fetch/task.json`: a task file, not an instruction.
            task_file, instruction = Path(instruction), None
        else:
            raise click.UsageError(f"task file {instruction} does not exist")
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
    if isinstance(spec, str):
        # A script or model path is read by the handlers: make it absolute like the repo.
        where = "--model" if model else f"model (in {task_file})"
        body["model"] = cli_model_spec(spec, base_for_model, param=where)
    if test_command:
        body["test_command"] = test_command
    for item in budget:
        key, _, value = item.partition("=")
        if not value:
            raise click.UsageError(f"--budget takes NAME=VALUE, got {item!r}")
        body.setdefault("budgets", {})[key] = float(value) if "." in value else int(value)
    if "instruction" not in body:
        raise click.UsageError("give an INSTRUCTION or --task FILE")
    from oopav.handlers.commands import apply_decision_options

    return apply_decision_options(body)


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
    env: str | None,
    env_var: tuple[str, ...],
    wait: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Submit a task to the intake handler and print the session id it created.

    Equivalent to `nats req oopav.tasks.submit '<json>'`."""
    from oopav.app import open_bus
    from oopav.services import submit_task, wait_session

    body = _submission(task_file, instruction, repo, mission, model, test_command, budget)
    body = _environment(body, env, env_var, task_file)
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
        sys.exit(_exit_status(state.outcome))


def _exit_status(outcome: str | None) -> int:
    from oopav.handlers.commands import exit_status

    return exit_status(outcome)


def _print_outcome(state: Any, as_json: bool) -> None:
    from oopav.display import is_success
    from oopav.services import outcome_dict

    out = outcome_dict(state)
    out["ok"] = is_success(out.get("outcome"))
    if as_json:
        _json_out(out)
        return
    outcome = out["outcome"] or "not finished"
    click.echo(f"session {out['session_id']}: {outcome} ({out['phase']})")
    if out["outcome"] and not out["ok"] and out["outcome"].startswith("success"):
        click.echo(f"note: {outcome} is not a verified success; exit status 1")
    if out.get("summary"):
        click.echo(f"summary: {out['summary']}")
    if out.get("diff"):
        click.echo(out["diff"].rstrip())


# -- sessions / show / replay --------------------------------------------------------------


def _environment(
    body: dict[str, Any], env: str | None, env_var: tuple[str, ...], task_file: Path | None
) -> dict[str, Any]:
    from oopav.sandbox.environment import EnvironmentError_, with_environment

    base = task_file.resolve().parent if task_file is not None else None
    try:
        return with_environment(body, env, env_var, base=base)
    except EnvironmentError_ as exc:
        raise click.UsageError(str(exc)) from None


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--rejected", is_flag=True, help="List rejected submissions (task_rejected) instead.")
@pass_ctx
@run_async
async def sessions(c: Ctx, as_json: bool, limit: int, rejected: bool) -> None:
    """List sessions, newest first, from the session projection."""
    from oopav.app import open_bus
    from oopav.services import list_sessions

    async with open_bus(c.settings, name="oopav-sessions") as bus:
        rows = await list_sessions(bus, 1_000_000)
    # A rejected submission never became a session: it is listed only on request.
    rows = [r for r in rows if (r["phase"] == "rejected") == rejected][:limit]
    if as_json:
        _json_out(rows)
        return
    if not rows:
        click.echo("no rejected submissions" if rejected else "no sessions yet")
        return
    phase_w = max(len("PHASE"), *(len(r["phase"]) for r in rows))
    outcome_w = max(len("OUTCOME"), *(len(r["outcome"] or "-") for r in rows))
    click.echo(
        f"{'SESSION':36}  {'PHASE':{phase_w}}  {'OUTCOME':{outcome_w}}  {'EVENTS':>6}  INSTRUCTION"
    )
    for r in rows:
        click.echo(
            f"{r['session_id']:36}  {r['phase']:{phase_w}}  {r['outcome'] or '-':{outcome_w}}  "
            f"{r['events']:>6}  {r['instruction'][:60]}"
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
    from oopav.services import describe_event, resolve_session

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
    from oopav.events.chain import check_chain

    for finding in check_chain([(s, e) for s, e in events if not isinstance(e, Undecodable)]):
        click.echo(f"WARNING: {finding.describe()}")  # tamper evidence (docs/operations.md)
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
    from oopav.services import replay_projection, resolve_session

    if model is not None and fork_at is None:
        raise click.UsageError("--model goes with --fork-at")
    if verify or fork_at is not None:
        # Handlers run in this process: their log lines go to a file, not between the report.
        log_file = c.log_to_file("replay")
        if log_file is not None:
            click.echo(f"log: {log_file}", err=True)
    if fork_at is not None:
        await _fork(c, session, fork_at, cli_model_spec(model), timeout, as_json)
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
    from oopav.services import resolve_session, run_handlers, wait_session

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
    sys.exit(_exit_status(state.outcome))


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
            from oopav.sandbox.asks import PermissionAsks

            if sys.stdin.isatty() and not as_json:
                from oopav.handlers.commands import ask_inline

                asking = await ask_inline(bus, sid)  # questions to a person, asked right here
            asks = PermissionAsks(bus, sid, interactive=sys.stdin.isatty() and not as_json)
            await asks.start()
            waiting = asyncio.create_task(asks.race(wait_session(bus, sid, timeout)))
            stopped = asyncio.create_task(interrupted.wait())
            await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
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
            _remove_workspace(c, sid, quiet or as_json)
        _print_outcome(state, as_json)
        sys.exit(exit_code)


def _remove_workspace(c: Ctx, session_id: str, quiet: bool) -> None:
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
        click.echo(
            f"workspace removed (--keep keeps it); `oopav apply {session_id[:13]}` applies the result",
            err=True,
        )


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
    from oopav.services import resolve_session, resume_point

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
    type=click.Choice(
        [
            "intake",
            "grants",
            "observer",
            "orient",
            "planner",
            "actor",
            "verifier",
            "reflector",
            "learner",
        ]
    ),
)
@click.option(
    "--model", help="Default model spec for sessions that name none (planner, actor, verifier)."
)
@click.option(
    "--metrics-port",
    type=int,
    envvar="OOPAV_METRICS_PORT",
    help="Serve Prometheus metrics on 127.0.0.1:PORT/metrics (docs/operations.md).",
)
@_reflector_options
@service_options
@pass_ctx
@run_async
async def handler_cmd(
    c: Ctx,
    name: str,
    model: str | None,
    metrics_port: int | None,
    critic_model: str | None,
    reflector_config: Path | None,
    concurrency: int | None,
    give_up_after: float | None,
) -> None:
    """Run one handler as its own process. Several processes of one handler share its durable
    consumer, which is how a handler scales out. It survives NATS outages (reconnects and
    resumes); Ctrl-C drains and stops."""
    if metrics_port:
        from oopav.metrics import serve

        serve(metrics_port)
    from oopav.app import open_bus
    from oopav.bus.consumer import install_stop_signals
    from oopav.handlers.accounts import check_credential
    from oopav.services import run_handlers

    model = cli_model_spec(model)
    problem = check_credential([name])
    if problem:
        click.echo(f"error: {problem}", err=True)
        sys.exit(1)
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
                reflector_config=_reflector_config(reflector_config, critic_model),
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
    from oopav.services import read_dlq

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
    from oopav.bus.commands import register as register_bus
    from oopav.doctor import register as register_doctor
    from oopav.handlers.commands import register as register_decision
    from oopav.models.commands import register as register_models
    from oopav.sandbox.commands import register as register_sandbox
    from oopav.sandbox.gc_command import register as register_gc
    from oopav.synth.commands import register as register_synth
    from oopav.trainer.commands import register as register_trainer
    from oopav.tui.commands import register as register_tui

    register_bus(cli)
    register_sandbox(cli)
    register_models(cli)
    register_tui(cli)
    register_doctor(cli)
    register_gc(cli)
    register_synth(cli)
    from oopav.handlers.reflector_commands import register as register_guidance

    register_guidance(cli)
    register_decision(cli)
    register_trainer(cli)


_register()


def main() -> None:
    cli(prog_name="oopav")


if __name__ == "__main__":
    main()
