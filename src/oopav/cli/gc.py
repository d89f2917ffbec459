"""``oopav gc``: remove workspaces (worktrees, copies, ``oopav/<id>`` branches) left behind by
sessions that have finished, e.g. those run by ``oopav up`` or ``oopav run --keep``. Each
session's result is kept, so ``oopav apply`` works afterwards.

It also removes the artifacts (full command outputs, reports) of ended sessions older than
``--artifacts-max-age``, then of the oldest ended sessions while all artifacts together are over
``--artifacts-max-total`` (sandbox/artifacts.py)."""

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
@click.option(
    "--artifacts-max-age",
    envvar="OOPAV_GC_ARTIFACTS_MAX_AGE",
    default="7d",
    show_default=True,
    metavar="AGE",
    help="Remove the artifacts of ended sessions last written longer ago (7d, 12h, 30m; "
    "'off': no age limit). Env OOPAV_GC_ARTIFACTS_MAX_AGE.",
)
@click.option(
    "--artifacts-max-total",
    envvar="OOPAV_GC_ARTIFACTS_MAX_TOTAL",
    default="2G",
    show_default=True,
    metavar="SIZE",
    help="Then remove the oldest ended sessions' artifacts while all artifacts together are "
    "over SIZE (500M, 2G; 'off': no size limit). Env OOPAV_GC_ARTIFACTS_MAX_TOTAL.",
)
@click.pass_context
def gc(
    ctx: click.Context,
    everything: bool,
    dry_run: bool,
    artifacts_max_age: str,
    artifacts_max_total: str,
) -> None:
    """Remove the workspaces and session branches of finished sessions, and the artifacts of
    ended sessions by age and total size."""
    from oopav.sandbox.artifacts import parse_age, parse_size

    try:
        max_age = None if artifacts_max_age.strip() == "off" else parse_age(artifacts_max_age)
        max_total = (
            None if artifacts_max_total.strip() == "off" else parse_size(artifacts_max_total)
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    from oopav.app import NoServer
    from oopav.bus.errors import BusError
    from oopav.bus.server import ServerError
    from oopav.config import Settings
    from oopav.sandbox.workspace import gc_workspaces, list_workspaces

    settings = getattr(ctx.obj, "settings", None) or Settings()
    keep: set[str] = set()
    finished: set[str] = set()
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
    _gc_artifacts(settings, finished, everything, dry_run, max_age, max_total)


def _gc_artifacts(
    settings: object,
    finished: set[str],
    everything: bool,
    dry_run: bool,
    max_age: float | None,
    max_total: int | None,
) -> None:
    from oopav.sandbox.artifacts import human_size, list_artifacts, remove, select_for_gc

    items = list_artifacts(settings.artifacts_dir)  # type: ignore[attr-defined]
    if not items:
        return
    ended = {a.session_id for a in items} if everything else finished
    chosen = select_for_gc(items, ended, max_age_s=max_age, max_total_bytes=max_total)
    verb = "would remove" if dry_run else "removed"
    for a, why in chosen:
        click.echo(f"{verb} {a.path} ({human_size(a.bytes)}, {why})")
    freed = sum(a.bytes for a, _ in chosen) if dry_run else remove(a for a, _ in chosen)
    left = sum(a.bytes for a in items) - freed
    click.echo(
        f"{verb} the artifacts of {len(chosen)} session(s), {human_size(freed)}; "
        f"{human_size(left)} left in {len(items) - len(chosen)}"
    )


def register(cli: click.Group) -> None:
    cli.add_command(gc)
