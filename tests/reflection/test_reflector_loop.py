"""The reflector end to end: real nats-server, real sandbox, the whole loop, a guidance-sensitive
fake policy over HTTP and scripted critic/consolidator models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import (
    consolidator_json,
    critic_json,
    group_task,
    make_repo,
    running,
    seed,
    session_events,
    submit,
    wait_mission,
    write_script,
)
from policy_server import HARMFUL, MAGIC, PolicyServer

from oopav.events import catalog as ev
from oopav.events import mission as mev
from oopav.handlers.reflector import ReflectorConfig
from oopav.projections.guidance import export_library, fold

KEEP = ["Keep changes small."]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def critic_yaml(tmp_path: Path) -> Path:
    """Where a test writes its scripted critic and consolidator."""
    return tmp_path / "critic.yaml"


@pytest.fixture
def group_mission(nats_url: str, repo: Path, policy: PolicyServer) -> Any:
    """Run the handlers with a reflector ``config``, seed ``mission`` with ``lines``, submit a
    group of sessions with ``seeds``; the mission's events once one of ``kinds`` is stored."""

    async def run(
        config: Any, mission: str, seeds: list[int], kinds: set[str], lines: list[str] = KEEP
    ) -> list[Any]:
        async with running(nats_url, config) as bus:
            await seed(bus, mission, lines)
            await submit(bus, group_task(repo, policy.spec, mission, len(seeds), seeds))
            return await wait_mission(bus, mission, kinds)

    return run


@pytest.fixture
def policy():
    with PolicyServer() as server:
        yield server


async def test_failures_critique_op_holdout_uplift_applied(
    nc, nats_url: str, data_dir: Path, repo: Path, critic_yaml: Path, policy: PolicyServer
) -> None:
    critic = write_script(
        critic_yaml,
        critic=[critic_json(op_text=MAGIC), "this is not JSON {", critic_json()],
        consolidator=[
            consolidator_json(
                [{"op": "upsert", "text": f"Remember: {MAGIC}.", "rationale": "tests"}]
            )
        ],
    )
    config = ReflectorConfig(critic_model=critic, apply_if_delta=0.5, holdout_size=1, holdout_k=1)
    async with running(nats_url, config) as bus:
        await seed(bus, "answers", ["Keep changes small."])
        reply = await submit(bus, group_task(repo, policy.spec, "answers", 3, [0, 1, 2]))
        members = reply["session_ids"]
        assert members == sorted(members) and len(members) == 3
        events = await wait_mission(bus, "answers", {"guidance_op_applied", "reflection_rejected"})

        proposal = next(e for e in events if isinstance(e, mev.ReflectionProposed))
        assert [s.session_id for s in proposal.signals] == members  # ordered by session id
        assert not any(s.label_match for s in proposal.signals)  # all wrong → diagnose
        assert [c.ok for c in proposal.critiques] == [True, False, True]
        assert "invalid JSON" in proposal.critiques[1].error  # recorded, never parsed
        assert proposal.base_step == 1 and proposal.action == "refine"
        assert [(p.op, p.key) for p in proposal.planned] == [("upsert", "G1")]
        calls = [e for e in events if isinstance(e, ev.ModelCalled)]
        assert [c.role for c in calls] == ["reflection_critic"] * 3 + ["reflection_consolidator"]
        assert set(proposal.model_call_ids) == {c.id for c in calls}
        assert len(proposal.holdout) == 2

        applied = [e for e in events if isinstance(e, mev.GuidanceOpApplied)]
        assert [(a.op, a.key, a.step) for a in applied] == [("upsert", "G1", 2)]
        assert applied[0].label_match_before == 0.0 and applied[0].label_match_after == 1.0
        assert applied[0].evidence_session_ids == [members[0], members[2]]
        assert not any(isinstance(e, mev.ReflectionRejected) for e in events)

        # The holdout ran the same task twice: with the library of step 1, and the preview.
        for run in proposal.holdout:
            evs = await session_events(bus, run.session_id)
            task = evs[0]
            assert task.group.purpose == "holdout" and task.group.preview == run.preview
            actor = next(e for e in evs if isinstance(e, ev.ModelCalled) and e.role == "actor")
            prompt = actor.request["messages"][1]["content"]
            assert actor.guidance_step == 1
            assert ("[G1]. Remember" in prompt) == run.preview
            assert "[G0]. Keep changes small." in prompt

        # The next group runs with the new library and gets it right.
        after = await submit(bus, group_task(repo, policy.spec, "answers", 1, [0]))
        sid = after["session_ids"][0]
        events = await wait_mission(bus, "answers", {"reflection_rejected"})
        evs = await session_events(bus, sid)
        done = next(e for e in evs if isinstance(e, ev.SessionCompleted))
        assert done.outcome == "success", done.summary
        steps = {e.guidance_step for e in evs if isinstance(e, ev.ModelCalled)}
        assert steps == {2}
        rejected = [e for e in events if isinstance(e, mev.ReflectionRejected)]
        assert [r.reason for r in rejected] == ["ineligible"]

    # Replaying the session renders the same library (the recorded step) and matches.
    from oopav.replay import verify_session

    report = await verify_session(nats_url, sid)
    assert report.ok, report.first_divergence

    # The library rebuilt from the mission stream alone is byte for byte the live one.
    recorded = await mission_events_direct(nats_url, "answers")
    state = fold(recorded, "answers")
    assert state.lines() == [("G0", "Keep changes small."), ("G1", f"Remember: {MAGIC}.")]
    # Re-running the reflector's decisions from the recording reproduces the mission.
    from oopav.mission_replay import verify_mission

    report = await verify_mission(nats_url, "answers")
    assert report.ok, report.first_divergence
    assert report.replayed == report.recorded == len(recorded)
    assert report.library == export_library(state)

    def tampered(events: list[tuple[int, ev.Event]]) -> list[tuple[int, ev.Event]]:
        import msgspec

        out = []
        for seq, e in events:
            if isinstance(e, ev.ModelCalled) and e.role == "reflection_consolidator":
                e = msgspec.structs.replace(e, response=e.response.replace("Remember", "Recall"))
            out.append((seq, e))
        return out

    report = await verify_mission(nats_url, "answers", tamper=tampered)
    assert not report.ok and not report.library_identical
    assert report.first_divergence is not None


async def mission_events_direct(nats_url: str, mission: str) -> list[tuple[int, ev.Event]]:
    from oopav.bus.store import EventStore, connect

    conn = await connect(nats_url, name="test-read")
    try:
        return await EventStore(conn).read("mission", mev.mission_aggregate_id(mission))
    finally:
        await conn.close()


async def test_harmful_op_shows_no_uplift_and_is_rejected(
    nc, nats_url: str, data_dir: Path, repo: Path, critic_yaml: Path, group_mission: Any
) -> None:
    critic = write_script(
        critic_yaml,
        critic=[critic_json(), critic_json()],
        consolidator=[consolidator_json([{"op": "upsert", "text": f"Note: {HARMFUL}."}])],
    )
    config = ReflectorConfig(critic_model=critic, apply_if_delta=0.5, holdout_size=1)
    events = await group_mission(
        config, "harm", [0, 1], {"guidance_op_applied", "reflection_rejected"}
    )
    rejected = [e for e in events if isinstance(e, mev.ReflectionRejected)]
    assert [r.reason for r in rejected] == ["uplift_below_delta"]
    assert rejected[0].label_match_before == 0.0 and rejected[0].label_match_after == 0.0
    assert "delta +0.000" in rejected[0].detail
    assert not any(isinstance(e, mev.GuidanceOpApplied) for e in events)
    state = fold(events, "harm")
    assert state.step == 1 and state.lines() == [("G0", "Keep changes small.")]
    assert state.rejected == {"uplift_below_delta": 1}


async def test_contradictions_only_skips_an_all_wrong_group_without_model_calls(
    nc, nats_url: str, data_dir: Path, repo: Path, group_mission: Any
) -> None:
    config = ReflectorConfig(
        critic_model="scripted:/nonexistent.yaml", eligibility="contradictions_only"
    )
    events = await group_mission(
        config, "contra", [0, 1], {"reflection_rejected", "reflection_proposed"}
    )
    rejected = [e for e in events if isinstance(e, mev.ReflectionRejected)]
    assert [r.reason for r in rejected] == ["ineligible"]
    assert "contradictions_only" in rejected[0].detail and "0/2" in rejected[0].detail
    assert not any(isinstance(e, ev.ModelCalled) for e in events)


async def test_rapid_mode_merge_keeps_provenance(
    nc, nats_url: str, data_dir: Path, repo: Path, critic_yaml: Path, group_mission: Any
) -> None:
    critic = write_script(
        critic_yaml,
        critic=[critic_json()],
        consolidator=[
            consolidator_json(
                [
                    {
                        "op": "merge",
                        "merged_from": ["G0", "G2"],
                        "text": "Keep changes small and check every value against the tests.",
                        "rationale": "two lines said the same",
                    }
                ]
            )
        ],
    )
    config = ReflectorConfig(critic_model=critic, rapid_mode=True)
    events = await group_mission(
        config,
        "merge.m",
        [0],
        {"guidance_op_applied", "reflection_rejected"},
        lines=["Keep changes small.", "Read the task.", "Check values."],
    )
    applied = [e for e in events if isinstance(e, mev.GuidanceOpApplied)]
    assert len(applied) == 1
    merged = applied[0]
    assert (merged.op, merged.key, merged.merged_from) == ("merge", "G3", ["G0", "G2"])
    state = fold(events, "merge.m")
    assert state.lines() == [
        ("G3", "Keep changes small and check every value against the tests."),
        ("G1", "Read the task."),
    ]
    assert state.entry("G3").merged_from == ["G0", "G2"]  # type: ignore[union-attr]
    assert state.history[-1].merged_from == ["G0", "G2"]
    assert next(e for e in events if isinstance(e, mev.ReflectionProposed)).rapid
    # The mission id escapes the dot so the subject keeps its shape.
    assert {e.aggregate_id for e in events} == {"merge~m"}


async def test_a_plain_mission_session_is_a_group_of_one_and_manual_review_holds_it(
    nc, nats_url: str, data_dir: Path, repo: Path, policy: PolicyServer
) -> None:
    config = ReflectorConfig(all_wrong_strategy="manual_review")
    async with running(nats_url, config) as bus:
        body = group_task(repo, policy.spec, "solo", 1, [0])
        del body["group"]
        from oopav.services import submit_task

        reply = await submit_task(bus, body)
        sid = reply["session_id"]
        events = await wait_mission(bus, "solo", {"reflection_rejected", "reflection_proposed"})
    rejected = [e for e in events if isinstance(e, mev.ReflectionRejected)]
    assert [(r.reason, r.group_id) for r in rejected] == [("manual_review", sid)]
    assert [s.session_id for s in rejected[0].signals] == [sid]
    assert rejected[0].signals[0].expected is None  # the verifier's verdict is the label
    assert not any(isinstance(e, ev.ModelCalled) for e in events)
