"""The ``hf:`` backend with the locally built tiny model (needs the ``[train]`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from oopav.events import Action
from oopav.models import (
    AnswerError,
    Message,
    ModelError,
    ModelRequest,
    Sampling,
    build_request,
    load_backend,
    output_schema,
    parse_role_answer,
    static_prefix,
)

pytest.importorskip("torch")
pytest.importorskip("xgrammar")

POLICY = {"network": False}


def _actor_request(seed: int, max_tokens: int = 1024) -> ModelRequest:
    return build_request(
        "actor",
        prefix=static_prefix(POLICY),
        task="rename fetch to fetch_page",
        guidance=["prefer ast_grep for renames"],
        sampling=Sampling(temperature=1.0, max_tokens=max_tokens),
        seed=seed,
    )


async def test_constrained_actor_answers_are_schema_valid_50_of_50(tiny_backend: Any) -> None:
    valid = 0
    kinds: set[str] = set()
    texts: set[str] = set()
    for seed in range(50):
        resp = await tiny_backend.complete(_actor_request(seed))
        parsed = parse_role_answer("actor", resp.text, finish_reason=resp.finish_reason)
        assert resp.finish_reason == "stop"
        assert resp.completion_tokens > 0 and resp.prompt_tokens > 1000
        valid += 1
        kinds.add(type(parsed.payload).__name__)
        texts.add(resp.text)
    assert valid == 50
    # A random model under the grammar still explores: different seeds, different actions.
    assert len(texts) == 50
    assert len(kinds) >= 3


async def test_unconstrained_random_model_does_not_produce_the_envelope(tiny_backend: Any) -> None:
    # The control for the test above: without the grammar the same model emits noise.
    resp = tiny_backend.generate(_actor_request(0, max_tokens=64), constrained=False)
    with pytest.raises(AnswerError):
        parse_role_answer("actor", resp.text, finish_reason=resp.finish_reason)


async def test_bare_json_schema_request(tiny_backend: Any) -> None:
    req = ModelRequest(
        role="actor",
        messages=[Message(role="user", content="one action")],
        schema=output_schema("actor"),
        sampling=Sampling(temperature=1.0, max_tokens=512),
        seed=1,
    )
    resp = await tiny_backend.complete(req)
    action = msgspec.json.decode(resp.text, type=Action)
    assert type(action).__name__.endswith("Action")


async def test_same_seed_same_answer(tiny_backend: Any) -> None:
    a = await tiny_backend.complete(_actor_request(7))
    b = await tiny_backend.complete(_actor_request(7))
    assert a.text == b.text


async def test_plan_and_verdict_envelopes(tiny_backend: Any) -> None:
    for role in ("planner", "critic"):
        req = build_request(
            role, prefix=static_prefix(POLICY), sampling=Sampling(temperature=1.0), seed=3
        )
        resp = await tiny_backend.complete(req)
        parsed = parse_role_answer(role, resp.text, finish_reason=resp.finish_reason)
        assert (parsed.state_update is None) == (role == "critic")


async def test_prompt_over_context_is_context_length_error(tiny_backend: Any) -> None:
    req = ModelRequest(
        role="actor",
        messages=[Message(role="user", content="word " * 9000)],
        sampling=Sampling(max_tokens=16),
    )
    with pytest.raises(ModelError) as info:
        await tiny_backend.complete(req)
    assert info.value.kind == "context_length"


def test_missing_model_dir_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        load_backend(f"hf:{tmp_path / 'nope'}")
    assert info.value.kind == "not_found"


def test_tiny_model_dir_loads_through_the_spec(tiny_model_dir: Path) -> None:
    backend = load_backend(f"hf:{tiny_model_dir}", device="cpu")
    assert backend.spec == f"hf:{tiny_model_dir}"
    assert (tiny_model_dir / "config.json").exists()
    assert (tiny_model_dir / "tokenizer.json").exists()


def test_envelope_grammar_takes_keys_in_any_order(tiny_backend: Any) -> None:
    # A policy trained on render_answer/target_text writes "type" first and compact JSON: the
    # backend's grammar (the exported answer grammar) must not push it off that format.
    xgr = pytest.importorskip("xgrammar")
    compiled = tiny_backend._compiled_grammar(_actor_request(0))
    head, tail = "<think>t</think>\n<action>", "</action>\n<state_update>{}</state_update>"
    for body, ok in (
        ('{"type":"finish","summary":"done"}', True),
        ('{"summary":"done","type":"finish"}', True),
        ('{"type":"finish"}', False),
        ('{"type":"finish","summary":"done","summary":"x"}', False),
    ):
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert (m.accept_string(head + body + tail) and m.is_terminated()) is ok, body
