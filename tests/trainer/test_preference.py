"""Preferences at a policy's failure states (trainer/preference.py, issue 25): the pair builder
pairs a refused answer with a verified answer at the same state, only in the sessions it is
given; the DPO term starts at log 2 (zero margin) at the reference and moves the policy toward
the chosen answer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tiny_policy import Recipe, policy_fixtures, task_pairs, train, write_pairs

from oopav.trainer.preference import (
    LOG2,
    augment_pairs,
    batch_loss,
    dpo_loss,
    failure_pairs,
    read_pairs,
)

tasks_dir, base_model = policy_fixtures(40, seed=13, hidden=32)


def msgs(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def sft(prompt: str, answer: str, sid: str) -> dict[str, Any]:
    return {"prompt": msgs(prompt), "completion": [{"role": "assistant", "content": answer}],
            "session_id": sid}  # fmt: skip


def neg(prompt: str, answer: str, sid: str) -> dict[str, Any]:
    return {"prompt": msgs(prompt), "rejected": answer, "session_id": sid, "status": "rejected"}


def test_pairs_are_made_at_byte_identical_states_and_only_in_the_given_sessions() -> None:
    chosen = [sft("Rename `a` to `b`.\nS1", "GOOD-1", "synth-1"),
              sft("Rename `c` to `d`.\nS2", "GOOD-2", "synth-2")]  # fmt: skip
    rejected = [
        neg("Rename `a` to `b`.\nS1", "BAD-1", "fail-1"),  # paired
        neg("Rename `a` to `b`.\nS1", "BAD-1", "fail-1"),  # a repeat: once
        neg("Rename `a` to `b`.\nS1", "BAD-1b", "fail-1"),  # a second refused answer there
        neg("Rename `a` to `b`.\nS1 ", "BAD-x", "fail-1"),  # one byte differs: not that state
        neg("Rename `c` to `d`.\nS2", "GOOD-2", "fail-2"),  # the chosen answer: no preference
        # a held-out session with the very same prompt: never paired
        neg("Rename `c` to `d`.\nS2", "BAD-2", "heldout-1"),
    ]
    pairs, counts = failure_pairs(chosen, rejected, {"fail-1", "fail-2"})
    assert [(p["chosen"][0]["content"], p["rejected"][0]["content"]) for p in pairs] == [
        ("GOOD-1", "BAD-1"),
        ("GOOD-1", "BAD-1b"),
    ]
    assert all(p["prompt"] == msgs("Rename `a` to `b`.\nS1") for p in pairs)
    assert pairs[0]["session_id"] == "fail-1" and pairs[0]["chosen_session_id"] == "synth-1"
    assert counts == {"chosen_states": 2, "rejected": 5, "outside": 1, "unmatched": 1,
                      "same_answer": 1, "repeats": 1, "pairs": 2, "paired_states": 1}  # fmt: skip
    # without a session list every refused answer may pair (the held-out one too): the caller
    # must name its sessions, which the flywheel bench does (failed training-file tasks only)
    everything, _ = failure_pairs(chosen, rejected)
    assert ("GOOD-2", "BAD-2") in [
        (p["chosen"][0]["content"], p["rejected"][0]["content"]) for p in everything
    ]


def test_dpo_loss_is_log_2_at_the_reference_and_its_gradient_favours_the_chosen_answer() -> None:
    import torch

    pc = torch.tensor([-3.0, -10.0], requires_grad=True)
    pr = torch.tensor([-2.0, -1.0], requires_grad=True)
    loss = dpo_loss(pc, pr, pc.detach(), pr.detach(), beta=0.5)
    assert torch.allclose(loss, torch.full((2,), LOG2))  # margin 0 whatever the answers' p
    loss.sum().backward()
    assert pc.grad is not None and pr.grad is not None
    # gradient descent raises the chosen answer's log-probability and lowers the rejected one's
    assert bool((pc.grad < 0).all()) and bool((pr.grad > 0).all())
    assert pc.grad[0].item() == pytest.approx(-0.25)  # beta * sigmoid(0)
    # a policy that moved toward the chosen answer has a lower loss than one that moved away
    toward = dpo_loss(torch.tensor(-2.0), torch.tensor(-3.0), torch.tensor(-3.0),
                      torch.tensor(-2.0), 0.5)  # fmt: skip
    away = dpo_loss(torch.tensor(-4.0), torch.tensor(-1.0), torch.tensor(-3.0),
                    torch.tensor(-2.0), 0.5)  # fmt: skip
    assert float(toward) < LOG2 < float(away)
    assert float(toward) == pytest.approx(math.log1p(math.exp(-1.0)))


def test_augmented_pairs_carry_one_name_mapping_to_both_answers() -> None:
    prompt = msgs("Rename the function `clear` to `clear_safe`.\n```python\nclear(x)\n```")
    good = '{"rule":"id: r\\nrule: {pattern: clear($$$A)}\\nfix: clear_safe($$$A)"}'
    bad = '{"rule":"id: r\\nrule: {pattern: clear_safe($$$A)}\\nfix: clear_safe($$$A)"}'
    out = augment_pairs([(prompt, good, bad)], 2, 0, "all")
    assert len(out) == 3 and out[0] == (prompt, good, bad)
    for messages, win, lose in out[1:]:
        assert "clear" not in win and "clear" not in lose and "clear" not in messages[0]["content"]
        # the rejected answer's mistake survives the renaming: the new name in the pattern
        new_name = win.split("fix: ")[1].split("(")[0]
        assert f"pattern: {new_name}(" in lose and new_name in messages[0]["content"]


def margin_of(model_dir: str, cfg: Any) -> float:
    """The mean (log p(chosen) - log p(rejected)) of the recipe's pairs under ``model_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from oopav.trainer.negatives import sequence_logprobs
    from oopav.trainer.preference import preference_rows

    tok = AutoTokenizer.from_pretrained(model_dir)
    rows, _ = preference_rows(cfg, tok)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    with torch.no_grad():
        win = sequence_logprobs(model, [r["chosen"] for r in rows], 0)
        lose = sequence_logprobs(model, [r["rejected"] for r in rows], 0)
    return float((win - lose).mean())


def test_the_reference_rows_give_log_2_and_a_run_with_preferences_moves_toward_the_chosen(
    nats_url: str, tmp_path: Path, recipe: Recipe, tasks_dir: Path, base_model: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from oopav.trainer.sft import SFTRecipe

    pairs = write_pairs(tmp_path / "pairs", task_pairs(tasks_dir, 3))
    assert len(read_pairs(str(pairs))) == 3
    # a policy that prefers the wrong answers (trained on them), the state generation 1 is in
    mistaken = tmp_path / "mistaken"
    mistaken.mkdir()
    recs = [{"prompt": p["prompt"], "completion": p["rejected"]} for p in task_pairs(tasks_dir, 3)]
    (mistaken / "sft-00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (mistaken / "manifest.json").write_text(json.dumps(
        {"format": "sft", "count": 3, "shards": [{"path": "sft-00000.jsonl"}]}))  # fmt: skip
    cfg = recipe("m", max_steps=60, batch_size=2, learning_rate=2e-2, eval_n=0)
    del cfg["tasks"]
    train(nats_url, tmp_path, "sft", {**cfg, "dataset": str(mistaken)})
    start = str(tmp_path / "m" / "final")

    probe = SFTRecipe(output_dir=str(tmp_path / "p"), model=start, tasks=str(tasks_dir),
                      preferences=str(pairs), preference_weight=1.0)  # fmt: skip
    from oopav.trainer.preference import preference_rows

    tok = AutoTokenizer.from_pretrained(start)
    rows, record = preference_rows(probe, tok)
    assert record["rows"] == 3 and record["reference"] == start
    model = AutoModelForCausalLM.from_pretrained(start).eval()
    with torch.no_grad():
        at_ref = float(batch_loss(model, rows, 0, 0.1))
    assert at_ref == pytest.approx(LOG2, abs=1e-4)  # the policy is its reference: margin 0
    before = margin_of(start, probe)
    assert before < 0, before  # it prefers the rejected answers

    common = {"max_steps": 12, "batch_size": 4, "logging_steps": 4, "eval_n": 0,
              "learning_rate": 2e-3, "families": ["swap_args"]}  # fmt: skip
    train(nats_url, tmp_path, "sft", {**recipe("plain", **common), "model": start})
    cfg = recipe("dpo", preferences=str(pairs), preference_weight=1.0, preference_beta=0.5,
                 preference_batch=3, **common)  # fmt: skip
    cfg["model"] = start
    result, events = train(nats_url, tmp_path, "sft", cfg)
    assert result["status"] == "completed"
    got = events[0].data_order["preferences"]
    assert got["records"] == got["rows"] == 3 and got["beta"] == 0.5 and got["batch"] == 3
    assert got["reference"] == start and got["reference_prefers_chosen"] == 0
    steps = [e for e in events if e.type == "training_step_completed"]
    assert steps and all(0 < e.metrics["dpo_loss"] < 5 for e in steps)
    # the same steps on the same positives (another family's: they say nothing about these
    # pairs) from the same policy: with the term the chosen answers gain on the rejected
    plain = margin_of(str(tmp_path / "plain" / "final"), probe)
    dpo = margin_of(str(tmp_path / "dpo" / "final"), probe)
    assert dpo > plain + 1.0, (before, plain, dpo)


def test_a_preference_weight_needs_pairs_and_a_trained_reference(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    from oopav.trainer.sft import SFTRecipe, train_sft

    base = {"output_dir": str(tmp_path / "o"), "model": str(base_model), "tasks": str(tasks_dir)}
    for bad in ({"preference_weight": 1.0}, {"preferences": str(tmp_path)},
                {"preference_weight": -1.0}):  # fmt: skip
        with pytest.raises(ValueError, match="preference_weight must be > 0 with `preferences`"):
            train_sft(SFTRecipe(**base, **bad), lambda *_: None)  # type: ignore[arg-type]
    new = {**base, "model": "new", "preferences": str(tmp_path), "preference_weight": 1.0}
    with pytest.raises(ValueError, match="needs a trained `model` as its reference"):
        train_sft(SFTRecipe(**new), lambda *_: None)  # type: ignore[arg-type]
    sft_dir = tmp_path / "sft"
    sft_dir.mkdir()
    (sft_dir / "manifest.json").write_text(json.dumps({"format": "sft", "count": 0}))
    with pytest.raises(ValueError, match="is a sft dataset; `preferences` needs a pairs"):
        read_pairs(str(sft_dir))


def test_a_repeated_record_counts_once_in_the_answer_vocabulary(tmp_path: Path) -> None:
    """A record repeated as a weight (the flywheel's failure positives x4) is one teacher
    answer: a word it takes from outside its prompt stays out of the copy vocabulary, as it
    would with the record once (models/copying.py: "in at least two answers")."""
    from oopav.models.copying import read_answer_words
    from oopav.trainer.sft import SFTRecipe, save_answer_words

    def rec(name: str, extra: str = "") -> dict[str, Any]:
        answer = f'<action>{{"rule":"kind: identifier\\nregex: ^{name}$\\nfix: {name}_new{extra}"}}</action>'
        return {"prompt": msgs(f"Rename `{name}` to `{name}_new`."),
                "completion": [{"role": "assistant", "content": answer}]}  # fmt: skip

    recs = [rec(f"n{i}x") for i in range(10)] + [rec("odd", " decode")] * 4
    data = tmp_path / "d"
    data.mkdir()
    (data / "sft-00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (data / "manifest.json").write_text(json.dumps(
        {"format": "sft", "count": len(recs), "shards": [{"path": "sft-00000.jsonl"}]}))  # fmt: skip
    save_answer_words(SFTRecipe(output_dir=str(tmp_path), dataset=str(data)), str(tmp_path))
    got = read_answer_words(tmp_path)
    assert got is not None and "decode" not in got
    assert {"kind", "identifier", "regex", "fix"} <= got
    # two different answers that take it: then it is vocabulary
    recs += [rec("other", " decode")]
    (data / "sft-00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    save_answer_words(SFTRecipe(output_dir=str(tmp_path), dataset=str(data)), str(tmp_path))
    assert "decode" in (read_answer_words(tmp_path) or set())
