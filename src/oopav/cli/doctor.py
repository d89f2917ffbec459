"""``oopav doctor``: one line per check of ``oopav.doctor`` and the fix for anything that fails."""

from __future__ import annotations

import sys

import click

from oopav.config import Settings
from oopav.doctor import CHECKS, Check, check_model


@click.command("doctor")
@click.option("--model", help="Check this model spec instead of OOPAV_MODEL.")
@click.pass_context
def doctor(ctx: click.Context, model: str | None) -> None:
    """Check nats-server, bwrap (user namespaces), ast-grep, git, disk space and the model
    backend: one line each, and the fix for anything that fails. Exits 1 on a failure."""
    settings = getattr(ctx.obj, "settings", None) or Settings()
    results = []
    for fn in CHECKS:
        try:
            results.append(fn(settings))
        except Exception as exc:  # a check must report, never crash the others
            results.append(Check(fn.__name__.removeprefix("check_"), "FAIL", f"{exc}"))
    if model is not None:
        from oopav.models.registry import absolute_spec

        model = absolute_spec(model)
    results.append(check_model(settings, model))
    width = max(len(r.name) for r in results)
    for r in results:
        line = f"{r.status:4}  {r.name:{width}}  {r.detail}"
        if r.fix and r.status != "ok":
            line += f"\n      {'':{width}}  fix: {r.fix}"
        click.echo(line)
    failed = [r.name for r in results if r.status == "FAIL"]
    if failed:
        click.echo(f"{len(failed)} check(s) failed: {', '.join(failed)}", err=True)
        sys.exit(1)


def register(cli: click.Group) -> None:
    """Add this area's commands to the top-level group."""
    cli.add_command(doctor)
