"""The ``oopav`` command. Subcommands live next to what they drive; this module wires them."""

from __future__ import annotations

import click

from oopav import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="oopav")
def cli() -> None:
    """oopav: an event-sourced agent kernel for code changes.

    Tasks arrive on NATS JetStream; handlers run Observe, Orient, Plan, Act, Verify; every step
    is an immutable event that projections fold back into state.
    """


def _register() -> None:
    # Each area owns its commands; keep imports here cheap (no torch, no vllm).
    from oopav.models.commands import register as register_models
    from oopav.sandbox.commands import register as register_sandbox

    register_sandbox(cli)
    register_models(cli)


_register()


def main() -> None:
    cli(prog_name="oopav")


if __name__ == "__main__":
    main()
