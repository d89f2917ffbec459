"""``oopav gc``: remove workspaces (worktrees, copies, ``oopav/<id>`` branches) left behind by
sessions that have finished, e.g. those run by ``oopav up`` or ``oopav run --keep``. Each
session's result is kept, so ``oopav apply`` works afterwards."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from oopav.config import Settings


async def _finished(settings: Settings) -> set[str]:
    from oopav.app import open_bus
    from oopav.services import list_sessions

    async with open_bus(settings, embedded=True, name="oopav-gc") as bus:
        rows = await list_sessions(bus, 1_000_000)
    return {r["session_id"] for r in rows if r["phase"] in ("completed", "rejected")}


@click.command("gc")
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Also remove the workspaces of sessions that are not finished (or unknown).",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.pass_context
def gc(ctx: click.Context, everything: bool, dry_run: bool) -> None:
    """Remove the workspaces and session branches of finished sessions."""
    from oopav.app import NoServer
    from oopav.bus.errors import BusError
    from oopav.bus.server import ServerError
    from oopav.config import Settings
    from oopav.sandbox.workspace import gc_workspaces, list_workspaces

    settings = getattr(ctx.obj, "settings", None) or Settings()
    keep: set[str] = set()
    if not everything:
        try:
            finished = asyncio.run(_finished(settings))
        except (NoServer, BusError, ServerError) as exc:
            click.echo(
                f"error: cannot tell which sessions are finished: {exc} (--all removes every "
                "workspace)",
                err=True,
            )
            sys.exit(1)
        keep = {w.session_id for w in list_workspaces(settings)} - finished
    removed = gc_workspaces(settings, keep=keep, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for path in removed:
        click.echo(f"{verb} {path}")
    click.echo(
        f"{verb} {len(removed)} workspace(s)"
        + (f"; kept {len(keep)} of unfinished sessions" if keep else "")
    )


def register(cli: click.Group) -> None:
    cli.add_command(gc)
