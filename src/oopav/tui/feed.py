"""The TUI's live inputs from NATS, kept apart from the widgets.

- The sessions table follows the ``sessions`` projection: a ``ProjectionRunner`` resumes from
  the shared LMDB snapshots (the same store `oopav up` and `oopav sessions` keep) and calls a
  listener with ``(seq, event, state)`` for every event it folds, as the events arrive. Nothing
  re-reads the stream on a timer.
- An opened session's timeline is an ordered JetStream consumer on that session's subjects from
  its first event: history and then live events arrive through one subscription (no gap between
  a read and a subscribe), as raw bytes, so an undecodable message can be shown as such.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from nats.aio.client import Client as NATS
from nats.js.api import ConsumerConfig, DeliverPolicy

from oopav.bus.streams import aggregate_filter
from oopav.events.catalog import Event
from oopav.projections.runner import SESSIONS, ProjectionRunner
from oopav.projections.session import SessionState
from oopav.projections.store import SnapshotStore

StateListener = Callable[[int, Event, SessionState], None]
RawListener = Callable[[int, str, bytes], None]


class Feed:
    """The sessions projection and per-session event subscriptions over one connection."""

    def __init__(self, nc: NATS, snapshots: SnapshotStore, url: str = "") -> None:
        self.nc = nc
        self.url = url or (str(nc.connected_url.geturl()) if nc.connected_url else "")
        self.snapshots = snapshots
        self._listeners: list[StateListener] = []
        self.runner = self._new_runner()

    def _new_runner(self) -> ProjectionRunner[SessionState]:
        return ProjectionRunner(self.nc, self.snapshots, SESSIONS, listeners=[self._dispatch])

    @classmethod
    def from_bus(cls, bus: Any) -> Feed:
        """From an ``oopav.app.Bus`` (typed loosely to keep this module's imports light)."""
        return cls(bus.nc, bus.snapshots, bus.url)

    # -- the sessions projection ---------------------------------------------------------------

    def listen(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    def _dispatch(self, seq: int, event: Event, state: SessionState) -> None:
        for listener in self._listeners:
            listener(seq, event, state)

    def stored_states(self) -> Iterator[tuple[str, SessionState]]:
        """The snapshots the runner resumes from; the runner delivers only what follows them."""
        if self.runner.snapshots.valid():
            yield from self.runner.snapshots.items()

    def stop(self) -> None:
        self.runner.stop()

    def restart(self) -> None:
        """Stop the runner and make a fresh one (the caller runs it). It resumes from the
        snapshots, and the fold ignores events a state already holds."""
        self.runner.stop()
        self.runner = self._new_runner()

    @property
    def skipped(self) -> int:
        """Undecodable events the projection skipped (they are parked, not lost)."""
        return self.runner.skipped

    @property
    def position(self) -> int:
        return self.runner.position

    # -- one session's raw events ------------------------------------------------------------

    async def subscribe_session(self, session_id: str, listener: RawListener) -> Any:
        """Deliver ``(seq, subject, data)`` for every event of the session, past and future.
        Returns the subscription; ``close(sub)`` ends it."""

        async def on_msg(msg: Any) -> None:
            listener(msg.metadata.sequence.stream, msg.subject, msg.data)

        js = self.nc.jetstream()
        return await js.subscribe(
            aggregate_filter("session", session_id),
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
            config=ConsumerConfig(),
            cb=on_msg,
        )

    @staticmethod
    async def close(sub: Any) -> None:
        # With the server gone an unsubscribe cannot be acknowledged: do not wait for it.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(sub.unsubscribe(), 2)

    # -- connection --------------------------------------------------------------------------

    def connection(self) -> str:
        """``connected``, ``reconnecting`` or ``closed``."""
        if self.nc.is_connected:
            return "connected"
        if self.nc.is_closed:
            return "closed"
        return "reconnecting"
