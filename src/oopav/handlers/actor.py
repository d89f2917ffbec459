"""actor: one action at a time (DESIGN step 5).

For each step: a model call → ``action_proposed`` → pre-emit validation (``action_rejected``
with a structured reason when it fails; nothing is written) → capability check
(``permission_requested`` and a pause when a scope is neither granted nor allowed) → apply in
the sandbox → ``action_applied``. ``finish``, or a plan whose steps are all applied, hands over
to the verifier. Budgets and stuck detection run before every model call.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from oopav.bus.consumer import Delivery
from oopav.decide import detect_stuck, next_response
from oopav.decide.gates import remembered_rejections
from oopav.events import catalog as ev
from oopav.events.actions import (
    INFORMING_ACTIONS,
    READ_ONLY_ACTIONS,
    Action,
    AskAction,
    FinishAction,
    RunCommandAction,
    action_hash,
)
from oopav.events.catalog import Event, ExecRecord
from oopav.handlers.ports import Ports, exec_key
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.baseline import environment_spec
from oopav.handlers.support.budgets import over_wall_budget, tokens_exceeded
from oopav.handlers.support.candidates import choose
from oopav.handlers.support.completion import complete
from oopav.handlers.support.model_calls import ask_model, clip
from oopav.handlers.support.workspace import (
    cap_diff,
    sandbox_policy,
    workspace_info,
    workspace_path,
)
from oopav.projections.session import ActionRecord, SessionState
from oopav.sandbox.files import WorkspaceFiles

if TYPE_CHECKING:
    from oopav.decide.stuck import StuckMatch
    from oopav.sandbox.apply import ActionPlan
    from oopav.sandbox.capabilities import Decision
    from oopav.sandbox.policy import Policy

NAME = "actor"
MISSED = ("no_match", "file_not_found", "no_files")
MAX_QUESTION_CHARS = 2000  # decision core: see observer.MISSED
CONTINUE = ("continue", "more_evidence", "negative_example")


class Actor:
    name = NAME
    subscribes = (
        "plan_proposed",
        "observation_recorded",
        "action_rejected",
        "permission_granted",
        "permission_denied",
        "evidence_gathered",  # decision core: acting resumes once the evidence is in
        "human_input_provided",  # the answer to an `ask` action
    )

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if state.task is None or state.plan is None or state.workspace is None:
            return []
        out = Emitter(event, NAME, ports)
        if isinstance(event, ev.HumanInputProvided):
            self._answered(event, state, out)
            return out.events
        if isinstance(event, ev.PermissionGranted | ev.PermissionDenied):
            if state.awaiting_permission:
                await self._resume(event, state, out)
            return out.events
        if isinstance(event, ev.ObservationRecorded):
            if event.phase != "change" or event.observer_action not in CONTINUE:
                return []
            # decision core: more_evidence waits for the observer's evidence_gathered.
            if event.observer_action == "more_evidence":
                return []
        if isinstance(event, ev.EvidenceGathered) and event.trigger != "observer":
            return []
        if isinstance(event, ev.ActionRejected) and event.reason in MISSED:
            return []  # the observer gathers evidence first (rule 6); its event resumes us
        if state.phase == "waiting_for_human":
            return []
        if state.awaiting_permission or state.phase in ("verifying",):
            return []
        await self._step(state, out)
        return out.events

    # -- one step -------------------------------------------------------------------------

    async def _step(self, state: SessionState, out: Emitter) -> None:
        task = state.task
        assert task is not None and state.plan is not None
        over = over_wall_budget(out, state, "acting") or tokens_exceeded(out, state)
        since = state.actions[state.plan_actions_start :]
        # Read-only retrieval and questions inform a step; they do not complete one.
        applied = sum(1 for a in since if a.status == "applied" and a.type not in INFORMING_ACTIONS)
        # Handing a fully applied plan to the verifier is not a further attempt: the iteration
        # budget limits attempts, and a change applied on the last one is still verified.
        handover = applied >= len(state.plan.steps)
        if (
            over is None
            and not handover
            and state.budgets_used.iterations >= task.budgets.iterations
        ):
            over = out.emit(
                ev.BudgetExceeded,
                budget="iterations",
                limit=task.budgets.iterations,
                used=state.budgets_used.iterations,
                phase="acting",
                response="abort",
            )
        if over is not None:
            await complete(
                out, state, "aborted", f"budget exceeded: {over.budget}", reason="budget"
            )
            return
        done = [a for a in since if a.status in ("applied", "failed", "rejected", "rolled_back")]
        stuck = detect_stuck([a.hash for a in done], [a.status == "applied" for a in done])
        if stuck is None:
            # decision core: near-identical failing attempts are a loop too (fuzzy repetition).
            stuck = _similar_actions(done)
        if stuck is not None:
            response, perturbation = next_response(state.stuck)
            out.emit(
                ev.StuckDetected,
                pattern=stuck.pattern,
                action_hashes=list(stuck.hashes),
                count=stuck.count,
                response=response,
            )
            if response == "replan":
                out.emit(
                    ev.ReplanTriggered,
                    source=NAME,
                    reason=f"stuck: {stuck.pattern} x{stuck.count}",
                    evidence=_recent_text(state),
                    attempt=state.plans + 1,
                    perturbation=perturbation,
                )
            else:
                await complete(
                    out,
                    state,
                    "aborted",
                    f"stuck ({stuck.pattern}) again after a replan",
                    reason="stuck",
                )
            return
        step = min(applied + 1, len(state.plan.steps))
        fmt = _format_argv(state)
        if fmt and _just_formatted(state, fmt):
            # The formatter ran because the actor finished: finish now, without asking again.
            finish = FinishAction(summary=f"plan applied; formatted with `{' '.join(fmt)}`")
            out.emit(
                ev.ActionProposed,
                action=finish,
                action_hash=action_hash(finish),
                step=step,
                iteration=state.budgets_used.iterations + 1,
            )
            return
        if handover:
            # Every step has an applied action: hand over to the verifier without asking.
            finish = FinishAction(summary=f"all {len(state.plan.steps)} plan steps applied")
            out.emit(
                ev.ActionProposed,
                action=finish,
                action_hash=action_hash(finish),
                step=step,
                iteration=state.budgets_used.iterations + 1,
            )
            return
        # The prompt reads the workspace: after a crash between applying an action and storing
        # its events, the files are ahead of the stream. Back to what the stream says first,
        # so the redelivered step (and its replay) sees the same files.
        await self._rollback(state)
        # -- decision core: competing candidates (candidates.py) when the policy asks for them.
        from oopav.decide.policy import decision_policy

        n = decision_policy(state).candidates
        if n > 1:
            action, called, think, update = await choose(self, state, out, step, n, _context)
        else:
            action, called, think, update = await self._ask(state, out, step)
        # -- end decision core
        if action is None:
            return
        if isinstance(action, FinishAction) and fmt and not _just_formatted(state, fmt):
            # policy.format: what changes code is an action, recorded before the tests that
            # judge it — never a gate rewriting files after them (issue 24).
            action = RunCommandAction(argv=list(fmt), timeout_s=300.0)
            think = f"policy.format: the project's formatter before finishing ({think})"[:2000]
        proposed = out.emit(
            ev.ActionProposed,
            action=action,
            action_hash=action_hash(action),
            step=step,
            iteration=state.budgets_used.iterations + 1,
            model_call_id=called,
            think=think,
            state_update=update,
        )
        if isinstance(action, FinishAction):
            return
        # Candidates were tried in the workspace: only a plain ask left it at the checkpoint.
        await self._validate_and_apply(proposed.id, action, state, out, rolled_back=n <= 1)

    async def _ask(
        self, state: SessionState, out: Emitter, step: int
    ) -> tuple[Action | None, str | None, str, dict[str, Any] | None]:
        context = await asyncio.to_thread(_context, state, step, out.ports.settings)
        answer = await ask_model(out, state, "actor", context, "acting")
        if answer is None:
            return None, None, "", None
        parsed, call_id = answer
        update = msgspec.to_builtins(parsed.state_update) if parsed.state_update else None
        return parsed.payload, call_id, parsed.think, update

    # -- validation, capabilities, application --------------------------------------------

    async def _validate_and_apply(
        self,
        action_id: str,
        action: Action,
        state: SessionState,
        out: Emitter,
        *,
        resumed: bool = False,
        rolled_back: bool = False,
    ) -> None:
        """Pre-emit validation, the capability check, then apply. ``resumed``: a grant arrived
        for an action that was waiting; a scope still missing is only asked for once.
        ``rolled_back``: the workspace is already at the last checkpoint."""
        from oopav.sandbox.apply import Rejection, plan_action

        root = workspace_path(state)
        policy = sandbox_policy(state)
        if not rolled_back:
            await self._rollback(state)
        refused = policy.refuses_tool(action.type)
        if refused is not None:  # policy.tools: a tool the agent may not use runs nothing
            out.emit(
                ev.ActionRejected, action_id=action_id, reason="tool_not_allowed", message=refused
            )
            return
        if isinstance(action, AskAction):  # a question: answered before, or to a person
            await self._question(action_id, action, state, out)
            return
        # -- decision core: read-only retrieval needs no grant and no sandbox (retrieval.py).
        if action.type in READ_ONLY_ACTIONS:
            await self._read_only(action_id, action, state, out)
            return
        # -- end decision core
        plan = await asyncio.to_thread(plan_action, root, action, policy=policy)
        if isinstance(plan, Rejection):
            out.emit(
                ev.ActionRejected,
                action_id=action_id,
                reason=plan.reason,
                message=_feedback(plan),
                details=_jsonable(plan.details),
            )
            return
        decision = self._check(plan.scopes, state, policy, out)
        if decision.outcome == "ask":
            from oopav.decide.policy import decision_policy

            if decision_policy(state).escalation == "abort":
                # An unattended run: nobody will grant the scope, so the request would only
                # end at the phase's wall budget. Refused like a denial instead: the model
                # hears why and may take another way within its budgets.
                out.emit(
                    ev.ActionRejected,
                    action_id=action_id,
                    reason="permission_denied",
                    message=(
                        f"{action.type} needs {decision.scope}, which nobody can grant in an "
                        "unattended run (policy.escalation: abort); do it another way"
                    ),
                    details={"scope": decision.scope, "unattended": True},
                )
                return
            if not (resumed and decision.scope in state.pending_permissions):
                out.emit(
                    ev.PermissionRequested,
                    scope=decision.scope or "",
                    reason=("still needed" if resumed else f"{action.type} needs {decision.scope}"),
                    action_id=action_id,
                )
            return
        if decision.outcome == "denied":
            out.emit(
                ev.ActionRejected,
                action_id=action_id,
                reason="permission_denied",
                message=decision.reason,
                details={"scope": decision.scope},
            )
            return
        await self._apply(action_id, plan, decision.grants_used, state, out)

    def _check(
        self, scopes: list[str], state: SessionState, policy: Policy | None, out: Emitter
    ) -> Decision:
        from oopav.sandbox.capabilities import Denial, Grant, GrantState, check, exec_scope

        grants = tuple(
            Grant(
                scope=g.scope,
                granted_by=g.granted_by,
                event_id=g.id,
                expires_at=g.expires_at,
                max_uses=g.max_uses,
                uses=g.uses,
            )
            for g in state.grants
            if not g.denied
        )
        denials = tuple(
            Denial(scope=g.scope, denied_by=g.granted_by, event_id=g.id)
            for g in state.grants
            if g.denied
        )
        # The task's own test command is what the verifier runs anyway: allowed by default
        # (a policy deny or an explicit denial still wins, as check() orders them).
        test = state.task.test_command if state.task else None
        for argv in (test, _format_argv(state)):
            if argv and policy is not None:
                own = str(exec_scope(argv))
                if own not in policy.allow:
                    policy = policy.model_copy(update={"allow": [*policy.allow, own]})
        return check(scopes, GrantState(grants=grants, denials=denials), policy, out.now())

    async def _rollback(self, state: SessionState) -> None:
        """Back to the last good checkpoint, so a redelivered step applies onto the same files."""
        from oopav.sandbox.workspace import rollback

        last = next(
            (
                a.checkpoint
                for a in reversed(state.actions)
                if a.status == "applied" and a.checkpoint
            ),
            None,
        )
        info = workspace_info(state, None)
        await asyncio.to_thread(rollback, info, last or info.base_commit)

    async def _apply(
        self,
        action_id: str,
        plan: ActionPlan,
        grants_used: list[str],
        state: SessionState,
        out: Emitter,
    ) -> None:
        from oopav.sandbox.apply import apply_plan
        from oopav.sandbox.workspace import checkpoint, diff_between, head_commit

        info = workspace_info(state, None)
        root = Path(info.path)
        t0 = out.ports.clock.monotonic()
        execs = []
        ok, exit_code, sig, timed_out, stdout, stderr, nbytes = True, None, None, False, "", "", 0
        if isinstance(plan.action, RunCommandAction):
            task = state.task
            assert task is not None
            argv = list(plan.action.argv)
            rec = await out.ports.sandbox.run(
                argv,
                workspace=root,
                session_id=state.session_id,
                key=exec_key(action_id, "action", argv),
                purpose="action",
                timeout_s=min(plan.action.timeout_s, task.budgets.wall_seconds_per_phase),
                network=plan.network,
                environment=environment_spec(task),
            )
            rec = await asyncio.to_thread(_record_effect, root, rec)
            execs.append(rec)
            ok = rec.exit_code == 0 and not rec.timed_out
            exit_code, sig, timed_out = rec.exit_code, rec.signal, rec.timed_out
            limit = task.budgets.prompt_output_bytes
            stdout = clip(rec.stdout_tail, limit, rec.artifact or "")
            stderr = clip(rec.stderr_tail, limit, rec.artifact or "")
            nbytes = rec.stdout_bytes + rec.stderr_bytes
        else:
            try:
                await asyncio.to_thread(apply_plan, root, plan)
            except OSError as exc:
                # The file system refused a write planning could not foresee (no space, a
                # name it will not hold): undo what part of the plan was written and refuse
                # the action — the model hears why — instead of a crash and a dead letter.
                from oopav.sandbox.workspace import rollback

                await asyncio.to_thread(rollback, info)  # to the last checkpoint
                out.emit(
                    ev.ActionRejected,
                    action_id=action_id,
                    reason="apply_failed",
                    message=f"the write failed: {exc.strerror or exc} ({exc.filename or ''})",
                    details={"errno": exc.errno or 0},
                )
                return
            # What a file action did, where: the actor's next prompt shows it.
            stdout = await asyncio.to_thread(_sites_report, plan)
        before = await asyncio.to_thread(head_commit, root)
        commit = await asyncio.to_thread(
            checkpoint, info, f"oopav: {plan.action.type} {action_id[:8]}"
        )
        diff = ""
        files: list[str] = []
        if commit != before:
            text, files = await asyncio.to_thread(diff_between, root, before, commit)
            diff = cap_diff(text, out.ports, state.session_id, f"{action_id}.diff")
        out.emit(
            ev.ActionApplied,
            action_id=action_id,
            ok=ok,
            exit_code=exit_code,
            signal=sig,
            timed_out=timed_out,
            diff=diff,
            files_changed=files,
            stdout_tail=stdout,
            stderr_tail=stderr,
            output_bytes=nbytes,
            checkpoint=commit,
            duration_ms=round((out.ports.clock.monotonic() - t0) * 1000, 3),
            grants_used=grants_used,
            execs=execs,
        )

    async def _read_only(
        self, action_id: str, action: Action, state: SessionState, out: Emitter
    ) -> None:
        from oopav.handlers.support.retrieval import read_only

        root = workspace_path(state)
        limit_s = sandbox_policy(state).sandbox_or_default.read_timeout_s
        try:
            # The search checks its deadline itself; wait_for is the backstop for one read
            # that hangs (a stalled filesystem): the session goes on without its result.
            ok, text = await asyncio.wait_for(
                asyncio.to_thread(read_only, root, action, timeout_s=limit_s),  # type: ignore[arg-type]  # READ_ONLY_ACTIONS: a read_file or search action
                timeout=limit_s + 1.0,
            )
        except TimeoutError:
            ok, text = (
                False,
                f"(the {action.type} did not finish within its {limit_s:g} s deadline)",
            )
        limit = state.task.budgets.prompt_output_bytes  # type: ignore[union-attr]  # a session that acts has its task
        out.emit(
            ev.ActionApplied,
            action_id=action_id,
            ok=ok,
            exit_code=0 if ok else 1,
            stdout_tail=clip(text, limit, "the workspace file itself"),
            output_bytes=len(text.encode()),
        )

    async def _question(
        self, action_id: str, action: AskAction, state: SessionState, out: Emitter
    ) -> None:
        """An ``ask``: the answer of an earlier question like it (the session's, then its
        mission's) when there is one (``decide/asks.py``), else a question to a person with
        the policy's deadline; the answer completes the action (:meth:`_answered`)."""
        from oopav.decide.asks import reusable
        from oopav.handlers.support.asks import mission_answers, session_answers
        from oopav.handlers.support.steps import ask_person

        assert state.task is not None
        if not action.question.strip() or len(action.question) > MAX_QUESTION_CHARS:
            out.emit(
                ev.ActionRejected,
                action_id=action_id,
                reason="bad_question",
                message=f"an ask needs a question of 1 to {MAX_QUESTION_CHARS} characters "
                f"(got {len(action.question.strip())})",
            )
            return
        mission = state.task.mission or None
        known = session_answers(state)
        hit = reusable(action.question, action.options, known)
        if hit is None:
            others = await mission_answers(out.ports, mission, state.session_id)
            hit = reusable(action.question, action.options, others)
        if hit is None:
            ask_person(
                out,
                state,
                question=action.question,
                options=list(action.options),
                kind="ask",
                context=f"asked by the actor at step {state.budgets_used.iterations + 1}",
                action_id=action_id,
            )
            return
        prior, score = hit
        here = prior.session_id == state.session_id
        out.emit(
            ev.QuestionAnswered,
            question=action.question,
            answer=prior.answer,
            answered_by=prior.answered_by,
            action_id=action_id,
            mission=mission,
            reused_from=prior.event_id,
            reused_session=None if here else prior.session_id,
            reused_question=prior.question,
            similarity=score,
        )
        where = "this session" if here else f"session {prior.session_id}"
        out.emit(
            ev.ActionApplied,
            action_id=action_id,
            ok=True,
            exit_code=0,
            stdout_tail=(
                f"answer (reused from {where}: {prior.question!r} was answered by "
                f"{prior.answered_by or 'a person'}, similarity {score:.2f}): {prior.answer}"
            ),
        )

    def _answered(self, event: ev.HumanInputProvided, state: SessionState, out: Emitter) -> None:
        """A person answered the actor's question: kept (``question_answered``) and given to
        the model as the ``ask`` action's result."""
        asked = state.human_request
        if asked is None or asked.kind != "ask" or asked.action_id is None:
            return  # orient decides the answers to its own questions
        if event.request_id not in (None, asked.id) or state.phase == "completed":
            return
        by = event.answered_by or "a person"
        out.emit(
            ev.QuestionAnswered,
            question=asked.question,
            answer=event.answer,
            answered_by=event.answered_by,
            action_id=asked.action_id,
            request_id=asked.id,
            mission=state.task.mission or None if state.task else None,
        )
        out.emit(
            ev.ActionApplied,
            action_id=asked.action_id,
            ok=True,
            exit_code=0,
            stdout_tail=f"answer from {by}: {event.answer}",
        )

    async def _resume(self, event: Event, state: SessionState, out: Emitter) -> None:
        """A grant or denial arrived for the action waiting on it."""
        rec = state.action(state.awaiting_permission or "")
        if rec is None or rec.action is None:
            return
        if isinstance(event, ev.PermissionDenied):
            out.emit(
                ev.ActionRejected,
                action_id=rec.id,
                reason="permission_denied",
                message=f"{event.scope} denied by {event.denied_by}: {event.reason}",
                details={"scope": event.scope},
            )
            return
        await self._validate_and_apply(rec.id, rec.action, state, out, resumed=True)


# --- what the actor sees (realproj, issue 16 §3) --------------------------------------------

FOCUS_FILES = 3
REPO_MAP_TOKENS = 512
DIFF_PREVIEW_LINES = 40


def _context(state: SessionState, step: int, settings: Any = None) -> str:
    """The actor's context pack: the plan with the current step, the results of earlier actions
    (files and lines changed per file, a diff preview, rejections with their feedback), the
    files in focus with line numbers, and the repo map; within the actor's token budget, cut
    with explicit markers. Everything is read from the workspace at its last checkpoint, so a
    replay (same actions on the same base) builds the same text."""
    from oopav.models.prompt import CONTEXT_BUDGET_TOKENS, fit_sections

    plan = state.plan
    assert plan is not None and state.task is not None
    lines = []
    current = None
    for i, s in enumerate(plan.steps):
        is_current = s.id == step or i + 1 == step
        current = s if is_current and current is None else current
        mark = "->" if is_current else "  "
        files = f" [{', '.join(s.files)}]" if s.files else ""
        lines.append(f"{mark} {s.id}. {s.description}{files}")
    lines.append(f"Current step: {step} of {len(plan.steps)}")
    if current is not None:
        lines.append(f"Do now: {current.description}")
    sections: list[tuple[str, str]] = [("Plan", "\n".join(lines))]
    if state.task.examples:
        from oopav.models.synth import examples_block

        sections.append(("Examples", examples_block(state.task.examples)))
    root = Path(state.workspace.path) if state.workspace else None
    if state.recent:
        limit = state.task.budgets.prompt_output_bytes
        rec_lines = []
        for r in state.recent[-3:]:
            rec_lines.append(f"- {r.type}: {r.summary}")
            if r.output:
                rec_lines.append(clip(r.output, max(256, limit // 3)))
        sections.append(("Results of earlier actions", "\n".join(rec_lines)))
    if root is not None:
        changes = _last_change(state, root)
        if changes:
            sections.append(("Last applied change", changes))
    # -- decision core (issue 17): what was rolled back, and evidence the observer gathered.
    if state.rejected_actions:
        sections.append(
            (
                "Rejected attempts (rolled back; do not repeat them)",
                "\n".join(f"- {r}" for r in state.rejected_actions[-5:]),
            )
        )
    remembered = remembered_rejections(state.orient)
    if remembered:
        sections.append(
            (
                "Rejected in similar sessions (rolled back there; do not repeat them)",
                "\n".join(f"- {r}" for r in remembered),
            )
        )
    observed = [g for g in state.evidence if g.trigger == "observer"]
    if observed:
        sections.append(
            (
                "Evidence",
                "\n".join(
                    f"- {i.summary} {' '.join(i.locations[:5])}".rstrip()
                    for i in observed[-1].items
                ),
            )
        )
    # -- end decision core
    if state.last_observation is not None and state.last_observation.phase == "change":
        o = state.last_observation
        if o.parse_errors or o.stubs:
            sections.append(
                (
                    "Observer",
                    "\n".join(
                        f"- {f.path}:{f.line} {f.kind}: {f.message}"
                        for f in (o.parse_errors + o.stubs)[:10]
                    ),
                )
            )
    if root is not None:
        focus = list(current.files if current is not None and current.files else plan.files)
        idents = _quoted_idents(state.task.instruction)
        for rel in focus[:FOCUS_FILES]:
            sections.append((f"File {rel}", _numbered_file(root, rel, idents)))
        if len(focus) > FOCUS_FILES:
            sections.append(
                (
                    "Other files in focus",
                    ", ".join(focus[FOCUS_FILES:]) + " (not shown; name one in a step to see it)",
                )
            )
        rmap = _repo_map(root, focus, state.task.instruction, settings)
        if rmap:
            sections.append(("Repository map", rmap))
    return fit_sections(sections, CONTEXT_BUDGET_TOKENS["actor"], role="actor")


FILE_LINES = 240
WINDOW = 12


def _windows(rows: list[str], idents: tuple[str, ...]) -> list[tuple[int, int]]:
    """0-based [start, end) spans to show of a long file: around the lines that name the
    task's identifiers (±WINDOW), merged, at most FILE_LINES in all; the head without hits."""
    import re

    if len(rows) <= FILE_LINES:
        return [(0, len(rows))]
    names = [re.compile(r"\b" + re.escape(i.split(".")[-1]) + r"\b") for i in idents if i]
    hits = [n for n, line in enumerate(rows) if any(p.search(line) for p in names)]
    if not hits:
        return [(0, FILE_LINES)]
    spans: list[tuple[int, int]] = []
    budget = FILE_LINES
    for h in hits:
        start, end = max(0, h - WINDOW), min(len(rows), h + WINDOW + 1)
        if spans and start <= spans[-1][1]:
            grown = end - spans[-1][1]
            if grown > budget:
                break
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            budget -= max(0, grown)
        else:
            if end - start > budget:
                break
            spans.append((start, end))
            budget -= end - start
    return spans


def _file_spans(
    rel: str, text: str, rows: list[str], idents: tuple[str, ...]
) -> list[tuple[int, int]]:
    """What to show of a file: all of it when short; else the whole functions and classes
    that name or mention the task's identifiers (tree-sitter tags, context/spans.py), and
    windows around the mentions where no definition holds them."""
    if len(rows) <= FILE_LINES:
        return [(0, len(rows))]
    from oopav.context.spans import spans_to_show, symbol_spans

    picked = spans_to_show(symbol_spans(rel, text.encode()), rows, idents, FILE_LINES)
    return picked or _windows(rows, idents)


def _numbered_file(root: Path, rel: str, idents: tuple[str, ...] = ()) -> str:
    from oopav.sandbox.validate import PathRejected, resolve_in_workspace

    try:
        norm, _ = resolve_in_workspace(root, rel)
    except PathRejected as exc:
        return f"(not shown: {exc.message})"
    files = WorkspaceFiles(root)
    if not files.is_file(norm):
        return "(does not exist yet)"
    text = files.text(norm)
    if text is None:
        return "(not shown: unreadable or not UTF-8 text)"
    from oopav.sandbox.patch import context_hash

    rows = text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    width = len(str(len(rows)))
    # The hash a SEARCH/REPLACE block names (`path@hash`) to say which text it was written for.
    out: list[str] = [f"(context {context_hash(text)})"]
    shown = 0
    for start, end in _file_spans(rel, text, rows, idents):
        if start > shown:
            out.append(f"[... lines {shown + 1}-{start} not shown ...]")
        out += [f"{i + 1:>{width}} | {rows[i]}" for i in range(start, end)]
        shown = end
    if shown < len(rows):
        out.append(f"[... lines {shown + 1}-{len(rows)} not shown ({len(rows)} lines in all) ...]")
    return "\n".join(out)


def _last_change(state: SessionState, root: Path) -> str:
    """Files and changed lines per file of the last applied action, and a bounded preview of
    its diff (from the workspace's checkpoints)."""
    from oopav.sandbox.workspace import numstat_and_diff

    applied = [a for a in state.actions if a.status == "applied" and a.checkpoint]
    if not applied:
        return ""
    last = applied[-1]
    before = applied[-2].checkpoint if len(applied) > 1 else state.workspace.base_commit  # type: ignore[union-attr]  # a session with applied actions has its workspace
    try:
        numstat, diff = numstat_and_diff(root, f"{before}", f"{last.checkpoint}", "-U1")
    except Exception:
        return ""
    rows = []
    for line in numstat:
        parts = line.split("\t")
        if len(parts) == 3:
            rows.append(f"- {parts[2]}: +{parts[0]} -{parts[1]} lines")
    head = f"{last.type} changed {len(rows)} file(s):\n" + "\n".join(rows)
    dl = diff.splitlines()
    preview = "\n".join(dl[:DIFF_PREVIEW_LINES])
    if len(dl) > DIFF_PREVIEW_LINES:
        preview += f"\n[... truncated: {len(dl) - DIFF_PREVIEW_LINES} more diff lines ...]"
    return f"{head}\nDiff preview:\n{preview}" if preview else head


def _quoted_idents(instruction: str) -> tuple[str, ...]:
    import re

    return tuple(dict.fromkeys(re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", instruction)))


def _repo_map(root: Path, focus: list[str], instruction: str, settings: Any) -> str:
    from oopav.context.repomap import build_repo_map

    idents = _quoted_idents(instruction)
    cache = settings.data_dir / "cache" / "repomap" if settings is not None else None
    try:
        return build_repo_map(
            root,
            mentioned_files=tuple(focus),
            mentioned_idents=idents,
            token_budget=REPO_MAP_TOKENS,
            cache_dir=cache,
        ).text
    except Exception as exc:  # an aid, never a blocker
        return f"(unavailable: {exc})"


def _sites_report(plan: Any) -> str:
    """``rule matched 7 site(s) in 2 file(s): a.py 3, b.py 4`` for an ast-grep rewrite (the
    rule re-run on each file's old text: milliseconds), edits per file for search/replace."""
    from oopav.events.actions import AstGrepAction, SearchReplaceAction

    action = plan.action
    if isinstance(action, AstGrepAction):
        from oopav.sandbox.astgrep import RuleError, rewrite_source, rule_from_action

        try:
            rule = rule_from_action(action)
            counts = [(c.path, rewrite_source(c.before or "", rule)[1]) for c in plan.changes]
        except RuleError:
            return ""
        total = sum(n for _, n in counts)
        per = ", ".join(f"{p} {n}" for p, n in counts)
        return f"rule matched {total} site(s) in {len(counts)} file(s): {per}"
    if isinstance(action, SearchReplaceAction):
        per_file: dict[str, int] = {}
        for e in action.edits:
            per_file[e.path] = per_file.get(e.path, 0) + 1
        return "edits applied: " + ", ".join(f"{p} {n}" for p, n in per_file.items())
    return ""


def _feedback(plan: Any) -> str:
    """A rejection's message, sharpened so it names the fix: a parse error shows where, with
    the line and a caret (from the validator's findings); a rule that matched nothing says so
    in numbers, distinct from a pattern that is not valid code."""
    details = plan.details or {}
    if plan.reason == "parse_error" and details.get("errors"):
        first = details["errors"][0]
        where = first.get("message", "")
        more = len(details["errors"]) - 1
        tail = f"\n({more} more error(s) after this one)" if more > 0 else ""
        return f"{details.get('path')} would not parse after this change; nothing was written.\n{where}{tail}"
    if plan.reason == "no_match" and "files_searched" in details:
        n = details["files_searched"]
        return (
            f"pattern matched 0 sites in {n} file(s) (the pattern is valid code; no code has "
            f"that shape). {plan.message}. Fix: loosen the pattern (metavariables, `kind`, "
            "`regex`) or check the names against the files shown"
        )
    return str(plan.message)


def _similar_actions(done: list[ActionRecord]) -> StuckMatch | None:
    """Fuzzy repetition (issue 17 §10): the last three actions touch the same targets and are
    each more than 90% like the one before — a loop exact hashes miss (a patch retried with a
    tweak, a file rewritten back and forth)."""
    from oopav.decide.stuck import SIMILAR_RUN, detect_similar

    tail = done[-SIMILAR_RUN:]
    if len(tail) < SIMILAR_RUN or any(a.action is None for a in tail):
        return None
    if len({_targets(a.action) for a in tail}) != 1:
        return None
    texts = [
        msgspec.json.encode(msgspec.to_builtins(a.action), order="sorted").decode() for a in tail
    ]
    return detect_similar(texts, [a.hash for a in tail])


def _targets(action: object) -> tuple[str, ...]:
    paths = [e.path for e in getattr(action, "edits", []) or []]
    if getattr(action, "path", None):
        paths.append(action.path)  # type: ignore[attr-defined]  # duck-typed action: path checked by getattr above
    paths += list(getattr(action, "paths", []) or [])
    paths += list(getattr(action, "argv", [])[:1])
    return (getattr(action, "type", ""), *sorted(paths))


def _recent_text(state: SessionState) -> str:
    return "\n".join(f"{r.type}: {r.summary}" for r in state.recent[-5:])


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return msgspec.json.decode(msgspec.json.encode(details))


def _format_argv(state: SessionState) -> list[str] | None:
    from oopav.decide.policy import decision_policy

    fmt = decision_policy(state).format
    return list(fmt) if fmt else None


def _just_formatted(state: SessionState, fmt: list[str]) -> bool:
    """Whether the last applied change of this plan is the formatter run (nothing after it)."""
    for a in reversed(state.actions[state.plan_actions_start :]):
        if a.type in INFORMING_ACTIONS or a.status not in ("applied", "failed"):
            continue  # a failed formatter run counts: it is not retried on the next finish
        return isinstance(a.action, RunCommandAction) and list(a.action.argv) == fmt
    return False


MAX_EFFECT_PATCH = 512 * 1024


def _record_effect(root: Path, rec: ExecRecord) -> ExecRecord:
    """A command action's effect on the files, carried in its record. Live: the workspace's
    change since the checkpoint, as a binary patch (up to ``MAX_EFFECT_PATCH``). Replay (the
    record already carries a patch; the command did not run): the patch applied, so the files
    are what they were when it ran."""
    from oopav.sandbox.workspace import git

    if rec.patch:
        git(root, "apply", "--binary", "--whitespace=nowarn", "-", input=rec.patch)
        return rec
    git(root, "add", "-A")
    patch = git(root, "diff", "--cached", "--binary", "HEAD")
    if not patch or len(patch.encode()) > MAX_EFFECT_PATCH:
        return rec
    return msgspec.structs.replace(rec, patch=patch)
