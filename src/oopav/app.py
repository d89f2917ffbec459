"""Wiring shared by the commands: which NATS server to use, and connecting to it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from nats.aio.client import Client as NATS

from oopav.bus import staging
from oopav.bus.errors import NatsUnavailable
from oopav.bus.server import (
    EmbeddedServer,
    adopt_running,
    release_if_last,
    server_url,  # noqa: F401  (re-exported: the CLI's lookup)
)
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import ensure_streams
from oopav.config import Settings
from oopav.projections.store import SnapshotStore


class NoServer(RuntimeError):
    pass


@contextlib.contextmanager
def structlog_quiet() -> Iterator[None]:
    """Silence the embedded server's start-up line for a command that only reads."""
    import logging

    import structlog

    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    try:
        yield
    finally:
        structlog.configure(**saved)


@dataclass
class Bus:
    nc: NATS
    url: str
    events: EventStore
    settings: Settings
    embedded: EmbeddedServer | None = None
    _snapshots: SnapshotStore | None = None

    @property
    def snapshots(self) -> SnapshotStore:
        if self._snapshots is None:
            self._snapshots = SnapshotStore(self.settings.snapshots_dir)
        return self._snapshots


@contextlib.asynccontextmanager
async def open_bus(
    settings: Settings,
    *,
    embedded: bool = False,
    setup: bool = True,
    name: str = "oopav",
    give_up_after: float | None = None,
    owns_server: bool = False,
) -> AsyncIterator[Bus]:
    """Connect to the configured server; with ``embedded``, start one when none is configured.

    ``give_up_after``: seconds a lost connection is retried before the process gives up
    (``inf``: never; None: the short default of one-shot commands). ``owns_server``: stop the
    embedded server at the end even when other clients still use it (``oopav up``); otherwise
    the last oopav process using an embedded server whose starter is gone stops it."""
    url = settings.nats_url
    server: EmbeddedServer | None = None
    attached = False
    if url is None:
        url = adopt_running(settings.nats_store_dir)
        attached = url is not None
        if attached:
            # Its streams stage batches in memory: a stream this process creates does too.
            staging.register(settings.nats_store_dir)
    # After `oopav run` exits, its store is still there: read commands (show, sessions,
    # replay) start the embedded server on demand instead of asking for `oopav up`.
    on_demand = url is None and not embedded and (settings.nats_store_dir / "jetstream").is_dir()
    quiet = on_demand or not owns_server
    if url is None:
        if not embedded and not on_demand:
            raise NoServer(
                "no NATS server: start one with `oopav up` (embedded) or pass --nats-url / "
                "OOPAV_NATS_URL for an existing server"
            )
        server = EmbeddedServer(settings.nats_store_dir, sync=settings.nats_sync)
        # Only `oopav up` (which owns its server) announces it; for a one-shot command the
        # embedded server is a detail, and its log lines would land over the command's output.
        with structlog_quiet() if quiet else contextlib.nullcontext():
            url = server.start()
    try:
        try:
            nc = await connect(url, name=name, give_up_after=give_up_after)
        except NatsUnavailable:
            raise
        bus = Bus(nc=nc, url=url, events=EventStore(nc), settings=settings, embedded=server)
        try:
            if setup:
                await _set_up(bus, give_up_after)
            # Signed history (history/signing.py): what this process appends is signed with
            # the keys of its data dir, registered with the notary of this server.
            from oopav.history.signing import open_keyring

            await open_keyring(nc, bus.events.js, settings.data_dir / "keys")
            yield bus
        finally:
            with contextlib.suppress(Exception):
                await nc.drain()
            if bus._snapshots is not None:
                bus._snapshots.close()
    finally:
        if server is not None:
            with structlog_quiet() if quiet else contextlib.nullcontext():
                server.stop(only_if_unused=not owns_server)
        elif attached:
            release_if_last(settings.nats_store_dir)


async def _set_up(bus: Bus, give_up_after: float | None) -> None:
    """Create or update the streams. A long-running process (``give_up_after`` set) that
    connected just as the server went down — a handler restarted during an outage — waits
    for the server like its connection does, instead of dying with a traceback at start-up
    (seen in bench/chaos.py: the restarted verifier's stream lookup timed out). A one-shot
    command fails at once (``run_async`` says why in one line)."""
    import asyncio
    import time

    import nats.errors

    from oopav.logging import get_logger

    deadline = time.monotonic() + (give_up_after if give_up_after is not None else 0.0)
    pause = 0.5
    while True:
        try:
            await ensure_streams(bus.events.js)
            return
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as exc:
            if give_up_after is None or time.monotonic() + pause > deadline:
                raise
            get_logger("oopav.bus").warning(
                "nats_setup_waiting", url=bus.url, error=type(exc).__name__, retry_in=pause
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 10.0)
