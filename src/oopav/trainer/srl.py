"""SRL recipe (seed 002 §SRL): step-wise supervised RL against a teacher's actions.

Each training sample is one step: the state before it (the prompt the teacher saw) and the
teacher's action. With ``mode: grpo`` (the default, as in the SRL paper) TRL's GRPOTrainer
samples ``num_generations`` answers per step and scores each with ``reward_srl`` against the
teacher's action — half action-field match, half difflib ratio, ``invalid`` (−0.2) when the
answer does not parse — so the policy is rewarded for getting *close* to the teacher even where
an exact rule is out of reach. ``mode: sft`` trains the same steps teacher-forced (SFTTrainer).

Steps come from an SRL dataset (``oopav export --format srl`` or the learner's
``<data dir>/datasets/srl``: state before, teacher action, outcome) or from a tasks directory
(``oopav tasks generate``: one step per task, its gold rule as the teacher). Either way the run
opens and closes like the other recipes (``sft.start_run`` / ``sft.train_and_save``) and is
evaluated with ``reward_srl`` by greedy decoding, before training (step 0) and after, so the
run's events say whether the policy moved towards the teacher.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oopav.trainer.grpo import GRPORecipe, check
from oopav.trainer.sft import Emit, prepare_model, select
from oopav.trainer.tasks import load_tasks, target_text, task_messages


@dataclass
class SRLRecipe(GRPORecipe):
    model: str = "new"
    mode: str = "grpo"  # "grpo": sample and score with reward_srl; "sft": teacher-forced steps
    invalid: float = -0.2  # reward_srl of an answer that does not parse
    eval_split: str = "train"  # "train": the first eval_n training steps; "test": held-out tasks
    eval_before: bool = True  # also evaluate the starting policy (an evaluation at step 0)
    max_length: int = 512  # mode sft: longest prompt + answer in tokens
    # The step reward (oopav.trainer.reward_configs.STEP_REWARDS): "srl" (half field match,
    # half text similarity) or "srl_weighted" (seed 002's 0.7 / 0.3).
    reward: str = "srl"


@dataclass(frozen=True)
class Step:
    messages: list[dict[str, str]]
    teacher: dict[str, Any]

    def target(self) -> str:
        return target_text(self.teacher)


def _canonical(action: dict[str, Any]) -> dict[str, Any]:
    """The teacher's action as the parser would give it back (defaults filled in), so an answer
    equal to the teacher scores 1.0 whatever fields the record left out."""
    import msgspec

    from oopav.events.actions import decode_action

    return msgspec.to_builtins(decode_action(json.dumps(action)))


def step_messages(rec: dict[str, Any]) -> list[dict[str, str]]:
    """The state before an SRL record's step: the user message the teacher answered (it holds
    the task and the session so far); without one, the instruction and the steps before."""
    if rec.get("context"):
        return [{"role": "user", "content": str(rec["context"])}]
    history = "".join(
        f"\n{i}. {h.get('action_type', '?')}: {h.get('status', '?')}"
        for i, h in enumerate(rec.get("history") or [], 1)
    )
    text = str(rec.get("instruction", ""))
    if history:
        text += f"\nSteps so far:{history}"
    return [{"role": "user", "content": text}]


def load_steps(cfg: SRLRecipe) -> tuple[list[Step], list[Step], str]:
    """(training steps, evaluation steps, source)."""
    if bool(cfg.tasks) == bool(cfg.dataset):
        raise ValueError(
            "give exactly one of `tasks` (a tasks directory) or `dataset` (an SRL dataset)"
        )
    if cfg.mode not in ("grpo", "sft"):
        raise ValueError(f"mode must be grpo or sft, not {cfg.mode!r}")
    if cfg.eval_split not in ("train", "test"):
        raise ValueError(f"eval_split must be train or test, not {cfg.eval_split!r}")

    def from_tasks(split: str) -> list[Step]:
        chosen = select(load_tasks(cfg.tasks, split), cfg.families, cfg.exclude_families)  # type: ignore[arg-type]  # only called when the recipe has tasks
        return [
            Step(task_messages(t.instruction, t.pre, t.language), _canonical(t.rule))
            for t in chosen
        ]

    if cfg.tasks:
        train, source = from_tasks("train"), cfg.tasks
    else:
        from oopav.trainer.datasets import read_manifest, read_records

        manifest = read_manifest(cfg.dataset)
        if manifest["format"] != "srl":
            raise ValueError(f"{cfg.dataset} is a {manifest['format']} dataset; SRL needs srl")
        if cfg.eval_split == "test":
            raise ValueError("eval_split test needs `tasks` (a dataset has no held-out split)")
        train = [Step(step_messages(r), _canonical(r["action"])) for r in read_records(cfg.dataset)]
        source = str(cfg.dataset)
    if cfg.max_train:
        train = train[: cfg.max_train]
    if not train:
        raise ValueError(f"no SRL steps in {source} (check families / filters)")
    held = from_tasks("test") if cfg.eval_split == "test" else train
    return train, held[: cfg.eval_n], source


def _render(tokenizer: Any, step: Step) -> str:
    return str(
        tokenizer.apply_chat_template(step.messages, tokenize=False, add_generation_prompt=True)
    )


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


# Rounded onto the grid of rewards.QUANTUM: see there why TRL needs it.


def reward_fn(invalid: float, name: str = "srl") -> Any:
    """The named step reward (``reward_srl`` by default) in TRL's reward signature: the
    ``teacher`` column (canonical JSON of the teacher's action) arrives as a keyword list
    aligned with ``completions``."""
    from oopav.trainer.reward_configs import STEP_REWARDS
    from oopav.trainer.rewards import quantize

    if name not in STEP_REWARDS:
        raise ValueError(f"unknown step reward {name!r}; one of: {', '.join(STEP_REWARDS)}")
    reward_srl = STEP_REWARDS[name]

    def reward_srl_teacher(
        prompts: Any = None, completions: Any = (), *, teacher: list[str], **_: Any
    ) -> list[float]:
        return [
            quantize(reward_srl(c, json.loads(t), invalid=invalid))
            for c, t in zip(completions, teacher, strict=True)
        ]

    return reward_srl_teacher


def evaluate_steps(
    model: Any, tokenizer: Any, steps: list[Step], *, invalid: float, max_new_tokens: int
) -> dict[str, float]:
    """Greedy answers to the steps, scored with ``reward_srl``; validity and exact action apart."""
    from oopav.trainer.evaluate import generate_batch
    from oopav.trainer.rewards import reward_srl, reward_valid

    texts, counts = generate_batch(
        model, tokenizer, [_render(tokenizer, s) for s in steps], max_new_tokens=max_new_tokens
    )
    rewards = [reward_srl(t, s.teacher, invalid=invalid) for t, s in zip(texts, steps, strict=True)]
    n = max(1, len(steps))
    return {
        "n": float(len(steps)),
        "reward_srl": sum(rewards) / n,
        "valid": sum(reward_valid(None, texts)) / n,
        "exact": sum(r >= 1.0 - 1e-9 for r in rewards) / n,
        "tokens_per_step": sum(counts) / n,
    }


def _evaluation(
    cfg: SRLRecipe, path: str, steps: list[Step], source: str, step: int
) -> dict[str, Any]:
    from oopav.trainer.evaluate import load_hf

    model, tokenizer = load_hf(path)
    metrics = evaluate_steps(
        model, tokenizer, steps, invalid=cfg.invalid, max_new_tokens=cfg.max_completion_length
    )
    return {
        "suite": f"srl:{source}:{cfg.eval_split}",
        "model": f"hf:{path}",
        "n": len(steps),
        "metrics": metrics,
        "step": step,
    }


def _sft_dataset(directory: Path, steps: list[Step]) -> str:
    """The steps as an SFT dataset (the format ``oopav export --format sft`` writes), so the
    teacher-forced mode is the SFT recipe itself."""
    from oopav.trainer.datasets import _atomic_write, encode_jsonl

    records = [
        {"prompt": s.messages, "completion": [{"role": "assistant", "content": s.target()}]}
        for s in steps
    ]
    directory.mkdir(parents=True, exist_ok=True)
    data = encode_jsonl(records)
    _atomic_write(directory / "sft-00000.jsonl", data)
    manifest = {
        "format": "sft",
        "count": len(records),
        "shards": [{"path": "sft-00000.jsonl", "count": len(records)}],
        "content_hash": hashlib.sha256(data).hexdigest(),
    }
    _atomic_write(directory / "manifest.json", json.dumps(manifest, sort_keys=True).encode())
    return str(directory)


def train_srl(cfg: SRLRecipe, emit: Emit) -> dict[str, Any]:
    train, held, source = load_steps(cfg)
    if cfg.mode == "grpo":
        check(cfg)

    def texts() -> list[str]:
        return ["".join(m["content"] for m in s.messages) + s.target() for s in train]

    base = prepare_model(cfg.model, cfg.output_dir, texts, cfg.seed)
    before = _evaluation(cfg, base, held, source, 0) if cfg.eval_before and held else None

    def emit_srl(kind: str, fields: dict[str, Any]) -> None:
        emit(kind, fields)
        if kind == "started" and before is not None:
            emit("evaluation", before)  # the run's events open with the starting point

    # The recipes' own evaluation (reward_env on tasks) is replaced by the step evaluation.
    inner = dataclasses.replace(cfg, model=base, eval_n=0)
    if cfg.mode == "sft":
        from oopav.trainer.sft import SFTRecipe, train_sft

        dataset = _sft_dataset(Path(cfg.output_dir) / "steps", train)
        sft_cfg = SFTRecipe(
            output_dir=cfg.output_dir,
            model=base,
            dataset=dataset,
            max_steps=cfg.max_steps,
            max_seconds=cfg.max_seconds,
            batch_size=cfg.batch_size,
            learning_rate=cfg.learning_rate,
            max_length=cfg.max_length,
            seed=cfg.seed,
            logging_steps=cfg.logging_steps,
            eval_n=0,
            lora=cfg.lora,
            use_cpu=cfg.use_cpu,
            threads=cfg.threads,
        )
        result = train_sft(sft_cfg, emit_srl)
    else:
        from oopav.trainer.grpo import train_grpo
        from oopav.trainer.rewards import reward_valid

        def rows_of(_cfg: Any, tokenizer: Any) -> tuple[list[dict[str, Any]], str, str]:
            rows = [
                {"prompt": _render(tokenizer, s), "teacher": json.dumps(s.teacher, sort_keys=True)}
                for s in train
            ]
            return rows, source, _digest(rows)

        result = train_grpo(
            inner,
            emit_srl,
            rows_of=rows_of,
            rewards=[reward_fn(cfg.invalid, cfg.reward), reward_valid],
        )
    if held:
        after = _evaluation(cfg, result["checkpoint"], held, source, int(result["steps"]))
        emit("evaluation", after)
        result["evaluation"] = dict(after["metrics"])
        if before is not None:
            result["evaluation_before"] = dict(before["metrics"])
    return result
