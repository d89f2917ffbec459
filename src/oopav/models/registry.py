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
        urls = base_url.split("|")
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ModelError("invalid_spec", f"bad openai base URL {url!r}: use http(s)://")
        if len(urls) > 1:  # an endpoint pool: failover between servers of one model
            from oopav.models.pool import EndpointPool

            return EndpointPool(urls, model, options=options)
        from oopav.models.openai import OpenAIBackend

        return OpenAIBackend(base_url, model, **options)
    if scheme == "vllm":
        from oopav.models.gpu import guard_if_gpu
        from oopav.models.vllm import VLLMBackend

        return guard_if_gpu(VLLMBackend(rest, **options))
    from oopav.models.gpu import guard_if_gpu
    from oopav.models.hf import HFBackend

    return guard_if_gpu(HFBackend(rest, **options))


def _local_path(rest: str) -> bool:
    """Whether an hf:/vllm: argument names a local path rather than a hub id (org/name)."""
    return rest.startswith(("/", "./", "../", "~")) or os.path.exists(rest)


def absolute_spec(spec: str, base: str | os.PathLike[str] | None = None) -> str:
    """``spec`` with a relative file path made absolute against ``base`` (default: the
    current directory), so that a handler in another process or directory reads the same file.
    Specs without a local path are returned unchanged."""
    from pathlib import Path

    scheme, sep, rest = spec.partition(":")
    if not sep or not rest:
        return spec
    if scheme == "synth":  # synth:<fallback spec>: the fallback's paths
        return f"synth:{absolute_spec(rest, base)}"
    root = Path(base) if base is not None else Path.cwd()
    if scheme == "scripted" or (scheme in ("hf", "vllm") and _local_path(rest)):
        p = Path(rest).expanduser()
        return f"{scheme}:{p if p.is_absolute() else (root / p).resolve()}"
    return spec


_SCRIPT_CHECKS: dict[tuple[str, int, int], str | None] = {}


def check_spec(spec: str) -> str | None:
    """Why ``spec`` cannot be used, or None. Cheap and offline: it checks the form, that a
    scripted file exists and parses, and that a local model path exists; it does not contact
    a server or load a model (``oopav models check`` does). For the CLI and the intake, so
    that a bad spec is rejected at submission instead of aborting a session later."""
    from pathlib import Path

    if not isinstance(spec, str) or not spec.strip():
        return "the model spec is empty"
    scheme, sep, rest = spec.partition(":")
    if scheme == "synth" and sep:
        # Rules by example needs nothing; a fallback model after it is checked like any spec.
        return check_spec(rest) if rest else None
    if not sep or not rest or scheme not in SCHEMES:
        return f"bad model spec {spec!r}: expected one of {', '.join(s + ':…' for s in SCHEMES)}"
    if scheme == "scripted":
        path = Path(rest).expanduser()
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is None or not path.is_file():
            return f"scripted model file {rest} does not exist"
        # The intake checks every submission's spec: a file unchanged since its last check
        # (same size and modification time) is not parsed again.
        key = (str(path), st.st_mtime_ns, st.st_size)
        if key in _SCRIPT_CHECKS:
            return _SCRIPT_CHECKS[key]
        from oopav.models.scripted import ScriptedBackend

        problem: str | None = None
        try:
            ScriptedBackend.from_file(path)
        except ModelError as exc:
            problem = exc.message
        if len(_SCRIPT_CHECKS) >= 256:
            _SCRIPT_CHECKS.clear()
        _SCRIPT_CHECKS[key] = problem
        return problem
    if scheme == "openai":
        base_url, hash_, model = rest.rpartition("#")
        if not hash_ or not base_url or not model:
            return f"bad openai spec {spec!r}: expected openai:<base_url>#<model>"
        if not base_url.startswith(("http://", "https://")):
            return f"bad openai base URL {base_url!r}: use http(s)://"
        return None
    if scheme in ("hf", "vllm") and _local_path(rest) and not Path(rest).expanduser().exists():
        return f"{scheme} model path {rest} does not exist"
    return None
