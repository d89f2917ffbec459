"""Learning from refused answers: an unlikelihood term on the negatives dataset (issue 25).

The learner writes every answer the loop refused or undid into the ``negatives`` dataset
(prompt, rejected answer, why; trainer/datasets.py). A policy's own negatives say what it does
wrong in a given state — the flywheel's generation 1 puts the new name into the rule's regex
(``regex: ^dump_fast$``: the rule matches nothing), or uses the identifier form where the snippet
also has a parameter of that name (the tests gate fails) — and SFT on verified answers alone
never says "not this, here".

An SFT recipe with ``negatives: <dir>`` and ``negative_weight: w > 0`` adds, at every step, a
batch of negatives and the **sequence-level unlikelihood** of their rejected answers:
``w * mean(-log(1 - p))``, where ``p`` is the policy's probability of the whole rejected answer
given its prompt. Why this form:

- its gradient is ``p / (1 - p)`` times that of ``log p``, and ``log p``'s gradient on a token
  the policy is sure of is ~0: the push lands on the uncertain tokens — where the rejected
  answer chose (``kind`` against ``pattern``, ``$`` against ``_fast`` after ``^dump``) — not on
  the answer form it shares with correct answers;
- it vanishes once the rejected answer is unlikely (``p`` → 0): it removes the answer, it never
  rewards anything (no reward to hack), and SFT's positives keep the form;
- above ``p = TAIL`` it continues linearly (bounded gradient), since a greedy rejected answer
  can have ``p`` near 1, where ``-log(1 - p)`` is unbounded.

With ``augment: names`` the negatives get the same name-permuted copies as the positives (a
rejected answer's names are its prompt's), so the lesson is about the names' roles, not the
names. What it measured: docs/benchmarks.md#flywheel.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Above this probability of a rejected answer the unlikelihood goes on as a straight line.
TAIL = 0.95


def unlikelihood(logp: Any, tail: float = TAIL) -> Any:
    """``-log(1 - exp(logp))`` per sequence (``logp``: a tensor of sequence log-probabilities),
    linear above ``p = tail`` so that its gradient stays bounded."""
    import torch

    p = logp.exp()
    inside = -torch.log1p(-p.clamp(max=tail))
    line = -math.log1p(-tail) + (p - tail) / (1.0 - tail)
    return torch.where(p <= tail, inside, line)


def negative_pairs(path: str) -> list[tuple[list[dict[str, Any]], str]]:
    """(prompt messages, rejected answer) of a negatives dataset (or any dataset whose records
    have ``prompt`` and ``rejected``); a clear error when it is something else or empty."""
    from oopav.trainer.datasets import read_manifest, read_records

    manifest = read_manifest(path)
    if manifest.get("format") not in ("negatives", "pairs"):
        raise ValueError(
            f"{path} is a {manifest.get('format')} dataset; `negatives` needs a negatives "
            "dataset (oopav export --format negatives)"
        )
    out: list[tuple[list[dict[str, Any]], str]] = []
    for rec in read_records(path):
        rejected = rec.get("rejected")
        if isinstance(rejected, list):  # the pairs form: [{"role": "assistant", ...}]
            rejected = rejected[-1]["content"] if rejected else ""
        if rejected:
            out.append((list(rec["prompt"]), str(rejected)))
    if not out:
        raise ValueError(f"no negatives in {path}: the dataset has 0 records with an answer")
    return out


def instruction_of(messages: list[dict[str, Any]]) -> str:
    """The instruction of a compact prompt (models/profiles.py: the instruction, then the
    directive line, then the snippet): what ``policy.copy_names: instruction`` lets it copy."""
    from oopav.models.profiles import DIRECTIVE

    text = str(messages[-1].get("content", "")) if messages else ""
    return text.split("\n" + DIRECTIVE, 1)[0]


def copy_masks(
    texts: list[str], allowed: set[str], answer_ids: list[int], size: int, cache: dict[Any, Any]
) -> Any:
    """The copy constraint's mask at each token of an answer (teacher-forced: the state after
    the answer's earlier tokens), as ``[len(answer_ids), size]`` booleans — what
    :class:`oopav.models.copying.CopyLogitsProcessor` let the policy choose from there."""
    import torch

    from oopav.models.copying import Allowed, Scanner

    scanner = Scanner(Allowed(allowed), "action")
    frozen = frozenset(allowed)
    state: Any = scanner.start()
    rows = []
    for tok in answer_ids:
        if state is None or not state[0]:
            rows.append(torch.ones(size, dtype=torch.bool))  # outside the payload: free
        else:
            key = (frozen, scanner.key(state))
            if key not in cache:
                keep = [scanner.feed(state, t) is not None for t in texts[:size]]
                keep += [True] * (size - len(keep))
                mask = torch.tensor(keep, dtype=torch.bool)
                mask[tok] = True  # the answer's own token (a relaxed step): never -inf
                cache[key] = mask
            mask = cache[key]
            if not bool(mask[tok]):
                mask = mask.clone()
                mask[tok] = True
            rows.append(mask)
        text = texts[tok] if tok < len(texts) else ""
        state = scanner.feed(state, text, force=True) if state is not None else None
    return torch.stack(rows)


def name_tokens(texts: list[str], answer_ids: list[int], names: set[str]) -> list[bool]:
    """For each token of an answer, whether it is part of a word of ``names`` (a name the
    answer copies from its instruction; whole words, JSON escapes such as ``\\n`` separating
    them): ``negative_tokens: structure`` leaves such tokens out of a rejected answer's
    probability."""
    import re

    pieces = [texts[t] if t < len(texts) else "" for t in answer_ids]
    text = "".join(pieces)
    # Escapes blanked to the same length, so that positions stay the answer's.
    plain = re.sub(r"\\u[0-9A-Fa-f]{4}|\\.", lambda m: " " * len(m.group(0)), text)
    covered = [False] * len(text)
    for m in re.finditer(r"[A-Za-z0-9_]+", plain):
        if m.group(0) in names:
            covered[m.start() : m.end()] = [True] * (m.end() - m.start())
    out, pos = [], 0
    for piece in pieces:
        out.append(any(covered[pos : pos + len(piece)]))
        pos += len(piece)
    return out


def negative_rows(cfg: Any, tokenizer: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The recipe's negatives as token ids (``prompt_ids``, ``answer_ids``), augmented like its
    positives, those that fit ``max_length`` only; and the record for ``training_started``.
    With ``negative_copy`` each row also gets ``masks``, the copy constraint's choices at each
    of its tokens (:func:`copy_masks`): the rejected answer's probability is then the one under
    the decoding the loop used (``policy.copy_names: instruction``), where the policy gave it."""
    from oopav.trainer.augment import augment_names

    pairs = negative_pairs(cfg.negatives)
    record: dict[str, Any] = {
        "dataset": str(cfg.negatives),
        "records": len(pairs),
        "weight": cfg.negative_weight,
        "batch": cfg.negative_batch or cfg.batch_size,
        "tail": TAIL,
    }
    if cfg.augment:
        pairs, aug = augment_names(pairs, cfg.augment_copies, cfg.seed, cfg.augment_parts)
        record["augment_rows"] = aug["rows"]
    from oopav.models.copying import copy_words, token_texts

    if cfg.negative_tokens not in ("all", "structure"):
        raise ValueError(
            f"negative_tokens must be 'all' or 'structure', not {cfg.negative_tokens!r}"
        )
    record["tokens"] = cfg.negative_tokens
    answer_words: set[str] | None = None
    texts: list[str] = []
    if cfg.negative_tokens == "structure":
        texts = token_texts(tokenizer, len(tokenizer))
    if cfg.negative_copy:
        from oopav.models.copying import read_answer_words

        answer_words = read_answer_words(cfg.model) if Path(cfg.model).is_dir() else None
        if answer_words is None:
            raise ValueError(
                f"negative_copy needs the model's answer vocabulary: {cfg.model} has no "
                "oopav_answer_words.json (oopav train sft writes it)"
            )
        texts = token_texts(tokenizer, len(tokenizer))
        record["copy"] = {"answer_words": len(answer_words)}
    cache: dict[Any, Any] = {}
    rows = []
    for messages, rejected in pairs:
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        p = tokenizer(str(prompt), add_special_tokens=False)["input_ids"]
        a = tokenizer(rejected, add_special_tokens=False)["input_ids"]
        if not a or len(p) + len(a) > cfg.max_length:
            continue
        row: dict[str, Any] = {"prompt_ids": p, "answer_ids": a}
        if answer_words is not None:
            allowed = {*copy_words(instruction_of(messages)), *answer_words, "action"}
            row["masks"] = copy_masks(texts, allowed, a, len(tokenizer), cache)
        if cfg.negative_tokens == "structure":
            # The instruction's words that the answer vocabulary does not hold: its names.
            names = set(copy_words(instruction_of(messages))) - (answer_words or set())
            row["scored"] = [not n for n in name_tokens(texts, a, names)]
        rows.append(row)
    if not rows:
        raise ValueError(
            f"no negative in {cfg.negatives} fits max_length {cfg.max_length} (prompt + answer)"
        )
    record["rows"] = len(rows)
    return rows, record


def batches(rows: list[dict[str, Any]], size: int, seed: int) -> Iterator[list[dict[str, Any]]]:
    """Endless batches of ``size`` rows, each pass in a new order seeded by (seed, pass)."""
    n = 0
    while True:
        order = list(range(len(rows)))
        random.Random(f"negatives:{seed}:{n}").shuffle(order)
        for i in range(0, len(order), size):
            yield [rows[j] for j in order[i : i + size]]
        n += 1


def sequence_logprobs(model: Any, batch: list[dict[str, Any]], pad_id: int) -> Any:
    """log p(answer | prompt) of each row under ``model`` (right-padded, one forward pass)."""
    import torch

    seqs = [r["prompt_ids"] + r["answer_ids"] for r in batch]
    width = max(len(s) for s in seqs)
    device = next(model.parameters()).device
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long, device=device)
    attn = torch.zeros((len(seqs), width), dtype=torch.long, device=device)
    mask = torch.zeros((len(seqs), width), dtype=torch.bool, device=device)
    for i, (s, r) in enumerate(zip(seqs, batch, strict=True)):
        ids[i, : len(s)] = torch.tensor(s, device=device)
        attn[i, : len(s)] = 1
        start = len(r["prompt_ids"])
        if "scored" in r:  # negative_tokens: structure — the names' tokens left out
            mask[i, start : len(s)] = torch.tensor(r["scored"], dtype=torch.bool, device=device)
        else:
            mask[i, start : len(s)] = True
    logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
    if any("masks" in r for r in batch):
        # Each answer token's probability among the tokens the copy constraint allowed there
        # (the logits at position t predict token t + 1).
        allowed = torch.ones(logits.shape, dtype=torch.bool, device=device)
        for i, r in enumerate(batch):
            if "masks" in r:
                start = len(r["prompt_ids"]) - 1
                m = r["masks"][:, : logits.shape[-1]].to(device)
                allowed[i, start : start + m.shape[0], : m.shape[1]] = m
        logits = logits.masked_fill(~allowed, float("-inf"))
    logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (logp.masked_fill(~mask[:, 1:], 0.0)).sum(dim=-1)


def with_negatives(
    base: type, rows: list[dict[str, Any]], weight: float, size: int, seed: int, pad_id: int
) -> type:
    """``base`` (TRL's SFTTrainer, passed in so that TRL loads lazily) whose training loss adds
    ``weight`` times the mean unlikelihood of a batch of negatives at every step."""
    stream = batches(rows, size, seed)

    class NegativesTrainer(base):  # type: ignore[misc]  # base: SFTTrainer, passed in lazily
        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, **kw: Any
        ) -> Any:
            got = super().compute_loss(model, inputs, return_outputs=return_outputs, **kw)
            if not model.training:
                return got
            loss, outputs = got if return_outputs else (got, None)
            neg = unlikelihood(sequence_logprobs(model, next(stream), pad_id)).mean()
            self._neg_total = getattr(self, "_neg_total", 0.0) + float(neg.detach())
            self._neg_steps = getattr(self, "_neg_steps", 0) + 1
            loss = loss + weight * neg.to(loss.dtype)
            return (loss, outputs) if return_outputs else loss

        def log(self, logs: dict[str, float], *args: Any, **kw: Any) -> None:
            # The term's mean since the last log line joins TRL's metrics (and the run's
            # training_step_completed events through the run callback).
            if getattr(self, "_neg_steps", 0):
                logs = {**logs, "negative_unlikelihood": self._neg_total / self._neg_steps}
                self._neg_total, self._neg_steps = 0.0, 0
            super().log(logs, *args, **kw)

    return NegativesTrainer
