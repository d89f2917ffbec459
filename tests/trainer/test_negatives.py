"""Learning from refused answers (trainer/negatives.py, issue 25): an SFT recipe with
``negatives`` adds the sequence-level unlikelihood of a negatives dataset's rejected answers,
optionally scored under copy-constrained decoding (``negative_copy``)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from tiny_policy import Recipe, policy_fixtures, train, write_negatives, wrong_answers

from oopav.trainer.negatives import (
    TAIL,
    copy_masks,
    instruction_of,
    negative_pairs,
    sequence_logprobs,
    unlikelihood,
)

tasks_dir, base_model = policy_fixtures(40, seed=11, hidden=32)


def test_unlikelihood_is_minus_log_one_minus_p_and_linear_above_the_tail() -> None:
    import torch

    p = torch.tensor([1e-6, 0.3, TAIL, 0.999], dtype=torch.float64)
    lp = p.log().requires_grad_(True)
    got = unlikelihood(lp)
    assert got[0].item() == pytest.approx(1e-6, rel=1e-3)  # an unlikely answer costs ~nothing
    assert got[1].item() == pytest.approx(-math.log(0.7))
    assert got[2].item() == pytest.approx(-math.log(1 - TAIL))
    # above the tail: a straight line, continuous at the tail, finite where -log(1-p) is not
    assert got[3].item() == pytest.approx(-math.log(1 - TAIL) + (0.999 - TAIL) / (1 - TAIL))
    got.sum().backward()
    assert lp.grad is not None and torch.isfinite(lp.grad).all()
    assert lp.grad[0].item() < 1e-5 < lp.grad[1].item()  # the push vanishes as p -> 0


def test_negative_pairs_read_both_forms_and_refuse_other_datasets(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "Rename `a` to `b`."}]
    neg = write_negatives(tmp_path / "neg", [{"prompt": msgs, "rejected": "X"}])
    assert negative_pairs(str(neg)) == [(msgs, "X")]
    pairs = write_negatives(
        tmp_path / "pairs",
        [{"prompt": msgs, "chosen": [], "rejected": [{"role": "assistant", "content": "Y"}]}],
        "pairs",
    )
    assert negative_pairs(str(pairs)) == [(msgs, "Y")]
    sft = write_negatives(tmp_path / "sft", [{"prompt": msgs, "completion": []}], "sft")
    with pytest.raises(ValueError, match="is a sft dataset; `negatives` needs a negatives"):
        negative_pairs(str(sft))
    empty = write_negatives(tmp_path / "empty", [])
    with pytest.raises(ValueError, match="no negatives in"):
        negative_pairs(str(empty))


def test_the_copy_mask_allows_only_the_instructions_words_inside_the_action(
    base_model: Path,
) -> None:
    from transformers import AutoTokenizer

    from oopav.models.copying import token_texts
    from oopav.models.profiles import DIRECTIVE

    tok = AutoTokenizer.from_pretrained(base_model)
    texts = token_texts(tok, len(tok))
    msgs = [{"role": "user", "content": f"Rename `fetch` to `fetch_page`.\n{DIRECTIVE}\n```x```"}]
    assert instruction_of(msgs) == "Rename `fetch` to `fetch_page`."
    answer = '<think></think>\n<action>{"pattern":"fetch($$$A)"}</action>'
    ids = tok(answer, add_special_tokens=False)["input_ids"]
    allowed = {"Rename", "fetch", "fetch_page", "to", "pattern", "A", "action"}
    masks = copy_masks(texts, allowed, ids, len(tok), {})
    assert masks.shape == (len(ids), len(tok))
    assert bool(masks[0].all())  # before the envelope opens: free
    for i, t in enumerate(ids):
        assert bool(masks[i, t])  # the answer's own tokens stay possible
    # somewhere inside the payload a word outside the allowed set is excluded
    inside = [i for i in range(len(ids)) if not bool(masks[i].all())]
    assert inside, "the constraint never applied inside the action"
    bad = [j for j, s in enumerate(texts) if s.strip() and s.strip().isalpha()]
    assert any(not bool(masks[inside[0], j]) for j in bad)


def logp_of(model_dir: str, negatives: Path) -> float:
    """The mean log-probability of the rejected answers under ``model_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    rows = []
    for messages, rejected in negative_pairs(str(negatives)):
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        rows.append(
            {
                "prompt_ids": tok(str(prompt), add_special_tokens=False)["input_ids"],
                "answer_ids": tok(rejected, add_special_tokens=False)["input_ids"],
            }
        )
    with torch.no_grad():
        return float(sequence_logprobs(model, rows, 0).mean())


def test_a_run_with_negatives_makes_the_rejected_answers_less_likely_and_records_it(
    nats_url: str, tmp_path: Path, recipe: Recipe, tasks_dir: Path
) -> None:
    bad = wrong_answers(tasks_dir, 2)
    neg = write_negatives(tmp_path / "neg", bad)
    # A policy that gives the wrong answers (trained on them): the term acts on answers the
    # policy is likely to give, and does nothing to ones it would not
    mistaken = write_negatives(
        tmp_path / "mistaken",
        [{"prompt": r["prompt"], "completion": [{"role": "assistant", "content": r["rejected"]}]}
         for r in bad],
        "sft",
    )  # fmt: skip
    cfg = recipe("m", max_steps=80, batch_size=2, learning_rate=2e-2, eval_n=0)
    del cfg["tasks"]
    train(nats_url, tmp_path, "sft", {**cfg, "dataset": str(mistaken)})
    start = str(tmp_path / "m" / "final")
    before = logp_of(start, neg)
    assert before > -8.0, before  # the mistaken policy gives them (p > 3e-4 each)
    common = {"max_steps": 12, "batch_size": 4, "logging_steps": 4, "eval_n": 0,
              "learning_rate": 2e-3, "families": ["rename_call"]}  # fmt: skip
    train(nats_url, tmp_path, "sft", {**recipe("plain", **common), "model": start})
    cfg = recipe("neg", negatives=str(neg), negative_weight=2.0, negative_batch=2, **common)
    cfg["model"] = start
    result, events = train(nats_url, tmp_path, "sft", cfg)
    assert result["status"] == "completed"
    record = events[0].data_order["negatives"]
    assert record["records"] == record["rows"] == 2 and record["weight"] == 2.0
    assert record["batch"] == 2
    steps = [e for e in events if e.type == "training_step_completed"]
    assert steps and all(e.metrics["negative_unlikelihood"] > 0 for e in steps)
    # the same steps on the same positives from the same policy: with the term the refused
    # answers end less likely than without it
    plain_lp = logp_of(str(tmp_path / "plain" / "final"), neg)
    neg_lp = logp_of(str(tmp_path / "neg" / "final"), neg)
    assert neg_lp < plain_lp - 1.0, (before, plain_lp, neg_lp)


def test_negative_copy_scores_under_the_checkpoints_answer_vocabulary(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    from transformers import AutoTokenizer

    from oopav.models.copying import write_answer_words
    from oopav.trainer.negatives import negative_rows
    from oopav.trainer.sft import SFTRecipe

    neg = write_negatives(tmp_path / "neg", wrong_answers(tasks_dir, 3))
    cfg = SFTRecipe(output_dir=str(tmp_path / "o"), model=str(base_model), tasks=str(tasks_dir),
                    negatives=str(neg), negative_weight=1.0, negative_copy=True)  # fmt: skip
    tok = AutoTokenizer.from_pretrained(base_model)
    model = tmp_path / "m"
    shutil.copytree(base_model, model)
    cfg.model = str(model)
    with pytest.raises(ValueError, match="negative_copy needs the model's answer vocabulary"):
        negative_rows(cfg, tok)
    write_answer_words(model, ["pattern", "rewrite", "ARGS", "type", "ast_grep"], 3)
    rows, record = negative_rows(cfg, tok)
    assert record["copy"] == {"answer_words": 5} and len(rows) == 3
    assert all(r["masks"].shape == (len(r["answer_ids"]), len(tok)) for r in rows)
    # under the constraint an answer can only be likelier than in the free distribution
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(model).eval()
    with torch.no_grad():
        free = sequence_logprobs(m, [{k: v for k, v in r.items() if k != "masks"} for r in rows], 0)
        constrained = sequence_logprobs(m, rows, 0)
    assert bool((constrained >= free - 1e-4).all()) and bool((constrained > free + 1e-3).any())


def test_a_weight_without_negatives_or_negatives_without_a_weight_is_refused(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    from oopav.trainer.sft import SFTRecipe, train_sft

    base = {"output_dir": str(tmp_path / "o"), "model": str(base_model), "tasks": str(tasks_dir)}
    for bad in ({"negative_weight": 1.0}, {"negatives": str(tmp_path)}, {"negative_weight": -1.0}):
        with pytest.raises(ValueError, match="negative_weight must be > 0 with `negatives`"):
            train_sft(SFTRecipe(**base, **bad), lambda *_: None)  # type: ignore[arg-type]


def test_structure_leaves_the_copied_names_out_of_a_negatives_probability(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    from transformers import AutoTokenizer

    from oopav.models.copying import token_texts
    from oopav.trainer.negatives import name_tokens, negative_rows
    from oopav.trainer.sft import SFTRecipe

    tok = AutoTokenizer.from_pretrained(base_model)
    texts = token_texts(tok, len(tok))
    answer = '{"rule":"kind: identifier\\nregex: ^fetch$\\nfix: fetch_page\\n"}'
    ids = tok(answer, add_special_tokens=False)["input_ids"]
    flags = name_tokens(texts, ids, {"fetch", "fetch_page"})
    named = "".join(texts[t] for t, f in zip(ids, flags, strict=True) if f)
    # both names, whole, and nothing else (a token may carry the space before a name)
    assert named.replace(" ", "") == "fetchfetch_page"
    # a word that only contains a name is not the name; an escape is not part of a word
    flags = name_tokens(texts, tok("\\nfetchx fetch", add_special_tokens=False)["input_ids"],
                        {"fetch"})  # fmt: skip
    assert sum(flags) >= 1 and not flags[0]

    neg = write_negatives(tmp_path / "neg", wrong_answers(tasks_dir, 2))
    base = {"output_dir": str(tmp_path / "o"), "model": str(base_model), "tasks": str(tasks_dir),
            "negatives": str(neg), "negative_weight": 1.0}  # fmt: skip
    rows, record = negative_rows(SFTRecipe(**base, negative_tokens="structure"), tok)
    assert record["tokens"] == "structure"
    for r in rows:
        assert len(r["scored"]) == len(r["answer_ids"])
        assert 0 < sum(r["scored"]) < len(r["scored"])  # the names' tokens are left out
    # fewer tokens scored: the answer is at least as likely as with every token
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(base_model).eval()
    with torch.no_grad():
        every = sequence_logprobs(
            m, [{k: v for k, v in r.items() if k != "scored"} for r in rows], 0
        )
        structure = sequence_logprobs(m, rows, 0)
    assert bool((structure > every).all())
    with pytest.raises(ValueError, match="negative_tokens must be 'all' or 'structure'"):
        negative_rows(SFTRecipe(**base, negative_tokens="names"), tok)
