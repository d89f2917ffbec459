"""``oopav fsck``: check every session of the store for missing sequences, broken links,
undecodable entries and snapshot drift (src/oopav/fsck.py); exit 1 when anything is damaged."""

from __future__ import annotations

import sys

import click

from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async


@click.command("fsck")
@click.option("--session", "session", help="Only this session (a unique prefix is enough).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_ctx
@run_async
async def fsck(c: Ctx, session: str | None, as_json: bool) -> None:
    """Scan the event store for damage: sequences gone from the stream (a corrupted message
    block), broken chain links, terminal events after the end, undecodable entries on session
    subjects, and snapshots that disagree with the stream. Damaged sessions are recorded so
    that `oopav sessions` and `oopav show` mark them."""
    from oopav import fsck as check
    from oopav.app import open_bus
    from oopav.projections.runner import SESSIONS
    from oopav.projections.session import SessionState
    from oopav.projections.store import Snapshots
    from oopav.services import resolve_session

    async with open_bus(c.settings, name="oopav-fsck") as bus:
        sid = await resolve_session(bus, session) if session else None
        snaps = Snapshots(bus.snapshots, SESSIONS.name, SESSIONS.schema, SessionState)
        report = await check.scan(bus.events, snaps if snaps.valid() else None, session=sid)
    if sid is None:
        where = check.save(c.settings.data_dir, report)
    if as_json:
        _json_out(report.to_dict())
    else:
        click.echo(
            f"fsck: {report.messages} messages (seq {report.first_seq}..{report.last_seq}), "
            f"{report.sessions} session(s), {len(report.missing)} missing sequence(s), "
            f"{report.seconds:.1f} s"
        )
        for f in report.findings:
            who = f.session_id or "(stream)"
            click.echo(f"DAMAGED {who:36}  {f.describe()}")
        damaged = report.damaged()
        if report.ok:
            click.echo("OK: no damage found")
        else:
            click.echo(
                f"{len(damaged)} damaged session(s)"
                + (
                    f"; recorded in {where} (`oopav sessions` and `oopav show` mark them)"
                    if sid is None
                    else ""
                )
            )
    if not report.ok:
        sys.exit(1)


def register(cli: click.Group) -> None:
    cli.add_command(fsck)
