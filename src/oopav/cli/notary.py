"""``oopav notary``: the signing keys the notary trusts and the chain heads it anchored
(history/signing.py; docs/operations.md, "Signing keys and the notary").

A deployment that runs each handler as its own process, with its own credentials and only
its own seed, cannot register its key itself (handlers may not write the notary bucket):
whoever holds the notary's (or admin's) credentials registers them here."""

from __future__ import annotations

import re
import sys

import click

from oopav.cli.kit import Ctx, _json_out, pass_ctx, run_async

# The identities that sign root events written by commands (docs/operations.md).
ROOT_SIGNERS = frozenset({"cli", "run", "replay", "preview", "client", "notary"})


@click.group("notary")
def notary() -> None:
    """The keys events may be signed with, and the sessions' anchored chain heads."""


@notary.command("keys")
@click.option("--json", "as_json", is_flag=True, help="Print identity -> public keys as JSON.")
@pass_ctx
@run_async
async def keys(c: Ctx, as_json: bool) -> None:
    """List every identity the notary trusts and its public keys."""
    from oopav.app import open_bus
    from oopav.history.signing import trusted_keys

    async with open_bus(c.settings, name="oopav-notary") as bus:
        trusted = await trusted_keys(bus.nc.jetstream())
    if as_json:
        _json_out({name: sorted(pubs) for name, pubs in sorted(trusted.items())})
        return
    if not trusted:
        click.echo("no keys registered (no process has signed on this store yet)")
    for name, pubs in sorted(trusted.items()):
        for pub in sorted(pubs):
            click.echo(f"{name:<12} {pub}")


@notary.command("trust")
@click.argument("identity")
@click.argument("public_keys", nargs=-1)
@click.option(
    "--from-keys",
    "from_dir",
    type=click.Path(exists=True, file_okay=False),
    help="Register the public keys of every seed in this keys directory (a handler machine's "
    "<data dir>/keys), each under its file's name; IDENTITY is then ignored ('-').",
)
@pass_ctx
@run_async
async def trust(c: Ctx, identity: str, public_keys: tuple[str, ...], from_dir: str | None) -> None:
    """Trust PUBLIC_KEYS (nkey user public keys, `U…`) as IDENTITY's signing keys, e.g. the key
    of a handler that runs on its own machine: `oopav notary trust actor UABC…`. Keys are
    added, never replaced: events signed with an earlier key still verify."""
    from pathlib import Path

    from oopav.app import open_bus
    from oopav.bus.contracts import EMITS
    from oopav.events.keys import Keyring, public_raw
    from oopav.history.signing import register_keys

    wanted: dict[str, set[str]] = {}
    if from_dir:
        wanted = {n: {p} for n, p in Keyring(Path(from_dir)).publics().items()}
        if not wanted:
            raise click.UsageError(f"no *.nk seeds in {from_dir}")
    else:
        if not public_keys:
            raise click.UsageError("name at least one public key (or use --from-keys DIR)")
        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,63}", identity):
            raise click.UsageError(f"not an identity name: {identity!r} (e.g. actor, planner)")
        known = set(EMITS) | ROOT_SIGNERS
        if identity not in known:
            # Not refused: a deployment may add handlers; but a typo would trust nobody.
            click.echo(
                f"warning: {identity!r} is none of oopav's identities ({', '.join(sorted(known))})",
                err=True,
            )
        for pub in public_keys:
            try:
                public_raw(pub)
            except ValueError as exc:  # incl. binascii.Error: not base32 at all
                why = str(exc)
                if not why.startswith("not an nkey public key"):
                    why = f"not an nkey public key: {pub[:16]!r} ({why})"
                raise click.UsageError(why) from None
            if not pub.startswith("U"):
                raise click.UsageError(f"{pub[:12]}… is not a user key (nkey user keys start U)")
        wanted = {identity: set(public_keys)}
    async with open_bus(c.settings, name="oopav-notary") as bus:
        try:
            await register_keys(bus.nc.jetstream(), wanted)
        except Exception as exc:  # a permission violation: these credentials may not write it
            click.echo(
                f"oopav: the notary bucket refused the write ({exc}); register keys with the "
                "notary's or admin's credentials (--creds)",
                err=True,
            )
            sys.exit(1)
    for name, pubs in sorted(wanted.items()):
        for pub in sorted(pubs):
            click.echo(f"trusted {name} {pub}")


@notary.command("head")
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="Print the anchor as JSON.")
@pass_ctx
@run_async
async def head(c: Ctx, session: str, as_json: bool) -> None:
    """Show the chain head the notary anchored for SESSION (a unique prefix is enough)."""
    from oopav.app import open_bus
    from oopav.history.signing import anchor_of
    from oopav.services import resolve_session

    async with open_bus(c.settings, name="oopav-notary") as bus:
        sid = await resolve_session(bus, session)
        anchor = await anchor_of(bus.nc.jetstream(), sid)
    if anchor is None:
        click.echo(f"oopav: no anchored head for session {sid}", err=True)
        sys.exit(1)
    if as_json:
        _json_out(anchor.__dict__)
        return
    click.echo(
        f"{sid}: {anchor.count} events, head {anchor.event_id} at seq {anchor.sequence}, "
        f"hash {anchor.hash[:16]}…, signed: {'yes' if anchor.signature else 'no'}"
    )


def register(group: click.Group) -> None:
    group.add_command(notary)
