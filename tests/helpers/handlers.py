"""A handler running for the length of a block, on the test's connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

H = TypeVar("H")


@contextlib.asynccontextmanager
async def in_background(runner: Any, timeout: float = 10.0) -> AsyncIterator[asyncio.Task[Any]]:
    """``runner.run()`` as a task for the length of the block; on the way out ``runner.stop()``
    and a wait of at most ``timeout`` for the task to end."""
    task = asyncio.create_task(runner.run())
    try:
        yield task
    finally:
        runner.stop()
        await asyncio.wait_for(task, timeout)


@contextlib.asynccontextmanager
async def running(handler: H, timeout: float = 10.0) -> AsyncIterator[H]:
    """``in_background``, once the handler says it is ready (within ``timeout``)."""
    h: Any = handler
    async with in_background(h, timeout):
        await asyncio.wait_for(h.ready.wait(), timeout)
        yield handler


@contextlib.asynccontextmanager
async def handlers_on(
    nats_url: str,
    *,
    name: str = "test-loop",
    names: tuple[str, ...] | None = None,
    reflector_config: Any = None,
    **ports: Any,
) -> AsyncIterator[Any]:
    """Every handler (or ``names``) in this process on the server at ``nats_url``, with
    ``Ports(**ports)`` (model factory, sandbox) and, when given, the reflector's config.
    Yields the Bus; on the way out the handlers are stopped and waited for (20 s)."""
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers

    settings = Settings(nats_url=nats_url)
    async with open_bus(settings, name=name) as bus:
        stop = asyncio.Event()
        runner = asyncio.create_task(
            run_handlers(
                bus,
                stop,
                names=names,
                ports=Ports(settings=settings, **ports),
                projection=False,
                reflector_config=reflector_config,
            )
        )
        await asyncio.sleep(0.05)
        try:
            yield bus
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(runner, 20)
