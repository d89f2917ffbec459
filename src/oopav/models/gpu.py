"""GPU budget and out-of-memory recovery for local transformers backends (``hf:`` on CUDA).

- **Budget**: at most ``OOPAV_GPU_CONCURRENCY`` generations at once per device (default 1),
  across every backend of the process: two policies on ``cuda:0`` queue for it instead of
  both allocating at once. Waiting is bounded by the caller's own deadlines (the phase budget).
- **Out of memory**: a generation that fails for lack of device memory is retried smaller —
  ``max_tokens`` halved (never below ``min_tokens``) and the longest message cut to three
  quarters, its head and tail kept around a marker — at most ``max_shrinks`` times, after the
  device's cache is emptied. Each retry is a note on the response, which ``model_called``
  records (``notes``), so a session shows that and how its answer was shrunk. Replay serves the
  recorded answer by the original request's hash and needs no GPU.

The registry wraps any backend whose ``device`` is a CUDA device (``hf:``); on the CPU nothing
changes. vLLM schedules and batches its own requests inside a fixed memory share
(``gpu_memory_utilization``), so ``vllm:`` is not wrapped. Attribute access falls through to
the wrapped backend."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import msgspec

from oopav.logging import get_logger
from oopav.models.base import Message, ModelError, ModelRequest, ModelResponse

log = get_logger("oopav.models.gpu")

_SEMAPHORES: dict[str, asyncio.Semaphore] = {}
CUT_MARKER = "\n[... cut to fit device memory ...]\n"


def device_slots(device: str, limit: int | None = None) -> asyncio.Semaphore:
    """The process-wide semaphore of ``device`` (created with ``limit``, else
    ``OOPAV_GPU_CONCURRENCY``, else 1)."""
    if device not in _SEMAPHORES:
        n = limit or int(os.environ.get("OOPAV_GPU_CONCURRENCY") or 1)
        _SEMAPHORES[device] = asyncio.Semaphore(max(1, n))
    return _SEMAPHORES[device]


def is_oom(exc: BaseException) -> bool:
    """A device out-of-memory error, whichever library raised it."""
    if isinstance(exc, ModelError):
        return exc.kind == "oom"
    name = type(exc).__name__
    return name == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def shrink(request: ModelRequest, min_tokens: int = 64) -> tuple[ModelRequest, str]:
    """A smaller request: half the completion budget, the longest message cut to 3/4."""
    tokens = max(min_tokens, request.sampling.max_tokens // 2)
    messages = list(request.messages)
    longest = max(range(len(messages)), key=lambda i: len(messages[i].content), default=None)
    cut = ""
    if longest is not None and len(messages[longest].content) > 400:
        text = messages[longest].content
        keep = (len(text) * 3 // 4) // 2
        messages[longest] = Message(
            role=messages[longest].role, content=text[:keep] + CUT_MARKER + text[-keep:]
        )
        cut = f", message {longest} cut from {len(text)} to {2 * keep} characters"
    sampling = msgspec.structs.replace(request.sampling, max_tokens=tokens)
    note = f"max_tokens {request.sampling.max_tokens} -> {tokens}{cut}"
    return msgspec.structs.replace(request, messages=messages, sampling=sampling), note


def _empty_cache() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # no torch, or no device: nothing to free
        pass


class GuardedBackend:
    """``inner`` under its device's budget, with out-of-memory recovery (module docstring)."""

    def __init__(
        self,
        inner: Any,
        device: str,
        *,
        max_shrinks: int = 2,
        min_tokens: int = 64,
        slots: asyncio.Semaphore | None = None,
    ) -> None:
        self.inner = inner
        self.device = device
        self.spec = inner.spec
        self.capabilities = getattr(inner, "capabilities", None)
        self.max_shrinks = max_shrinks
        self.min_tokens = min_tokens
        self._slots = slots

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        slots = self._slots or device_slots(self.device)
        notes: list[str] = []
        async with slots:
            current = request
            while True:
                try:
                    resp = await self.inner.complete(current)
                except Exception as exc:
                    if not is_oom(exc):
                        raise
                    if len(notes) >= self.max_shrinks:
                        raise ModelError(
                            "oom",
                            f"{self.device} ran out of memory even after {len(notes)} smaller "
                            f"retries ({'; '.join(notes) or 'none'}): {exc}",
                        ) from None
                    _empty_cache()
                    current, note = shrink(current, self.min_tokens)
                    notes.append(f"out of memory on {self.device}; retried with {note}")
                    log.warning("gpu_oom_retry", device=self.device, note=note)
                    continue
                if notes:
                    resp = msgspec.structs.replace(resp, notes=[*resp.notes, *notes])
                return resp

    async def aclose(self) -> None:
        await self.inner.aclose()


def guard_if_gpu(backend: Any) -> Any:
    """``backend`` wrapped when it sits on a CUDA device; unchanged otherwise."""
    device = str(getattr(backend, "device", "") or "")
    return GuardedBackend(backend, device) if device.startswith("cuda") else backend
