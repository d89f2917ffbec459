"""The actor's ``ask`` action through the real loop (real nats-server, sandbox, git workspaces,
scripted models): a question goes to a person through the channel ``oopav answer`` uses, the
answer completes the action and is kept (``question_answered``); a later question like it, in
the same session or another session of the mission, is answered from it without asking."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    action_answer,
    assert_replays,
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_all,
    start,
    task,
    wait_for,
)

from oopav.services import publish_answer

MISSION = "m-ask"
QUESTION = "Should the old name `fetch` stay as a deprecated alias?"


def ask(question: str, options: list[str] | None = None) -> str:
    action = {"type": "ask", "question": question}
    if options is not None:
        action["options"] = options  # type: ignore[assignment]  # a JSON action built by hand
    return action_answer(action, "ask a person")


async def test_a_question_goes_to_a_person_and_its_answer_is_reused(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer()],
        "actor": [
            ask(QUESTION, ["yes", "no"]),
            # the same question in other words: answered from the first, nobody is asked
            ask("should the old name fetch stay as a deprecated alias, please", ["yes", "no"]),
            rename_all(),
            finish(),
        ],
    }
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, mission=MISSION))
        events = await wait_for(bus, sid, "human_input_requested")
        asked = of(events, "human_input_requested")[0]
        assert asked.kind == "ask" and asked.question == QUESTION
        assert asked.options == ["yes", "no"] and asked.deadline is not None
        proposed = of(events, "action_proposed")[-1]
        assert proposed.action.type == "ask" and asked.action_id == proposed.id
        assert not of(events, "action_applied")  # the action waits for its answer
        from oopav.projections.session import fold

        assert fold(events).phase == "waiting_for_human"
        reply = await publish_answer(bus, sid, "no", "tester")  # what `oopav answer` does
        assert reply["request_id"] == asked.id
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    assert len(of(events, "human_input_requested")) == 1  # the second question reused
    first, second = of(events, "question_answered")
    assert (first.answer, first.answered_by, first.request_id) == ("no", "tester", asked.id)
    assert first.reused_from is None and first.mission == MISSION
    assert second.reused_from == first.id and second.reused_session is None
    assert second.answer == "no" and second.similarity == 1.0
    asks = [a for a in of(events, "action_proposed") if a.action.type == "ask"]
    applied = {a.action_id: a for a in of(events, "action_applied")}
    assert applied[asks[0].id].stdout_tail == "answer from tester: no"
    assert "reused from this session" in applied[asks[1].id].stdout_tail
    # the answer is in the actor's next prompt, as the ask's result
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    assert calls and len(state.answered_questions) == 2
    await assert_replays(nats_url, sid)

    # Another session of the mission: the question like it is answered from the first session.
    script2 = {"planner": [plan_answer()], "actor": [ask(QUESTION), rename_all(), finish()]}
    async with loop(nats_url, script2) as bus:
        sid2 = await start(bus, task(repo, mission=MISSION))
        state2, events2 = await finish_session(bus, sid2)
    assert state2.outcome == "success", state2.summary
    assert not of(events2, "human_input_requested")
    (reused,) = of(events2, "question_answered")
    assert reused.reused_from == first.id and reused.reused_session == sid
    assert reused.answer == "no" and reused.reused_question == QUESTION
    await assert_replays(nats_url, sid2)


async def test_an_unanswered_question_ends_the_session_at_its_deadline(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from datetime import timedelta

    from oopav.events.clock import ManualClock
    from oopav.handlers.watchdog import Watchdog
    from oopav.projections.session import fold

    script = {"planner": [plan_answer()], "actor": [ask("Which API version?"), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy={"human_deadline_s": 60}))
        events = await wait_for(bus, sid, "human_input_requested")
        asked = of(events, "human_input_requested")[0]
        assert asked.kind == "ask" and (asked.deadline - asked.ts).total_seconds() == 60
        state = fold([(i + 1, e) for i, e in enumerate(events)])
        clock = ManualClock(start=asked.ts + timedelta(seconds=61))
        dog = Watchdog(bus.nc, clock=clock)
        state.last_sequence = len(await bus.events.read("session", sid))
        dog.listener(0, events[-1], state)
        assert await dog.check() == 1
        state, events = await finish_session(bus, sid)
    assert state.outcome == "aborted" and state.end_reason == "human_timeout"
    assert "Which API version?" in state.summary
