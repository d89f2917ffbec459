"""verifier: the done-gate chain when the actor finishes (DESIGN step 6, issue 17 §8).

The chain is per task, by victory tier (``decide.TIER_GATES``): stubs → parse → compile/type
check → doc tests → unit tests → lint → per-file diagnostics → the project's declared checks
(harness) → critic; ``compile_only`` stops after the compile check,
``tests`` after the unit tests, ``full`` runs everything, ending with the confidence tier
(the critic's confidence against ``policy.critic.min_confidence``). The tier comes from the policy, else
from orient. The task's test command always runs, whatever the tier.

Each gate emits ``gate_evaluated``; the first failure emits ``verification_completed``
(failed), rolls the workspace back to the last good state (unless the policy says
``build_on``) and emits ``replan_triggered`` with the evidence, while bounces remain (all
gates share one budget). When every gate passes: ``verification_completed`` and
``session_completed`` — ``success``, or ``success_unverified`` when the tests the task needed
could not run (no test command given, none detected)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from oopav.bus.consumer import Delivery
from oopav.decide.gates import TIER_GATES, GateOutcome, confidence_outcome, tier_of
from oopav.decide.policy import decision_policy
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.completion import complete
from oopav.handlers.support.contract import gate_diagnostics, gate_harness
from oopav.handlers.support.gates import (
    _changed,
    choose_tests,
    gate_compile,
    gate_doctest,
    gate_lint,
    gate_parse,
    gate_residuals,
    gate_stubs,
    gate_tests,
)
from oopav.projections.session import SessionState

NAME = "verifier"


class Verifier:
    name = NAME
    subscribes = ("action_proposed",)

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if not isinstance(event, ev.ActionProposed) or event.action.type != "finish":
            return []
        if state.task is None or state.workspace is None:
            return []
        out = Emitter(event, NAME, ports)
        root = Path(state.workspace.path)
        changed = await asyncio.to_thread(_changed, state, root)
        bounce = state.budgets_used.bounces
        tier, _why_tier = tier_of(state)
        chain = list(TIER_GATES[tier])
        if state.task.test_command and "tests" not in chain:
            # The user's test command always runs before success, whatever the tier.
            chain.append("tests")
        selection = await asyncio.to_thread(choose_tests, state, root, changed)
        outcomes: list[GateOutcome] = []
        failed: GateOutcome | None = None
        for gate in chain:
            if gate == "stubs":
                result = await gate_stubs(state, root, changed)
            elif gate == "parse":
                result = await gate_parse(state, root, changed)
            elif gate == "compile":
                result = await gate_compile(state, root, changed, ports, event.id)
            elif gate == "doctest":
                result = await gate_doctest(state, root, changed, ports, event.id)
            elif gate == "tests":
                result = await gate_tests(state, root, ports, event.id, selection)
                if not result.skipped:
                    # Say why these tests ran (the task's command, or detected, and the decision).
                    result.evidence = f"{selection.why}\n{result.evidence}"
            elif gate == "lint":
                result = await gate_lint(state, root, changed, ports, event.id)
            elif gate == "residuals":
                result = await gate_residuals(state, root, changed)
            elif gate == "diagnostics":
                result = await gate_diagnostics(state, root, changed, ports, event.id)
            elif gate == "harness":
                result = await gate_harness(state, root, ports, event.id)
            elif gate == "confidence":
                result = confidence_outcome(
                    next((o for o in outcomes if o.gate == "critic"), None),
                    _min_confidence(state),
                )
            else:
                result = await self._critic(state, out, event, changed, outcomes)
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
        after = {o.gate: o.passed for o in outcomes}
        if failed is None:
            out.emit(ev.VerificationCompleted, passed=True, gates=names, bounce=bounce)
            _score_replan(state, out, after, len(chain))
            summary = event.action.summary  # type: ignore[union-attr]  # a finish ActionProposed (checked in handle) has its action
            notes = [o.note for o in outcomes if o.note]
            if notes:
                # What was not verified belongs in the outcome, not only in `show --json`.
                summary += " [" + "; ".join(notes) + "]"
            if "tests" in chain and selection.unverified:
                await complete(
                    out,
                    state,
                    "success_unverified",
                    f"{summary} (unverified: {selection.why})",
                    reason="tests_unverified",
                )
            else:
                await complete(out, state, "success", summary)
            return out.events
        out.emit(
            ev.VerificationCompleted,
            passed=False,
            gates=names,
            failed_gate=failed.gate,
            bounce=bounce,
        )
        _score_replan(state, out, after, len(chain))
        limit = state.task.budgets.bounces
        if bounce < limit:
            restart = ""
            if decision_policy(state).rollback == "restart":
                restart = await _roll_back_to_good(state, out, failed.gate)
            out.emit(
                ev.ReplanTriggered,
                source=NAME,
                reason=(
                    f"The {failed.gate} gate failed after the change. Reflect on why the plan did not satisfy it, "
                    "then revise the plan so that it does." + (f" {restart}" if restart else "")
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
        self,
        state: SessionState,
        out: Emitter,
        cause: ev.ActionProposed,
        changed: list[str],
        so_far: list[GateOutcome],
    ) -> GateOutcome:
        """A read-only model call, possibly to an outside provider (reflection/critique.py): it
        sees a bounded, redacted pack; the payload's sha256 is recorded and an identical
        payload reuses the earlier verdict; its calls and tokens are capped; only ``block``
        fails the gate, and a refusal, garbage or an unavailable model never blocks."""
        from oopav.handlers.support.critic import review
        from oopav.handlers.support.workspace import final_diff
        from oopav.reflection.critique import GateLine, build_pack, critic_config, effect

        task = state.task
        assert task is not None
        cfg = critic_config(task.policy)
        if cfg is None:
            return GateOutcome(
                "critic", True, skipped=True, evidence="no critic configured (policy.critic)"
            )
        triggers: list[str] = []
        if "gate" not in cfg.on and "auto" in cfg.on:
            triggers = await asyncio.to_thread(self._auto_triggers, state, changed, cfg)
            if not triggers:
                return GateOutcome(
                    "critic",
                    True,
                    skipped=True,
                    evidence="no automatic critic trigger fired (policy.critic.on: auto)",
                )
        elif "gate" not in cfg.on:
            return GateOutcome(
                "critic",
                True,
                skipped=True,
                evidence=f"the critic runs on {', '.join(cfg.on) or 'nothing'}, not as a gate "
                "(policy.critic.on)",
            )
        diff = await final_diff(state, out.ports)
        plan = [f"{s.id}. {s.description}" for s in (state.plan.steps if state.plan else [])]
        instructions = cfg.instructions or decision_policy(state).critic_instructions
        if triggers:
            # The critic is told why it was called: what made this change worth a second look.
            why = "Reviewed automatically because: " + "; ".join(triggers)
            instructions = f"{instructions}\n{why}" if instructions else why
        pack = build_pack(
            task.instruction,
            plan,
            diff,
            [GateLine(o.gate, o.passed, o.skipped, o.evidence) for o in so_far],
            instructions=instructions,
            shown=cfg.allowed_artifact_fields,
        )
        said = await review(state, out, pack, cfg, "gate")
        if said.skipped is not None:
            return GateOutcome("critic", True, skipped=True, evidence=said.skipped)
        outcome = _critic_outcome(said.verdict, said.reasons, effect, cached=said.cached)
        outcome.verdict = said.verdict
        outcome.confidence = said.confidence
        outcome.top_risks = list(said.top_risks)
        outcome.missing_tests = list(said.missing_tests)
        report = [f"top risks: {'; '.join(said.top_risks)}"] if said.top_risks else []
        if said.missing_tests:
            report.append(f"missing tests: {'; '.join(said.missing_tests)}")
        if said.confidence is not None:
            report.append(f"confidence: {said.confidence:.2f}")
        if report:
            outcome.evidence += "\n" + "\n".join(report)
        if triggers:
            outcome.evidence += "\nautomatic triggers: " + "; ".join(triggers)
        return outcome

    @staticmethod
    def _auto_triggers(state: SessionState, changed: list[str], cfg: Any) -> list[str]:
        from oopav.decide.critic import critic_triggers, stalled_actions
        from oopav.sandbox.workspace import changed_lines

        root = Path(state.workspace.path) if state.workspace else None
        lines = changed_lines(root, state.workspace.base_commit) if root and state.workspace else 0
        statuses = [a.status for a in state.actions if a.type != "finish"]
        return critic_triggers(
            changed,
            lines,
            stalled_actions(statuses),
            max_files=cfg.auto_max_files,
            max_lines=cfg.auto_max_lines,
            stalled_steps=cfg.auto_stalled_steps,
        )


def _min_confidence(state: SessionState) -> float | None:
    from oopav.reflection.critique import critic_config

    cfg = critic_config(state.task.policy) if state.task is not None else None
    return cfg.min_confidence if cfg is not None else None


def _critic_outcome(
    verdict: str, reasons: list[str], effect: Any, cached: bool = False
) -> GateOutcome:
    """The verdict policy table (handlers/critique.VERDICT_POLICY) as a gate outcome."""
    said = "; ".join(reasons)
    note = " (same payload as before: verdict reused)" if cached else ""
    what = effect(verdict)
    if what == "replan":
        return GateOutcome("critic", False, evidence=f"critic {verdict}s: {said}{note}")
    if what == "warn":
        return GateOutcome("critic", True, evidence=f"critic {verdict} (warning): {said}{note}")
    return GateOutcome("critic", True, evidence=f"critic approves: {said}{note}")


def _score_replan(
    state: SessionState, out: Emitter, after: dict[str, bool], chain_length: int
) -> None:
    """``replan_scored`` for the first verification after a replan: the gate results before
    the replan and now, each scored as the share of the tier's gates that passed."""
    replan = state.unscored_replan
    if replan is None:
        return
    before = dict(state.replan_scores_before)
    n = max(1, chain_length)
    out.emit(
        ev.ReplanScored,
        replan_id=replan.id,
        source=replan.source,
        before=before,
        after=after,
        score_before=round(sum(before.values()) / n, 4),
        score_after=round(sum(after.values()) / n, 4),
    )


def _undone_feedback(state: SessionState, undone: list[Any], target: str, gate: str) -> str:
    """One line on the changes a failed gate undid: the last undone action in brief (an
    ast_grep rule's match and fix), how many lines the undone actions changed and the first
    change (``path:line `old` -> `new` ``), from the workspace's checkpoints (commits: a replay
    reads the same diff)."""
    from oopav.decide.gates import first_change, rule_brief
    from oopav.sandbox.workspace import WorkspaceError, git

    last = undone[-1]
    text = f"the {gate} gate failed after {rule_brief(last.action)}; undone"
    root = Path(state.workspace.path) if state.workspace is not None else None
    if root is None:
        return text
    try:
        args = [target, last.checkpoint] if last.checkpoint else [target]
        change = first_change(git(root, "diff", "--no-color", "-U0", *args))
    except (OSError, WorkspaceError):
        change = None
    if change is not None:
        path, line, old, new, n = change

        def cut(code: str) -> str:
            code = " ".join(code.split())
            return code if len(code) <= 60 else code[:59] + "…"

        text += f". It changed {n} line(s); first {path}:{line} `{cut(old)}` -> `{cut(new)}`"
    return text


async def _roll_back_to_good(state: SessionState, out: Emitter, gate: str) -> str:
    """Reset the workspace to the last checkpoint whose gates passed (the baseline when none
    did), record it as ``workspace_rolled_back``, and say so for the replan's reason."""
    from oopav.handlers.support.steps import roll_back

    target = state.good_checkpoint or state.workspace.base_commit  # type: ignore[union-attr]  # a session being verified has its workspace
    start = 0
    if state.good_checkpoint:
        marks = [i for i, a in enumerate(state.actions) if a.checkpoint == state.good_checkpoint]
        start = marks[-1] + 1 if marks else 0
    undone = [a for a in state.actions[start:] if a.status == "applied"]
    if not undone:
        return ""
    # What was undone, for the next attempt's feedback (the compact prompt's "Last attempt
    # refused" line: without it a retry after a failed gate saw the first prompt again).
    why = await asyncio.to_thread(_undone_feedback, state, undone, target, gate)
    await roll_back(
        out,
        state,
        target,
        undone,
        reason=f"the {gate} gate failed: the replan starts from the last good state",
        rejected=[why],
    )
    where = "the last checkpoint whose gates passed" if state.good_checkpoint else "the baseline"
    return f"The workspace was rolled back to {where}; the previous attempt's changes are gone."
