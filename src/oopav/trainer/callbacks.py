"""A TRL/transformers callback that turns the trainer's logs and saves into run events."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

# Keys of TRL's logs that become typed fields of training_step_completed.
_FIELDS = {
    "loss": "loss",
    "learning_rate": "learning_rate",
    "reward": "reward_mean",
    "reward_std": "reward_std",
    "rewards/reward_valid/mean": "validity",
    "kl": "kl",
    "clip_ratio/region_mean": "clip_ratio",
    "frac_reward_zero_std": "zero_std_fraction",
}


class RunCallback(TrainerCallback):
    """``emit(kind, fields)`` is called from the training thread; it must be thread-safe."""

    def __init__(self, emit: Callable[[str, dict[str, Any]], None]) -> None:
        self.emit = emit
        self._t = time.perf_counter()
        self._tokens = 0.0
        self.last: dict[str, Any] = {}

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if not logs or "train_runtime" in logs:
            return
        fields: dict[str, Any] = {
            "step": int(state.global_step),
            "epoch": float(state.epoch or 0.0),
        }
        metrics: dict[str, float] = {}
        for key, value in logs.items():
            if not isinstance(value, int | float):
                continue
            if key in _FIELDS:
                fields[_FIELDS[key]] = float(value)
            else:
                metrics[key] = float(value)
        now = time.perf_counter()
        tokens = logs.get("num_tokens")
        if isinstance(tokens, int | float) and now > self._t:
            fields["tokens_per_s"] = (float(tokens) - self._tokens) / (now - self._t)
            self._tokens = float(tokens)
        self._t = now
        fields["metrics"] = metrics
        self.last = fields
        self.emit("step", fields)

    def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        path = f"{args.output_dir}/checkpoint-{state.global_step}"
        self.emit("checkpoint", {"step": int(state.global_step), "path": path, "final": False})
