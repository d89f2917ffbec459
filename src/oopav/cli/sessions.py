"""Commands that read sessions back: ``oopav sessions``, ``oopav show``, ``oopav replay``, ``oopav dlq``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from oopav.cli.common import _fork, cli_model_spec
from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
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
        damage = await _damage(c, bus, [r["session_id"] for r in rows])
    for r in rows:
        r["damaged"] = damage.get(r["session_id"], [])
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
        # A damaged session says so before anything else (`oopav fsck`, docs/operations.md).
        note = f"DAMAGED ({r['damaged'][0]}) " if r["damaged"] else ""
        click.echo(
            f"{r['session_id']:36}  {r['phase']:{phase_w}}  {r['outcome'] or '-':{outcome_w}}  "
            f"{r['events']:>6}  {note}{r['instruction'][:60]}"
        )


async def _damage(c: Ctx, bus: object, sids: list[str]) -> dict[str, list[str]]:
    """Damaged sessions among ``sids``: as the last `oopav fsck` recorded them, and any whose
    snapshot names a last event that is gone from the stream (a lost end)."""
    from oopav import fsck
    from oopav.projections.runner import SESSIONS
    from oopav.projections.session import SessionState
    from oopav.projections.store import Snapshots

    out: dict[str, list[str]] = {}
    for sid, lines in fsck.recorded_damage(c.settings.data_dir).items():
        if sid in sids:
            out[sid] = list(lines)
    snaps = Snapshots(bus.snapshots, SESSIONS.name, SESSIONS.schema, SessionState)  # type: ignore[attr-defined]
    if snaps.valid():
        for sid, why in (await fsck.lost_ends(bus.events, snaps, sids)).items():  # type: ignore[attr-defined]
            out.setdefault(sid, []).insert(0, why)
    return out


@click.command()
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON.")
@click.option(
    "--tree",
    is_flag=True,
    help="Show the session's lineage instead: its root, every fork, their outcomes and where "
    "each diverged from its parent.",
)
@pass_ctx
@run_async
async def show(c: Ctx, session: str, as_json: bool, tree: bool) -> None:
    """Show the timeline of one session's events (or its fork tree, --tree)."""
    import msgspec

    from oopav.app import open_bus
    from oopav.bus.store import Undecodable
    from oopav.services import describe_event, resolve_session

    async with open_bus(c.settings, name="oopav-show") as bus:
        sid = await resolve_session(bus, session)
        if tree:
            from oopav.history.read import session_tree
            from oopav.history.tree import render

            try:
                root = await session_tree(bus.nc, bus.snapshots, sid)
            except KeyError:
                raise click.ClickException(f"session {sid} has no task: no lineage") from None
            if as_json:
                _json_out(root.to_dict())
            else:
                for line in render(root, mark=sid):
                    click.echo(line)
            return
        events = await bus.events.read_with_undecodable("session", sid)
        damage = await _session_damage(c, bus, sid, events)
        if as_json:
            # Whole prompts (stored as blobs and deltas: history/prompts.py).
            from oopav.history.blobs import BlobStore
            from oopav.history.prompts import expand

            decoded = [(s, e) for s, e in events if not isinstance(e, Undecodable)]
            whole = dict(await expand(BlobStore(bus.nc), decoded))
            events = [(s, whole.get(s, e)) for s, e in events]
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

    trend = _trends_line([e for _, e in events if not isinstance(e, Undecodable)])
    if trend:
        click.echo(trend)

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
    # After the timeline: what is missing from it or wrong with it (`oopav fsck`).
    for found in damage:
        if found.kind not in ("broken_link", "late_terminal"):  # warned about above
            click.echo(f"DAMAGED: {found.describe()}")


async def _session_damage(c: Ctx, bus: object, sid: str, events: list) -> list:  # type: ignore[type-arg]
    from oopav import fsck
    from oopav.projections.runner import SESSIONS
    from oopav.projections.session import SessionState
    from oopav.projections.store import Snapshots

    snaps = Snapshots(bus.snapshots, SESSIONS.name, SESSIONS.schema, SessionState)  # type: ignore[attr-defined]
    return await fsck.session_damage(bus.events, snaps, sid, events, c.settings.data_dir)  # type: ignore[attr-defined]


def _trends_line(events: list[Any]) -> str:
    """The continuous observer's trends and the caution level, in one line (decide/trends.py)."""
    import msgspec

    from oopav.decide.trends import Point, trends
    from oopav.projections.session import fold

    state = fold(events)
    if not state.observations:
        return ""
    points = [Point(**msgspec.to_builtins(p)) for p in state.observations]
    line = "trends: " + trends(points, [a.hash for a in state.actions]).describe()
    if state.caution_level:
        line += f"; caution level {state.caution_level}"
    return line


@click.command()
@click.argument("session", required=False)
@click.option(
    "--all",
    "replay_every",
    is_flag=True,
    help="Replay every session of the store (recorded sessions as regression tests): report "
    "which decisions the current code makes differently, by handler and rule.",
)
@click.option(
    "--since",
    metavar="TIME",
    help="With --all: only sessions created since TIME (ISO time, or 30m / 2h / 7d ago).",
)
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
    session: str | None,
    replay_every: bool,
    since: str | None,
    verify: bool,
    fork_at: int | None,
    model: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Re-fold a session from the stream and print its state; check that it replays
    deterministically (--verify); or fork it from a step (--fork-at SEQ [--model SPEC]).

    --all [--since TIME] [--verify] replays every session and reports the decisions the
    current code makes differently, by handler and rule (exit 1 when any differs)."""
    from oopav.app import open_bus
    from oopav.services import replay_projection, resolve_session

    if model is not None and fork_at is None:
        raise click.UsageError("--model goes with --fork-at")
    if replay_every:
        if session is not None or fork_at is not None:
            raise click.UsageError("--all replays every session: give no SESSION and no --fork-at")
        await _replay_all(c, since, verify, as_json)
        return
    if since is not None:
        raise click.UsageError("--since goes with --all")
    if session is None:
        raise click.UsageError("give a SESSION (or --all)")
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
        damage = []
        if verify:
            # Checked before the snapshot is brought up to date: drift is what it said before.
            entries = await bus.events.read_with_undecodable("session", sid)
            damage = await _session_damage(c, bus, sid, entries)
        report = await replay_projection(bus, sid, verify=verify)
        recorded = await bus.events.read("session", sid, skip_undecodable=True) if verify else []
        if verify:
            report["damaged"] = [
                {"kind": f.kind, "sequence": f.sequence, "detail": f.detail} for f in damage
            ]
        handlers_report = None
        if verify:
            from oopav.replay import verify_session

            # Inside the block: the source server (started on demand) serves the session's
            # starting tree from its blob store while the replay runs.
            handlers_report = await verify_session(bus.url, sid, recorded=recorded)
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
        for found in damage:  # the sequence that is gone or damaged, by number
            click.echo(f"damaged: {found.describe()}", err=True)
        if handlers_report.signatures is not None:
            click.echo(handlers_report.signatures.describe())
        click.echo(
            "workspace: from the starting tree in the blob store"
            if handlers_report.started_from == "store"
            else "workspace: from the repository (the session stored no starting tree)"
        )
    if verify and (
        not report["matches"]
        or (handlers_report is not None and not handlers_report.ok)
        or report.get("damaged")
    ):
        sys.exit(1)


async def _replay_all(c: Ctx, since: str | None, verify: bool, as_json: bool) -> None:
    from oopav.app import open_bus
    from oopav.corpus import parse_since, replay_all

    try:
        when = parse_since(since) if since else None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if verify:
        log_file = c.log_to_file("replay")
        if log_file is not None:
            click.echo(f"log: {log_file}", err=True)
    async with open_bus(c.settings, name="oopav-replay-all") as bus:
        report = await replay_all(bus, since=when, verify=verify)
    if as_json:
        _json_out(report.to_dict())
    else:
        for line in report.lines():
            click.echo(line)
    if not report.ok:
        sys.exit(1)


@click.command()
@click.option("--handler", help="Only this handler's dead letters.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
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


def register(cli: click.Group) -> None:
    cli.add_command(sessions)
    cli.add_command(show)
    cli.add_command(replay)
    cli.add_command(dlq)
