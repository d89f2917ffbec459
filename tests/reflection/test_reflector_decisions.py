"""The reflector's decisions on recorded sessions (no loop): order by session id, idempotent
redelivery, resuming a holdout after a crash, budget and uncertainty guardrails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import consolidator_json, critic_json

from oopav.bus.store import EventStore
from oopav.config import Settings
from oopav.events import catalog as ev
from oopav.events import mission as mev
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator
from oopav.handlers.ports import Ports
from oopav.handlers.reflector import Reflector, ReflectorConfig
from oopav.models.scripted import ScriptedBackend
from oopav.projections.guidance import fold

MISSION = "unit"


def sessions(k: int, seed: int = 1) -> list[list[Any]]:
    """K finished sessions of one group (all failed), each as its events."""
    ids = IdGenerator(seed=seed)
    members = sorted(ids.new() for _ in range(k))
    group_id = ids.new()
    out = []
    for i, sid in enumerate(members):
        task = root_event(
            ev.TaskSubmitted,
            handler="intake",
            event_id=sid,
            instruction="write 42",
            repo="/r",
            mission=MISSION,
            group=ev.GroupInfo(group_id=group_id, index=i, members=members, expected="pass"),
        )
        gate = caused_event(ev.GateEvaluated, task, handler="verifier", gate="tests", passed=False)
        done = caused_event(
            ev.SessionCompleted, gate, handler="verifier", outcome="failed", summary="wrote 41"
        )
        out.append([task, gate, done])
    return out


async def put(nc: Any, events: list[Any]) -> None:
    store = EventStore(nc)
    for e in events:
        await store.append(e)


async def mission(nc: Any) -> list[Any]:
    return [e for _, e in await EventStore(nc).read("mission", MISSION)]


def reflector(nc: Any, tmp: Path, script: dict[str, list[str]], **cfg: Any) -> Reflector:
    backend = ScriptedBackend(script)
    ports = Ports(settings=Settings(data_dir=tmp), model_factory=lambda spec: backend)
    return Reflector(nc, ports, ReflectorConfig(critic_model="scripted:x", **cfg))


async def seed(nc: Any) -> None:
    await put(
        nc,
        [
            root_event(
                mev.ExperienceLibrarySeeded,
                handler="t",
                aggregate="mission",
                aggregate_id=MISSION,
                entries=[mev.GuidanceEntry(key="G0", text="Keep it small.")],
            )
        ],
    )


async def test_order_by_session_id_and_redelivery_is_idempotent(nc: Any, tmp_path: Path) -> None:
    await seed(nc)
    group = sessions(3)
    # Completions arrive in reverse order of session id.
    for events in reversed(group):
        await put(nc, events)
    script = {
        "reflection_critic": [critic_json("a"), critic_json("b"), critic_json("c")],
        "reflection_consolidator": [consolidator_json([{"op": "upsert", "text": "Write 42."}])],
    }
    r = reflector(nc, tmp_path, script)
    for events in reversed(group):
        await r.process(events[-1], None)
    got = await mission(nc)
    proposal = next(e for e in got if isinstance(e, mev.ReflectionProposed))
    assert [s.session_id for s in proposal.signals] == [g[0].id for g in group]
    assert [c.summary for c in proposal.critiques] == ["a", "b", "c"]
    # The decision hangs off the completion of the highest session id, whatever arrived last.
    assert proposal.causation_id == group[-1][-1].id
    holdout = [r.session_id for r in proposal.holdout]
    for sid in holdout:
        assert (await EventStore(nc).read("session", sid))[0][1].group.proposal_id == proposal.id
    # Redelivering every completion changes nothing (the scripted models are exhausted, too).
    before = len(got)
    fresh = reflector(nc, tmp_path, {"reflection_critic": [], "reflection_consolidator": []})
    for events in group:
        await fresh.process(events[-1], None)
    assert len(await mission(nc)) == before


async def test_a_crash_before_the_holdout_is_resumed(
    nc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(nc)
    group = sessions(1, seed=5)
    await put(nc, group[0])
    script = {
        "reflection_critic": [critic_json()],
        "reflection_consolidator": [consolidator_json([{"op": "upsert", "text": "Write 42."}])],
    }
    r = reflector(nc, tmp_path, script)

    async def crash(*args: Any) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(r, "_ensure_holdout", crash)
    with pytest.raises(RuntimeError):
        await r.process(group[0][-1], None)
    proposal = next(e for e in await mission(nc) if isinstance(e, mev.ReflectionProposed))
    sid = proposal.holdout[0].session_id
    assert await EventStore(nc).read("session", sid) == []
    # The redelivery (a new process) submits the holdout without deciding again.
    again = reflector(nc, tmp_path, {"reflection_critic": [], "reflection_consolidator": []})
    await again.process(group[0][-1], None)
    assert len(await EventStore(nc).read("session", sid)) == 1
    assert [e.type for e in await mission(nc)].count("reflection_proposed") == 1


@pytest.mark.parametrize(
    ("answer", "cfg", "reason"),
    [
        (
            consolidator_json([{"op": "upsert", "text": f"line {i}"} for i in range(3)]),
            {"max_operations": 2},
            "budget",
        ),
        (
            consolidator_json([{"op": "upsert", "text": "x"}], uncertainty="not sure"),
            {},
            "uncertain",
        ),
        (consolidator_json([], action="noop"), {}, "noop"),
        (consolidator_json([{"op": "remove", "key": "G0"}]), {}, "invalid_operation"),
        ('{"action": "refine"', {}, "invalid_answer"),
    ],
)
async def test_guardrails_reject_with_their_reason(
    nc: Any, tmp_path: Path, answer: str, cfg: dict[str, Any], reason: str
) -> None:
    await seed(nc)
    group = sessions(1, seed=9)
    await put(nc, group[0])
    r = reflector(
        nc,
        tmp_path,
        {"reflection_critic": [critic_json()], "reflection_consolidator": [answer]},
        **cfg,
    )
    await r.process(group[0][-1], None)
    got = await mission(nc)
    rejected = [e for e in got if isinstance(e, mev.ReflectionRejected)]
    assert [x.reason for x in rejected] == [reason]
    assert not any(isinstance(e, mev.GuidanceOpApplied) for e in got)
    assert fold(got, MISSION).lines() == [("G0", "Keep it small.")]
    calls = [e for e in got if isinstance(e, ev.ModelCalled)]
    assert [c.role for c in calls] == ["reflection_critic", "reflection_consolidator"]


async def test_uncertain_proposals_pass_with_allow_uncertain_in_rapid_mode(
    nc: Any, tmp_path: Path
) -> None:
    await seed(nc)
    group = sessions(1, seed=11)
    await put(nc, group[0])
    answer = consolidator_json([{"op": "upsert", "text": "Write 42."}], uncertainty="one group")
    r = reflector(
        nc,
        tmp_path,
        {"reflection_critic": [critic_json()], "reflection_consolidator": [answer]},
        allow_uncertain=True,
        rapid_mode=True,
    )
    await r.process(group[0][-1], None)
    state = fold(await mission(nc), MISSION)
    assert state.lines() == [("G0", "Keep it small."), ("G1", "Write 42.")]
    assert state.applied_proposals and not state.pending
