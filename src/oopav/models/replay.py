"""``replay:<session>``: serve recorded ``model_called`` events back by request hash.

A request that was never recorded is a ``replay_miss`` naming the first field where it differs
from the nearest recorded request (``messages[3].content``), which is what replay needs to
report why a run diverged (DESIGN invariant 5).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from oopav.events.catalog import Event, ModelCalled
from oopav.models.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    request_from_builtins,
    request_hash,
    request_to_builtins,
)

EventLoader = Callable[[str], Awaitable[Sequence[Event] | Sequence[tuple[int, Event]]]]


class ReplayBackend:
    def __init__(self, calls: Iterable[ModelCalled], *, spec: str = "replay:<events>") -> None:
        self.spec = spec
        from oopav.models.capabilities import DECLARED

        self.capabilities = DECLARED["replay"]
        self._queues: dict[str, deque[ModelCalled]] = defaultdict(deque)
        self._recorded: list[dict[str, Any]] = []
        self._loader: Callable[[], Awaitable[list[ModelCalled]]] | None = None
        self._lock = asyncio.Lock()
        self._index(calls)

    def _index(self, calls: Iterable[ModelCalled]) -> None:
        for ev in calls:
            # Re-hash from the stored request rather than trusting request_hash: a hash scheme
            # change would otherwise make every lookup miss silently.
            key = request_hash(ev.request)
            self._queues[key].append(ev)
            self._recorded.append(request_to_builtins(request_from_builtins(ev.request)))

    @classmethod
    def from_events(
        cls, events: Iterable[Event | tuple[int, Event]], *, spec: str = "replay:<events>"
    ) -> ReplayBackend:
        """Index the ``model_called`` events among ``events`` (or ``(sequence, event)`` pairs)."""
        return cls(_model_calls(events), spec=spec)

    @classmethod
    def from_session(cls, session_id: str, *, loader: EventLoader | None = None) -> ReplayBackend:
        """Load the session's events on first use through ``loader`` (default: the bus)."""
        backend = cls((), spec=f"replay:{session_id}")
        load = loader or default_loader

        async def _load() -> list[ModelCalled]:
            return _model_calls(await load(session_id))

        backend._loader = _load
        return backend

    async def _ensure_loaded(self) -> None:
        if self._loader is None:
            return
        async with self._lock:
            if self._loader is not None:
                loader, self._loader = self._loader, None
                self._index(await loader())

    async def complete(self, request: ModelRequest) -> ModelResponse:
        await self._ensure_loaded()
        key = request_hash(request)
        queue = self._queues.get(key)
        if queue:
            ev = queue.popleft()
            if ev.error:
                raise ModelError.from_recorded(ev.error)
            return ModelResponse(
                text=ev.response,
                prompt_tokens=ev.prompt_tokens,
                completion_tokens=ev.completion_tokens,
                latency_ms=ev.latency_ms,
                finish_reason=ev.finish_reason,
                backend=ev.backend or None,
            )
        if queue is not None:
            raise ModelError(
                "exhausted",
                f"request {key[:12]} ({request.role}) was recorded fewer times than it is asked now",
            )
        raise ModelError("replay_miss", self.explain_miss(request))

    def explain_miss(self, request: ModelRequest) -> str:
        wanted = request_to_builtins(request)
        if not self._recorded:
            return f"no model calls were recorded in {self.spec}"
        best: tuple[int, str] | None = None
        for rec in self._recorded:
            diffs = _differences(rec, wanted, "", limit=10_000)
            if diffs and (best is None or len(diffs) < best[0]):
                best = (len(diffs), diffs[0])
        assert best is not None  # a hash miss means every recorded request differs somewhere
        return (
            f"request {request_hash(request)[:12]} ({request.role}) was not recorded; "
            f"it first differs from the nearest recorded request at {best[1]}"
        )

    async def aclose(self) -> None:
        return None


def first_difference(a: Any, b: Any) -> str | None:
    """The path of the first field where ``a`` and ``b`` differ (``messages[3].content``)."""
    diffs = _differences(a, b, "", limit=1)
    return diffs[0] if diffs else None


def _differences(a: Any, b: Any, path: str, *, limit: int) -> list[str]:
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.append(sub)
            else:
                out += _differences(a[key], b[key], sub, limit=limit - len(out))
            if len(out) >= limit:
                break
        return out
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            sub = f"{path}[{i}]"
            if i >= len(a) or i >= len(b):
                out.append(sub)
            else:
                out += _differences(a[i], b[i], sub, limit=limit - len(out))
            if len(out) >= limit:
                break
        return out
    return [] if a == b and type(a) is type(b) else [path or "<root>"]


def _model_calls(events: Iterable[Event | tuple[int, Event]]) -> list[ModelCalled]:
    out: list[ModelCalled] = []
    for item in events:
        ev = item[1] if isinstance(item, tuple) else item
        if isinstance(ev, ModelCalled):
            out.append(ev)
    return out


async def default_loader(session_id: str) -> list[Event]:
    """Read the session's events from NATS (``OOPAV_NATS_URL``)."""
    # Imported here: the bus reader is optional at import time of oopav.models.
    from oopav.bus.reader import read_aggregate
    from oopav.config import Settings

    url = Settings().nats_url
    if not url:
        raise ModelError(
            "unavailable", "replay needs a NATS server: set OOPAV_NATS_URL (or pass --nats-url)"
        )
    pairs = await read_aggregate(url, "session", session_id)
    return [ev for _, ev in pairs]
