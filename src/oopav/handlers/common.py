"""Helpers shared by the loop handlers: ending a session, budgets, workspace lookup."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from oopav import metrics
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.handlers.ports import Ports
from oopav.handlers.rules.policy import LOOP_POLICY_KEYS, LoopPolicy, parse_loop_policy
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState


def loop_policy(state: SessionState) -> dict[str, object]:
    policy = (state.task.policy if state.task else None) or {}
    return {k: policy[k] for k in LOOP_POLICY_KEYS if k in policy}


def decision_policy(state: SessionState) -> LoopPolicy:
    """The task's loop policy (tiers, rollback, test policy, replans), defaults filled in."""
    return parse_loop_policy(state.task.policy if state.task else None)


def sandbox_policy(state: SessionState):  # type: ignore[no-untyped-def]
    from oopav.sandbox.policy import policy_from

    policy = dict((state.task.policy if state.task else None) or {})
    for k in LOOP_POLICY_KEYS:
        policy.pop(k, None)
    return policy_from(policy)


def workspace_path(state: SessionState) -> Path:
    if state.workspace is None:
        raise RuntimeError("the session has no workspace yet")
    return Path(state.workspace.path)


def workspace_info(state: SessionState, ports: Ports):  # type: ignore[no-untyped-def]
    from oopav.sandbox.workspace import WorkspaceInfo

    w = state.workspace
    assert w is not None
    return WorkspaceInfo(
        session_id=state.session_id,
        path=w.path,
        base_commit=w.base_commit,
        branch=w.branch,
        kind=w.kind,
        repo=w.repo,
    )


async def final_diff(state: SessionState, ports: Ports) -> str:
    if state.workspace is None or not Path(state.workspace.path).exists():
        return ""
    from oopav.sandbox.workspace import final_diff as diff

    return await asyncio.to_thread(diff, workspace_info(state, ports))


async def complete(
    out: Emitter, state: SessionState, outcome: str, summary: str, reason: str = ""
) -> Event:
    diff = cap_diff(await final_diff(state, out.ports), out.ports, state.session_id, "final.diff")
    b = state.budgets_used
    metrics = {
        "iterations": b.iterations,
        "model_calls": b.model_calls,
        "model_tokens": b.model_tokens,
        "bounces": b.bounces,
        "replans": b.replans,
        "actions": len(state.actions),
        "actions_applied": sum(1 for a in state.actions if a.status == "applied"),
        "events": state.event_count + len(out.events) + 1,
    }
    return out.emit(
        ev.SessionCompleted,
        outcome=outcome,
        summary=summary,
        diff=diff,
        metrics=metrics,
        reason=reason,
    )


MAX_EVENT_DIFF = 1024 * 1024


def cap_diff(diff: str, ports: Ports, session_id: str, name: str) -> str:
    """A diff small enough for one event. A larger one is kept whole as an artifact file and
    the event carries its head with a pointer, so an oversized change cannot make the append
    fail (and the session with it)."""
    data = diff.encode()
    if len(data) <= MAX_EVENT_DIFF:
        return diff
    path = ports.settings.artifacts_for(session_id) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    head = data[: MAX_EVENT_DIFF - 512].decode("utf-8", "ignore")
    return head + f"\n[... diff truncated: {len(data)} bytes in all; the whole diff is in {path}]\n"


def phase_started_at(state: SessionState, phase: str) -> datetime | None:
    """When the current phase began (the latest event that entered it)."""
    return state.phase_started.get(phase)


def over_wall_budget(out: Emitter, state: SessionState, phase: str) -> Event | None:
    """``budget_exceeded`` when ``phase`` has run longer than its wall budget."""
    if state.task is None:
        return None
    started = phase_started_at(state, phase)
    if started is None:
        return None
    elapsed = (out.now() - started).total_seconds()
    limit = state.task.budgets.wall_seconds_per_phase
    if elapsed > limit:
        return out.emit(
            ev.BudgetExceeded,
            budget="wall_seconds_per_phase",
            limit=limit,
            used=round(elapsed, 3),
            phase=phase,
            response="abort",
        )
    return None


def tokens_exceeded(out: Emitter, state: SessionState) -> Event | None:
    if state.task is None:
        return None
    limit = state.task.budgets.model_tokens
    used = state.budgets_used.model_tokens
    if used >= limit:
        return out.emit(
            ev.BudgetExceeded, budget="model_tokens", limit=limit, used=used, response="abort"
        )
    return None


# -- model calls ---------------------------------------------------------------------------


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


async def call_model(
    out: Emitter,
    state: SessionState,
    request,
    calls_so_far: int,
    guidance_step: int | None = None,
    spec: str | None = None,
    record: dict[str, Any] | None = None,
):  # type: ignore[no-untyped-def]
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
        called = out.emit(
            ev.ModelCalled,
            **model_called_fields(request, None, spec or "-", error=exc),
            guidance_step=guidance_step,
            **(record or {}),
        )
        return None, called, exc
    called = out.emit(
        ev.ModelCalled,
        **model_called_fields(request, response, response.backend or spec),
        guidance_step=guidance_step,
        **(record or {}),
    )
    metrics.model_call(
        called.backend,
        request.role,
        called.prompt_tokens,
        called.completion_tokens,
        called.latency_ms / 1000,
    )
    return response, called, None


def cap_context(
    out: Emitter, state: SessionState, role: str, context: str, limit: int | None = None
) -> str:
    """``context`` within the role's cap (``policy.context_caps``): a larger one is kept whole
    as an artifact and summarised (``rules.budgets.summarise_context``) with a pointer to it."""
    from oopav.handlers.rules.budgets import context_digest, summarise_context

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
    from oopav.handlers.rules import clip_output

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
    from oopav.handlers.groups import sampling_of
    from oopav.handlers.guidance import session_guidance

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
    from oopav.handlers.compact import prompt_state
    from oopav.models.profiles import compact_request, profile_for, to_builtins

    profile = profile_for(model_spec(state, out.ports), task.policy) if role == "actor" else "full"
    refusal = ""
    while True:
        if attempts > 0 and used + attempts > retries:
            break
        guidance_step, guidance = await session_guidance(out, state)
        record: dict[str, Any] = {}
        if role == "actor":
            pstate = await asyncio.to_thread(prompt_state, state, role, extra_feedback=refusal)
            record = {"profile": profile, "prompt_state": to_builtins(pstate)}
        if profile == "compact":
            request = compact_request(pstate, sampling=sampling, seed=seed)
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
                sampling=sampling,
                seed=seed,
            )
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
