"""Run aggregate events (``oopav.ev.run.<id>.<type>``): training runs — config, steps,
checkpoints and evaluations — recorded on the same stream as the sessions they learn from."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

from oopav.events.catalog import Event


class TrainingStarted(Event, tag="training_started", frozen=True):
    """A training run starts: its recipe, full config, the data it reads (by content hash) and
    the code version. Its id is the run id."""

    recipe: str
    config: dict[str, Any]
    base_model: str
    output_dir: str
    dataset: str = ""
    dataset_hash: str = ""
    dataset_records: int = 0
    code_version: str = ""
    device: str = "cpu"
    # The order the rows were trained in (trainer/curriculum.py): shuffle, curriculum, seed,
    # epochs, rows per stage, a digest of each epoch's order; {} when the sampler chose it.
    data_order: dict[str, Any] = msgspec.field(default_factory=dict)


class TrainingStepCompleted(Event, tag="training_step_completed", frozen=True):
    """One logged training step (the trainer's logging interval): loss and, for RL recipes,
    reward mean/std, format validity, KL, clip ratio; throughput."""

    step: int
    epoch: float = 0.0
    loss: float | None = None
    learning_rate: float | None = None
    reward_mean: float | None = None
    reward_std: float | None = None
    validity: float | None = None
    kl: float | None = None
    clip_ratio: float | None = None
    zero_std_fraction: float | None = None
    tokens_per_s: float | None = None
    metrics: dict[str, float] = msgspec.field(default_factory=dict)

    VOLATILE: ClassVar[frozenset[str]] = frozenset({"tokens_per_s"})


class CheckpointSaved(Event, tag="checkpoint_saved", frozen=True):
    """A checkpoint directory usable as ``--model hf:<path>``."""

    step: int
    path: str
    final: bool = False


class EvaluationCompleted(Event, tag="evaluation_completed", frozen=True):
    """A policy evaluated on a task suite; validity and correctness as separate metrics."""

    suite: str
    model: str
    n: int
    metrics: dict[str, float]
    step: int | None = None
    families: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)


class TrainingCompleted(Event, tag="training_completed", frozen=True):
    """The end of a run: completed or failed (with the error)."""

    status: Literal["completed", "failed"]
    steps: int = 0
    seconds: float = 0.0
    error: str = ""
    final_checkpoint: str | None = None

    VOLATILE: ClassVar[frozenset[str]] = frozenset({"seconds"})


RUN_EVENTS: tuple[type[Event], ...] = (
    TrainingStarted,
    TrainingStepCompleted,
    CheckpointSaved,
    EvaluationCompleted,
    TrainingCompleted,
)
