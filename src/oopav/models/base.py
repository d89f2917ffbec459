"""The backend interface: a request in, a response out, a canonical hash, and typed errors.

Every backend is async and stateless with respect to the session: the caller records each call
as a ``model_called`` event (see :func:`model_called_fields`) so replay can serve it back.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, Protocol, get_args, runtime_checkable

import msgspec

Role = str
"""planner, actor, critic, reflector, ... (free-form so new roles need no code change)."""

ErrorKind = Literal[
    "unavailable",  # the server is down or unreachable
    "timeout",  # the server did not answer in time
    "not_found",  # unknown model name or path
    "context_length",  # the prompt does not fit the model's context
    "rate_limited",  # 429 after every retry
    "server_error",  # 5xx after every retry
    "auth",  # 401/403: missing or wrong API key
    "bad_request",  # any other 4xx
    "bad_response",  # the server answered something that is not a chat completion
    "exhausted",  # a scripted/replay backend has no more responses
    "replay_miss",  # a request that was never recorded
    "missing_dependency",  # an optional extra (vllm, transformers, xgrammar) is not installed
    "invalid_spec",  # a backend spec string that cannot be parsed
    "invalid_request",  # a request the backend cannot serve (e.g. a schema it cannot compile)
    "synthesis_failed",  # synth: no rule reproduces the task's examples
    "oom",  # the device ran out of memory even after smaller retries (models/gpu.py)
]


class ModelError(Exception):
    """A failure a user can hit, said in one line: ``<kind>: <what happened and what to do>``."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        # One line: these end up in logs, in ``model_called.error`` and on a terminal.
        self.kind: ErrorKind = kind
        self.message = " ".join(message.split())
        super().__init__(f"{kind}: {self.message}")

    @classmethod
    def from_recorded(cls, error: str) -> ModelError:
        """Rebuild the error recorded in ``model_called.error`` (``kind: message``)."""
        kind, sep, message = error.partition(": ")
        if sep and kind in _ERROR_KINDS:
            return cls(kind, message)  # type: ignore[arg-type]  # kind was checked against ErrorKind just above
        return cls("server_error", error)


_ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKind))


class Message(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    role: Literal["system", "user", "assistant"]
    content: str


class Sampling(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """Sampling parameters. ``temperature == 0`` means greedy decoding."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    stop: list[str] = msgspec.field(default_factory=list)


class ModelRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """What a handler asks of a model.

    ``schema`` is the JSON schema of the expected JSON payload. ``envelope`` names the tag the
    payload sits in when the answer follows the prompt contract
    (``<think>…</think><TAG>{json}</TAG><state_update>{json}</state_update>``); ``None`` means the
    whole answer is the JSON document. ``state_update`` says whether the envelope carries one.
    """

    role: Role
    messages: list[Message]
    schema: dict[str, Any] | None = None
    envelope: str | None = None
    state_update: bool = True
    sampling: Sampling = msgspec.field(default_factory=Sampling)
    seed: int | None = None
    # Copy-constrained decoding (models/copying.py, ``policy.copy_names``): the words the
    # answer's payload may copy; with the backend's own answer vocabulary, the only words it may
    # hold. None (the default, left out of the recorded request and its hash, so requests
    # recorded before it hash as they did): unconstrained.
    copy_words: list[str] | None = None


# Fields left out of a request's builtins (and so of its hash) while they hold their default:
# added after requests were recorded, so an old request hashes as it did.
_OPTIONAL_REQUEST_FIELDS = ("copy_words",)


class ModelResponse(msgspec.Struct, kw_only=True, frozen=True):
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    finish_reason: str = "stop"  # "stop" | "length" | whatever the server says
    # Which backend answered, when it is not the one asked (``synth:`` handing over to its
    # fallback); recorded as ``model_called.backend`` instead of the spec.
    backend: str | None = None
    # What happened on the way (an out-of-memory retry with a smaller request, models/gpu.py);
    # recorded as ``model_called.notes``.
    notes: list[str] = msgspec.field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    """A model backend. ``spec`` is the string it was built from (recorded in events)."""

    spec: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...


def request_to_builtins(request: ModelRequest) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(request)
    for name in _OPTIONAL_REQUEST_FIELDS:
        if data.get(name) is None:
            data.pop(name, None)
    return data


def request_from_builtins(data: dict[str, Any]) -> ModelRequest:
    return msgspec.convert(data, ModelRequest)


def canonical_json(data: Any) -> bytes:
    """Stable JSON: sorted keys at every level, no whitespace, UTF-8."""
    return msgspec.json.encode(msgspec.to_builtins(data, order="sorted"), order="sorted")


def request_hash(request: ModelRequest | dict[str, Any]) -> str:
    """The canonical hash of a request: sha256 of its stable JSON (sorted keys).

    A dict is normalised through :class:`ModelRequest` first, so a request read back from a
    ``model_called`` event hashes exactly like the struct that produced it.
    """
    if isinstance(request, dict):
        request = request_from_builtins(request)
    return hashlib.sha256(canonical_json(request_to_builtins(request))).hexdigest()


def model_called_fields(
    request: ModelRequest,
    response: ModelResponse | None,
    backend: str,
    *,
    error: ModelError | str | None = None,
) -> dict[str, Any]:
    """The fields of a ``ModelCalled`` event for one call (pass ``error`` for a failed one):

    ``caused_event(ModelCalled, cause, handler=..., **model_called_fields(req, resp, spec))``.
    """
    fields: dict[str, Any] = {
        "role": request.role,
        "backend": backend,
        "request_hash": request_hash(request),
        "request": request_to_builtins(request),
        "response": "",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "latency_ms": 0.0,
        "finish_reason": "error" if error is not None else "stop",
        "error": None if error is None else str(error),
    }
    if response is not None:
        fields.update(
            response=response.text,
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            latency_ms=response.latency_ms,
            finish_reason=response.finish_reason if error is None else "error",
        )
        if response.notes:
            fields["notes"] = list(response.notes)
    return fields


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about four bytes a token) for budgets and scripted counts."""
    return (len(text.encode()) + 3) // 4


def prompt_token_estimate(request: ModelRequest) -> int:
    return sum(estimate_tokens(m.content) + 4 for m in request.messages)
