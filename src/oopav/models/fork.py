"""``fork:<parent>@<sequence>:<live spec>``: a backend that serves a parent session's recorded
answers up to the fork point, then a live model (``oopav replay --fork-at``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oopav.events.catalog import Event
from oopav.models.base import ModelError
from oopav.models.registry import load_backend
from oopav.models.replay import ReplayBackend


class ForkBackend:
    """Serves the parent's recorded answers while the requests match them, then goes live."""

    def __init__(self, recorded: Any, live: Any, spec: str) -> None:
        self.recorded = recorded
        self.live = live
        self.spec = spec
        from oopav.models.capabilities import DECLARED

        self.capabilities = DECLARED["fork"]
        self.live_calls = 0

    async def complete(self, request: Any) -> Any:
        if self.recorded is not None:
            try:
                return await self.recorded.complete(request)
            except ModelError as exc:
                if exc.kind not in ("replay_miss", "exhausted"):
                    raise
                self.recorded = None  # past the fork point: never go back
        if self.live is None:
            raise ModelError(
                "invalid_spec",
                f"{self.spec}: past the fork point and no live model to continue with (pass --model)",
            )
        self.live_calls += 1
        return await self.live.complete(request)

    async def aclose(self) -> None:
        if self.live is not None:
            await self.live.aclose()


def fork_backend_factory(
    spec: str, loader: Callable[[str], Any] | None = None, nats_url: str | None = None
) -> Any:
    """Build the backend for a ``fork:<parent>@<sequence>:<live spec>`` model spec."""
    body = spec.removeprefix("fork:")
    parent, _, rest = body.partition("@")
    seq_text, _, live_spec = rest.partition(":")
    at = int(seq_text)

    async def load(_: str) -> list[tuple[int, Event]]:
        from oopav.bus.reader import read_aggregate
        from oopav.bus.server import server_url
        from oopav.config import Settings

        url = nats_url or server_url(Settings())
        if url is None:
            raise RuntimeError("no NATS server to read the parent session from")
        events = await read_aggregate(url, "session", parent)
        return [(s, e) for s, e in events if s <= at]

    recorded = ReplayBackend.from_session(parent, loader=loader or load)
    live = load_backend(live_spec) if live_spec else None
    return ForkBackend(recorded, live, spec)
