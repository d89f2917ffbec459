"""Supervision of the embedded server by the process that started it (``oopav up``).

If the nats-server child dies (a SIGKILL, the OOM killer, a crash), it is started again on the
same port and store, with exponential backoff between failed attempts, each step logged
(``nats_server_died``, ``nats_server_restarted``, ``nats_restart_failed``). The handlers'
connections retry the same url meanwhile and resume where their durable consumers left off,
so sessions in flight complete. A server given to oopav with ``--nats-url`` is not ours and is
never supervised."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from oopav.bus.server import EmbeddedServer, ServerError
from oopav.logging import get_logger

log = get_logger("oopav.bus.supervisor")


@dataclass
class SupervisorStats:
    restarts: int = 0
    failed_attempts: int = 0
    down_s: float = 0.0


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def supervise(
    server: EmbeddedServer,
    stop: asyncio.Event,
    *,
    poll_s: float = 0.25,
    backoff_s: float = 0.5,
    max_backoff_s: float = 30.0,
    stats: SupervisorStats | None = None,
) -> SupervisorStats:
    """Watch ``server`` until ``stop`` is set; restart it whenever it dies."""
    stats = stats or SupervisorStats()
    while not stop.is_set():
        if server.proc is None:  # stopped by its owner: nothing to watch
            return stats
        status = server.died()
        if status is None:
            await _sleep_unless(stop, poll_s)
            continue
        t0 = time.monotonic()
        log.error(
            "nats_server_died", returncode=status, url=server.url, store=str(server.store_dir)
        )
        delay = backoff_s
        attempt = 0
        while not stop.is_set():
            attempt += 1
            try:
                await asyncio.to_thread(server.restart)
            except ServerError as exc:
                stats.failed_attempts += 1
                log.error(
                    "nats_restart_failed",
                    attempt=attempt,
                    error=str(exc)[-300:],
                    retry_in_s=round(delay, 2),
                )
                await _sleep_unless(stop, delay)
                delay = min(delay * 2, max_backoff_s)
                continue
            down = time.monotonic() - t0
            stats.restarts += 1
            stats.down_s += down
            log.warning(
                "nats_server_restarted",
                url=server.url,
                pid=server.proc.pid if server.proc else None,
                attempt=attempt,
                down_s=round(down, 2),
                restarts=stats.restarts,
            )
            break
    return stats
