"""What a model backend can do, declared by each backend and read by the loop to choose the
prompt and the decoding:

- ``grammar``: it takes the answer grammar and decodes under it (hf: xgrammar logits processor;
  vllm: structured outputs; openai: vLLM's ``structured_outputs`` field, which other servers
  ignore), or serves answers in its language (scripted, replay, synth). Where it is ``False`` the
  request goes without a schema: nothing to compile or send, the strict parser still judges.
- ``logprobs``: it can return token log-probabilities (for scoring and training signals).
- ``tools``: it speaks native tool calling (oopav's contract does not need it; declared for
  the choice of backend).
- ``context_tokens``: its context window when known (hf: the model's positions, vllm: its
  ``max_model_len``); below :data:`FULL_PROFILE_MIN_CONTEXT` the actor gets the ``compact``
  prompt profile, which fits 512 tokens, instead of the 2.5-4k-token full one.

A task's policy can override what a spec declares (``policy.model_capabilities``: an OpenAI
endpoint of a llama.cpp server with a 4k context and no structured outputs says
``{grammar: false, context_tokens: 4096}``), since a URL does not say what serves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

# The full profile's prompt (2.5-4k tokens) plus an answer: below this window, compact.
FULL_PROFILE_MIN_CONTEXT = 8192


class Capabilities(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    grammar: bool = False
    logprobs: bool = False
    tools: bool = False
    context_tokens: int | None = None

    def flags(self) -> list[str]:
        """The flags that are on, and the context when known (for ``oopav models``)."""
        out = [name for name in ("grammar", "logprobs", "tools") if getattr(self, name)]
        out.append(f"context={self.context_tokens if self.context_tokens else '?'}")
        return out


# What each scheme declares before a model is loaded (a loaded hf/vllm backend knows its
# context and says so on its ``capabilities``).
DECLARED: dict[str, Capabilities] = {
    "scripted": Capabilities(grammar=True),
    "replay": Capabilities(grammar=True),
    "openai": Capabilities(grammar=True, logprobs=True, tools=True),
    "vllm": Capabilities(grammar=True, logprobs=True),
    "hf": Capabilities(grammar=True, logprobs=True),
    "synth": Capabilities(grammar=True),  # rules rendered as actions: in the grammar
    "fork": Capabilities(grammar=True),
}


def declared(spec: str | None) -> Capabilities:
    """What the scheme of ``spec`` declares (``synth:<fallback>``: the fallback's, since the
    fallback is what decodes when no rule fits)."""
    scheme, _, rest = (spec or "").partition(":")
    if scheme == "synth" and rest:
        return declared(rest)
    return DECLARED.get(scheme, Capabilities())


def capabilities_for(
    spec: str | None, policy: Mapping[str, Any] | None = None, backend: object | None = None
) -> Capabilities:
    """A session's capabilities: a loaded ``backend``'s own (else the spec's declared ones),
    with the task policy's ``model_capabilities`` on top."""
    caps = getattr(backend, "capabilities", None)
    if not isinstance(caps, Capabilities):
        caps = declared(spec)
    override = (policy or {}).get("model_capabilities") or {}
    if override:
        caps = msgspec.structs.replace(caps, **{k: v for k, v in override.items() if v is not None})
    return caps


def profile_of(caps: Capabilities) -> str | None:
    """The prompt profile a context window calls for (None: no preference)."""
    if caps.context_tokens is not None and caps.context_tokens < FULL_PROFILE_MIN_CONTEXT:
        return "compact"
    return None
