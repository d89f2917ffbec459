"""A local hf: policy in the real loop on a task with no example: the compact profile takes it
to the actor (no planner call, a one-step plan), every prompt is within 512 real tokens, every
answer parses under the grammar, and the session ends with a terminal event."""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_harness import finish_session, loop, of, start, task

from oopav.models.profiles import COMPACT_BUDGET

pytest.importorskip("transformers")
pytest.importorskip("xgrammar")


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.tasks import generate, target_text, task_messages

    tasks = generate(40, seed=4).tasks
    texts = [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in tasks]
    shape = PolicyShape(
        vocab_size=1024, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1
    )
    return build_policy(tmp_path_factory.mktemp("policy") / "p", texts, shape=shape)


async def test_an_hf_policy_reaches_the_actor_with_compact_prompts(
    nc, nats_url: str, data_dir: Path, repo: Path, policy: Path
) -> None:
    from oopav.models.prompt import parse_role_answer

    body = task(
        repo,
        model=f"hf:{policy}",
        budgets={"iterations": 2, "retries_per_phase": 1},
        policy={"ask_unknown": False},
    )
    async with loop(nats_url) as bus:
        sid = await start(bus, body)
        _state, events = await finish_session(bus, sid, timeout=600)
    assert of(events, "session_completed")  # a terminal event, whatever the outcome
    (plan, *_) = of(events, "plan_proposed")
    assert plan.model_call_id is None and len(plan.steps) == 1
    calls = of(events, "model_called")
    assert calls and {c.role for c in calls} == {"actor"}
    for c in calls:
        assert c.backend == f"hf:{policy}" and c.profile == "compact"
        assert c.prompt_tokens <= COMPACT_BUDGET  # the policy tokenizer's own count
        parse_role_answer("actor", c.response, finish_reason=c.finish_reason)
    assert of(events, "action_proposed")


@pytest.mark.timeout(600)
async def test_retry_temperature_samples_the_later_attempts(
    nc, nats_url: str, data_dir: Path, repo: Path, policy: Path
) -> None:
    """policy.retry_temperature: the session's first actor call is greedy, every later one
    samples at that temperature with its own seed (task seed + earlier actor calls), so a
    retry is a new try rather than the failed answer again; the requests are recorded, so a
    replay sends the same ones."""
    body = task(
        repo,
        model=f"hf:{policy}",
        budgets={"iterations": 2, "retries_per_phase": 1},
        policy={"ask_unknown": False, "retry_temperature": 0.9},
    )
    async with loop(nats_url) as bus:
        sid = await start(bus, body)
        _state, events = await finish_session(bus, sid, timeout=600)
    assert of(events, "session_completed")
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    assert len(calls) >= 2  # the random policy's first answer does not stand
    first, *later = calls
    assert first.request["sampling"]["temperature"] == 0.0
    for i, c in enumerate(later, start=1):
        assert c.request["sampling"]["temperature"] == 0.9
        assert c.request["seed"] == i


@pytest.mark.timeout(600)
async def test_without_compact_feedback_a_retry_sends_the_first_prompt_again(
    nc, nats_url: str, data_dir: Path, repo: Path, policy: Path
) -> None:
    """policy.compact_feedback: false: a retry's compact prompt has no feedback line (a policy
    never trained on one answers it out of distribution); the recorded state is the state sent,
    so every actor call of the session has the first call's prompt."""
    body = task(
        repo,
        model=f"hf:{policy}",
        budgets={"iterations": 2, "retries_per_phase": 1},
        policy={"ask_unknown": False, "retry_temperature": 0.9, "compact_feedback": False},
    )
    async with loop(nats_url) as bus:
        sid = await start(bus, body)
        _state, events = await finish_session(bus, sid, timeout=600)
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    assert len(calls) >= 2
    assert all(c.prompt_state and c.prompt_state["feedback"] == "" for c in calls)
    assert {c.prompt_state["snippet"] for c in calls} == {calls[0].prompt_state["snippet"]}
    # The refusal is still on the stream (the first answer did not stand), only not prompted.
    assert of(events, "action_rejected") or of(events, "verification_completed")
