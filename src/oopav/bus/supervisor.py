"""Supervision of the embedded server by the process that started it (``oopav up``).

If the nats-server child dies (a SIGKILL, the OOM killer, a crash), it is started again on the
same port and store, with exponential backoff between failed attempts, each step logged
(``nats_server_died``, ``nats_server_restarted``, ``nats_restart_failed``). The handlers'
connections retry the same url meanwhile and resume where their durable consumers left off,
so sessions in flight complete. A server given to oopav with ``--nats-url`` is not ours and is
never supervised.

A full disk is the other way a server stops working while its process lives: a stream whose
write failed (``Critical write error … no space left on device`` in its log) answers no more
publishes, even after space returns, until the server restarts. The supervisor watches the log
for that line and, once the data directory is over its free-space watermark again
(bus/storage.py), restarts the server the same way (``nats_store_write_error``)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from oopav.bus import storage
from oopav.bus.server import EmbeddedServer, ServerError
from oopav.logging import get_logger

log = get_logger("oopav.bus.supervisor")


@dataclass
class SupervisorStats:
    restarts: int = 0
    failed_attempts: int = 0
    down_s: float = 0.0
    write_errors: int = 0


WRITE_ERROR = "critical write error"
# Free space needed, besides the watermark, before a server with a failed write is restarted.
MIN_RESTART_FREE = 1 << 20


class _LogWatch:
    """New lines of the server's log, read from where the last look stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.offset = path.stat().st_size
        except OSError:
            self.offset = 0

    def write_error(self) -> bool:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(1 << 20)
        except OSError:
            return False
        self.offset += len(chunk)
        return WRITE_ERROR in chunk.decode(errors="replace").lower()


def _space_back(server: EmbeddedServer) -> bool:
    mark = storage.configured() or storage.Watermark(server.store_dir, 0)
    reading = mark.read()
    return not reading.full and reading.free >= MIN_RESTART_FREE


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
    watch = _LogWatch(server.store_dir / "nats-server.log")
    write_error = False
    while not stop.is_set():
        if server.proc is None:  # stopped by its owner: nothing to watch
            return stats
        status = server.died()
        if status is None:
            if not write_error and watch.write_error():
                write_error = True
                stats.write_errors += 1
                log.error("nats_store_write_error", store=str(server.store_dir))
            if write_error and _space_back(server):
                # Its streams refuse writes until a restart: stop it; the loop restarts it.
                log.warning("nats_store_write_error_restarting", url=server.url)
                proc = server.proc
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    await asyncio.to_thread(_wait, proc, 10.0)
                write_error = False
                continue
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


def _wait(proc: object, timeout: float) -> None:
    import subprocess

    try:
        proc.wait(timeout=timeout)  # type: ignore[attr-defined]
    except subprocess.TimeoutExpired:
        proc.kill()  # type: ignore[attr-defined]
        proc.wait()  # type: ignore[attr-defined]
