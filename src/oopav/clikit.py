"""What every command module shares, kept out of ``oopav.cli`` so that the command modules
next to what they drive (``sandbox/commands.py``, ``tui/commands.py``, …) never import the
entry point that registers them."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click

T = TypeVar("T")


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async command; turn the errors a user can hit into one line and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        from oopav.app import NoServer
        from oopav.bus.errors import BusError
        from oopav.bus.server import ServerError

        try:
            return asyncio.run(fn(*args, **kwargs))
        except (NoServer, BusError, ServerError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            sys.exit(130)

    return wrapper
