"""Mission-wide fatigue (issue 30): failed sessions of a mission, as the mission projection
records them, raise the caution of the mission's later sessions, recorded as
``caution_raised``. Real nats-server, real sandbox, scripted models."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from loop_harness import (
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_definition_only,
    rename_script,
    start,
    task,
)

from helpers.waits import until
from oopav.bus.store import EventStore
from oopav.decide.trends import mission_failures
from oopav.events import mission as mev
from oopav.events.factory import root_event
from oopav.projections.guidance import SessionOutcome, fold

MISSION = "fatigue.m"


def rejected(group: str, *outcomes: tuple[str, str]) -> mev.ReflectionRejected:
    """The reflector's record of a finished group: its sessions' outcomes as signals."""
    return root_event(
        mev.ReflectionRejected,
        handler="reflector",
        aggregate="mission",
        aggregate_id=mev.mission_aggregate_id(MISSION),
        group_id=group,
        reason="ineligible",
        signals=[
            mev.CandidateSignal(session_id=sid, outcome=out, verdict="fail", label_match=False)
            for sid, out in outcomes
        ],
    )


async def test_failed_sessions_of_a_mission_raise_a_later_sessions_caution(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    await EventStore(nc).append(rejected("g1", ("s-old-1", "failed"), ("s-old-2", "aborted")))
    policy = {"caution_at": 2}
    async with loop(nats_url, rename_script()) as bus:
        sid = await start(bus, task(repo, mission=MISSION, policy=policy))
        state, events = await finish_session(bus, sid)
    raised = of(events, "caution_raised")
    assert len(raised) == 1, [e.type for e in events]
    assert raised[0].level == 1
    assert raised[0].mission_failures == ["s-old-1", "s-old-2"]
    assert "2 recent failed session(s) of the mission" in raised[0].reasons
    # It comes before the plan it shapes, and the planner's prompt carries it.
    order = [e.type for e in events]
    assert order.index("caution_raised") < order.index("plan_proposed")
    planner = [c for c in of(events, "model_called") if c.role == "planner"]
    assert "### Caution (level 1)" in str(planner[0].request["messages"])
    assert state.outcome == "success", state.summary


async def test_a_failed_session_the_reflector_recorded_makes_the_next_one_cautious(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """End to end: a half rename fails its tests gate; the reflector records the group (its
    session's outcome on the mission); the mission's next session starts cautious."""
    half = {"planner": [plan_answer()], "actor": [rename_definition_only(), finish("half")]}
    body = task(repo, mission=MISSION, policy={"caution_at": 1, "tests_per_action": False})
    async with loop(nats_url, half) as bus:
        first = await start(bus, {**body, "budgets": {"bounces": 0}})
        state, _ = await finish_session(bus, first)
        assert state.outcome == "failed", state.summary

        async def recorded() -> bool:
            events = [
                e for _, e in await bus.events.read("mission", mev.mission_aggregate_id(MISSION))
            ]
            return any(first in [s.session_id for s in getattr(e, "signals", [])] for e in events)

        await until(recorded, timeout=30, interval=0.2, what="the reflector recorded no signal")
    async with loop(nats_url, rename_script()) as bus:
        second = await start(bus, body)
        state, events = await finish_session(bus, second)
    (raised,) = of(events, "caution_raised")
    assert raised.mission_failures == [first] and raised.level == 1
    assert state.outcome == "success", state.summary


async def test_a_mission_without_failures_raises_no_caution(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    await EventStore(nc).append(rejected("g1", ("s-old-1", "success")))
    async with loop(nats_url, rename_script()) as bus:
        sid = await start(bus, task(repo, mission=MISSION, policy={"caution_at": 1}))
        _state, events = await finish_session(bus, sid)
    assert of(events, "caution_raised") == []


def test_only_sessions_ended_before_the_submission_count() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ended = [
        SessionOutcome(
            session_id=f"s{i}",
            outcome="failed" if i % 2 else "success",
            ts=t0 + timedelta(minutes=i),
        )
        for i in range(10)
    ]
    # Submitted at minute 7: s0..s6 ended before; the last five of those are s2..s6.
    assert mission_failures(ended, t0 + timedelta(minutes=7), own="x") == ["s3", "s5"]
    assert mission_failures(ended, t0 + timedelta(minutes=7), own="s5") == ["s1", "s3"]
    assert mission_failures(ended, t0, own="x") == []
    # The projection folds each session once, from proposals and rejections alike.
    state = fold(
        [rejected("g1", ("a", "failed")), rejected("g2", ("a", "failed"), ("b", "success"))]
    )
    assert [(o.session_id, o.outcome) for o in state.outcomes] == [
        ("a", "failed"),
        ("b", "success"),
    ]
