"""GPU budget and out-of-memory recovery (oopav.models.gpu), with a backend that raises OOM the
way torch does; no GPU needed."""

from __future__ import annotations

import asyncio

import pytest

from oopav.models.base import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Sampling,
    model_called_fields,
)
from oopav.models.gpu import CUT_MARKER, GuardedBackend, guard_if_gpu


class OutOfMemoryError(RuntimeError):
    """Named as torch.cuda's is."""


class Hungry:
    """Fails with OOM while the request asks for more than ``fits`` tokens of output."""

    spec = "hf:hungry"
    device = "cuda:0"

    def __init__(self, fits: int) -> None:
        self.fits = fits
        self.seen: list[ModelRequest] = []
        self.running = 0
        self.peak = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.seen.append(request)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(0.01)
            if request.sampling.max_tokens > self.fits:
                raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return ModelResponse(text="ok", completion_tokens=3)
        finally:
            self.running -= 1

    async def aclose(self) -> None:
        return None


def _req(tokens: int = 1024) -> ModelRequest:
    return ModelRequest(
        role="actor",
        messages=[Message(role="system", content="s"), Message(role="user", content="x" * 4000)],
        sampling=Sampling(max_tokens=tokens),
    )


async def test_oom_retries_smaller_and_the_call_records_how() -> None:
    inner = Hungry(fits=300)
    backend = GuardedBackend(inner, "cuda:0", slots=asyncio.Semaphore(1))
    resp = await backend.complete(_req(1024))
    assert resp.text == "ok"
    assert [r.sampling.max_tokens for r in inner.seen] == [1024, 512, 256]
    assert CUT_MARKER in inner.seen[1].messages[1].content
    assert len(inner.seen[2].messages[1].content) < len(inner.seen[1].messages[1].content) < 4000
    second = len(inner.seen[1].messages[1].content)
    assert resp.notes[0] == (
        "out of memory on cuda:0; retried with max_tokens 1024 -> 512, "
        "message 1 cut from 4000 to 3000 characters"
    )
    assert resp.notes[1].startswith(
        f"out of memory on cuda:0; retried with max_tokens 512 -> 256, message 1 cut from {second}"
    )
    assert len(resp.notes) == 2
    # model_called keeps the original request (its hash is what replay serves by) and the notes.
    fields = model_called_fields(_req(1024), resp, backend.spec)
    assert fields["request"]["sampling"]["max_tokens"] == 1024
    assert fields["notes"] == resp.notes


async def test_oom_past_the_shrinks_is_a_model_error_naming_them() -> None:
    backend = GuardedBackend(Hungry(fits=10), "cuda:0", max_shrinks=2, slots=asyncio.Semaphore(1))
    with pytest.raises(ModelError) as err:
        await backend.complete(_req(1024))
    assert err.value.kind == "oom"
    assert "after 2 smaller retries" in str(err.value) and "1024 -> 512" in str(err.value)


async def test_other_errors_pass_through_untouched() -> None:
    class Broken(Hungry):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            raise ValueError("tokenizer exploded")

    with pytest.raises(ValueError, match="tokenizer exploded"):
        await GuardedBackend(Broken(1), "cuda:0", slots=asyncio.Semaphore(1)).complete(_req())


async def test_the_device_budget_bounds_concurrent_generations() -> None:
    inner = Hungry(fits=10_000)
    slots = asyncio.Semaphore(2)
    backends = [GuardedBackend(inner, "cuda:0", slots=slots) for _ in range(3)]
    await asyncio.gather(*(b.complete(_req(100)) for b in backends for _ in range(3)))
    assert len(inner.seen) == 9 and inner.peak == 2


def test_only_a_cuda_backend_is_wrapped() -> None:
    cpu = Hungry(1)
    cpu.device = "cpu"  # type: ignore[misc]
    assert guard_if_gpu(cpu) is cpu
    wrapped = guard_if_gpu(Hungry(1))
    assert isinstance(wrapped, GuardedBackend) and wrapped.fits == 1  # attributes fall through
