"""A handler running for the length of a block, on the test's connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

H = TypeVar("H")


@contextlib.asynccontextmanager
async def running(handler: H, timeout: float = 10.0) -> AsyncIterator[H]:
    """Start ``handler.run()``, wait until it is ready, stop it and wait for it on the way out
    (every wait bounded by ``timeout``)."""
    h: Any = handler
    task = asyncio.create_task(h.run())
    await asyncio.wait_for(h.ready.wait(), timeout)
    try:
        yield handler
    finally:
        h.stop()
        await asyncio.wait_for(task, timeout)
