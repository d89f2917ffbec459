"""A session under the compact prompt profile through the real loop: no planner call (a
deterministic one-step plan), compact actor prompts within budget (a retry re-renders, it does
not grow), success, replay; and export --profile compact renders the very bytes the loop sent."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    assert_replays,
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_all,
    start,
    task,
)

from oopav.models.profiles import COMPACT_BUDGET, compact_tokens, from_builtins, render
from oopav.trainer.datasets import Filters, session_records


async def test_compact_session_plans_in_one_step_and_stays_within_budget(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {"actor": ["<think>hm</think><action>{oops", rename_all()]}
    body = task(repo, policy={"prompt_profile": "compact"})
    async with loop(nats_url, script) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    calls = of(events, "model_called")
    assert [c.role for c in calls] == ["actor", "actor"]  # the planner asked no model
    (plan,) = of(events, "plan_proposed")
    assert len(plan.steps) == 1 and plan.model_call_id is None
    assert "webtool/client.py" in plan.files and "compact profile" in plan.rationale
    first, retry = calls
    for call in calls:
        assert call.profile == "compact" and call.prompt_state is not None
        msgs = call.request["messages"]
        assert len(msgs) == 1 and compact_tokens(msgs[0]["content"]) <= COMPACT_BUDGET
        rendered = render("compact", from_builtins(call.prompt_state))
        assert [{"role": m.role, "content": m.content} for m in rendered] == [
            {"role": m["role"], "content": m["content"]} for m in msgs
        ]
    assert "def fetch(" in first.request["messages"][0]["content"]
    retry_text = retry.request["messages"][0]["content"]
    assert "Last attempt refused: invalid_json" in retry_text or "refused" in retry_text
    assert "{oops" not in retry_text  # the failed answer is not appended
    # The learner's export renders the compact records byte-identical to the loop's prompts.
    numbered = [(i + 1, e) for i, e in enumerate(events)]
    recs = session_records(numbered, Filters(profile="compact")).records["sft"]
    assert [r["prompt"] for r in recs] == [
        [{"role": m["role"], "content": m["content"]} for m in retry.request["messages"]]
    ]
    await assert_replays(nats_url, sid)
    # ... and `oopav train sft` trains on that export within max_length 512 (the walk:
    # session -> learner dataset -> compact export -> train).
    _train_on(data_dir, [session_records(numbered, Filters(profile="compact"))])


def _train_on(tmp: Path, sessions: list) -> None:
    from oopav.trainer.datasets import write_dataset
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.sft import SFTRecipe, train_sft

    data = tmp / "compact-sft"
    assert write_dataset(data, "sft", sessions, Filters(profile="compact")).count >= 1
    shape = PolicyShape(
        vocab_size=400, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1
    )
    base = build_policy(tmp / "base", ["Rename the function `fetch`"] * 4, shape=shape)
    cfg = SFTRecipe(
        output_dir=str(tmp / "run"),
        model=str(base),
        dataset=str(data),
        max_steps=2,
        batch_size=2,
        max_length=1024,  # the compact prompt's 512 tokens and the answer
        eval_n=0,
        threads=1,
    )
    result = train_sft(cfg, lambda *_: None)
    assert result["steps"] == 2 and (Path(result["checkpoint"]) / "config.json").exists()
    # The checkpoint carries its answer vocabulary (copy-constrained decoding's memory words):
    # the rule's own words, never the session's names (copied from the prompt).
    from oopav.models.copying import read_answer_words

    vocabulary = read_answer_words(result["checkpoint"])
    assert vocabulary is not None and result["answer_words"] == len(vocabulary)
    assert {"type", "rule"} <= vocabulary and "fetch_page" not in vocabulary


async def test_copy_names_records_the_words_and_replays(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from oopav.models.copying import copy_words

    script = {"actor": [rename_all()]}
    body = task(repo, policy={"prompt_profile": "compact", "copy_names": "instruction"})
    async with loop(nats_url, script) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    (call,) = of(events, "model_called")
    instruction = from_builtins(call.prompt_state).instruction
    # The words the answer may copy are in the recorded request (and so in its hash): a replay
    # sends the same request, and a backend without the option ignores them.
    assert call.request["copy_words"] == copy_words(instruction)
    assert "fetch" in call.request["copy_words"]
    await assert_replays(nats_url, sid)


async def test_full_profile_sessions_record_the_compact_state_too(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """A session answered under the full profile (here synth:-like scripted answers) still
    records the actor's prompt state, so its records render for a compact policy."""
    from loop_harness import finish, plan_answer

    script = {"planner": [plan_answer(steps=2)], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    actor = [c for c in of(events, "model_called") if c.role == "actor"]
    assert actor and all(c.profile == "full" and c.prompt_state for c in actor)
    numbered = [(i + 1, e) for i, e in enumerate(events)]
    full = session_records(numbered, Filters()).records["sft"]
    compact = session_records(numbered, Filters(profile="compact")).records["sft"]
    # The planner's record has no compact form, and a compact policy is never asked to finish.
    assert len(full) == 3 and len(compact) == 1
    assert '"type":"ast_grep"' in compact[0]["completion"][0]["content"].replace(" ", "")
    # In the compact answer form: an empty think, the action without defaults, no notes.
    answer = compact[0]["completion"][0]["content"]
    assert answer.startswith("<think></think>\n<action>{")
    assert answer.endswith("</action>\n<state_update>{}</state_update>")
    assert '"paths"' not in answer and full[1]["completion"][0]["content"] != answer
    from oopav.models.prompt import parse_role_answer

    parsed = parse_role_answer("actor", answer)
    proposed = of(events, "action_proposed")[0].action
    assert parsed.payload == proposed  # the same action the teacher proposed
    assert all(len(r["prompt"]) == 1 and r["prompt"][0]["role"] == "user" for r in compact)
    assert compact[0]["prompt"][0]["content"].startswith(
        state.task.instruction if state.task else ""
    )


async def test_declared_capabilities_choose_the_profile_and_the_decoding(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """A backend with a 4k context and no grammar (policy.model_capabilities): the compact
    profile without being named, and requests without a schema to constrain to."""
    script = {"actor": [rename_all()]}
    caps = {"model_capabilities": {"grammar": False, "context_tokens": 4096}}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=caps))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    (call,) = of(events, "model_called")
    assert call.profile == "compact" and call.request["schema"] is None
    assert "compact profile" in of(events, "plan_proposed")[0].rationale
    # the same task with the declared capabilities: the full profile, grammar attached
    async with loop(
        nats_url, {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    ) as bus:
        sid2 = await start(bus, task(repo))
        state2, events2 = await finish_session(bus, sid2)
    assert state2.outcome == "success", state2.summary
    full = next(c for c in of(events2, "model_called") if c.role == "actor")
    assert full.profile == "full" and full.request["schema"] is not None
    await assert_replays(nats_url, sid)
