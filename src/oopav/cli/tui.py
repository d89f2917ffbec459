"""CLI commands of oopav.tui (registered by oopav.cli): ``oopav tui``.

Textual is imported inside the command, never at module level: every `oopav` invocation
imports this module to register the command, and must stay fast."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from oopav.cli.kit import Ctx


def register(cli: click.Group) -> None:
    """Add this area's commands to the top-level group."""
    cli.add_command(tui)


@click.command("tui")
@click.option(
    "--session",
    "session",
    metavar="ID",
    help="Open this session (an id or a unique prefix) instead of the sessions table.",
)
@click.pass_context
def tui(ctx: click.Context, session: str | None) -> None:
    """Watch sessions live in a terminal UI: a sessions table kept current from the event
    stream, and per session its timeline, plan, gates, budgets and final diff.

    \b
    Keys: enter open · escape back · / filter · d diff · r refresh · q quit.
    Uses --nats-url / OOPAV_NATS_URL, else the server of a running `oopav up`.
    """
    from oopav.cli.kit import run_async

    run_async(_tui)(ctx.obj, session)


async def _tui(c: Ctx, session: str | None) -> None:
    from oopav.app import open_bus
    from oopav.services import resolve_session
    from oopav.tui.app import OopavTUI
    from oopav.tui.feed import Feed

    settings = c.settings
    async with open_bus(settings, name="oopav-tui") as bus:
        sid = await resolve_session(bus, session) if session else None
        app = OopavTUI(Feed.from_bus(bus), session=sid)
        await app.run_async()
