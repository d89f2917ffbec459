"""Prompt profiles: the compact prompt is the training prompt, within its budget, retries
included; profiles per backend."""

from __future__ import annotations

import pytest

from oopav.models.profiles import (
    COMPACT_BUDGET,
    PromptState,
    compact_request,
    compact_tokens,
    profile_for,
    render,
)
from oopav.trainer.tasks import task_messages

PRE = "def f(u):\n    return fetch(u)\n"


def test_compact_prompt_is_the_training_prompt_byte_for_byte() -> None:
    state = PromptState(role="actor", instruction="Rename calls to `fetch` to `get`.", snippet=PRE)
    (msg,) = render("compact", state)
    assert [{"role": msg.role, "content": msg.content}] == task_messages(state.instruction, PRE)
    req = compact_request(state)
    assert req.envelope == "action" and req.schema is not None and req.messages[0] == msg


def test_compact_prompt_stays_within_budget_with_a_long_snippet_and_feedback() -> None:
    snippet = "".join(
        f"    x{i} = fetch({i})  # a long line of code, line {i}\n" for i in range(400)
    )
    state = PromptState(
        role="actor",
        instruction="Rename calls to `fetch` to `get`.",
        snippet="def f():\n" + snippet,
        feedback="schema_mismatch: " + "the rule did not parse " * 100,
    )
    (msg,) = render("compact", state)
    assert compact_tokens(msg.content) <= COMPACT_BUDGET
    assert msg.content.startswith(state.instruction) and "def f():" in msg.content
    assert "Last attempt refused: schema_mismatch" in msg.content
    # Retries re-render with the new feedback: the prompt does not grow with them.
    import msgspec

    again = render("compact", msgspec.structs.replace(state, feedback="x"))
    assert compact_tokens(again[0].content) <= COMPACT_BUDGET


def test_compact_budget_holds_with_a_real_policy_tokenizer(tmp_path) -> None:
    """A policy's tokenizer is trained on its training texts (code): on held-out tasks' code,
    five times over and with a long feedback, the rendered prompt stays within 512 real
    tokens."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.tasks import generate

    tasks = generate(80, seed=2).tasks
    train, held = tasks[:50], tasks[50:]
    shape = PolicyShape(
        vocab_size=1024, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1
    )
    texts = [task_messages(t.instruction, t.pre)[0]["content"] for t in train]
    tok = AutoTokenizer.from_pretrained(build_policy(tmp_path / "p", texts, shape=shape))
    worst = 0
    for t in held:
        state = PromptState(
            role="actor",
            instruction=t.instruction,
            snippet=t.pre * 5,
            feedback="invalid_json: the JSON in <action> is incomplete " * 10,
        )
        text = tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in render("compact", state)],
            tokenize=False,
            add_generation_prompt=True,
        )
        worst = max(worst, len(tok(text, add_special_tokens=False)["input_ids"]))
    assert 0 < worst <= COMPACT_BUDGET


def test_profile_per_backend() -> None:
    assert profile_for("hf:/models/p") == "compact"
    assert profile_for("scripted:x") == "full" and profile_for("synth:") == "full"
    assert profile_for("scripted:x", {"prompt_profile": "compact"}) == "compact"
    assert profile_for("hf:/m", {"prompt_profile": "full"}) == "full"
    with pytest.raises(ValueError, match="unknown prompt_profile 'tiny'"):
        profile_for("hf:/m", {"prompt_profile": "tiny"})
    with pytest.raises(ValueError, match="compact profile renders actor prompts"):
        render("compact", PromptState(role="planner", instruction="x"))
