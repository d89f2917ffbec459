"""Preferences at a policy's failure states: pairs and a DPO term (issue 25).

The flywheel's generation 1 fails some tasks in every attempt; its refused answers are the
learner's negatives. An unlikelihood term on them alone removed the targeted mistakes but sent
the freed probability to other wrong words (docs/benchmarks.md#flywheel, wave 3g): "not this"
without "this" in the same state. This module supplies the "this":

- :func:`failure_pairs` pairs each refused answer of a failed session with a **verified answer
  for the same state** — a teacher's session on the same task (``synth:`` from the task's
  example), exported with the same compact profile, so its prompt is byte-identical to the one
  the policy failed on. Only the sessions named in ``sessions`` are paired (the caller's list of
  failed sessions on training files): a refused answer of any other session (a held-out task)
  never becomes a pair, even when its prompt matches.
- :func:`dpo_loss` is Direct Preference Optimisation's loss on a pair,
  ``-log sigmoid(beta * ((pc - rc) - (pr - rr)))``, where ``pc``/``pr`` are the policy's
  sequence log-probabilities of the chosen and rejected answers and ``rc``/``rr`` those of the
  frozen reference (the model training starts from: generation 1). At the reference the margin
  is 0 and the loss ``log 2``; it falls as the policy moves probability from the rejected
  answer to the chosen one **relative to where it started**, so unlike the unlikelihood term it
  says where the probability goes.
- :func:`preference_rows` tokenises a pairs dataset (augmented like the positives: one name
  mapping per pair, applied to both answers), optionally scored under copy-constrained
  decoding like the negatives (trainer/negatives.py), with the reference's log-probabilities
  computed once before training; :func:`with_preferences` adds ``weight`` times the mean DPO
  loss of a batch of pairs to every SFT step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def _key(prompt: list[dict[str, Any]]) -> str:
    return json.dumps([[m.get("role"), m.get("content")] for m in prompt], ensure_ascii=False)


def _answer(value: Any) -> str:
    """The answer text of a record's ``completion`` / ``chosen`` / ``rejected`` field (a list of
    assistant messages, or a string)."""
    if isinstance(value, list):
        return str(value[-1]["content"]) if value else ""
    return str(value or "")


def failure_pairs(
    chosen: list[dict[str, Any]],
    rejected: list[dict[str, Any]],
    sessions: set[str] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Pairs (prompt, chosen, rejected) of a refused answer and a verified answer at the same
    state (a byte-identical prompt), and their counts.

    ``chosen``: SFT records (``prompt``, ``completion``) of verified sessions, rendered from
    their first attempt's state (trainer/star.py ``first_attempt``); ``rejected``: negatives
    records (``prompt``, ``rejected``, ``session_id``). Only rejected records of ``sessions``
    are used (None: all). A rejected answer equal to the chosen one (an exact answer undone for
    another reason) is no preference and is left out; so is a repeat of a (prompt, rejected)."""
    by_state: dict[str, dict[str, Any]] = {}
    for rec in chosen:
        by_state.setdefault(_key(rec["prompt"]), rec)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    counts = {"chosen_states": len(by_state), "rejected": 0, "outside": 0, "unmatched": 0,
              "same_answer": 0, "repeats": 0, "pairs": 0}  # fmt: skip
    states: set[str] = set()
    for rec in rejected:
        if sessions is not None and rec.get("session_id") not in sessions:
            counts["outside"] += 1
            continue
        counts["rejected"] += 1
        key = _key(rec["prompt"])
        good = by_state.get(key)
        if good is None:
            counts["unmatched"] += 1
            continue
        win, lose = _answer(good["completion"]), _answer(rec["rejected"])
        if not lose or win == lose:
            counts["same_answer"] += 1
            continue
        if (key, lose) in seen:
            counts["repeats"] += 1
            continue
        seen.add((key, lose))
        states.add(key)
        out.append(
            {
                "prompt": list(rec["prompt"]),
                "chosen": [{"role": "assistant", "content": win}],
                "rejected": [{"role": "assistant", "content": lose}],
                "session_id": rec.get("session_id"),
                "chosen_session_id": good.get("session_id"),
                "status": rec.get("status"),
                "why": rec.get("why", ""),
            }
        )
    counts["pairs"] = len(out)
    counts["paired_states"] = len(states)
    return out, counts


def dpo_loss(
    policy_chosen: Any, policy_rejected: Any, ref_chosen: Any, ref_rejected: Any, beta: float
) -> Any:
    """DPO's per-pair loss ``-log sigmoid(beta * ((pc - rc) - (pr - rr)))`` (tensors of
    sequence log-probabilities)."""
    import torch

    margin = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    return -torch.nn.functional.logsigmoid(beta * margin)


def read_pairs(path: str) -> list[tuple[list[dict[str, Any]], str, str]]:
    """(prompt messages, chosen, rejected) of a pairs dataset; a clear error otherwise."""
    from oopav.trainer.datasets import read_manifest, read_records

    manifest = read_manifest(path)
    if manifest.get("format") != "pairs":
        raise ValueError(
            f"{path} is a {manifest.get('format')} dataset; `preferences` needs a pairs dataset "
            "(oopav export --format pairs, or the flywheel's failure pairs)"
        )
    out = []
    for rec in read_records(path):
        win, lose = _answer(rec.get("chosen")), _answer(rec.get("rejected"))
        if win and lose and win != lose:
            out.append((list(rec["prompt"]), win, lose))
    if not out:
        raise ValueError(f"no preference pairs in {path}: 0 records with two different answers")
    return out


def augment_pairs(
    pairs: list[tuple[list[dict[str, Any]], str, str]], copies: int, seed: int, parts: str
) -> list[tuple[list[dict[str, Any]], str, str]]:
    """``pairs`` and ``copies`` name-permuted copies of each: the names the chosen answer copies
    from the prompt made up (trainer/augment.py), the same mapping applied to the rejected
    answer, so that the preference is about the names' roles, not the names."""
    from oopav.trainer.augment import augment_record, record_rng, replace_names

    out = list(pairs)
    for i, (messages, win, lose) in enumerate(pairs):
        for c in range(copies):
            got = augment_record(messages, win, record_rng(seed, i, c), parts)
            if got is None:
                break
            out.append((got.messages, got.completion, replace_names(lose, got.mapping)))
    return out


def preference_rows(cfg: Any, tokenizer: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The recipe's pairs as token rows (``prompt_ids``, ``chosen``, ``rejected``: each a row
    for :func:`oopav.trainer.negatives.sequence_logprobs`), with the reference's
    log-probabilities (``ref``: chosen, rejected) from the recipe's starting model, frozen; and
    the record for ``training_started``."""
    from oopav.models.copying import copy_words, token_texts
    from oopav.trainer.negatives import copy_masks, instruction_of

    pairs = read_pairs(cfg.preferences)
    record: dict[str, Any] = {
        "dataset": str(cfg.preferences),
        "records": len(pairs),
        "weight": cfg.preference_weight,
        "beta": cfg.preference_beta,
        "batch": cfg.preference_batch or cfg.batch_size,
        "reference": str(cfg.model),
    }
    if cfg.augment:
        pairs = augment_pairs(pairs, cfg.augment_copies, cfg.seed, cfg.augment_parts)
        record["augment_rows"] = len(pairs)
    answer_words: set[str] | None = None
    texts: list[str] = []
    if cfg.preference_copy:
        from oopav.models.copying import read_answer_words

        answer_words = read_answer_words(cfg.model) if Path(cfg.model).is_dir() else None
        if answer_words is None:
            raise ValueError(
                f"preference_copy needs the model's answer vocabulary: {cfg.model} has no "
                "oopav_answer_words.json (oopav train sft writes it)"
            )
        texts = token_texts(tokenizer, len(tokenizer))
        record["copy"] = {"answer_words": len(answer_words)}
    cache: dict[Any, Any] = {}
    rows = []
    for messages, win, lose in pairs:
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        p = tokenizer(str(prompt), add_special_tokens=False)["input_ids"]
        row: dict[str, Any] = {}
        for side, text in (("chosen", win), ("rejected", lose)):
            a = tokenizer(text, add_special_tokens=False)["input_ids"]
            row[side] = {"prompt_ids": p, "answer_ids": a}
            if answer_words is not None:
                allowed = {*copy_words(instruction_of(messages)), *answer_words, "action"}
                row[side]["masks"] = copy_masks(texts, allowed, a, len(tokenizer), cache)
        if (
            any(not r["answer_ids"] for r in row.values())
            or len(p) + max(len(row["chosen"]["answer_ids"]), len(row["rejected"]["answer_ids"]))
            > cfg.max_length
        ):
            continue
        rows.append(row)
    if not rows:
        raise ValueError(f"no pair in {cfg.preferences} fits max_length {cfg.max_length}")
    record["rows"] = len(rows)
    reference_logprobs(cfg.model, rows, _pad(tokenizer))
    margins = [r["ref"][0] - r["ref"][1] for r in rows]
    record["reference_margin_mean"] = round(sum(margins) / len(margins), 3)
    record["reference_prefers_chosen"] = sum(m > 0 for m in margins)
    return rows, record


def _pad(tokenizer: Any) -> int:
    return int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else 0


def reference_logprobs(
    model_dir: str, rows: list[dict[str, Any]], pad_id: int, size: int = 16
) -> None:
    """Set each row's ``ref`` to (log p(chosen), log p(rejected)) under ``model_dir``, frozen:
    the reference is the policy training starts from, so it is computed once, before any
    step changes it."""
    import torch
    from transformers import AutoModelForCausalLM

    from oopav.trainer.negatives import sequence_logprobs

    model: Any = AutoModelForCausalLM.from_pretrained(model_dir)
    model.eval()  # no dropout: the reference is one fixed function
    with torch.no_grad():
        for i in range(0, len(rows), size):
            batch = rows[i : i + size]
            win = sequence_logprobs(model, [r["chosen"] for r in batch], pad_id)
            lose = sequence_logprobs(model, [r["rejected"] for r in batch], pad_id)
            for r, w, lo in zip(batch, win.tolist(), lose.tolist(), strict=True):
                r["ref"] = (float(w), float(lo))
    del model


def batch_loss(model: Any, batch: list[dict[str, Any]], pad_id: int, beta: float) -> Any:
    """The mean DPO loss of ``batch`` under ``model`` (one forward pass over chosen and
    rejected answers together)."""
    import torch

    from oopav.trainer.negatives import sequence_logprobs

    n = len(batch)
    logp = sequence_logprobs(model, [r["chosen"] for r in batch] + [r["rejected"] for r in batch],
                             pad_id)  # fmt: skip
    ref = torch.tensor([r["ref"] for r in batch], dtype=logp.dtype, device=logp.device)
    return dpo_loss(logp[:n], logp[n:], ref[:, 0], ref[:, 1], beta).mean()


def with_preferences(
    base: type, rows: list[dict[str, Any]], weight: float, beta: float, size: int, seed: int,
    pad_id: int,
) -> type:  # fmt: skip
    """``base`` (an SFT trainer class) whose training loss adds ``weight`` times the mean DPO
    loss of a batch of pairs at every step; ``dpo_loss`` joins the logged metrics."""
    from oopav.trainer.negatives import batches

    stream = batches(rows, size, seed + 7919)  # another order than the negatives'

    class PreferenceTrainer(base):  # type: ignore[misc]  # base: SFTTrainer, passed in lazily
        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, **kw: Any
        ) -> Any:
            got = super().compute_loss(model, inputs, return_outputs=return_outputs, **kw)
            if not model.training:
                return got
            loss, outputs = got if return_outputs else (got, None)
            term = batch_loss(model, next(stream), pad_id, beta)
            self._dpo_total = getattr(self, "_dpo_total", 0.0) + float(term.detach())
            self._dpo_steps = getattr(self, "_dpo_steps", 0) + 1
            loss = loss + weight * term.to(loss.dtype)
            return (loss, outputs) if return_outputs else loss

        def log(self, logs: dict[str, float], *args: Any, **kw: Any) -> None:
            if getattr(self, "_dpo_steps", 0):
                logs = {**logs, "dpo_loss": self._dpo_total / self._dpo_steps}
                self._dpo_total, self._dpo_steps = 0.0, 0
            super().log(logs, *args, **kw)

    return PreferenceTrainer


LOG2 = math.log(2.0)
