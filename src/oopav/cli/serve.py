"""Long-running and set-up commands: ``oopav up``, ``oopav handler``, ``oopav streams``, ``oopav events``."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from oopav import __version__
from oopav.cli.common import cli_model_spec
from oopav.cli.kit import Ctx, pass_ctx, run_async

T = TypeVar("T")


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


class Concurrency(click.ParamType[int | str]):
    """``--concurrency``: a number from 1 to 4096, or ``auto``."""

    name = "N|auto"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
        if isinstance(value, int) or value == "auto":
            return value
        try:
            n = int(value)
        except ValueError:
            self.fail(f"{value!r} is neither a number nor 'auto'", param, ctx)
        if not 1 <= n <= 4096:
            self.fail(f"{n} is not in the range 1..4096", param, ctx)
        return n


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
        type=Concurrency(),
        default=None,
        help="Messages of different sessions each handler works on at once (default 32), or "
        "`auto`: follow the machine's load (start at 8, halve when overloaded, grow when idle); "
        "one session's messages are always handled in order.",
    )(fn)
    return fn


_metrics_port_option = click.option(
    "--metrics-port",
    type=int,
    envvar="OOPAV_METRICS_PORT",
    help="Serve Prometheus metrics on 127.0.0.1:PORT/metrics (docs/operations.md).",
)


def _start(
    model: str | None,
    metrics_port: int | None,
    reflector_config: Path | None,
    critic_model: str | None,
) -> tuple[str | None, Any, asyncio.Event, Callable[[], None]]:
    """What `up` and `handler` do before connecting: every bad option (a reflector file, a
    model spec) fails at once, and the signals are ours from the start, so a SIGTERM during
    start-up (a server still down) still stops the process."""
    from oopav.bus.consumer import install_stop_signals

    if metrics_port:
        from oopav.metrics import serve

        serve(metrics_port)
    model = cli_model_spec(model)
    reflector = _reflector_config(reflector_config, critic_model)
    from oopav.bus import storage

    try:  # the free-space settings (docs/operations.md, "Storage"): wrong ones fail at once
        storage.min_free_from_env()
        storage.pause_from_env()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    stop = asyncio.Event()
    return model, reflector, stop, install_stop_signals(stop.set)


@click.command()
@pass_ctx
@run_async
@click.option("--model", help="Default model spec for sessions that name none (else OOPAV_MODEL).")
@click.option(
    "--keep",
    is_flag=True,
    help="Keep each session's worktree and oopav/<id> branch after it completes (default: "
    "removed; `oopav apply` still works from the kept result).",
)
@_metrics_port_option
@click.option(
    "--no-learner",
    is_flag=True,
    help="Do not run the learner (finished sessions -> training datasets, docs/training.md).",
)
@_reflector_options
@service_options
async def up(
    c: Ctx,
    model: str | None,
    keep: bool,
    no_learner: bool,
    metrics_port: int | None,
    critic_model: str | None,
    reflector_config: Path | None,
    concurrency: int | str | None,
    give_up_after: float | None,
) -> None:
    """Run oopav in the foreground: the embedded NATS server (unless --nats-url is given), the
    streams, every handler (the learner included: finished sessions become training datasets
    under <data dir>/datasets) and the session projection. Ctrl-C (or SIGTERM) drains and stops,
    the embedded server included; a second Ctrl-C exits at once."""
    from oopav.services import run_handlers

    async with _serving(
        c,
        model,
        metrics_port,
        reflector_config,
        critic_model,
        embedded=True,
        name="oopav-up",
        give_up_after=give_up_after or float("inf"),
        owns_server=True,
    ) as (bus, model, reflector, stop):
        click.echo(
            f"oopav {__version__} up: NATS at {bus.url}" + (" (embedded)" if bus.embedded else ""),
            err=True,
        )
        click.echo(
            f'submit with: nats --server {bus.url} req oopav.tasks.submit \'{{"instruction": "...", "repo": "/abs/path"}}\'',
            err=True,
        )
        # The server this process started is supervised: restarted on its port if it dies.
        supervisor = _supervise(bus, stop)
        try:
            await run_handlers(
                bus,
                stop,
                names=_without("learner") if no_learner else None,
                model=model,
                concurrency=concurrency,
                signals=False,
                cleanup=not keep,
                reflector_config=reflector,
            )
        finally:
            if supervisor is not None:
                supervisor.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await supervisor


def _supervise(bus: Any, stop: asyncio.Event) -> asyncio.Task[Any] | None:
    from oopav.bus.server import EmbeddedServer
    from oopav.bus.supervisor import supervise

    if not isinstance(bus.embedded, EmbeddedServer) or bus.embedded.proc is None:
        return None  # --nats-url, or a server adopted from another process: not ours
    return asyncio.create_task(supervise(bus.embedded, stop), name="nats-supervisor")


@contextlib.asynccontextmanager
async def _serving(
    c: Ctx,
    model: str | None,
    metrics_port: int | None,
    reflector_config: Path | None,
    critic_model: str | None,
    **bus_options: Any,
) -> AsyncIterator[tuple[Any, str | None, Any, asyncio.Event]]:
    """What `up` and `handler` share: the start-up checks, then the bus once connected (or a
    one-line exit if Ctrl-C/SIGTERM comes first), our signal handlers removed at the end."""
    from oopav.app import open_bus

    model, reflector, stop, remove_signals = _start(
        model, metrics_port, reflector_config, critic_model
    )
    async with contextlib.AsyncExitStack() as stack:
        bus = await _unless_stopped(
            stop,
            stack.enter_async_context(open_bus(c.settings, **bus_options)),
            c.settings.nats_url,
            remove_signals,
        )
        try:
            yield bus, model, reflector, stop
        finally:
            remove_signals()


async def _unless_stopped(
    stop: asyncio.Event,
    connecting: Awaitable[T],
    url: str | None,
    remove_signals: Callable[[], None],
) -> T:
    """Await ``connecting`` unless ``stop`` comes first. Long-running processes wait for a
    server that is down for as long as it takes (a restart during an outage), and nothing else
    watched ``stop`` meanwhile: Ctrl-C printed "stopping" and SIGTERM did nothing."""
    connect = asyncio.ensure_future(connecting)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({connect, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if connect.done():
        try:
            return connect.result()
        except BaseException:
            remove_signals()
            raise
    connect.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await connect
    remove_signals()
    raise click.ClickException(f"stopped while waiting for the NATS server {url or ''}".rstrip())


def _without(name: str) -> tuple[str, ...]:
    from oopav.handlers.registry import ALL_HANDLERS

    return tuple(n for n in ALL_HANDLERS if n != name)


@click.group()
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


@click.command("handler")
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
@_metrics_port_option
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
    concurrency: int | str | None,
    give_up_after: float | None,
) -> None:
    """Run one handler as its own process. Several processes of one handler share its durable
    consumer, which is how a handler scales out. It survives NATS outages (reconnects and
    resumes); Ctrl-C drains and stops."""
    from oopav.bus.accounts import check_credential
    from oopav.services import run_handlers

    problem = check_credential([name])
    if problem:
        click.echo(f"error: {problem}", err=True)
        sys.exit(1)
    async with _serving(
        c,
        model,
        metrics_port,
        reflector_config,
        critic_model,
        name=f"oopav-{name}",
        give_up_after=give_up_after or float("inf"),
    ) as (bus, model, reflector, stop):
        click.echo(f"handler {name}: NATS at {bus.url}", err=True)
        await run_handlers(
            bus,
            stop,
            names=(name,),
            model=model,
            projection=False,
            concurrency=concurrency,
            signals=False,
            reflector_config=reflector,
        )


@click.group()
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


def register(cli: click.Group) -> None:
    cli.add_command(up)
    cli.add_command(streams)
    cli.add_command(handler_cmd)
    cli.add_command(events)
