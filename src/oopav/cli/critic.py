"""``oopav critic --session SID``: the critic's review of any recorded session, after the fact.

It reviews what the session left — its final diff, the gate verdicts of its last
verification, its plan — with the session's own critic settings (or the defaults), records the
verdict as ``critic_verdict`` (trigger ``review``) on the session's stream, and prints it."""

from __future__ import annotations

import click

from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async


@click.command("critic")
@click.option("--session", "session", required=True, help="The session (an id or a prefix).")
@click.option(
    "--model",
    help="The critic's model spec (default: the session's policy.critic.model, else its model; "
    "synth: reviews by rules, no model).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@pass_ctx
@run_async
async def critic_cmd(c: Ctx, session: str, model: str | None, as_json: bool) -> None:
    """Review a recorded session with the critic; the verdict is recorded on its stream.
    Exits 1 when no verdict counts (the critic's model unavailable, or its answer unusable)."""
    from oopav.app import open_bus
    from oopav.services import review_session

    async with open_bus(c.settings, name="oopav-critic") as bus:
        try:
            said = await review_session(bus, c.settings, session, model=model)
        except (ValueError, KeyError) as exc:
            raise click.ClickException(str(exc).strip("'\"")) from None
    if as_json:
        _json_out(said)
        if said["skipped"]:
            raise SystemExit(1)
        return
    click.echo(
        f"session {said['session_id']} ({said['outcome'] or 'live'}): critic {said['verdict']}"
    )
    if said["skipped"]:
        click.echo(f"  (no verdict counts: {said['skipped']})")
    for r in said["reasons"]:
        click.echo(f"  - {r}")
    if said["top_risks"]:
        click.echo("top risks:")
        click.echo("\n".join(f"  - {r}" for r in said["top_risks"]))
    if said["missing_tests"]:
        click.echo("missing tests:")
        click.echo("\n".join(f"  - {t}" for t in said["missing_tests"]))
    if said["confidence"] is not None:
        click.echo(f"confidence: {said['confidence']:.2f}")
    click.echo(f"shown: {', '.join(said['shown'])}; recorded as {said['verdict_id']}")
    if said["skipped"]:
        # No verdict counts (the model unavailable, its answer unparseable): say so to scripts.
        raise SystemExit(1)


def register(cli: click.Group) -> None:
    cli.add_command(critic_cmd)
