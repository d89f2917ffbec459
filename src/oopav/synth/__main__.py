"""``python -m oopav.synth``: the ``oopav synth`` command alone, without loading the rest of
the CLI (the bus, the handlers, the models): what a script or an editor calls per example."""

from __future__ import annotations

import sys

import click

from oopav.synth.commands import register


@click.group()
def _cli() -> None:
    pass


register(_cli)


def main() -> None:
    _cli.main(args=["synth", *sys.argv[1:]], prog_name="python -m oopav.synth")


if __name__ == "__main__":
    main()
