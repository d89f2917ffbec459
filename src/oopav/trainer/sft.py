"""SFT recipe: TRL's SFTTrainer on demonstrations — synthetic tasks or an exported SFT dataset.

Prompts are rendered with the policy's chat template and the loss is on the completion only
(TRL's prompt-completion format; TRL appends EOS so the policy learns to stop).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.trainer.tasks import Task, load_tasks, target_text, task_messages

Emit = Callable[[str, dict[str, Any]], None]


@dataclass
class SFTRecipe:
    output_dir: str
    # A model directory, or "new": build a fresh ~3M-parameter policy (oopav.trainer.policy).
    model: str = "new"
    # Demonstrations: a tasks directory (`oopav tasks generate`) or a dataset (`oopav export
    # --format sft`, or the learner's <data dir>/datasets/sft).
    tasks: str | None = None
    dataset: str | None = None
    families: list[str] = field(default_factory=list)  # only these task families (empty: all)
    exclude_families: list[str] = field(default_factory=list)
    max_train: int = 0  # 0: every example
    max_steps: int = 200
    max_seconds: float = 0.0  # stop after this much training time (0: no limit)
    batch_size: int = 16
    learning_rate: float = 2e-3
    # "cosine", "linear", "constant_with_warmup", ... (transformers' names), or "time_cosine":
    # warm-up then cosine decay over max_seconds of wall time, so a time-boxed run anneals.
    lr_scheduler: str = "cosine"
    warmup_ratio: float = 0.05
    max_length: int = 512
    seed: int = 0
    logging_steps: int = 10
    save_steps: int = 0  # 0: only the final checkpoint
    eval_n: int = 64  # held-out tasks evaluated after training (tasks only; 0: none)
    eval_split: str = "test"
    lora: bool = False
    use_cpu: bool = True
    # torch threads on CPU (0: torch's default). On a machine shared with other work, 1 is
    # faster than 2: two OpenMP threads that wait on each other ran 5x slower at load average
    # 4 on 2 cores (docs/benchmarks-history.md#learning).
    threads: int = 0
    # Batches of similar lengths: padding to the longest in a batch of random samples wasted
    # about a third of every step.
    group_by_length: bool = True
    # The order of the rows (trainer/curriculum.py, recorded in training_started.data_order):
    # "sampler" leaves it to the trainer's sampler, as before; "epoch" shuffles every epoch
    # with a generator seeded by (seed, epoch). ``curriculum``: every epoch goes from stage 0
    # (the easiest tasks) to stage 4, shuffled within a stage (implies "epoch").
    shuffle: str = "sampler"
    curriculum: bool = False
    # Train on the prompt's tokens too (a language-model loss over instruction and code), not
    # only the answer's. Free on compute (the forward pass covers the prompt anyway); the code
    # repeats its identifiers, so the policy learns to copy names — what a rename answer is
    # made of — from ~4x more tokens per step (issue 25, docs/benchmarks.md#flywheel).
    prompt_loss: bool = False
    # The tokenizer's pre-tokenizer when ``model: new`` builds a policy (oopav.trainer.policy):
    # "gpt2" (default) or "code" (a name is the same tokens in prompt and answer).
    pre_tokenizer: str = "gpt2"
    # Name-permutation augmentation (trainer/augment.py, issue 25): "names" adds
    # ``augment_copies`` copies of every record whose answer copies names from the prompt,
    # those names replaced consistently in prompt and answer by made-up ones (seeded by
    # ``seed``), so the answer can only be copied, not recalled. A new policy's tokenizer is
    # trained on the copies too. Recorded in ``training_started.data_order["augment"]``.
    augment: str = ""
    augment_copies: int = 4
    # "all" parts of a copied name, or only the "shared" stem (trainer/augment.py PARTS).
    augment_parts: str = "all"
    # Negatives (trainer/negatives.py, issue 25): a negatives dataset (the learner's, or
    # ``oopav export --format negatives``) whose rejected answers the policy learns to avoid —
    # every step adds ``negative_weight`` times the sequence-level unlikelihood of a batch of
    # ``negative_batch`` (0: ``batch_size``) of them. 0: off.
    negatives: str | None = None
    negative_weight: float = 0.0
    negative_batch: int = 0
    # Score a rejected answer under copy-constrained decoding (``policy.copy_names:
    # instruction``, models/copying.py): its probability among the words the loop let the
    # policy write, where it gave it — not the free distribution, under which a constrained
    # answer is ~0 and the term does nothing. Needs the model's answer vocabulary.
    negative_copy: bool = False
    # Which tokens of a rejected answer count: "all", or "structure" — every token but those
    # of the names it copies from its instruction, so that the term pushes on the answer's
    # form (the identifier form where a pattern was needed) and never on copying a name.
    negative_tokens: str = "all"
    # Preferences (trainer/preference.py, issue 25): a pairs dataset (prompt, chosen, rejected
    # at the same state) and a DPO term of weight ``preference_weight`` (inverse temperature
    # ``preference_beta``) on a batch of ``preference_batch`` (0: ``batch_size``) of them at
    # every step; the reference is the recipe's starting ``model``, frozen (its
    # log-probabilities computed once before training). ``preference_copy`` scores both answers
    # under copy-constrained decoding, like ``negative_copy``. 0: off.
    preferences: str | None = None
    preference_weight: float = 0.0
    preference_beta: float = 0.1
    preference_batch: int = 0
    preference_copy: bool = False


def demonstrations(
    cfg: SFTRecipe,
) -> tuple[list[tuple[list[dict[str, Any]], str]], list[int | None], str]:
    """The recipe's demonstrations as (prompt messages, answer), each one's curriculum stage
    (tasks only; None for dataset records) and the data's path — before augmentation."""
    from oopav.trainer.curriculum import stage_of

    if bool(cfg.tasks) == bool(cfg.dataset):
        raise ValueError(
            "give exactly one of `tasks` (a tasks directory) or `dataset` (an SFT dataset)"
        )
    pairs: list[tuple[list[dict[str, Any]], str]] = []
    stages: list[int | None] = []
    if cfg.tasks:
        for t in select(load_tasks(cfg.tasks, "train"), cfg.families, cfg.exclude_families):
            pairs.append((task_messages(t.instruction, t.pre, t.language), target_text(t.rule)))
            stages.append(stage_of(t.family, t.rewrites))
        return pairs, stages, cfg.tasks
    from oopav.trainer.datasets import read_manifest, read_records

    manifest = read_manifest(cfg.dataset)
    if manifest["format"] != "sft":
        raise ValueError(f"{cfg.dataset} is a {manifest['format']} dataset; SFT needs sft")
    if not manifest.get("count"):
        raise ValueError(
            f"no training examples in {cfg.dataset}: the dataset has 0 records "
            f"(from {len(manifest.get('sessions') or [])} sessions; by default only parsed "
            "answers whose action was applied and kept are demonstrations)"
        )
    for rec in read_records(cfg.dataset):
        pairs.append((list(rec["prompt"]), str(rec["completion"][-1]["content"])))
        stages.append(None)
    return pairs, stages, str(cfg.dataset)


def augmented(
    cfg: SFTRecipe, pairs: list[tuple[list[dict[str, Any]], str]], stages: list[int | None]
) -> tuple[list[tuple[list[dict[str, Any]], str]], list[int | None], dict[str, Any]]:
    """``pairs`` with the recipe's augmentation applied (its record; {} for none)."""
    from oopav.trainer.augment import AUGMENTS, augment_names

    if cfg.augment not in AUGMENTS:
        raise ValueError(
            f"augment must be one of {', '.join(repr(a) for a in AUGMENTS)}, not {cfg.augment!r}"
        )
    if not cfg.augment:
        return pairs, stages, {}
    if cfg.max_train:
        pairs, stages = pairs[: cfg.max_train], stages[: cfg.max_train]
    out, record = augment_names(pairs, cfg.augment_copies, cfg.seed, cfg.augment_parts)
    # A copy keeps its source's stage: augment_names lists the copies of record i together,
    # after every original, and only for records that copy a name.
    from oopav.trainer.augment import copied_names

    copy_stages: list[int | None] = []
    for (messages, completion), stage in zip(pairs, stages, strict=True):
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        if copied_names(prompt, completion):
            copy_stages.extend([stage] * cfg.augment_copies)
    return out, [*stages, *copy_stages], record


def training_rows(
    cfg: SFTRecipe, tokenizer: Any
) -> tuple[list[dict[str, str]], str, str, list[int]]:
    """(prompt, completion) strings, the data's path, its content hash and each row's
    curriculum stage (trainer/curriculum.py)."""
    rows, source, digest, stages, _ = training_rows_augmented(cfg, tokenizer)
    return rows, source, digest, stages


def training_rows_augmented(
    cfg: SFTRecipe, tokenizer: Any
) -> tuple[list[dict[str, str]], str, str, list[int], dict[str, Any]]:
    """:func:`training_rows` and the augmentation's record ({} for none)."""
    import hashlib
    import json

    from oopav.trainer.curriculum import stages_by_length

    pairs, raw_stages, source = demonstrations(cfg)
    pairs, raw_stages, record = augmented(cfg, pairs, raw_stages)
    rows: list[dict[str, str]] = []
    staged: dict[int, int] = {}  # id(row) -> stage: the rows that fit keep theirs
    for (messages, completion), stage in zip(pairs, raw_stages, strict=True):
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        rows.append({"prompt": str(prompt), "completion": completion})
        if stage is not None:
            staged[id(rows[-1])] = stage
    if cfg.max_train and not record:
        rows = rows[: cfg.max_train]
    if not rows:
        raise ValueError(f"no training examples in {source} (check families / filters)")
    rows = fitting_rows(rows, tokenizer, cfg.max_length)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    if staged:
        stages = [staged[id(r)] for r in rows]
    else:
        stages = stages_by_length([len(r["completion"]) for r in rows])
    return rows, source, digest, stages, record


def fitting_rows(
    rows: list[dict[str, str]], tokenizer: Any, max_length: int
) -> list[dict[str, str]]:
    """The rows whose prompt and answer (and the EOS TRL appends) fit ``max_length`` tokens.
    TRL truncates a longer one from the right, which cuts the answer — the only part with a
    loss — so it would train on nothing; when no row fits, one line says why."""
    fit: list[dict[str, str]] = []
    shortest: tuple[int, int] | None = None
    for row in rows:
        p = len(tokenizer(row["prompt"], add_special_tokens=False)["input_ids"])
        c = len(tokenizer(row["completion"], add_special_tokens=False)["input_ids"])
        if p + c + 1 <= max_length:
            fit.append(row)
        elif shortest is None or p < shortest[0]:
            shortest = (p, c)
    if not fit and shortest is not None:
        raise ValueError(
            f"every record is longer than max_length {max_length}: the shortest prompt is "
            f"{shortest[0]:,} tokens (+{shortest[1]:,} for its answer); raise max_length "
            "(a compact prompt is at most 512 tokens, plus its answer) or export with "
            "--profile compact"
        )
    return fit


def select(tasks: list[Task], only: list[str], exclude: list[str]) -> list[Task]:
    return [t for t in tasks if (not only or t.family in only) and t.family not in exclude]


def render_prompt(tokenizer: Any, t: Task) -> str:
    return str(
        tokenizer.apply_chat_template(
            task_messages(t.instruction, t.pre, t.language),
            tokenize=False,
            add_generation_prompt=True,
        )
    )


def corpus_texts(cfg: SFTRecipe) -> list[str]:
    """Texts to train a new policy's tokenizer on (train split only: no held-out leakage).
    With an augmentation, its copies too: made-up names then split into generic pieces, as
    the names of an unseen task will."""
    if cfg.augment:
        pairs, stages, _ = demonstrations(cfg)
        pairs, _, _ = augmented(cfg, pairs, stages)
        return ["".join(str(m["content"]) for m in msgs) + answer for msgs, answer in pairs]
    if cfg.tasks:
        ts = load_tasks(cfg.tasks, "train")
        return [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in ts]
    from oopav.trainer.datasets import read_records

    return [
        "".join(m["content"] for m in r["prompt"]) + r["completion"][-1]["content"]
        for r in read_records(cfg.dataset)
    ]


def prepare_model(
    model: str,
    output_dir: str,
    texts: Callable[[], list[str]],
    seed: int,
    pre_tokenizer: str = "gpt2",
) -> str:
    if model != "new":
        if not Path(model).is_dir():
            raise FileNotFoundError(f"no model directory at {model}")
        return model
    from oopav.trainer.policy import build_policy

    base = Path(output_dir) / "base"
    if not (base / "config.json").exists():
        build_policy(base, texts(), seed=seed, pre_tokenizer=pre_tokenizer)
    return str(base)


def ordered_rows(
    cfg: Any, rows: list[dict[str, str]], stages: list[int]
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """The rows in the order to train on them, and its record ({} when the recipe leaves the
    order to the trainer's sampler, as before)."""
    from oopav.trainer.curriculum import epoch_order, epochs_needed

    shuffle = getattr(cfg, "shuffle", "sampler")
    curriculum = bool(getattr(cfg, "curriculum", False))
    if shuffle not in ("sampler", "epoch"):
        raise ValueError(f"shuffle must be 'sampler' or 'epoch', not {shuffle!r}")
    if shuffle == "sampler" and not curriculum:
        return rows, {}
    epochs = epochs_needed(len(rows), cfg.max_steps, cfg.batch_size)
    order, record = epoch_order(stages, epochs=epochs, seed=cfg.seed, curriculum=curriculum)
    return [rows[i] for i in order], record


def start_run(
    base: str,
    rows: list[Any],
    source: str,
    digest: str,
    emit: Emit,
    *,
    lora: bool,
    data_order: dict[str, Any] | None = None,
) -> tuple[Any, Any]:
    """Record ``training_started`` (base model, dataset and its hash) and load the model to
    train, with a LoRA adapter config when asked: the same opening for every recipe."""
    from transformers import AutoModelForCausalLM

    emit(
        "started",
        {
            "base_model": base,
            "dataset": source,
            "dataset_hash": digest,
            "dataset_records": len(rows),
            "data_order": data_order or {},
        },
    )
    model = AutoModelForCausalLM.from_pretrained(base)
    if not lora:
        return model, None
    from peft import LoraConfig

    return model, LoraConfig(
        r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def train_and_save(trainer: Any, tokenizer: Any, cfg: Any, emit: Emit) -> dict[str, Any]:
    """Train, save the final checkpoint (LoRA merged in), record it and, when the recipe names
    a task suite, evaluate it on held-out tasks: the same closing for every recipe."""
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    final = Path(cfg.output_dir) / "final"
    if cfg.lora:
        trainer.model = trainer.model.merge_and_unload()
    trainer.model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    step = int(trainer.state.global_step)
    emit("checkpoint", {"step": step, "path": str(final), "final": True})
    result: dict[str, Any] = {"steps": step, "seconds": seconds, "checkpoint": str(final)}
    if cfg.tasks and cfg.eval_n:
        result["evaluation"] = evaluate_after(
            trainer.model, tokenizer, cfg.tasks, cfg.eval_split, cfg.eval_n, str(final), step, emit
        )
    return result


def train_in_child(cfg: SFTRecipe, out: Any) -> None:
    """:class:`TrainingProcess`'s entry point in the child: train ``cfg`` without progress
    reports and put ``("ok", checkpoint)`` or ``("error", one line)`` on the queue ``out``."""
    import os

    os.environ.setdefault("TQDM_DISABLE", "1")  # one progress bar on the terminal: the parent's
    try:
        out.put(("ok", str(train_sft(cfg, lambda kind, fields: None)["checkpoint"])))
    except BaseException as exc:  # the parent raises it as its own one-line failure
        out.put(("error", f"{type(exc).__name__}: {exc}"[:500]))
        raise


class TrainingProcess:
    """One recipe trained in a child process (``multiprocessing``, spawn: none of the
    caller's event loop or threads), side by side with the caller's own work.

    bench/flywheel.py trains its two generation-2 arms this way: each trains on one thread
    (``threads: 1``), so two processes use a 2-core machine's second core, and the weights
    are those of one run after the other (same seed, data and steps; tested)."""

    def __init__(self, cfg: SFTRecipe) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._results = ctx.Queue()
        self._proc = ctx.Process(target=train_in_child, args=(cfg, self._results), daemon=True)
        self._proc.start()

    def result(self, deadline_s: float) -> str:
        """The checkpoint's path; raises RuntimeError (one line) when the training failed,
        its process died, or it overran ``deadline_s`` (then it is stopped)."""
        import queue

        deadline = time.monotonic() + deadline_s
        while True:
            try:
                status, value = self._results.get(timeout=5)
                break
            except queue.Empty:
                if not self._proc.is_alive():
                    raise RuntimeError(
                        f"the training process died (exit code {self._proc.exitcode})"
                    ) from None
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"the training overran its deadline of {deadline_s:.0f} s"
                    ) from None
        self._proc.join(timeout=60)
        if status != "ok":
            raise RuntimeError(f"the training failed: {value}")
        return str(value)

    def stop(self) -> None:
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(timeout=30)


def train_sft(cfg: SFTRecipe, emit: Emit) -> dict[str, Any]:
    """Train; ``emit("started"|"step"|"checkpoint"|"evaluation", fields)`` reports progress."""
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import SFTTrainer

    from oopav.trainer.callbacks import RunCallback

    if cfg.negative_weight < 0 or (cfg.negative_weight > 0) != bool(cfg.negatives):
        raise ValueError(
            "negative_weight must be > 0 with `negatives` (a negatives dataset) and 0 without, "
            f"got {cfg.negative_weight} with negatives={cfg.negatives!r}"
        )
    if cfg.preference_weight < 0 or (cfg.preference_weight > 0) != bool(cfg.preferences):
        raise ValueError(
            "preference_weight must be > 0 with `preferences` (a pairs dataset) and 0 without, "
            f"got {cfg.preference_weight} with preferences={cfg.preferences!r}"
        )
    if cfg.preferences and cfg.model == "new":
        raise ValueError("`preferences` needs a trained `model` as its reference, not 'new'")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    base = prepare_model(
        cfg.model, cfg.output_dir, lambda: corpus_texts(cfg), cfg.seed, cfg.pre_tokenizer
    )
    tokenizer = AutoTokenizer.from_pretrained(base)
    rows, source, digest, stages, augment = training_rows_augmented(cfg, tokenizer)
    ordered, data_order = ordered_rows(cfg, rows, stages)
    # The rows are in a recorded order only when ordered_rows chose one.
    sequential = bool(data_order)
    if augment:
        data_order = {**data_order, "augment": augment}
    trainer_cls: Any = SFTTrainer
    if cfg.negatives:
        from oopav.trainer.negatives import negative_rows, with_negatives

        neg_rows, neg_record = negative_rows(cfg, tokenizer)
        data_order = {**data_order, "negatives": neg_record}
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        trainer_cls = with_negatives(
            SFTTrainer,
            neg_rows,
            cfg.negative_weight,
            cfg.negative_batch or cfg.batch_size,
            cfg.seed,
            pad,
        )
    if cfg.preferences:
        from oopav.trainer.preference import preference_rows, with_preferences

        pref_rows, pref_record = preference_rows(cfg, tokenizer)
        data_order = {**data_order, "preferences": pref_record}
        trainer_cls = with_preferences(
            trainer_cls,
            pref_rows,
            cfg.preference_weight,
            cfg.preference_beta,
            cfg.preference_batch or cfg.batch_size,
            cfg.seed,
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0,
        )
    model, peft_config = start_run(
        base, rows, source, digest, emit, lora=cfg.lora, data_order=data_order
    )
    args = sft_args(
        cfg,
        max_steps=cfg.max_steps,
        lr_scheduler="constant" if cfg.lr_scheduler == "time_cosine" else cfg.lr_scheduler,
        warmup_steps=max(0, int(cfg.warmup_ratio * cfg.max_steps)),
        sequential=sequential,
    )
    callback = RunCallback(emit)
    callbacks: list[Any] = [callback]
    if cfg.max_seconds:
        callbacks.append(_deadline(TrainerCallback, cfg.max_seconds))
    optimizers: Any = (None, None)
    if cfg.lr_scheduler == "time_cosine":
        if not cfg.max_seconds:
            raise ValueError("lr_scheduler time_cosine needs max_seconds")
        optimizers = time_cosine(model, cfg.learning_rate, cfg.max_seconds, cfg.warmup_ratio)
    trainer = trainer_cls(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(ordered),
        processing_class=tokenizer,
        callbacks=callbacks,
        peft_config=peft_config,
        optimizers=optimizers,
    )
    result = train_and_save(trainer, tokenizer, cfg, emit)
    result["answer_words"] = save_answer_words(cfg, result["checkpoint"])
    return result


def save_answer_words(cfg: SFTRecipe, checkpoint: str) -> int:
    """Write the checkpoint's answer vocabulary (models/copying.py): the words its training
    answers write from memory, which copy-constrained decoding (``policy.copy_names``) allows
    besides the words it copies. From the demonstrations before augmentation: a made-up name
    is in its own prompt, so the copies add nothing but counts. Each distinct (prompt, answer)
    counts once: a record repeated as a weight (expert iteration's ``--star``, the flywheel's
    failure positives) is one teacher answer, and counted four times a word one rule took from
    outside its prompt passed the vocabulary's "in at least two answers" guard (``self``,
    ``decode``, ``__isabstractmethod__`` became words every name could be). Returns the number
    of words."""
    from oopav.models.copying import answer_vocabulary, write_answer_words

    pairs, _, _ = demonstrations(cfg)
    texts = [("".join(str(m["content"]) for m in msgs), answer) for msgs, answer in pairs]
    texts = list(dict.fromkeys(texts))
    vocabulary = answer_vocabulary(texts)
    write_answer_words(checkpoint, vocabulary, len(texts))
    return len(vocabulary)


def no_checkpointing(config_cls: Any) -> dict[str, Any]:
    """Activation checkpointing off, under the name the installed transformers knows:
    ``activation_checkpointing`` from 5.2x, ``gradient_checkpointing`` before (5.17, the GPU
    image's, refused the new name: docs/training.md#7-gpu-path-vllm)."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(config_cls)}  # TRL's configs are dataclasses
    if "activation_checkpointing" in names:
        return {"activation_checkpointing": False}
    return {"gradient_checkpointing": False}


def sft_args(
    cfg: Any,
    *,
    max_steps: int,
    lr_scheduler: str,
    warmup_steps: int,
    logging_steps: int = 0,
    sequential: bool = False,
) -> Any:
    """TRL's SFTConfig for a recipe (SFT, or the fine-tuning phase of RFT), set for a small
    policy on CPU."""
    import torch
    from trl import SFTConfig

    return SFTConfig(
        output_dir=cfg.output_dir,
        max_steps=max_steps,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=lr_scheduler,
        warmup_steps=warmup_steps,
        max_length=getattr(cfg, "max_length", 512),
        logging_steps=logging_steps or cfg.logging_steps,
        save_strategy="steps" if getattr(cfg, "save_steps", 0) else "no",
        save_steps=getattr(cfg, "save_steps", 0) or 500,
        seed=cfg.seed,
        use_cpu=cfg.use_cpu or not torch.cuda.is_available(),
        report_to=[],
        dataloader_num_workers=0,
        disable_tqdm=False,
        bf16=False,
        # TRL turns it on by default; it recomputes every layer's forward on the backward pass,
        # which a 3M-parameter policy never needs for memory.
        **no_checkpointing(SFTConfig),
        completion_only_loss=not getattr(cfg, "prompt_loss", False),
        # "sequential": the rows are already in their recorded order (curriculum, per-epoch
        # shuffle), which a random or length-grouped sampler would undo.
        train_sampling_strategy="sequential"
        if sequential
        else "group_by_length"
        if getattr(cfg, "group_by_length", True)
        else "random",
    )


def evaluate_after(
    model: Any, tokenizer: Any, tasks_dir: str, split: str, n: int, name: str, step: int, emit: Emit
) -> dict[str, Any]:
    from oopav.trainer.evaluate import evaluate_model

    tasks = load_tasks(tasks_dir, split)[:n]
    report = evaluate_model(
        model, tokenizer, tasks, name=f"hf:{name}", suite=f"{tasks_dir}:{split}"
    )
    summary = report.summary()
    emit(
        "evaluation",
        {
            "suite": report.suite,
            "model": report.model,
            "n": len(tasks),
            "metrics": {k: float(v) for k, v in summary.items() if isinstance(v, int | float)},
            "families": summary["families"],
            "step": step,
        },
    )
    return summary


def time_cosine(model: Any, lr: float, seconds: float, warmup: float) -> tuple[Any, Any]:
    """AdamW with a learning rate that follows wall time: linear warm-up for ``warmup`` of the
    budget, then cosine decay to 0 at ``seconds``."""
    import math

    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    start: list[float] = []

    def factor(_step: int) -> float:
        if not start:
            start.append(time.perf_counter())
        frac = min(1.0, (time.perf_counter() - start[0]) / seconds)
        if frac < warmup:
            return max(0.05, frac / max(warmup, 1e-9))
        return 0.5 * (1 + math.cos(math.pi * (frac - warmup) / max(1e-9, 1 - warmup)))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _deadline(base: type, seconds: float) -> Any:
    class Deadline(base):  # type: ignore[misc]  # base: TrainerCallback, passed in so transformers loads lazily
        def __init__(self) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if time.perf_counter() - self.t0 > seconds:
                control.should_training_stop = True

    return Deadline()
