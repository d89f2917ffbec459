"""verifier: the done-gate chain when the actor finishes (DESIGN step 6).

no stubs → changed files parse → tests → lint → critic. Each gate emits ``gate_evaluated``;
the first failure emits ``verification_completed`` (failed) and ``replan_triggered`` with a
reflective message and the evidence, while bounces remain (all gates share one budget).
When every gate passes: ``verification_completed`` and ``session_completed`` (success)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from oopav.bus.consumer import Delivery
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.handlers.common import call_model, complete, loop_policy, sandbox_policy
from oopav.handlers.gates import (
    GateOutcome,
    _changed,
    gate_lint,
    gate_parse,
    gate_stubs,
    gate_tests,
)
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState

NAME = "verifier"


class Verifier:
    name = NAME
    subscribes = ("action_proposed",)

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if not isinstance(event, ev.ActionProposed) or event.action.type != "finish":  # type: ignore[union-attr]
            return []
        if state.task is None or state.workspace is None:
            return []
        out = Emitter(event, NAME, ports)
        root = Path(state.workspace.path)
        changed = await asyncio.to_thread(_changed, state, root)
        bounce = state.budgets_used.bounces
        outcomes: list[GateOutcome] = []
        failed: GateOutcome | None = None
        for gate in ("stubs", "parse", "tests", "lint", "critic"):
            if gate == "stubs":
                result = await gate_stubs(state, root, changed)
            elif gate == "parse":
                result = await gate_parse(state, root, changed)
            elif gate == "tests":
                result = await gate_tests(state, root, ports, event.id)
            elif gate == "lint":
                result = await gate_lint(state, root, changed, ports, event.id)
            else:
                result = await self._critic(state, out, event, changed)
            outcomes.append(result)
            out.emit(
                ev.GateEvaluated,
                gate=result.gate,
                passed=result.passed,
                skipped=result.skipped,
                evidence=result.evidence[:4000],
                findings=result.findings,
                bounce=bounce,
                execs=result.execs,
            )
            if not result.passed:
                failed = result
                break
        names = [o.gate for o in outcomes]
        if failed is None:
            out.emit(ev.VerificationCompleted, passed=True, gates=names, bounce=bounce)
            summary = event.action.summary  # type: ignore[union-attr]
            await complete(out, state, "success", summary)
            return out.events
        out.emit(
            ev.VerificationCompleted,
            passed=False,
            gates=names,
            failed_gate=failed.gate,
            bounce=bounce,
        )
        limit = state.task.budgets.bounces
        if bounce < limit:
            out.emit(
                ev.ReplanTriggered,
                source=NAME,
                reason=(
                    f"The {failed.gate} gate failed after the change. Reflect on why the plan did not satisfy it, "
                    "then revise the plan so that it does."
                ),
                evidence=failed.evidence[:4000],
                attempt=state.plans + 1,
            )
        else:
            out.emit(
                ev.BudgetExceeded,
                budget="bounces",
                limit=limit,
                used=bounce + 1,
                phase="verifying",
                response="abort",
            )
            await complete(
                out,
                state,
                "failed",
                f"the {failed.gate} gate still fails after {limit} bounce(s)",
                reason="bounces",
            )
        return out.events

    async def _critic(
        self, state: SessionState, out: Emitter, cause: ev.ActionProposed, changed: list[str]
    ) -> GateOutcome:
        """A read-only model call in its own context. A refusal, garbage or an unavailable
        model is recorded as ``unavailable`` and never blocks."""
        if not loop_policy(state).get("critic"):
            return GateOutcome(
                "critic", True, skipped=True, evidence="no critic configured (policy.critic)"
            )
        from oopav.handlers.common import final_diff
        from oopav.models.prompt import AnswerError, build_request, parse_role_answer, static_prefix

        diff = await final_diff(state, out.ports)
        task = state.task
        assert task is not None
        plan = "\n".join(
            f"{s.id}. {s.description}" for s in (state.plan.steps if state.plan else [])
        )
        context = f"### Plan\n{plan}\n\n### Diff\n{diff[: task.budgets.prompt_output_bytes]}"
        request = build_request(
            "critic",
            # The same static prefix as the planner's and the actor's (prefix caching).
            prefix=static_prefix(sandbox_policy(state).model_dump(mode="json")),
            context=context,
            task=task.instruction,
            seed=0,
        )
        response, called, error = await call_model(out, state, request, 0)
        if response is None:
            out.emit(
                ev.CriticVerdict,
                verdict="unavailable",
                reasons=[str(error)],
                model_call_id=called.id,
            )
            return GateOutcome(
                "critic", True, skipped=True, evidence=f"critic unavailable: {error}"
            )
        try:
            parsed = parse_role_answer(
                "critic", response.text, finish_reason=response.finish_reason
            )
        except AnswerError as exc:
            out.emit(
                ev.CriticVerdict,
                verdict="unavailable",
                reasons=[f"unparseable verdict: {exc}"],
                model_call_id=called.id,
            )
            return GateOutcome(
                "critic", True, skipped=True, evidence=f"critic answer ignored: {exc.reason}"
            )
        verdict = parsed.payload
        out.emit(
            ev.CriticVerdict,
            verdict=verdict.verdict,
            reasons=list(verdict.reasons),
            model_call_id=called.id,
        )
        if verdict.verdict == "approve":
            return GateOutcome(
                "critic", True, evidence="critic approves: " + "; ".join(verdict.reasons)
            )
        return GateOutcome(
            "critic", False, evidence="critic rejects: " + "; ".join(verdict.reasons)
        )
