"""``oopav session export`` / ``oopav session import``: a session and every blob it names, as
one file that replays on any machine (``oopav.history.archive``)."""

from __future__ import annotations

from pathlib import Path

import click

from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async


@click.group("session")
def session() -> None:
    """Move a session between machines: its events (exact bytes, so the hash chain still
    links), its mission's events and every blob they name (its starting tree, prompts)."""


@session.command("export")
@click.argument("session_id", metavar="SESSION")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The archive to write (default: <session>.tar).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
@run_async
async def export(c: Ctx, session_id: str, output: Path | None, as_json: bool) -> None:
    """Write a session's archive: `oopav session import` it elsewhere, then `oopav replay
    --verify` or `--fork-at` there, with no repository."""
    from oopav.app import open_bus
    from oopav.history.archive import ArchiveError, export_session
    from oopav.history.blobs import BlobError
    from oopav.services import resolve_session

    async with open_bus(c.settings, name="oopav-export") as bus:
        sid = await resolve_session(bus, session_id)
        try:
            summary = await export_session(bus.nc, sid, output or Path(f"{sid}.tar"))
        except (ArchiveError, BlobError) as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        _json_out(summary)
        return
    click.echo(
        f"{summary['path']}: session {sid}, {summary['events']} events, "
        f"{summary['mission_events']} mission events, {summary['blobs']} blobs "
        f"({summary['archive_bytes']} bytes)"
    )


@session.command("import")
@click.argument("archive", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
@run_async
async def import_(c: Ctx, archive: Path, as_json: bool) -> None:
    """Import a session archive (from `oopav session export`) into this server. Importing
    twice adds nothing."""
    from oopav.app import open_bus
    from oopav.history.archive import ArchiveError, import_session

    # A fresh data dir has no store yet: start its embedded server (as `oopav run` does).
    async with open_bus(c.settings, embedded=True, name="oopav-import") as bus:
        try:
            summary = await import_session(bus.nc, archive)
        except ArchiveError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        _json_out(summary)
        return
    click.echo(
        f"session {summary['session_id']}: {summary['added']} of {summary['events']} events "
        f"added, {summary['blobs']} blobs"
    )


def register(cli: click.Group) -> None:
    cli.add_command(session)
