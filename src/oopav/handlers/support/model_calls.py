"""Model calls through the recorded port: one ``model_called`` per attempt, answers parsed under the prompt contract, retried with the reason within the phase's retry budget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oopav import metrics
from oopav.decide.policy import decision_policy
from oopav.events import catalog as ev
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.completion import complete
from oopav.handlers.support.workspace import sandbox_policy
from oopav.projections.session import SessionState

if TYPE_CHECKING:
    from oopav.models.base import ModelError, ModelRequest, ModelResponse


def _align_scripted(backend: object, role: str, index: int) -> None:
    """A scripted backend serves by position. Its position is derived from the session's
    recorded calls, not from process memory, so a restarted handler continues where the
    session is instead of starting the script again."""
    from oopav.models.scripted import ScriptedBackend

    if isinstance(backend, ScriptedBackend):
        queue, key = backend._queue(role)
        if queue is not None:
            backend._served[key] = index


def model_spec(state: SessionState, ports: Ports) -> str:
    spec = (state.task.model if state.task else None) or ports.default_model or ports.settings.model
    if not spec and state.task is not None and state.task.examples:
        return "synth:"  # rules by example: the default for a task with examples and no model
    return spec or ""


def session_backend(out: Emitter, state: SessionState) -> object | None:
    """The session's loaded backend (its declared capabilities), or None when it cannot be
    loaded now (the call reports that, recorded, when it is made)."""
    from oopav.models.base import ModelError

    try:
        return out.ports.model(model_spec(state, out.ports) or None)
    except (ModelError, ValueError, OSError):
        return None


async def call_model(
    out: Emitter,
    state: SessionState,
    request: ModelRequest,
    calls_so_far: int,
    guidance_step: int | None = None,
    spec: str | None = None,
    record: dict[str, Any] | None = None,
) -> tuple[ModelResponse | None, ev.ModelCalled, ModelError | None]:
    """One recorded model call. Returns (response text or None, the model_called event, error).
    ``guidance_step``: the mission library step rendered into the request (recorded);
    ``spec``: a model other than the session's (the critic's own)."""
    from oopav.models.base import ModelError, model_called_fields

    spec = spec or model_spec(state, out.ports)
    by_role = state.budgets_used.model_calls_by_role
    ordered_index = state.budgets_used.model_calls + calls_so_far
    role_index = by_role.get(request.role, 0) + calls_so_far
    try:
        backend = out.ports.model(spec or None)
        from oopav.models.scripted import ScriptedBackend

        if isinstance(backend, ScriptedBackend):
            _align_scripted(
                backend, request.role, ordered_index if backend._ordered is not None else role_index
            )
        response = await backend.complete(request)
    except ModelError as exc:
        fields = model_called_fields(request, None, spec or "-", error=exc)
        whole = fields["request"]
        fields["request"] = await stored_request(out.ports, state, whole, request.role)
        called = out.emit(ev.ModelCalled, **fields, guidance_step=guidance_step, **(record or {}))
        remember_prompt(out.ports, called.id, whole)
        return None, called, exc
    fields = model_called_fields(request, response, response.backend or spec)
    whole = fields["request"]
    fields["request"] = await stored_request(out.ports, state, whole, request.role)
    called = out.emit(ev.ModelCalled, **fields, guidance_step=guidance_step, **(record or {}))
    remember_prompt(out.ports, called.id, whole)
    metrics.model_call(
        called.backend,
        request.role,
        called.prompt_tokens,
        called.completion_tokens,
        called.latency_ms / 1000,
    )
    return response, called, None


PROMPT_CACHE = 256


def remember_prompt(ports: Ports, event_id: str, whole: dict[str, Any]) -> None:
    ports.prompts[event_id] = whole
    while len(ports.prompts) > PROMPT_CACHE:
        ports.prompts.pop(next(iter(ports.prompts)))


async def stored_request(
    ports: Ports, state: SessionState, whole: dict[str, Any], role: str
) -> dict[str, Any]:
    """What ``model_called.request`` holds: blob references and a delta against the session's
    previous call of this role (``history.prompts``), so history grows with new content only.
    The whole request when there is no blob store or it refused (never fails the call)."""
    from oopav.history.prompts import expand, store_request
    from oopav.logging import get_logger
    from oopav.models.base import request_hash

    if ports.blobs is None:
        return whole
    try:
        last = state.budgets_used.last_calls.get(role)
        base_id: str | None = None
        base: dict[str, Any] | None = None
        if last:
            base_id, base_hash = last
            base = ports.prompts.get(base_id)
            if base is None or request_hash(base) != base_hash:
                # Not in this process's memory (a restart, another process): from the stream.
                events = await ports.store.read("session", state.session_id, skip_undecodable=True)
                whole_events = await expand(ports.blobs, events)
                base = next((e.request for _, e in whole_events if e.id == base_id), None)
        return await store_request(ports.blobs, whole, base_id if base else None, base)
    except Exception as exc:  # a store that refuses costs bytes, never the call
        get_logger("oopav.model_calls").warning(
            "prompt_not_stored", error=f"{type(exc).__name__}: {exc}"[:300]
        )
        return whole


def cap_context(
    out: Emitter, state: SessionState, role: str, context: str, limit: int | None = None
) -> str:
    """``context`` within the role's cap (``policy.context_caps``): a larger one is kept whole
    as an artifact and summarised (``rules.budgets.summarise_context``) with a pointer to it."""
    from oopav.decide.budgets import context_digest, summarise_context

    cap = limit or decision_policy(state).context_caps.get(role)
    if not cap or len(context.encode()) <= cap:
        return context
    name = f"context-{role}-{context_digest(context)}.md"
    try:
        path = out.ports.settings.artifacts_for(state.session_id) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(context)
    except OSError:
        pass  # the summary still says what was cut; the artifact is a convenience
    return summarise_context(context, cap, f"artifact {name} of this session")


def clip(text: str, limit: int, pointer: str = "") -> str:
    from oopav.decide import clip_output

    return clip_output(text, limit, pointer or "the session's artifacts")


FATAL_MODEL_ERRORS = frozenset(
    {
        "unavailable",
        "invalid_spec",
        "not_found",
        "auth",
        "exhausted",
        "replay_miss",
        "missing_dependency",
        "context_length",
        "synthesis_failed",
    }
)


def attempt_sampling(
    state: SessionState, role: str, attempts: int, sampling: Any, seed: int | None
) -> tuple[Any, int | None]:
    """The sampling of an actor call: as the task's (its group's grid point, else greedy) for
    the session's first actor call; for every later one (a retry, a later iteration, a second
    candidate) ``policy.retry_temperature`` when set, seeded by the task's seed plus the number
    of earlier actor calls — a pure function of the session's state, so a replay sends the same
    request. A group's own sampling is never overridden."""
    if role != "actor" or sampling is not None:
        return sampling, seed
    temperature = decision_policy(state).retry_temperature
    earlier = state.budgets_used.model_calls_by_role.get("actor", 0) + attempts
    if temperature is None or earlier == 0:
        return sampling, seed
    from oopav.models.base import Sampling

    return Sampling(temperature=temperature), (seed or 0) + earlier


def with_copy_words(request: Any, mode: str | None, pstate: Any) -> Any:
    """``request`` with the words its answer may copy (``policy.copy_names``,
    models/copying.py): the instruction's words (the prompt state's: the one the prompt shows)
    or every word of the prompt's messages. They go into the request, so the recorded call
    says what constrained it and a replay sends the same request."""
    if mode is None:
        return request
    import msgspec

    from oopav.models.copying import copy_words

    if mode == "instruction":
        text = pstate.instruction
    else:
        text = "\n".join(m.content for m in request.messages)
    return msgspec.structs.replace(request, copy_words=copy_words(text))


async def ask_model(
    out: Emitter,
    state: SessionState,
    role: str,
    context: str,
    phase: str,
    check: Callable[[Any], str | None] | None = None,
) -> tuple[Any, str] | None:
    """Ask ``role`` under the prompt contract, retrying a rejected answer with the reason
    (never patching it up) within the phase's retry budget. Every attempt is recorded as
    ``model_called``. ``check`` may refuse a well-formed payload with a message for the model.

    Returns (the parsed answer, the id of the call that produced it), or None after ending the
    session (model unavailable, or the retry budget spent)."""
    import msgspec

    from oopav.models.prompt import (
        AgentState,
        AnswerError,
        build_request,
        parse_role_answer,
        retry_messages,
        static_prefix,
    )

    task = state.task
    assert task is not None
    prefix = static_prefix(sandbox_policy(state).model_dump(mode="json"))
    agent_state = msgspec.convert(state.agent_state, AgentState) if state.agent_state else None
    extra: list[Any] = []
    retries = task.budgets.retries_per_phase
    # --- reflector: the mission library and the group's sampling (docs/reflection.md) ---
    from oopav.reflection.groups import sampling_of
    from oopav.reflection.guidance import session_guidance

    sampling, seed = sampling_of(task)
    # --- end reflector ---
    # Retries are counted per phase (all of a phase's requests together), from the stream.
    used = state.budgets_used.retries.get(phase, 0)
    context = cap_context(out, state, role, context)
    shrunk = False
    attempts = 0
    # --- prompt profiles (models/profiles.py): the actor's prompt state is recorded with every
    # call; under `compact` it is the prompt, and a retry re-renders it with the refusal as
    # feedback instead of appending the failed answer (the prompt never outgrows its budget).
    from oopav.handlers.support.compact import prompt_state
    from oopav.models.capabilities import capabilities_for
    from oopav.models.profiles import compact_request, profile_for, to_builtins

    backend = session_backend(out, state)
    spec_now = model_spec(state, out.ports)
    profile = profile_for(spec_now, task.policy, backend) if role == "actor" else "full"
    # Decoding under the answer grammar only where the backend supports it (capabilities).
    constrained = capabilities_for(spec_now, task.policy, backend).grammar
    refusal = ""
    while True:
        if attempts > 0 and used + attempts > retries:
            break
        guidance_step, guidance = await session_guidance(out, state)
        record: dict[str, Any] = {}
        if role == "actor":
            pstate = await asyncio.to_thread(prompt_state, state, role, extra_feedback=refusal)
            if profile == "compact" and not decision_policy(state).compact_feedback:
                # The state recorded is the state sent: export renders the same prompt.
                pstate = msgspec.structs.replace(pstate, feedback="")
            record = {"profile": profile, "prompt_state": to_builtins(pstate)}
        call_sampling, call_seed = attempt_sampling(state, role, attempts, sampling, seed)
        if profile == "compact":
            request = compact_request(pstate, sampling=call_sampling, seed=call_seed)
            guidance_step = None
        else:
            request = build_request(
                role,
                prefix=prefix,
                guidance=guidance,
                context=context,
                state=agent_state,
                task=task.instruction,
                extra=extra,
                sampling=call_sampling,
                seed=call_seed,
            )
        if not constrained:
            request = msgspec.structs.replace(request, schema=None)
        if role == "actor":
            request = with_copy_words(request, decision_policy(state).copy_names, pstate)
        response, called, error = await call_model(
            out, state, request, attempts, guidance_step=guidance_step, record=record
        )
        attempts += 1
        if response is None:
            if error is not None and error.kind == "synthesis_failed":
                await complete(
                    out, state, "aborted", f"synthesis failed: {error.message}", reason="synth"
                )
                return None
            if error is not None and error.kind == "context_length" and not shrunk:
                # An overflow summarises the context to half and retries once, not abort.
                shrunk = True
                context = cap_context(
                    out, state, role, context, limit=max(1024, len(context.encode()) // 2)
                )
                continue
            if error is not None and error.kind in FATAL_MODEL_ERRORS:
                await complete(out, state, "aborted", f"model unavailable: {error}", reason="model")
                return None
            continue
        try:
            parsed = parse_role_answer(role, response.text, finish_reason=response.finish_reason)
            problem = check(parsed.payload) if check is not None else None
            if problem is not None:
                raise AnswerError("schema_mismatch", problem)
        except AnswerError as exc:
            extra = [*extra, *retry_messages(response.text, exc)]
            refusal = f"{exc.reason}: {exc.message}"
            continue
        return parsed, called.id
    out.emit(
        ev.BudgetExceeded,
        budget="retries_per_phase",
        limit=retries,
        used=used + attempts,
        phase=phase,
        response="abort",
    )
    await complete(
        out,
        state,
        "failed",
        f"the {role} gave no acceptable answer within the retry budget",
        reason="budget",
    )
    return None
