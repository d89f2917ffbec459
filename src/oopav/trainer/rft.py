"""RFT recipe: rejection-sampling fine-tuning, a second learner from verdicts alone.

Each round samples ``samples`` completions per prompt from the current policy, scores them
with ``reward_env`` (apply the proposed rule to ``pre``, compare with ``post``), keeps the
distinct ones that reach ``keep_min_reward`` (1.0: exact) and fine-tunes on every sample kept
so far (SFT, loss on the completion only). No demonstration is read: the only signal is the
verdict, as for GRPO. Where GRPO needs a group whose rewards differ, RFT needs one sample that
is right; both learn nothing from a prompt on which every sample fails.

The run is recorded like SFT and GRPO: one ``training_step_completed`` per round (reward
mean/std and validity of the samples, the fraction of prompts whose samples all scored the
same, how many were kept, the fine-tuning loss), the checkpoint, the evaluation. The kept
samples are written to ``<output_dir>/kept.jsonl`` with their rewards.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from oopav.trainer.rewards import Score, score_env
from oopav.trainer.sft import Emit, prepare_model, sft_args, start_run, train_and_save
from oopav.trainer.tasks import Task


@dataclass
class RFTRecipe:
    output_dir: str
    model: str  # a model directory, usually an SFT checkpoint
    tasks: str | None = None
    dataset: str | None = None  # an exported GRPO dataset (records with pre/post)
    families: list[str] = field(default_factory=list)
    exclude_families: list[str] = field(default_factory=list)
    max_train: int = 0
    rounds: int = 3
    max_seconds: float = 0.0  # the whole run, sampling included (0: no limit)
    samples: int = 8  # completions per prompt and round
    prompts_per_round: int = 0  # a random draw of this many prompts per round (0: all)
    temperature: float = 1.0
    max_completion_length: int = 96
    keep_min_reward: float = 1.0  # keep a sample scoring at least this (1.0: exact)
    keep_per_prompt: int = 1  # distinct samples kept per prompt and round, best first
    epochs: float = 2.0  # passes over the kept samples per round
    batch_size: int = 16
    learning_rate: float = 5e-4
    sample_batch: int = 128  # sequences per generate call
    logging_steps: int = 10
    seed: int = 0
    eval_n: int = 64
    eval_split: str = "test"
    lora: bool = False
    use_cpu: bool = True
    threads: int = 0


def check(cfg: RFTRecipe) -> None:
    if cfg.samples < 1 or cfg.rounds < 1:
        raise ValueError("samples and rounds must be at least 1")
    if cfg.lora:
        raise ValueError("lora is not supported by the rft recipe (its rounds train in place)")
    if cfg.keep_min_reward <= -1.0:
        raise ValueError(
            "keep_min_reward must be above -1.0 (the invalid and no-op score): RFT keeps "
            "only samples the verdict rewards"
        )


def select_kept(
    prompt: str, texts: list[str], scores: list[Score], min_reward: float, per_prompt: int
) -> list[dict[str, Any]]:
    """The distinct samples of one prompt that reached ``min_reward``, best first."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    ranked = sorted(zip(texts, scores, strict=True), key=lambda p: -p[1].reward)
    for text, score in ranked:
        if len(out) >= per_prompt or score.reward < min_reward:
            break
        if not score.valid or text in seen:
            continue
        seen.add(text)
        out.append(
            {"prompt": prompt, "completion": text, "reward": score.reward, "exact": score.exact}
        )
    return out


def sample(
    model: Any, tokenizer: Any, prompts: list[str], cfg: RFTRecipe, deadline: float
) -> list[list[str]]:
    """``cfg.samples`` sampled completions per prompt (fewer prompts if the deadline passes)."""
    import torch

    tokenizer.padding_side = "left"
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    per_call = max(1, cfg.sample_batch // cfg.samples)
    out: list[list[str]] = []
    model.eval()
    device = next(model.parameters()).device
    for i in range(0, len(prompts), per_call):
        if time.perf_counter() > deadline:
            break
        enc = tokenizer(
            prompts[i : i + per_call], return_tensors="pt", padding=True, add_special_tokens=False
        ).to(device)
        with torch.no_grad():
            ids = model.generate(
                **enc,
                do_sample=True,
                temperature=cfg.temperature,
                top_k=0,
                top_p=1.0,
                num_return_sequences=cfg.samples,
                max_new_tokens=cfg.max_completion_length,
                eos_token_id=eos,
                pad_token_id=pad,
            )
        texts = tokenizer.batch_decode(
            ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
        )
        out += [texts[j : j + cfg.samples] for j in range(0, len(texts), cfg.samples)]
    model.train()
    return out


class RejectionSampling:
    """The rounds of RFT, shaped like the part of a transformers Trainer that
    :func:`oopav.trainer.sft.train_and_save` drives (``train()``, ``model``, ``state``)."""

    def __init__(
        self, model: Any, tokenizer: Any, rows: list[dict[str, Any]], cfg: RFTRecipe, emit: Emit
    ) -> None:
        self.model, self.tokenizer, self.rows, self.cfg, self.emit = (
            model,
            tokenizer,
            rows,
            cfg,
            emit,
        )
        self.state = SimpleNamespace(global_step=0)
        self.kept: list[dict[str, Any]] = []
        self.rounds: list[dict[str, Any]] = []

    def train(self) -> None:
        cfg = self.cfg
        t0 = time.perf_counter()
        deadline = t0 + cfg.max_seconds if cfg.max_seconds else float("inf")
        keys: set[tuple[str, str]] = set()
        rng = random.Random(cfg.seed)
        for r in range(cfg.rounds):
            if time.perf_counter() > deadline:
                break
            ts = time.perf_counter()
            rows = self.rows
            if 0 < cfg.prompts_per_round < len(rows):
                rows = rng.sample(rows, cfg.prompts_per_round)
            groups = sample(self.model, self.tokenizer, [x["prompt"] for x in rows], cfg, deadline)
            rewards: list[float] = []
            valid = same = new = solved = 0
            for row, texts in zip(rows, groups, strict=False):
                scores = [score_env(t, row["pre"], row["post"], row["language"]) for t in texts]
                rewards += [s.reward for s in scores]
                valid += sum(s.valid for s in scores)
                same += len({s.reward for s in scores}) == 1
                solved += any(s.exact for s in scores)
                for k in select_kept(
                    row["prompt"], texts, scores, cfg.keep_min_reward, cfg.keep_per_prompt
                ):
                    if (k["prompt"], k["completion"]) not in keys:
                        keys.add((k["prompt"], k["completion"]))
                        self.kept.append({**k, "round": r, "family": row.get("family", "")})
                        new += 1
            sample_s = time.perf_counter() - ts
            loss = self.fit(deadline) if new else None
            stats = {
                "round": float(r),
                "prompts": float(len(groups)),
                "prompts_solved": float(solved),
                "kept_new": float(new),
                "kept_total": float(len(self.kept)),
                "sample_seconds": sample_s,
            }
            self.rounds.append(stats)
            self.emit(
                "step",
                {
                    "step": self.state.global_step,
                    "epoch": float(r + 1),
                    "loss": loss,
                    "learning_rate": cfg.learning_rate,
                    "reward_mean": statistics.fmean(rewards) if rewards else None,
                    "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else None,
                    "validity": valid / max(1, len(rewards)),
                    "zero_std_fraction": same / max(1, len(groups)),
                    "metrics": stats,
                },
            )
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "kept.jsonl").write_text("".join(json.dumps(k) + "\n" for k in self.kept))

    def fit(self, deadline: float) -> float | None:
        """SFT on every sample kept so far (a round that kept nothing new skips it), ``epochs``
        passes or until the deadline."""
        import math

        from datasets import Dataset
        from transformers import TrainerCallback
        from trl import SFTTrainer

        from oopav.trainer.sft import _deadline

        cfg = self.cfg
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        steps = max(1, math.ceil(cfg.epochs * len(self.kept) / cfg.batch_size))
        args = sft_args(cfg, max_steps=steps, lr_scheduler="constant", warmup_steps=0)
        callbacks = [] if math.isinf(left) else [_deadline(TrainerCallback, left)]
        trainer = SFTTrainer(
            model=self.model,
            args=args,
            train_dataset=Dataset.from_list(
                [{"prompt": k["prompt"], "completion": k["completion"]} for k in self.kept]
            ),
            processing_class=self.tokenizer,
            callbacks=callbacks,
        )
        result = trainer.train()
        self.model = trainer.model
        self.state.global_step += int(trainer.state.global_step)
        return float(result.training_loss)


def train_rft(cfg: RFTRecipe, emit: Emit) -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer

    from oopav.trainer.grpo import grpo_rows
    from oopav.trainer.tasks import load_tasks, target_text, task_messages

    check(cfg)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)

    def texts() -> list[str]:
        ts = load_tasks(cfg.tasks, "train") if cfg.tasks else []
        return [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in ts]

    base = prepare_model(cfg.model, cfg.output_dir, texts, cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    # The GRPO recipe's prompts (tasks or an exported GRPO dataset): pre/post code, no answers.
    rows, source, digest = grpo_rows(cfg, tokenizer)  # type: ignore[arg-type]  # an RFTRecipe has the GRPO fields grpo_rows reads
    model, _ = start_run(base, rows, source, digest, emit, lora=False)
    loop = RejectionSampling(model, tokenizer, rows, cfg, emit)
    result = train_and_save(loop, tokenizer, cfg, emit)
    result["kept"] = len(loop.kept)
    result["rounds"] = loop.rounds
    return result


def pass_at_k(
    model: Any,
    tokenizer: Any,
    tasks: Sequence[Task],
    *,
    k: int = 16,
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    seed: int = 0,
) -> dict[str, Any]:
    """``k`` samples per task at ``temperature`` (the RFT recipe's sampler), summarised by
    :func:`oopav.trainer.evaluate.pass_at_k_summary`."""
    import torch

    from oopav.trainer.evaluate import pass_at_k_summary, prompt_texts

    if k < 1:
        raise ValueError("k must be at least 1")
    torch.manual_seed(seed)
    cfg = SimpleNamespace(
        samples=k, temperature=temperature, max_completion_length=max_new_tokens, sample_batch=128
    )
    groups = sample(model, tokenizer, prompt_texts(tokenizer, tasks), cfg, float("inf"))  # type: ignore[arg-type]  # a namespace with the RFTRecipe fields sample reads
    return {**pass_at_k_summary(tasks, groups), "temperature": temperature}
