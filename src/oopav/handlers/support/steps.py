"""Steps the decision core takes on a session: roll the workspace back to a checkpoint, ask a person."""

from __future__ import annotations

from datetime import timedelta

from oopav.decide.policy import decision_policy
from oopav.events import catalog as ev
from oopav.handlers.runtime import Emitter
from oopav.projections.session import ActionRecord, SessionState


def ask_person(
    out: Emitter,
    state: SessionState,
    *,
    question: str,
    options: list[str],
    kind: str,
    context: str = "",
    action_id: str | None = None,
) -> ev.Event:
    """``human_input_requested`` with the policy's deadline; the session waits for an answer
    (``oopav answer``) and the watchdog ends it ``aborted`` past the deadline. With
    ``policy.escalation: abort`` (an unattended run) nobody is asked: the session ends
    ``aborted`` (reason ``unattended``) with the question it would have asked."""
    import msgspec

    if decision_policy(state).escalation == "abort":
        return out.emit(
            ev.SessionCompleted,
            outcome="aborted",
            summary=f"unattended: not asking {question!r}",
            reason="unattended",
        )
    asked = out.emit(
        ev.HumanInputRequested,
        question=question,
        options=options,
        kind=kind,
        context=context[:4000],
        action_id=action_id,
    )
    # The deadline derives from the event's own time, which replay restores exactly.
    deadline = asked.ts + timedelta(seconds=decision_policy(state).human_deadline_s)
    asked = msgspec.structs.replace(asked, deadline=deadline)
    out.events[-1] = asked
    return asked


async def roll_back(
    out: Emitter,
    state: SessionState,
    target: str,
    undone: list[ActionRecord],
    *,
    reason: str,
    rejected: list[str] | None = None,
) -> ev.Event:
    """Reset the workspace to ``target`` and record ``workspace_rolled_back``. The projection
    marks the undone actions ``rolled_back``, so the actor's next apply starts from there too."""
    import asyncio

    from oopav.handlers.support.workspace import workspace_info
    from oopav.sandbox.workspace import rollback

    await asyncio.to_thread(rollback, workspace_info(state, out.ports), target)
    return out.emit(
        ev.WorkspaceRolledBack,
        to_checkpoint=target,
        reason=reason,
        actions=[a.id for a in undone],
        rejected=rejected if rejected is not None else [],
        source=out.handler,
    )
