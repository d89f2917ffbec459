"""``vllm:<model path>``: the in-process vLLM engine (the ``[gpu]`` extra, imported lazily).

Prefix caching is on, so the static prefix of the prompt contract is computed once per engine.
The request's schema goes through vLLM's structured outputs: ``json=`` for a bare JSON answer,
``grammar=`` (the EBNF of :mod:`oopav.models.grammar`) for the full envelope. vLLM releases
before 0.11 call the same thing ``guided_decoding=GuidedDecodingParams(...)``; both are handled.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from oopav.models.base import ModelError, ModelRequest, ModelResponse
from oopav.models.grammar import DEFAULT_THINK_CHARS, request_ebnf, require


class VLLMBackend:
    def __init__(
        self,
        model: str,
        *,
        think_chars: int = DEFAULT_THINK_CHARS,
        seed: int = 0,
        **engine_kwargs: Any,
    ) -> None:
        self.spec = f"vllm:{model}"
        vllm = require("vllm", "gpu")
        self._vllm = vllm
        self.think_chars = think_chars
        kwargs: dict[str, Any] = {"enable_prefix_caching": True, "seed": seed}
        kwargs.update(engine_kwargs)
        try:
            self.llm = vllm.LLM(model=model, **kwargs)
        except (OSError, ValueError) as exc:
            raise ModelError("not_found", f"vLLM cannot load {model!r}: {exc}") from exc
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        from oopav.models.capabilities import Capabilities

        self.capabilities = Capabilities(
            grammar=True, logprobs=True, context_tokens=self.max_model_len
        )
        # LLM.generate is synchronous and not re-entrant: one call at a time, off the event loop.
        self._lock = threading.Lock()

    def sampling_params(self, request: ModelRequest) -> Any:
        s = request.sampling
        kwargs: dict[str, Any] = {
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "seed": request.seed,
        }
        if s.stop:
            kwargs["stop"] = list(s.stop)
        if request.schema is not None:
            spec: dict[str, Any]
            if request.envelope is None:
                spec = {"json": request.schema}
            else:
                spec = {"grammar": request_ebnf(request, think_chars=self.think_chars)}
            kwargs.update(_structured_kwargs(self._vllm, spec))
        return self._vllm.SamplingParams(**kwargs)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self._generate, request)

    def _generate(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        msgs = [{"role": m.role, "content": m.content} for m in request.messages]
        prompt = self.tokenizer.apply_chat_template(
            msgs, tokenize=False, add_generation_prompt=True
        )
        n_prompt = len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if n_prompt + request.sampling.max_tokens > self.max_model_len:
            raise ModelError(
                "context_length",
                f"prompt ({n_prompt} tokens) + max_tokens ({request.sampling.max_tokens}) exceed "
                f"max_model_len {self.max_model_len}; shorten the context pack",
            )
        params = self.sampling_params(request)
        with self._lock:
            outputs = self.llm.generate([prompt], params, use_tqdm=False)
        out = outputs[0]
        completion = out.outputs[0]
        return ModelResponse(
            text=completion.text,
            prompt_tokens=len(out.prompt_token_ids or []),
            completion_tokens=len(completion.token_ids),
            latency_ms=(time.perf_counter() - started) * 1000,
            finish_reason=str(completion.finish_reason or "stop"),
        )

    async def aclose(self) -> None:
        return None


def _structured_kwargs(vllm: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``structured_outputs=StructuredOutputsParams(...)`` (vLLM >= 0.11) or the older
    ``guided_decoding=GuidedDecodingParams(...)``."""
    params_mod = require("vllm.sampling_params", "gpu")
    if hasattr(params_mod, "StructuredOutputsParams"):
        return {"structured_outputs": params_mod.StructuredOutputsParams(**spec)}
    if hasattr(params_mod, "GuidedDecodingParams"):
        return {"guided_decoding": params_mod.GuidedDecodingParams(**spec)}
    raise ModelError(
        "missing_dependency",
        f"vllm {getattr(vllm, '__version__', '?')} has no structured outputs; install vllm>=0.10",
    )
