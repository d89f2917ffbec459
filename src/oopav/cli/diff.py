"""``oopav diff A B``: the diff of two runs (``oopav.history.diff``)."""

from __future__ import annotations

import click

from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async


@click.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Print the whole comparison as JSON.")
@click.option("--steps", is_flag=True, help="Also list every aligned step.")
@pass_ctx
@run_async
async def diff(c: Ctx, a: str, b: str, as_json: bool, steps: bool) -> None:
    """Compare two sessions (a fork and its parent, two models on one task): align their
    timelines by step, name the first divergence (event, field, both values), then what
    differs downstream (plans, actions, gate verdicts, outcome, tokens, time) and the diff
    between the two final diffs.

    Sessions are ids or unique prefixes. Ids, times and volatile fields are not compared."""
    from oopav.app import open_bus
    from oopav.history.read import diff_sessions
    from oopav.services import resolve_session

    async with open_bus(c.settings, name="oopav-diff") as bus:
        sa = await resolve_session(bus, a)
        sb = await resolve_session(bus, b)
        try:
            report = await diff_sessions(bus.nc, sa, sb)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        _json_out(report.to_dict())
        return
    for line, _style in report.lines():
        click.echo(line)
    if steps:
        click.echo("")
        for i, s in enumerate(report.steps, 1):
            mark = {"same": " ", "changed": "~", "only_a": "-", "only_b": "+"}[s.status]
            a_part = f"{s.a_seq or '':>6} {s.a_type or '':24}"
            b_part = f"{s.b_seq or '':>6} {s.b_type or '':24}"
            click.echo(f"{mark} {i:>4}  {a_part}  {b_part}  {s.field or ''}")


def register(cli: click.Group) -> None:
    cli.add_command(diff)
