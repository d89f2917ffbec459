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

import msgspec

from oopav.bus.consumer import Delivery
from oopav.events import catalog as ev
from oopav.events.actions import Action, FinishAction, RunCommandAction, action_hash
from oopav.events.catalog import Event
from oopav.handlers.common import (
    ask_model,
    cap_diff,
    clip,
    complete,
    over_wall_budget,
    sandbox_policy,
    tokens_exceeded,
    workspace_info,
)
from oopav.handlers.ports import Ports, exec_key
from oopav.handlers.rules import detect_stuck, next_response
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState

NAME = "actor"
CONTINUE = ("continue", "more_evidence", "negative_example")


class Actor:
    name = NAME
    subscribes = (
        "plan_proposed",
        "observation_recorded",
        "action_rejected",
        "permission_granted",
        "permission_denied",
    )

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if state.task is None or state.plan is None or state.workspace is None:
            return []
        out = Emitter(event, NAME, ports)
        if isinstance(event, ev.PermissionGranted | ev.PermissionDenied):
            if state.awaiting_permission:
                await self._resume(event, state, out)
            return out.events
        if isinstance(event, ev.ObservationRecorded):
            if event.phase != "change" or event.observer_action not in CONTINUE:
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
        if over is None and state.budgets_used.iterations >= task.budgets.iterations:
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
            )  # type: ignore[attr-defined]
            return
        since = state.actions[state.plan_actions_start :]
        done = [a for a in since if a.status in ("applied", "failed", "rejected")]
        stuck = detect_stuck([a.hash for a in done], [a.status == "applied" for a in done])
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
        applied = sum(1 for a in since if a.status == "applied")
        step = min(applied + 1, len(state.plan.steps))
        if applied >= len(state.plan.steps):
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
        action, called, think, update = await self._ask(state, out, step)
        if action is None:
            return
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
        await self._validate_and_apply(proposed.id, action, state, out)

    async def _ask(
        self, state: SessionState, out: Emitter, step: int
    ) -> tuple[Action | None, str | None, str, dict | None]:
        answer = await ask_model(out, state, "actor", _context(state, step), "acting")
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
    ) -> None:
        """Pre-emit validation, the capability check, then apply. ``resumed``: a grant arrived
        for an action that was waiting; a scope still missing is only asked for once."""
        from oopav.sandbox.apply import Rejection, plan_action

        root = Path(state.workspace.path)  # type: ignore[union-attr]
        policy = sandbox_policy(state)
        await self._rollback(state)
        plan = await asyncio.to_thread(plan_action, root, action, policy=policy)
        if isinstance(plan, Rejection):
            out.emit(
                ev.ActionRejected,
                action_id=action_id,
                reason=plan.reason,
                message=plan.message,
                details=_jsonable(plan.details),
            )
            return
        decision = self._check(plan.scopes, state, policy, out)
        if decision.outcome == "ask":
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

    def _check(self, scopes: list[str], state: SessionState, policy, out: Emitter):  # type: ignore[no-untyped-def]
        from oopav.sandbox.capabilities import Denial, Grant, GrantState, check

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
        await asyncio.to_thread(
            rollback, workspace_info(state, None), last or state.workspace.base_commit
        )  # type: ignore[union-attr, arg-type]

    async def _apply(
        self, action_id: str, plan, grants_used: list[str], state: SessionState, out: Emitter
    ) -> None:  # type: ignore[no-untyped-def]
        from oopav.sandbox.apply import apply_plan
        from oopav.sandbox.workspace import checkpoint, git, head_commit

        info = workspace_info(state, None)
        root = Path(info.path)
        t0 = out.ports.clock.monotonic()
        execs = []
        ok, exit_code, sig, timed_out, stdout, stderr, nbytes = True, None, None, False, "", "", 0
        if isinstance(plan.action, RunCommandAction):
            task = state.task
            assert task is not None
            argv = list(plan.action.argv)
            rec = await out.ports.sandbox.run(  # type: ignore[union-attr]
                argv,
                workspace=root,
                session_id=state.session_id,
                key=exec_key(action_id, "action", argv),
                purpose="action",
                timeout_s=min(plan.action.timeout_s, task.budgets.wall_seconds_per_phase),
                network=plan.network,
            )
            execs.append(rec)
            ok = rec.exit_code == 0 and not rec.timed_out
            exit_code, sig, timed_out = rec.exit_code, rec.signal, rec.timed_out
            limit = task.budgets.prompt_output_bytes
            stdout = clip(rec.stdout_tail, limit, rec.artifact or "")
            stderr = clip(rec.stderr_tail, limit, rec.artifact or "")
            nbytes = rec.stdout_bytes + rec.stderr_bytes
        else:
            await asyncio.to_thread(apply_plan, root, plan)
        before = await asyncio.to_thread(head_commit, root)
        commit = await asyncio.to_thread(
            checkpoint, info, f"oopav: {plan.action.type} {action_id[:8]}"
        )
        diff = ""
        files: list[str] = []
        if commit != before:
            diff = cap_diff(
                await asyncio.to_thread(git, root, "diff", before, commit),
                out.ports,
                state.session_id,
                f"{action_id}.diff",
            )
            names = await asyncio.to_thread(git, root, "diff", "--name-only", before, commit)
            files = [n for n in names.splitlines() if n]
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


def _context(state: SessionState, step: int) -> str:
    plan = state.plan
    assert plan is not None and state.task is not None
    lines = ["### Plan"]
    for s in plan.steps:
        mark = "->" if s.id == step or (plan.steps.index(s) + 1 == step) else "  "
        files = f" [{', '.join(s.files)}]" if s.files else ""
        lines.append(f"{mark} {s.id}. {s.description}{files}")
    lines.append(f"Current step: {step} of {len(plan.steps)}")
    if state.recent:
        limit = state.task.budgets.prompt_output_bytes
        lines.append("### Recent results")
        for r in state.recent[-3:]:
            lines.append(f"- {r.type}: {r.summary}")
            if r.output:
                lines.append(clip(r.output, max(256, limit // 3)))
    if state.last_observation is not None and state.last_observation.phase == "change":
        o = state.last_observation
        if o.parse_errors or o.stubs:
            lines.append("### Observer")
            lines += [
                f"- {f.path}:{f.line} {f.kind}: {f.message}"
                for f in (o.parse_errors + o.stubs)[:10]
            ]
    return "\n".join(lines)


def _recent_text(state: SessionState) -> str:
    return "\n".join(f"{r.type}: {r.summary}" for r in state.recent[-5:])


def _jsonable(details: dict) -> dict:  # type: ignore[type-arg]
    return msgspec.json.decode(msgspec.json.encode(details))
