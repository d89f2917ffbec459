"""GRPO recipe: TRL's GRPOTrainer with ``reward_env`` (apply the proposed rule, compare).

Defaults are set for small policies (TRL's own — learning rate 1e-6, 512-token completions —
are wrong at this scale). ``batch_size`` counts completions and must be a multiple of
``num_generations``. Format validity is logged as a reward with weight 0, so it is reported
next to the reward without being optimised. On a GPU with ``[gpu]`` installed, ``use_vllm``
generates with vLLM (``vllm_mode: colocate`` or ``server``). ``constrained: true`` decodes under
the answer grammar (:mod:`oopav.models.constrain`; ``grammar`` overrides its bounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oopav.trainer.sft import (
    Emit,
    _deadline,
    prepare_model,
    render_prompt,
    select,
    start_run,
    train_and_save,
)
from oopav.trainer.tasks import load_tasks, target_text, task_messages


@dataclass
class GRPORecipe:
    output_dir: str
    model: str  # a model directory, usually an SFT checkpoint ("new" is allowed, rarely useful)
    tasks: str | None = None
    dataset: str | None = None  # an exported GRPO dataset (records with pre/post)
    families: list[str] = field(default_factory=list)
    exclude_families: list[str] = field(default_factory=list)
    max_train: int = 0
    max_steps: int = 50
    max_seconds: float = 0.0
    num_generations: int = 8
    batch_size: int = 16
    learning_rate: float = 5e-5
    beta: float = 0.0
    temperature: float = 1.0
    max_completion_length: int = 96
    scale_rewards: str = "group"
    logging_steps: int = 1
    seed: int = 0
    eval_n: int = 64
    eval_split: str = "test"
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    lora: bool = False
    use_cpu: bool = True
    threads: int = 0
    constrained: bool = False
    grammar: dict[str, int] = field(default_factory=dict)  # think_chars, max_string_length, ...
    # A named reward (oopav.trainer.reward_configs): env, env_strict (no credit for
    # applied-but-wrong), composite (seed 000: syntax 0.6, tests 0.3, coverage 0.1).
    reward: str = "env"


def grpo_rows(cfg: GRPORecipe, tokenizer: Any) -> tuple[list[dict[str, Any]], str, str]:
    import hashlib
    import json

    if bool(cfg.tasks) == bool(cfg.dataset):
        raise ValueError(
            "give exactly one of `tasks` (a tasks directory) or `dataset` (a GRPO dataset)"
        )
    rows: list[dict[str, Any]] = []
    if cfg.tasks:
        for t in select(load_tasks(cfg.tasks, "train"), cfg.families, cfg.exclude_families):
            rows.append(
                {
                    "prompt": render_prompt(tokenizer, t),
                    "pre": t.pre,
                    "post": t.post,
                    "language": t.language,
                    "family": t.family,
                }
            )
        source = cfg.tasks
    else:
        from oopav.trainer.datasets import read_manifest, read_records

        manifest = read_manifest(cfg.dataset)
        if manifest["format"] != "grpo":
            raise ValueError(f"{cfg.dataset} is a {manifest['format']} dataset; GRPO needs grpo")
        for rec in read_records(cfg.dataset):
            if rec.get("pre") is None or rec.get("post") is None:
                continue  # without pre/post code there is nothing for reward_env to compare
            messages = rec["prompt"] or task_messages(rec["instruction"], rec["pre"])
            prompt = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            row = {
                "prompt": str(prompt),
                "pre": rec["pre"],
                "post": rec["post"],
                "language": "python",
                "family": "stream",
            }
            # The task's tests reach the reward when the record says where the code lives and
            # carries the files the command needs (reward_configs: run in the sandbox).
            if rec.get("test_command") and rec.get("path") and rec.get("test_files"):
                row.update(
                    test_command=list(rec["test_command"]),
                    path=rec["path"],
                    test_files=json.dumps(rec["test_files"], sort_keys=True),
                )
            rows.append(row)
        source = str(cfg.dataset)
    if cfg.max_train:
        rows = rows[: cfg.max_train]
    if not rows:
        raise ValueError(f"no GRPO prompts with pre/post code in {source}")
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    return rows, source, digest


def check(cfg: GRPORecipe) -> None:
    if cfg.num_generations < 2:
        raise ValueError("num_generations must be at least 2: GRPO compares completions in a group")
    if cfg.batch_size % cfg.num_generations:
        raise ValueError(
            f"batch_size ({cfg.batch_size}) counts completions and must be a multiple of "
            f"num_generations ({cfg.num_generations})"
        )


def train_grpo(
    cfg: GRPORecipe, emit: Emit, *, rows_of: Any = None, rewards: list[Any] | None = None
) -> dict[str, Any]:
    """``rows_of(cfg, tokenizer)`` and ``rewards`` (scored reward first, then one logged with
    weight 0) replace the prompts and ``reward_env``: the SRL recipe trains through here."""
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from oopav.models.constrain import constrain_generate, decoding_options, vllm_kwargs
    from oopav.trainer.callbacks import RunCallback
    from oopav.trainer.reward_configs import env_reward_named
    from oopav.trainer.rewards import for_trainer, reward_valid

    check(cfg)
    if rewards is None:
        env_reward_named(cfg.reward)  # an unknown name fails before the model loads
    grammar = decoding_options(cfg.grammar) if cfg.constrained else None
    if cfg.threads:
        torch.set_num_threads(cfg.threads)

    def texts() -> list[str]:
        ts = load_tasks(cfg.tasks, "train") if cfg.tasks else []
        return [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in ts]

    base = prepare_model(cfg.model, cfg.output_dir, texts, cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    tokenizer.padding_side = "left"
    rows, source, digest = (rows_of or grpo_rows)(cfg, tokenizer)
    model, peft_config = start_run(base, rows, source, digest, emit, lora=cfg.lora)
    args = GRPOConfig(
        output_dir=cfg.output_dir,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        num_generations=cfg.num_generations,
        learning_rate=cfg.learning_rate,
        beta=cfg.beta,
        temperature=cfg.temperature,
        max_completion_length=cfg.max_completion_length,
        scale_rewards=cfg.scale_rewards,
        reward_weights=[1.0, 0.0],
        logging_steps=cfg.logging_steps,
        save_strategy="no",
        seed=cfg.seed,
        use_cpu=cfg.use_cpu or not torch.cuda.is_available(),
        use_vllm=cfg.use_vllm,
        vllm_mode=cfg.vllm_mode,
        generation_kwargs=vllm_kwargs(grammar) if grammar and cfg.use_vllm else None,
        report_to=[],
        bf16=False,
        log_completions=False,
    )
    callbacks: list[Any] = [RunCallback(emit)]
    if cfg.max_seconds:
        callbacks.append(_deadline(TrainerCallback, cfg.max_seconds))
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rewards or [for_trainer(env_reward_named(cfg.reward)), reward_valid],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=callbacks,
        peft_config=peft_config,
    )
    if grammar and not cfg.use_vllm:
        constrain_generate(trainer.model, tokenizer, options=grammar)
    return train_and_save(trainer, tokenizer, cfg, emit)
