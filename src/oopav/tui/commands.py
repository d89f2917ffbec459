"""CLI commands of oopav.tui (registered by oopav.cli)."""

from __future__ import annotations

import click


def register(cli: click.Group) -> None:
    """Add this area's commands to the top-level group."""
