"""``load_backend(spec)``: a backend from a spec string (``--model`` / ``OOPAV_MODEL``).

| spec                            | backend                                  |
| ------------------------------- | ---------------------------------------- |
| ``scripted:<file.json|.yaml>``  | :class:`ScriptedBackend`                 |
| ``replay:<session id>``         | :class:`ReplayBackend` (events from NATS)|
| ``openai:<base_url>#<model>``   | :class:`OpenAIBackend`                   |
| ``vllm:<model path>``           | :class:`VLLMBackend` (``[gpu]`` extra)   |
| ``hf:<model path>``             | :class:`HFBackend` (``[train]`` extra)   |
| ``synth:[<fallback spec>]``     | :class:`SynthBackend` (rules by example) |

Heavy backends are imported only when their spec is loaded.
"""

from __future__ import annotations

import os
from typing import Any

from oopav.models.base import Backend, ModelError
from oopav.models.replay import EventLoader

SCHEMES: tuple[str, ...] = ("scripted", "replay", "openai", "vllm", "hf", "synth")


def resolve_spec(spec: str | None) -> str:
    spec = spec or os.environ.get("OOPAV_MODEL")
    if not spec:
        raise ModelError(
            "invalid_spec", "no model: pass --model SPEC or set OOPAV_MODEL (see docs/models.md)"
        )
    return spec


def load_backend(
    spec: str | None = None, *, replay_loader: EventLoader | None = None, **options: Any
) -> Backend:
    """Build the backend named by ``spec`` (default ``$OOPAV_MODEL``); ``options`` go to its
    constructor (e.g. ``max_retries`` for openai, ``device`` for hf, engine kwargs for vllm)."""
    spec = resolve_spec(spec)
    scheme, sep, rest = spec.partition(":")
    if scheme == "synth" and sep:
        from oopav.models.synth import SynthBackend

        # ``synth:<spec>``: the model that takes over when no rule fits the examples.
        fallback = load_backend(rest, replay_loader=replay_loader, **options) if rest else None
        return SynthBackend(spec, fallback=fallback)
    if not sep or not rest or scheme not in SCHEMES:
        raise ModelError(
            "invalid_spec",
            f"bad model spec {spec!r}: expected one of {', '.join(s + ':…' for s in SCHEMES)}",
        )
    if scheme == "scripted":
        from oopav.models.scripted import ScriptedBackend

        return ScriptedBackend.from_file(rest)
    if scheme == "replay":
        from oopav.models.replay import ReplayBackend

        return ReplayBackend.from_session(rest, loader=replay_loader)
    if scheme == "openai":
        base_url, hash_, model = rest.rpartition("#")
        if not hash_ or not base_url or not model:
            raise ModelError(
                "invalid_spec",
                f"bad openai spec {spec!r}: expected openai:<base_url>#<model>, "
                "e.g. openai:http://localhost:8000/v1#Qwen/Qwen2.5-Coder-7B-Instruct",
            )
        if not base_url.startswith(("http://", "https://")):
            raise ModelError("invalid_spec", f"bad openai base URL {base_url!r}: use http(s)://")
        from oopav.models.openai import OpenAIBackend

        return OpenAIBackend(base_url, model, **options)
    if scheme == "vllm":
        from oopav.models.vllm import VLLMBackend

        return VLLMBackend(rest, **options)
    from oopav.models.hf import HFBackend

    return HFBackend(rest, **options)
