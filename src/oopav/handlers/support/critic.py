"""One critic review, wherever it is triggered (reflection/critique.py has the rules): the last
gate of the verifier, and, when ``policy.critic.on`` asks for them, right after a plan (the
planner) and on an observer escalation (the observer).

Every trigger goes through the same steps: the pack is redacted and bounded, an identical
payload reuses the earlier verdict, the calls and tokens stay within the critic's budget, and
the verdict is recorded as ``critic_verdict`` with its trigger. What a verdict then does is the
caller's business (a gate outcome, a replan of the plan, a second opinion for a person)."""

from __future__ import annotations

from dataclasses import dataclass, field

from oopav.events import catalog as ev
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.model_calls import call_model
from oopav.handlers.support.workspace import sandbox_policy
from oopav.projections.session import SessionState
from oopav.reflection.critique import CriticConfig, prepare


@dataclass(frozen=True)
class Review:
    verdict: str
    reasons: list[str] = field(default_factory=list)
    cached: bool = False
    skipped: str | None = None
    """Why no verdict counts (budget spent, the model unavailable, an unparseable answer)."""
    top_risks: list[str] = field(default_factory=list)
    missing_tests: list[str] = field(default_factory=list)
    confidence: float | None = None
    event_id: str | None = None
    """The ``critic_verdict`` recorded for this review."""


async def review(
    state: SessionState,
    out: Emitter,
    pack: str,
    cfg: CriticConfig,
    trigger: str,
    *,
    reuse_unavailable: bool = True,
) -> Review:
    """Send ``pack`` (redacted) to the critic, or reuse the verdict on an identical payload;
    record ``critic_verdict`` (with ``trigger``) and return what it said.
    ``reuse_unavailable=False``: an earlier ``unavailable`` verdict on the same payload is not
    reused (a person asking again, perhaps with another model, gets a new call)."""
    from oopav.models.prompt import AnswerError, build_request, parse_role_answer, static_prefix

    sent = prepare(pack, cfg)
    fields = {
        "payload_sha256": sent.sha256,
        "redactions": sent.counts,
        "trigger": trigger,
        "shown": list(cfg.allowed_artifact_fields),
    }
    earlier = next(
        (
            v
            for v in reversed(state.critic_verdicts)
            if v.payload_sha256 == sent.sha256 and (reuse_unavailable or v.verdict != "unavailable")
        ),
        None,
    )
    if earlier is not None:
        reused = out.emit(
            ev.CriticVerdict,
            verdict=earlier.verdict,
            reasons=list(earlier.reasons),
            model_call_id=earlier.model_call_id,
            cached=True,
            top_risks=list(earlier.top_risks),
            missing_tests=list(earlier.missing_tests),
            confidence=earlier.confidence,
            **fields,
        )
        return Review(
            earlier.verdict,
            list(earlier.reasons),
            cached=True,
            top_risks=list(earlier.top_risks),
            missing_tests=list(earlier.missing_tests),
            confidence=earlier.confidence,
            event_id=reused.id,
        )
    calls = state.budgets_used.model_calls_by_role.get("critic", 0)
    tokens = state.critic_tokens
    if calls >= cfg.max_calls or tokens >= cfg.max_tokens:
        why = (
            f"critic budget spent ({calls}/{cfg.max_calls} calls, {tokens}/{cfg.max_tokens} tokens)"
        )
        out.emit(ev.CriticVerdict, verdict="unavailable", reasons=[why], **fields)
        return Review("unavailable", [why], skipped=why)
    request = build_request(
        "critic",
        # The same static prefix as the planner's and the actor's (prefix caching).
        prefix=static_prefix(sandbox_policy(state).model_dump(mode="json")),
        context=sent.text,
        task="(in the pack above)",
        seed=0,
    )
    response, called, error = await call_model(out, state, request, 0, spec=cfg.model)
    if response is None:
        out.emit(
            ev.CriticVerdict,
            verdict="unavailable",
            reasons=[str(error)],
            model_call_id=called.id,
            **fields,
        )
        return Review("unavailable", [str(error)], skipped=f"critic unavailable: {error}")
    if response.finish_reason == "content_filter":
        said = ["the critic declined to review"]
        out.emit(
            ev.CriticVerdict, verdict="refused", reasons=said, model_call_id=called.id, **fields
        )
        return Review("refused", said)
    try:
        parsed = parse_role_answer("critic", response.text, finish_reason=response.finish_reason)
    except AnswerError as exc:
        out.emit(
            ev.CriticVerdict,
            verdict="unavailable",
            reasons=[f"unparseable verdict: {exc}"],
            model_call_id=called.id,
            **fields,
        )
        return Review(
            "unavailable",
            [f"unparseable verdict: {exc}"],
            skipped=f"critic answer ignored: {exc.reason}",
        )
    verdict = parsed.payload
    recorded = out.emit(
        ev.CriticVerdict,
        verdict=verdict.verdict,
        reasons=list(verdict.reasons),
        model_call_id=called.id,
        top_risks=list(verdict.top_risks),
        missing_tests=list(verdict.missing_tests),
        confidence=verdict.confidence,
        **fields,
    )
    return Review(
        verdict.verdict,
        list(verdict.reasons),
        top_risks=list(verdict.top_risks),
        missing_tests=list(verdict.missing_tests),
        confidence=verdict.confidence,
        event_id=recorded.id,
    )


REVIEWER = "cli.critic"
"""The handler name a review after the fact is recorded under: no loop handler, so replay
injects its events as they were recorded (a person's request, like an answer or a grant)."""


async def review_recorded(state: SessionState, out: Emitter, spec: str | None = None) -> Review:
    """``oopav critic --session``: review a recorded session after the fact — its final diff
    (the workspace's while it is live), the gate verdicts of its last verification and its
    plan — under its own policy's critic settings (``allowed_artifact_fields``, redaction,
    instructions) or the defaults where it had no critic. A person asked for this review, so
    it is granted one call past a spent critic budget; ``spec`` overrides the model (else the
    policy's critic model, else the session's). Records ``model_called`` and ``critic_verdict``
    (trigger ``review``) through ``out``."""
    from oopav.decide.policy import decision_policy
    from oopav.handlers.support.workspace import final_diff
    from oopav.reflection.critique import GateLine, build_pack, critic_config

    task = state.task
    if task is None:
        raise ValueError(f"session {state.session_id} has no task: nothing to review")
    cfg = critic_config(task.policy) or CriticConfig()
    calls = state.budgets_used.model_calls_by_role.get("critic", 0)
    cfg = cfg.model_copy(
        update={
            "model": spec or cfg.model,
            "max_calls": max(cfg.max_calls, calls + 1),
            "max_tokens": max(cfg.max_tokens, state.critic_tokens + cfg.max_tokens),
        }
    )
    diff = state.diff if state.outcome is not None else await final_diff(state, out.ports)
    last = max((g.bounce for g in state.gates), default=0)
    gates = [
        GateLine(g.gate, g.passed, g.skipped, g.evidence) for g in state.gates if g.bounce == last
    ]
    plan = [
        f"{s.id}. {s.description}" + (f" [{', '.join(s.files)}]" if s.files else "")
        for s in (state.plan.steps if state.plan else [])
    ]
    ended = f"The session ended {state.outcome}: {state.summary}" if state.outcome else ""
    asked = cfg.instructions or decision_policy(state).critic_instructions or ""
    pack = build_pack(
        task.instruction,
        plan,
        diff,
        gates,
        instructions=(asked + "\nReviewed after the fact. " + ended).strip(),
        shown=cfg.allowed_artifact_fields,
    )
    return await review(state, out, pack, cfg, "review", reuse_unavailable=False)
