"""planner: asks the model for a plan with the prompt contract and records it (DESIGN step 4).

Where tests are required, a plan whose manifest names no test file and none of whose steps
names the test command (decide/plans.missing_tests), or that drops orient's test decision, is
refused and asked for again, burning the phase's retry budget. A plan
whose adequacy (decide/plans.adequacy: the files it names exist or are created, and cover the
files the task names by path) is below ``policy.plan_adequacy.min_score`` is replanned before
acting (``replan_triggered``, source ``adequacy``; bounded by ``policy.plan_adequacy.replans``)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import msgspec

from oopav.bus.consumer import Delivery
from oopav.decide.gates import remembered_rejections
from oopav.decide.policy import decision_policy
from oopav.events import catalog as ev
from oopav.events.catalog import Event, PlanStep
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.budgets import over_wall_budget, tokens_exceeded
from oopav.handlers.support.completion import complete
from oopav.handlers.support.model_calls import ask_model, clip
from oopav.logging import get_logger
from oopav.models.synth import POINTED_HEADER
from oopav.projections.session import SessionState
from oopav.sandbox.files import WorkspaceFiles

log = get_logger("oopav.planner")
NAME = "planner"
POINTED_SHOWN = 40
_TEST_STEP = re.compile(
    r"\b(tests?|pytest|unittest|test suite|cargo test|go test|npm test)\b", re.I
)


def missing_test_step(
    plan: object, decision: str, test_command: list[str] | None = None
) -> str | None:
    """Why a plan does not honour a required test decision (None when it does), by its
    manifest: a test file among its files, or a step naming the test command
    (decide/plans.missing_tests)."""
    from oopav.decide.plans import missing_tests

    return missing_tests(plan, decision, test_command)


class Planner:
    name = NAME
    subscribes = ("orient_reported", "replan_triggered")

    def __init__(self, repo_map_budget: int = 1024, cache_dir: Path | None = None) -> None:
        self.repo_map_budget = repo_map_budget
        self._cache_dir = cache_dir

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if isinstance(event, ev.OrientReported) and event.gate != "proceed":
            return []
        if not isinstance(event, ev.OrientReported | ev.ReplanTriggered) or state.task is None:
            return []
        out = Emitter(event, NAME, ports)
        if self._cache_dir is None:
            self._cache_dir = ports.settings.data_dir / "cache" / "repomap"
        over = over_wall_budget(out, state, "planning") or tokens_exceeded(out, state)
        if over is not None:
            await complete(
                out, state, "aborted", f"budget exceeded: {over.budget}", reason="budget"
            )
            return out.events
        await self._plan(event, state, out)
        return out.events

    def settings_cache(self, state: SessionState) -> Path | None:
        return self._cache_dir

    async def _context(
        self,
        state: SessionState,
        pointed: list[str] | None = None,
        test_command: list[str] | None = None,
    ) -> tuple[str, str | None]:
        parts: list[str] = []
        map_hash = None
        if state.workspace is not None and WorkspaceFiles(state.workspace.path).is_dir("."):
            from oopav.context.repomap import build_repo_map

            try:
                rmap = await asyncio.to_thread(
                    build_repo_map,
                    Path(state.workspace.path),
                    token_budget=self.repo_map_budget,
                    # The map cache is disposable (keyed by the tree): a rebuild costs time only.
                    cache_dir=self.settings_cache(state),
                    mentioned_idents=tuple(_idents(state.task.instruction)),  # type: ignore[union-attr]  # a session that plans has its task
                )
                parts.append("### Repository map\n" + rmap.text)
                map_hash = rmap.hash
            except Exception as exc:  # a map is an aid, never a blocker
                parts.append(f"### Repository map\n(unavailable: {exc})")
        o = state.orient
        if o is not None:
            parts.append(
                f"### Orient\nrisk={o.risk_band} evidence_gap={o.evidence_gap:.2f} category={o.category} "
                f"complexity={o.complexity} test_decision={o.test_decision}\n"
                + "\n".join(f"- {r}" for r in o.reasons[:8])
            )
        b = state.baseline
        if b is not None:
            tests = "unknown" if b.tests is None else ("passing" if b.tests.passed else "failing")
            parts.append(
                f"### Baseline\n{b.files_total} files, {len(b.parse_errors)} parse errors, {len(b.stubs)} stubs, tests {tests}"
            )
        task = state.task
        assert task is not None
        if pointed:
            # A hint for the manifest: the paths the task names and the files that use the
            # identifiers it names (the adequacy gate holds a plan to the former only).
            shown = pointed[:POINTED_SHOWN]
            more = len(pointed) - len(shown)
            parts.append(
                POINTED_HEADER
                + "\n"
                + "\n".join(f"- {p}" for p in shown)
                + (f"\n- … and {more} more" if more > 0 else "")
            )
        if state.evidence:
            lines = ["### Evidence gathered"]
            for g in state.evidence[-2:]:
                lines += [f"- {i.summary} {' '.join(i.locations[:5])}".rstrip() for i in g.items]
                if g.tests is not None:
                    lines.append(
                        f"- tests `{' '.join(g.tests.argv)}`: "
                        + ("pass" if g.tests.passed else f"fail (exit {g.tests.exit_code})")
                    )
            parts.append("\n".join(lines))
        if state.rejected_actions:
            parts.append(
                "### Rejected attempts (rolled back)\n"
                + "\n".join(f"- {r}" for r in state.rejected_actions[-5:])
            )
        if o is not None and o.memory_examples:
            lines = ["### Similar successful sessions"]
            for x in o.memory_examples[:3]:
                lines.append(
                    f"- ({x.get('score', 0):.2f}) {x.get('instruction', '')[:200]}\n  plan: {x.get('plan', '')[:400]}"
                )
            parts.append("\n".join(lines))
        remembered = remembered_rejections(o)
        if remembered:
            parts.append(
                "### Rejected in similar sessions (rolled back there; do not repeat them)\n"
                + "\n".join(f"- {r}" for r in remembered)
            )
        if task.test_command:
            parts.append("### Test command\n" + " ".join(task.test_command))
        elif test_command:
            parts.append("### Test command (detected)\n" + " ".join(test_command))
        if task.examples:
            from oopav.models.synth import examples_block

            parts.append(examples_block(task.examples))
        r = state.last_replan
        # A critic may block the very first plan, before any plan was proposed.
        if r is not None and (state.plans or r.source in ("critic", "adequacy")):
            limit = task.budgets.prompt_output_bytes
            parts.append(
                f"### Why we are planning again (attempt {state.plans + 1})\n{r.reason}\n"
                + clip(r.evidence, limit)
            )
            if r.perturbation:
                parts.append("### Change of approach\n" + r.perturbation)
        return "\n\n".join(parts), map_hash

    async def _caution(self, state: SessionState, out: Emitter) -> tuple[int, list[str]]:
        """Fatigue (decide/trends.py): the caution level this session's failures, and its
        mission's recent failed sessions, call for; a rise is recorded as ``caution_raised``
        (naming the mission's sessions that counted) before the plan it shapes."""
        from oopav.decide.trends import Point, caution, failures_of, trends

        points = [Point(**msgspec.to_builtins(p)) for p in state.observations]
        failures = failures_of([a.status for a in state.actions], points)
        failed_before = await _mission_failures(state, out.ports)
        level, reasons, effects = caution(
            failures,
            trends(points, [a.hash for a in state.actions]),
            mission_failures=len(failed_before),
            at=decision_policy(state).caution_at,
        )
        if level > state.caution_level:
            out.emit(
                ev.CautionRaised,
                level=level,
                reasons=reasons,
                effects=effects,
                mission_failures=failed_before,
            )
            return level, reasons
        return state.caution_level, state.caution_reasons

    async def _plan(self, event: Event, state: SessionState, out: Emitter) -> None:
        from oopav.decide.trends import caution_prompt

        decision = state.orient.test_decision if state.orient else "optional"
        if await self._one_step(state, out, decision):
            return
        pointed = await self._pointed(state)
        test_command = await self._test_command(state)
        context, map_hash = await self._context(state, pointed, test_command)
        level, reasons = await self._caution(state, out)
        if level:
            context += "\n\n" + caution_prompt(level, reasons)
        # -- decision core: competing plans (plan_candidates.py) when the policy asks for them.
        answer: Any = False
        asking = state
        n = decision_policy(state).plan_candidates
        if n > 1 and state.workspace is not None:
            from oopav.handlers.support.plans import NoValidPlan, choose_plan

            answer = await choose_plan(
                state, out, context, lambda plan: missing_test_step(plan, decision, test_command), n
            )
            if isinstance(answer, NoValidPlan):
                answer, asking = False, answer.state
        if answer is False:  # one plan (or no valid candidate): ask the ordinary way
            answer = await ask_model(
                out,
                asking,
                "planner",
                context,
                "planning",
                check=lambda plan: missing_test_step(plan, decision, test_command),
            )
        # -- end decision core
        if answer is None:
            return
        parsed, call_id = answer
        plan = parsed.payload
        inadequate, score = await self._inadequate(plan, pointed, state, out)
        if inadequate:
            return
        if await self._repeats_itself(plan, decision, state, out):
            return
        if await self._critic_blocks(plan, state, out):
            return
        out.emit(
            ev.PlanProposed,
            steps=[
                PlanStep(
                    id=s.id,
                    description=s.description,
                    files=list(s.files),
                    tests_may_fail=s.tests_may_fail,
                )
                for s in plan.steps
            ],
            files=list(plan.files),
            test_decision=plan.test_decision if decision != "required" else "required",
            attempt=state.plans + 1,
            model_call_id=call_id,
            rationale=plan.rationale,
            repo_map_hash=map_hash,
            state_update=msgspec.to_builtins(parsed.state_update) if parsed.state_update else None,
            think=parsed.think,
            adequacy=score,
        )

    @staticmethod
    async def _test_command(state: SessionState) -> list[str] | None:
        """The test command a plan must name when tests are required and it names no test
        file: the task's, else the one detected in the workspace."""
        from oopav.decide.tests import detect_test_command

        if state.task is not None and state.task.test_command:
            return list(state.task.test_command)
        if state.workspace is None:
            return None
        files = WorkspaceFiles(state.workspace.path)
        if not files.is_dir("."):
            return None
        found, _ = await asyncio.to_thread(detect_test_command, files)
        return found

    @staticmethod
    async def _pointed(state: SessionState) -> list[str] | None:
        """The files the instruction points at (decide/plans.pointed_files), None without a
        workspace to look in."""
        from oopav.decide.plans import pointed_files

        if state.workspace is None or state.task is None:
            return None
        root = WorkspaceFiles(state.workspace.path)
        if not root.is_dir("."):
            return None
        return await asyncio.to_thread(pointed_files, root, state.task.instruction)

    async def _inadequate(
        self, plan: Any, pointed: list[str] | None, state: SessionState, out: Emitter
    ) -> tuple[bool, float | None]:
        """The plan adequacy gate: a plan whose adequacy (decide/plans.adequacy) is below
        ``policy.plan_adequacy.min_score`` is replanned before acting (``replan_triggered``,
        source ``adequacy``, with what it got wrong), at most ``policy.plan_adequacy.replans``
        times a session; past that it goes ahead, its score on ``plan_proposed``. Returns
        (replanned, the score or None when not judged: no workspace to look in, or the gate off)."""
        from oopav.decide.plans import adequacy, judge_plan, named_files

        policy = decision_policy(state).plan_adequacy
        task = state.task
        if policy.min_score <= 0 or pointed is None or state.workspace is None or task is None:
            return False, None
        root = WorkspaceFiles(state.workspace.path)
        named = await asyncio.to_thread(named_files, root, task.instruction)
        _, components, reason = await asyncio.to_thread(
            judge_plan, plan, lambda _plan: None, root, named, named, policy.unnamed == "neutral"
        )
        score = adequacy(components)
        if score >= policy.min_score or state.adequacy_replans >= policy.replans:
            return False, score
        out.emit(
            ev.ReplanTriggered,
            source="adequacy",
            reason=(
                f"The plan's adequacy is {score:.2f}, below {policy.min_score:.2f} "
                f"(policy.plan_adequacy.min_score): {reason or 'it names no files'}. Name every "
                "file the change touches in the plan's files and steps (files that exist, or "
                "new ones a step says it creates), covering the files the task points at."
            ),
            evidence=" ".join(f"{k}={v:g}" for k, v in sorted(components.items())),
            attempt=state.plans + 1,
        )
        return True, score

    async def _one_step(self, state: SessionState, out: Emitter, decision: str) -> bool:
        """Under the compact prompt profile (a small local policy) the planner asks no model:
        a single-codemod task gets one step, the instruction itself, over the files that use
        its symbol (models/profiles.py). True when it proposed that plan."""
        from oopav.handlers.support.compact import plan_files
        from oopav.handlers.support.model_calls import model_spec, session_backend
        from oopav.models.profiles import one_step_plan, profile_for

        assert state.task is not None
        try:
            profile = profile_for(
                model_spec(state, out.ports), state.task.policy, session_backend(out, state)
            )
        except ValueError:
            return False  # an unknown profile: intake's business; plan the ordinary way
        if profile != "compact":
            return False
        files = await asyncio.to_thread(plan_files, state)
        plan = one_step_plan(state.task.instruction, files)
        description = plan["steps"][0]["description"]
        if decision == "required" and not _TEST_STEP.search(description):
            description += " (the verifier runs the tests)"
        out.emit(
            ev.PlanProposed,
            steps=[PlanStep(id=1, description=description, files=files)],
            files=files,
            test_decision=decision,
            attempt=state.plans + 1,
            rationale=plan["rationale"],
        )
        return True

    async def _critic_blocks(self, plan: Any, state: SessionState, out: Emitter) -> bool:
        """With ``policy.critic.on`` holding ``plan``, the critic reviews the plan before it is
        proposed; ``block`` replans (source ``critic``) with its reasons, within the replan cap
        (``policy.replans.cap`` blocks per session; past it the plan goes ahead, the verdict on
        record). Any other verdict lets the plan through."""
        from oopav.handlers.support.critic import review
        from oopav.reflection.critique import build_pack, critic_config, effect

        task = state.task
        assert task is not None
        cfg = critic_config(task.policy)
        if cfg is None or "plan" not in cfg.on:
            return False
        policy = decision_policy(state)
        lines = [
            f"{s.id}. {s.description}" + (f" [{', '.join(s.files)}]" if s.files else "")
            for s in plan.steps
        ]
        pack = build_pack(
            task.instruction,
            lines,
            "",
            [],
            instructions=cfg.instructions or policy.critic_instructions,
            shown=cfg.allowed_artifact_fields,
        )
        said = await review(state, out, pack, cfg, "plan")
        if effect(said.verdict) != "replan":
            return False
        blocked = sum(
            1
            for v in state.critic_verdicts
            if v.trigger == "plan" and effect(v.verdict) == "replan"
        )
        if blocked >= policy.replans.cap:
            return False
        out.emit(
            ev.ReplanTriggered,
            source="critic",
            reason="the critic blocks the plan: " + ("; ".join(said.reasons) or said.verdict),
            evidence="\n".join(said.reasons)[:4000],
            attempt=state.plans + 1,
        )
        return True

    async def _repeats_itself(
        self, plan: object, decision: str, state: SessionState, out: Emitter
    ) -> bool:
        """Fuzzy repetition of plans: a third plan more than 90% like the two before it is
        not proposed; the planner replans with a perturbation (then, a second time, aborts)."""
        from oopav.decide import next_response
        from oopav.decide.stuck import SIMILAR_RUN, detect_similar
        from oopav.projections.session import plan_text

        if len(state.plan_texts) < SIMILAR_RUN - 1:
            return False
        candidate = ev.PlanProposed(
            id="-",
            aggregate_id=state.session_id,
            correlation_id="-",
            actor="-",
            ts=out.now(),
            steps=[
                PlanStep(
                    id=s.id,
                    description=s.description,
                    files=list(s.files),
                    tests_may_fail=s.tests_may_fail,
                )
                for s in plan.steps  # type: ignore[attr-defined]  # duck-typed plan: a parsed PlanOutput
            ],
            files=list(plan.files),  # type: ignore[attr-defined]  # duck-typed plan: a parsed PlanOutput
            test_decision=plan.test_decision if decision != "required" else "required",  # type: ignore[attr-defined]  # duck-typed plan: a parsed PlanOutput
        )
        texts = [*state.plan_texts[-(SIMILAR_RUN - 1) :], plan_text(candidate)]
        match = detect_similar(texts)
        if match is None:
            return False
        response, perturbation = next_response(state.stuck)
        out.emit(
            ev.StuckDetected,
            pattern="similar",
            action_hashes=[],
            count=match.count,
            response=response,
        )
        if response == "replan":
            out.emit(
                ev.ReplanTriggered,
                source=NAME,
                reason=f"the last {match.count} plans are more than 90% alike",
                evidence=texts[-1][:2000],
                attempt=state.plans + 1,
                perturbation=perturbation,
            )
        else:
            await complete(
                out, state, "aborted", "the planner keeps proposing the same plan", reason="stuck"
            )
        return True


def _idents(text: str) -> list[str]:
    return re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", text) + re.findall(
        r"\b([a-z]+_[a-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+)\b", text
    )


async def _mission_failures(state: SessionState, ports: Ports) -> list[str]:
    """The mission's recent failed sessions, ended before this one was submitted, from the
    mission projection (``ports.guidance``); [] without a mission or a projection."""
    from oopav.decide.trends import mission_failures

    task = state.task
    source = getattr(ports, "guidance", None)
    if task is None or not task.mission or source is None:
        return []
    try:
        mission = await source.state(task.mission)
    except Exception as exc:  # fatigue is an aid: a session without it still plans
        log.warning("mission_state_unavailable", mission=task.mission, error=repr(exc))
        return []
    return mission_failures(mission.outcomes, task.ts, state.session_id)
