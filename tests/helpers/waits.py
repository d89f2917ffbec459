"""Waiting for what a handler does in the background: always with a deadline."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import nats
from nats.js.api import ConsumerConfig, DeliverPolicy


async def until(
    cond: Callable[[], Awaitable[bool] | bool],
    timeout: float = 20.0,
    interval: float = 0.02,
    what: str = "condition not reached",
) -> None:
    """Poll ``cond`` (plain or async) until it holds; fail the test with ``what`` after
    ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        res = cond()
        if inspect.isawaitable(res):
            res = await res
        if res:
            return
        assert loop.time() < deadline, what
        await asyncio.sleep(interval)


async def drain(nc: Any, subject: str, idle: float = 0.5) -> list[Any]:
    """Every message stored on ``subject`` (an ordered consumer from the start), read until
    none arrives for ``idle`` seconds."""
    sub = await nc.jetstream().subscribe(
        subject, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL, config=ConsumerConfig()
    )
    out = []
    try:
        while True:
            try:
                out.append(await sub.next_msg(timeout=idle))
            except nats.errors.TimeoutError:
                return out
    finally:
        await sub.unsubscribe()
