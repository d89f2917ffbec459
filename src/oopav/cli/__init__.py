"""The ``oopav`` command: the group, its global options (accepted before or after the
subcommand) and the registration of every command group.

Every command lives in this package, one module per group (``serve``: up/run/handler,
``tasks``: submit/apply/answer, ``sessions``: sessions/show/replay, ``bus``: streams/dlq/events/
ops, ``sandbox``, ``models``, ``synth``, ``train``, ``guidance``, ``decision``, ``tui``, ``doctor``,
``gc``); it is the only package that imports click. A command parses its options, calls the
domain packages and prints."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from oopav import __version__
from oopav.cli.kit import Ctx, pass_ctx, run_async  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from oopav.cli.common import (  # noqa: F401  (re-exported for scripts and tests)
        _exit_status,
        _print_outcome,
        _submission,
        cli_model_spec,
    )

T = TypeVar("T")
_COMMON = frozenset({"_exit_status", "_print_outcome", "_submission", "cli_model_spec"})


def __getattr__(name: str) -> Any:
    """The re-exports of ``cli.common`` load it on first use: it imports asyncio and the
    session helpers, which ``oopav synth`` never needs (start-up time, issue 26)."""
    if name in _COMMON:
        from oopav.cli import common

        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Options of the top-level group that may also be written after the subcommand
# (`oopav sessions --data-dir D`); the value says whether the option takes one.
GLOBAL_OPTIONS: dict[str, bool] = {
    "--nats-url": True,
    "--data-dir": True,
    "--log-level": True,
    "--verbose": False,
    "-v": False,
    "--tls-ca": True,
    "--tls-cert": True,
    "--tls-key": True,
    "--creds": True,
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
    """Loads a command's module when the command is asked for (``oopav synth`` imports
    ``cli.synth`` and what it needs, not the bus, the sandbox or the services: start-up time,
    issue 28); listing the commands (``--help``) loads them all."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_global_options(list(args))
        return super().parse_args(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = COMMAND_MODULES.get(cmd_name)
            if module is not None:
                _load(module)
            else:
                register_all()  # unknown: let click say so, with every command known
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        register_all()
        return super().list_commands(ctx)


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
@click.option(
    "--tls-ca",
    envvar="OOPAV_TLS_CA",
    metavar="PEM",
    type=click.Path(exists=True, dir_okay=False),
    help="Verify the NATS server against this CA (env OOPAV_TLS_CA); turns TLS on.",
)
@click.option(
    "--tls-cert",
    envvar="OOPAV_TLS_CERT",
    metavar="PEM",
    type=click.Path(exists=True, dir_okay=False),
    help="Client certificate for mutual TLS, with --tls-key (env OOPAV_TLS_CERT).",
)
@click.option(
    "--tls-key",
    envvar="OOPAV_TLS_KEY",
    metavar="PEM",
    type=click.Path(exists=True, dir_okay=False),
    help="The client certificate's key (env OOPAV_TLS_KEY).",
)
@click.option(
    "--creds",
    envvar="OOPAV_NATS_CREDS",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="NATS user credentials, as `oopav ops accounts` writes them (env OOPAV_NATS_CREDS).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    nats_url: str | None,
    data_dir: Path | None,
    log_level: str | None,
    verbose: bool,
    tls_ca: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    creds: str | None,
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

    Global options (--nats-url, --data-dir, --log-level, -v, --tls-*, --creds) go before or
    after the command.
    """
    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("a client certificate needs both --tls-cert and --tls-key")
    # `oopav synth` logs nothing: it starts without structlog (start-up time, issue 26).
    quiet = ctx.invoked_subcommand in QUIET_COMMANDS
    ctx.obj = Ctx(nats_url, data_dir, log_level, verbose, configure_logging=not quiet)
    ctx.obj.connection = {
        "OOPAV_TLS_CA": tls_ca,
        "OOPAV_TLS_CERT": tls_cert,
        "OOPAV_TLS_KEY": tls_key,
        "OOPAV_NATS_CREDS": creds,
    }
    ctx.with_resource(_environ(ctx.obj.environment()))


# The command groups, in registration order, and the module that registers each command
# (tests/cli/test_newcomer_cli.py checks this table against what the modules register).
GROUP_MODULES: tuple[str, ...] = (
    "serve",
    "tasks",
    "sessions",
    "bus",
    "sandbox",
    "models",
    "tui",
    "doctor",
    "gc",
    "synth",
    "guidance",
    "decision",
    "train",
    "validate",
    "fsck",
    "diff",
    "archive",
    "notary",
    "critic",
)
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("up", "handler", "streams", "events"), "serve"),
    **dict.fromkeys(("run", "submit", "resume"), "tasks"),
    **dict.fromkeys(("sessions", "show", "replay", "dlq"), "sessions"),
    **dict.fromkeys(("cluster", "ops", "status"), "bus"),
    **dict.fromkeys(("sandbox", "apply", "grant", "deny"), "sandbox"),
    **dict.fromkeys(("models", "schema"), "models"),
    "tui": "tui",
    "doctor": "doctor",
    "gc": "gc",
    "synth": "synth",
    "guidance": "guidance",
    "answer": "decision",
    **dict.fromkeys(("train", "export", "runs", "eval", "tasks"), "train"),
    "validate": "validate",
    "fsck": "fsck",
    "diff": "diff",
    "session": "archive",
    "notary": "notary",
    "critic": "critic",
}
# Commands that never log (pure computations): the group does not configure logging for them.
QUIET_COMMANDS = frozenset({"synth"})
_loaded: set[str] = set()


def _load(module: str) -> None:
    """Register one group module's commands (``bus`` adds ``streams create`` to ``serve``'s
    ``streams``, so the two load together, serve first). Keep the modules' own imports cheap
    (no torch, no vllm: those load inside the commands that need them)."""
    import importlib

    for name in ("serve", "bus") if module in ("serve", "bus") else (module,):
        if name not in _loaded:
            _loaded.add(name)
            importlib.import_module(f"oopav.cli.{name}").register(cli)


def register_all() -> None:
    for module in GROUP_MODULES:
        _load(module)


def main() -> None:
    cli(prog_name="oopav")


if __name__ == "__main__":
    main()
