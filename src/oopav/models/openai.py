"""``openai:<base_url>#<model>``: any OpenAI-compatible chat-completions server.

vLLM (``vllm serve``), llama.cpp's server and Ollama all speak it. ``base_url`` is what an
OpenAI client takes (usually ending in ``/v1``). Structured output:

- a bare JSON answer (``request.envelope is None``) goes through ``response_format`` with a
  ``json_schema`` (understood by all three servers);
- an enveloped answer cannot be a JSON schema, so it goes as vLLM's
  ``structured_outputs: {"grammar": <EBNF>}`` (built by xgrammar when it is installed); other
  servers ignore the field and the strict parser catches what they get wrong.

``OOPAV_STRUCTURED_OUTPUTS`` = ``auto`` (default) | ``response_format`` | ``none`` narrows that.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx

from oopav.logging import get_logger
from oopav.models.base import ModelError, ModelRequest, ModelResponse

log = get_logger("oopav.models.openai")

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class OpenAIBackend:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 20.0,
        structured: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.spec = f"openai:{base_url}#{model}"
        self.base_url = base_url.rstrip("/")
        self.model = model
        key = api_key or os.environ.get("OOPAV_API_KEY") or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.structured = structured or os.environ.get("OOPAV_STRUCTURED_OUTPUTS") or "auto"
        if self.structured not in ("auto", "response_format", "none"):
            raise ModelError(
                "invalid_spec",
                f"OOPAV_STRUCTURED_OUTPUTS={self.structured!r}: use auto, response_format or none",
            )
        from oopav.models.capabilities import Capabilities

        # The envelope grammar goes as vLLM's structured_outputs only in `auto` mode.
        self.capabilities = Capabilities(
            grammar=self.structured == "auto", logprobs=True, tools=True
        )
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            transport=transport,
        )

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The chat-completions request body for ``request``."""
        s = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
        }
        if s.stop:
            body["stop"] = list(s.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.schema is not None and self.structured != "none":
            if request.envelope is None:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.role, "schema": request.schema, "strict": True},
                }
            elif self.structured == "auto":
                ebnf = _envelope_ebnf(request)
                if ebnf is not None:
                    body["structured_outputs"] = {"grammar": ebnf}
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = self.body(request)
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                resp = await self._client.post(url, json=body)
            except httpx.TimeoutException as exc:
                error = ModelError(
                    "timeout", f"{url} did not answer in time ({type(exc).__name__})"
                )
                retry_after = None
            except httpx.ConnectError as exc:
                # Nobody listening: retrying only delays the one-line answer the user needs.
                raise ModelError(
                    "unavailable",
                    f"cannot reach {self.base_url}: {exc or type(exc).__name__}; is the server running?",
                ) from None
            except httpx.TransportError as exc:
                error = ModelError(
                    "unavailable",
                    f"cannot reach {self.base_url}: {exc or type(exc).__name__}; is the server running?",
                )
                retry_after = None
            else:
                latency_ms = (time.perf_counter() - started) * 1000
                if resp.status_code == 200:
                    return _parse_completion(resp, latency_ms, url)
                error = _http_error(resp, self.model, url)
                if resp.status_code not in _RETRY_STATUS:
                    raise error
                retry_after = _retry_after(resp)
            if attempt >= self.max_retries:
                raise error
            delay = min(self.max_backoff_s, retry_after or self.backoff_s * 2**attempt)
            log.warning(
                "model_call_retry", url=url, error=str(error), attempt=attempt + 1, delay_s=delay
            )
            attempt += 1
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        await self._client.aclose()


def _envelope_ebnf(request: ModelRequest) -> str | None:
    try:
        from oopav.models.grammar import request_ebnf

        return request_ebnf(request)
    except ModelError as exc:
        if exc.kind != "missing_dependency":
            raise
        return None


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _error_text(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:200]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:300]
        if "message" in data:
            return str(data["message"])[:300]
        return str(err)[:300]
    return str(data)[:300]


def _http_error(resp: httpx.Response, model: str, url: str) -> ModelError:
    code = resp.status_code
    text = _error_text(resp)
    low = text.lower()
    if code in (401, 403):
        return ModelError("auth", f"{url} refused the API key ({code}); set OOPAV_API_KEY: {text}")
    if code == 429:
        return ModelError("rate_limited", f"{url} is rate limiting (429) after retries: {text}")
    if code >= 500:
        return ModelError("server_error", f"{url} failed with {code}: {text}")
    if (
        ("context" in low and ("length" in low or "window" in low))
        or "too long" in low
        or ("maximum" in low and "tokens" in low)
    ):
        return ModelError("context_length", f"the prompt does not fit model {model!r}: {text}")
    if code == 404 or ("model" in low and ("not exist" in low or "not found" in low)):
        return ModelError("not_found", f"model {model!r} is not served at {url} ({code}): {text}")
    return ModelError("bad_request", f"{url} rejected the request ({code}): {text}")


def _parse_completion(resp: httpx.Response, latency_ms: float, url: str) -> ModelResponse:
    try:
        data = resp.json()
        choice = data["choices"][0]
        text = choice["message"]["content"]
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise TypeError("content is not a string")
        usage = data.get("usage") or {}
        return ModelResponse(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_ms=latency_ms,
            finish_reason=str(choice.get("finish_reason") or "stop"),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelError(
            "bad_response",
            f"{url} answered 200 but not a chat completion ({type(exc).__name__}: {exc}): "
            f"{resp.text[:120]!r}",
        ) from None
