"""Realistic finished sessions built with the real prompt contract and event factory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from oopav.events import catalog as ev
from oopav.events.actions import AstGrepAction, FinishAction, action_hash
from oopav.events.catalog import Event, Example
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.models.base import ModelResponse, Sampling, model_called_fields
from oopav.models.prompt import build_request, render_answer, static_prefix

RULE = AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python")
BAD_RULE = AstGrepAction(pattern="fetch(", rewrite="x", language="python")


def _call(
    cause: Event, handler: str, index: int, role: str, answer: str, clock: Any, task: str = ""
) -> Event:
    req = build_request(role, prefix=static_prefix(), task=task, sampling=Sampling())
    resp = ModelResponse(text=answer, prompt_tokens=10, completion_tokens=5)
    return caused_event(
        ev.ModelCalled,
        cause,
        handler=handler,
        index=index,
        clock=clock,
        **model_called_fields(req, resp, "scripted:x"),
    )


def session(
    sid: str,
    *,
    outcome: str = "success",
    mission: str | None = "m1",
    instruction: str = "Rename fetch to fetch_page",
    day: int = 1,
) -> list[Event]:
    """task → plan → a garbled answer → a rejected rule → an applied rule → finish → end."""
    clock = ManualClock(datetime(2026, 1, day, tzinfo=UTC), step=timedelta(seconds=1))
    task = root_event(
        ev.TaskSubmitted,
        handler="intake",
        event_id=sid,
        clock=clock,
        instruction=instruction,
        repo="/tmp/repo",
        mission=mission,
        test_command=["pytest", "-q"],
        examples=[Example(before="fetch(u)\n", after="fetch_page(u)\n")],
    )
    out: list[Event] = [task]
    plan_answer = render_answer(
        "plan",
        {
            "steps": [{"id": 1, "description": "rename", "files": []}],
            "files": [],
            "test_decision": "optional",
            "rationale": "r",
        },
        state_update={},
    )
    pc = _call(task, "planner", 0, "planner", plan_answer, clock, instruction)
    out += [
        pc,
        caused_event(
            ev.PlanProposed,
            task,
            handler="planner",
            index=1,
            clock=clock,
            steps=[ev.PlanStep(id=1, description="rename")],
            model_call_id=pc.id,
        ),
    ]
    plan = out[-1]
    garbled = _call(plan, "actor", 0, "actor", "<think>hm</think><action>{oops", clock, instruction)
    out.append(garbled)
    for i, (action, ok) in enumerate([(BAD_RULE, None), (RULE, True)]):
        answer = render_answer("action", action, think="t", state_update={"history": f"s{i}"})
        call = _call(plan, "actor", 10 + 3 * i, "actor", answer, clock, instruction)
        prop = caused_event(
            ev.ActionProposed,
            plan,
            handler="actor",
            index=11 + 3 * i,
            clock=clock,
            action=action,
            action_hash=action_hash(action),
            step=1,
            model_call_id=call.id,
        )
        out += [call, prop]
        if ok is None:
            out.append(
                caused_event(
                    ev.ActionRejected,
                    prop,
                    handler="actor",
                    index=0,
                    clock=clock,
                    action_id=prop.id,
                    reason="rule_invalid",
                    message="bad",
                )
            )
        else:
            out.append(
                caused_event(
                    ev.ActionApplied,
                    prop,
                    handler="actor",
                    index=0,
                    clock=clock,
                    action_id=prop.id,
                    ok=True,
                    diff="-fetch(u)\n+fetch_page(u)\n",
                    files_changed=["a.py"],
                )
            )
    fin = FinishAction(summary="done")
    fa = render_answer("action", fin, state_update={})
    fcall = _call(out[-1], "actor", 0, "actor", fa, clock, instruction)
    out += [
        fcall,
        caused_event(
            ev.ActionProposed,
            out[-1],
            handler="actor",
            index=1,
            clock=clock,
            action=fin,
            action_hash=action_hash(fin),
            step=1,
            model_call_id=fcall.id,
        ),
    ]
    out.append(
        caused_event(
            ev.SessionCompleted,
            out[-1],
            handler="verifier",
            index=0,
            clock=clock,
            outcome=outcome,
            diff="-fetch(u)\n+fetch_page(u)\n",
        )
    )
    return out


def numbered(events: list[Event], start: int = 1) -> list[tuple[int, Event]]:
    return [(start + i, e) for i, e in enumerate(events)]


def rolled_back_session(sid: str) -> list[Event]:
    """task → plan → a stub rule applied then rolled back by the observer → a good rule at the
    same step applied → a finish whose verification fails at the tests gate → the verifier's
    rollback of the good rule → a second good rule → a finish that passes → success."""
    clock = ManualClock(datetime(2026, 1, 2, tzinfo=UTC), step=timedelta(seconds=1))
    instruction = "Rename fetch to fetch_page"
    task = root_event(
        ev.TaskSubmitted,
        handler="intake",
        event_id=sid,
        clock=clock,
        instruction=instruction,
        repo="/tmp/repo",
        test_command=["pytest", "-q"],
    )
    plan = caused_event(
        ev.PlanProposed,
        task,
        handler="planner",
        index=1,
        clock=clock,
        steps=[ev.PlanStep(id=1, description="rename")],
    )
    out: list[Event] = [task, plan]
    stub = AstGrepAction(pattern="fetch($$$A)", rewrite="TODO($$$A)", language="python")

    def attempt(action: Any, index: int) -> tuple[Event, Event]:
        answer = render_answer("action", action, think="t", state_update={})
        call = _call(out[-1], "actor", index, "actor", answer, clock, instruction)
        prop = caused_event(
            ev.ActionProposed,
            call,
            handler="actor",
            index=index + 1,
            clock=clock,
            action=action,
            action_hash=action_hash(action),
            step=1,
            model_call_id=call.id,
        )
        out.extend([call, prop])
        if action.type != "finish":
            out.append(
                caused_event(
                    ev.ActionApplied,
                    prop,
                    handler="actor",
                    index=0,
                    clock=clock,
                    action_id=prop.id,
                    diff="-fetch(u)\n+x\n",
                    files_changed=["a.py"],
                )
            )
        return call, prop

    _, p_stub = attempt(stub, 10)
    out.append(
        caused_event(
            ev.WorkspaceRolledBack,
            out[-1],
            handler="observer",
            index=0,
            clock=clock,
            to_checkpoint="c0",
            reason="rule 4: 1 stubs introduced",
            actions=[p_stub.id],
            source="observer",
        )
    )
    _, p_good = attempt(RULE, 20)
    attempt(FinishAction(summary="done"), 30)
    out.append(
        caused_event(
            ev.VerificationCompleted,
            out[-1],
            handler="verifier",
            index=0,
            clock=clock,
            passed=False,
            failed_gate="tests",
        )
    )
    out.append(
        caused_event(
            ev.WorkspaceRolledBack,
            out[-1],
            handler="verifier",
            index=1,
            clock=clock,
            to_checkpoint="c0",
            reason="gate tests failed",
            actions=[p_good.id],
            source="verifier",
        )
    )
    second = AstGrepAction(pattern="fetch($A)", rewrite="fetch_page($A)", language="python")
    attempt(second, 40)
    attempt(FinishAction(summary="done, tests pass"), 50)
    out.append(
        caused_event(
            ev.VerificationCompleted, out[-1], handler="verifier", index=0, clock=clock, passed=True
        )
    )
    out.append(
        caused_event(
            ev.SessionCompleted,
            out[-1],
            handler="verifier",
            index=1,
            clock=clock,
            outcome="success",
            diff="-fetch(u)\n+fetch_page(u)\n",
        )
    )
    return out
