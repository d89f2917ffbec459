"""Constrained decoding with the exported answer grammar (oopav.models.constrain): an untrained
policy answers validly every time under the grammar and never without it; `oopav eval
--constrained` and GRPO's generation (`constrained: true`) use the same processor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tiny_policy import policy_fixtures, recipe_config

from oopav.models.prompt import AnswerError, parse_role_answer
from oopav.models.schema_grammar import GrammarOptions, answer_grammar

pytest.importorskip("trl")
pytest.importorskip("xgrammar")

# Tight bounds: the longest answer the grammar admits fits the token budget, so even a random
# policy cannot be cut off (byte-level BPE: a token is at least one byte).
TIGHT = GrammarOptions(compact=True, think_chars=8, max_string_length=6, max_items=1, max_escapes=1)
TIGHT_DICT = {"think_chars": 8, "max_string_length": 6, "max_items": 1, "max_escapes": 1}


tasks_dir, untrained = policy_fixtures(40, seed=3, model_fixture="untrained")


def _valid(text: str) -> bool:
    try:
        parse_role_answer("actor", text)
    except AnswerError:
        return False
    return True


def test_untrained_policy_is_valid_only_under_the_grammar(tasks_dir: Path, untrained: Path) -> None:
    from oopav.trainer.evaluate import evaluate_model, load_hf
    from oopav.trainer.tasks import load_tasks

    model, tok = load_hf(untrained)
    tasks = load_tasks(tasks_dir, "train")[:8]
    budget = answer_grammar("action", TIGHT).max_bytes()
    assert budget is not None

    free = evaluate_model(model, tok, tasks, max_new_tokens=64)
    assert free.summary()["valid"] == 0.0 and not free.summary()["constrained"]
    assert not any(_valid(c) for c in free.completions)

    bound = evaluate_model(model, tok, tasks, max_new_tokens=budget, constrained=TIGHT)
    # The grammar guarantees the format (every answer parses); the eval's `valid` also needs
    # the rule to compile against the code, which no grammar can promise for a random policy.
    assert bound.summary()["constrained"]
    assert all(_valid(c) for c in bound.completions)
    assert all(0 < n <= budget for n in bound.completion_tokens)


def test_a_processor_serves_one_generate_call(untrained: Path) -> None:
    import torch

    from oopav.models.constrain import GrammarLogitsProcessor, compile_for, constrain_generate
    from oopav.trainer.evaluate import load_hf

    model, tok = load_hf(untrained)
    proc = GrammarLogitsProcessor(compile_for(tok, model=model, options=TIGHT))
    ids = tok(["hello"], return_tensors="pt")["input_ids"]
    scores = torch.zeros((1, model.config.vocab_size))
    masked = proc(ids, scores.clone())
    allowed = torch.isfinite(masked[0]).nonzero().flatten().tolist()
    assert allowed and len(allowed) < model.config.vocab_size
    assert all(tok.decode([i]).startswith("<") for i in allowed)  # the answer opens <think>
    with pytest.raises(RuntimeError, match="one generate"):
        proc(ids, scores.clone())  # same length again: a second call, not the next step

    undo = constrain_generate(model, tok, options=TIGHT)
    enc = tok(["rename fetch"], return_tensors="pt")
    budget = answer_grammar("action", TIGHT).max_bytes()
    for _ in range(2):  # a fresh processor per call
        out = model.generate(
            **enc, max_new_tokens=budget, do_sample=True, pad_token_id=tok.pad_token_id
        )
        text = tok.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        assert _valid(text), text
    undo()
    assert "generate" not in model.__dict__


def last_json(text: str) -> dict[str, Any]:
    import json

    lines = [line for line in text.splitlines() if line.startswith('{"')]
    assert lines, text[-500:]
    return dict(json.loads(lines[-1]))


def test_eval_command_constrained_flag(tasks_dir: Path, untrained: Path) -> None:
    from oopav.cli import cli

    args = ["eval", "--model", f"hf:{untrained}", "--suite", str(tasks_dir), "--n", "2", "--json"]
    r = CliRunner().invoke(cli, [*args, "--max-new-tokens", "8"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    free = last_json(r.stdout)
    assert free["constrained"] is False and free["valid"] == 0.0
    # default decoding bounds: a random model may run out of tokens, but never leaves the grammar
    r = CliRunner().invoke(cli, [*args, "--max-new-tokens", "24", "--constrained"])
    assert r.exit_code == 0, r.output
    bound = last_json(r.stdout)
    assert bound["constrained"] is True and bound["n"] == 2
    r = CliRunner().invoke(
        cli, ["eval", "--model", "gold", "--suite", str(tasks_dir), "--n", "1", "--constrained"]
    )
    assert r.exit_code == 2 and "applies to hf: models" in r.output


def test_grpo_generation_is_constrained(tmp_path: Path, tasks_dir: Path, untrained: Path) -> None:
    from oopav.trainer.config import load_config
    from oopav.trainer.grpo import GRPORecipe, train_grpo

    budget = answer_grammar("action", TIGHT).max_bytes()
    cfg = load_config(
        GRPORecipe,
        recipe_config(
            tmp_path / "g",
            untrained,
            tasks_dir,
            batch_size=4,
            num_generations=4,
            max_steps=1,
            max_completion_length=budget,
            eval_n=0,
            constrained=True,
            grammar=TIGHT_DICT,
        ),
    )
    events: list[tuple[str, dict[str, Any]]] = []
    train_grpo(cfg, lambda kind, fields: events.append((kind, fields)))
    steps = [f for k, f in events if k == "step"]
    assert steps and steps[0]["validity"] == 1.0

    with pytest.raises(ValueError, match="unknown grammar setting"):
        train_grpo(
            load_config(GRPORecipe, {**cfg.__dict__, "grammar": {"max_strings": 3}}),
            lambda kind, fields: None,
        )
