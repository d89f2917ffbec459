"""An endpoint pool for OpenAI-compatible servers: ``openai:<url1>|<url2>|…#<model>``.

Several servers that serve the same model (vLLM replicas, a local llama.cpp beside a remote
vLLM) behind one spec. Per call the pool tries the healthy endpoints in order, the one that
answered last first; an endpoint that fails in a way another server could fix (nobody
listening, a time-out, a 5xx or 429 after its own retries) is marked down and cools off with
exponential backoff (``cooldown_s`` doubling to ``max_cooldown_s``), and the call fails over to
the next. When every endpoint is down, the one whose cool-off ends first is tried anyway, so the
pool never refuses to try. Errors that no other server would fix (a bad request, an unknown
model, a refused key, a prompt over the context) are raised at once.

``health()`` asks each endpoint's ``GET /models`` (with its own short deadline) and reports which
are up and whether they serve the model: what ``oopav models check`` prints, and how a down
endpoint is put back early. The endpoint that answered is recorded in ``model_called.backend``,
so a session shows which server served each call; replay serves calls by request hash, so it
needs none of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from oopav.logging import get_logger
from oopav.models.base import ModelError, ModelRequest, ModelResponse
from oopav.models.openai import OpenAIBackend

log = get_logger("oopav.models.pool")

# Failures another endpoint may not have; anything else is the request's own fault.
FAILOVER_KINDS = frozenset(
    {"unavailable", "timeout", "server_error", "rate_limited", "bad_response"}
)


@dataclass
class Endpoint:
    backend: OpenAIBackend
    down_until: float = 0.0
    failures: int = 0
    last_error: str = ""
    served: int = 0

    @property
    def url(self) -> str:
        return self.backend.base_url


@dataclass
class EndpointPool:
    """The backend for a ``|``-separated list of base URLs (see the module docstring)."""

    urls: list[str]
    model: str
    cooldown_s: float = 2.0
    max_cooldown_s: float = 60.0
    health_timeout_s: float = 2.0
    options: dict[str, Any] = field(default_factory=dict)
    clock: Any = time.monotonic

    def __post_init__(self) -> None:
        if not self.urls:
            raise ModelError("invalid_spec", "an endpoint pool needs at least one base URL")
        self.spec = f"openai:{'|'.join(self.urls)}#{self.model}"
        from oopav.models.capabilities import DECLARED

        self.capabilities = DECLARED["openai"]
        # Each endpoint retries less on its own: the pool's failover is the better retry.
        opts = {"max_retries": 1, **self.options}
        self.endpoints = [Endpoint(OpenAIBackend(u, self.model, **opts)) for u in self.urls]
        self._preferred = 0

    def order(self) -> list[Endpoint]:
        """The endpoints to try, healthy ones first (the last to answer leads), then the
        cooling ones by when their cool-off ends."""
        now = self.clock()
        n = len(self.endpoints)
        rotated = [self.endpoints[(self._preferred + i) % n] for i in range(n)]
        healthy = [e for e in rotated if e.down_until <= now]
        cooling = sorted((e for e in rotated if e.down_until > now), key=lambda e: e.down_until)
        return healthy + cooling

    def _mark_down(self, ep: Endpoint, error: ModelError) -> None:
        ep.failures += 1
        ep.last_error = str(error)
        cool = min(self.max_cooldown_s, self.cooldown_s * 2 ** (ep.failures - 1))
        ep.down_until = self.clock() + cool
        log.warning("endpoint_down", url=ep.url, error=str(error)[:200], cooldown_s=cool)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        errors: list[str] = []
        for ep in self.order():
            try:
                resp = await ep.backend.complete(request)
            except ModelError as exc:
                if exc.kind not in FAILOVER_KINDS:
                    raise
                self._mark_down(ep, exc)
                errors.append(f"{ep.url}: {exc}")
                continue
            ep.failures, ep.down_until, ep.last_error = 0, 0.0, ""
            ep.served += 1
            self._preferred = self.endpoints.index(ep)
            return msgspec_replace(resp, backend=f"openai:{ep.url}#{self.model}")
        raise ModelError(
            "unavailable",
            f"no endpoint of the pool answered ({len(errors)} tried): " + "; ".join(errors),
        )

    async def health(self) -> list[dict[str, Any]]:
        """Each endpoint: ``up`` (``GET /models`` answered 200), ``serves`` (the model is in its
        list), the time it took, and its pool state. An endpoint that is up and serves the
        model is put back into rotation at once."""
        out = []
        async with httpx.AsyncClient(timeout=self.health_timeout_s) as client:
            for ep in self.endpoints:
                started = time.perf_counter()
                row: dict[str, Any] = {"url": ep.url, "up": False, "serves": False}
                try:
                    resp = await client.get(f"{ep.url}/models")
                    row["up"] = resp.status_code == 200
                    if row["up"]:
                        ids = [m.get("id") for m in (resp.json().get("data") or [])]
                        row["serves"] = self.model in ids
                    else:
                        row["error"] = f"GET /models answered {resp.status_code}"
                except (httpx.HTTPError, ValueError, AttributeError) as exc:
                    row["error"] = f"{type(exc).__name__}: {exc}"[:200]
                row["ms"] = round((time.perf_counter() - started) * 1000, 1)
                if row["up"] and row["serves"]:
                    ep.down_until, ep.failures = 0.0, 0
                row["down_for_s"] = round(max(0.0, ep.down_until - self.clock()), 2)
                row["served"] = ep.served
                out.append(row)
        return out

    async def aclose(self) -> None:
        for ep in self.endpoints:
            await ep.backend.aclose()


def msgspec_replace(resp: ModelResponse, **changes: Any) -> ModelResponse:
    import msgspec

    return msgspec.structs.replace(resp, **changes)
