"""A recipe trained in a child process (``TrainingProcess``): bench/flywheel.py's two
generation-2 arms train side by side this way. The child's weights are the in-process run's,
and a failure comes back as one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.trainer.tiny_policy import policy_fixtures

tasks_dir, base_model = policy_fixtures(24, seed=11)


def _recipe(out: Path, model: Path, tasks: Path, **settings: object) -> object:
    from oopav.trainer.sft import SFTRecipe

    return SFTRecipe(
        output_dir=str(out), model=str(model), tasks=str(tasks), max_steps=3, batch_size=2,
        eval_n=0, threads=1, seed=4, logging_steps=1, **settings,  # type: ignore[arg-type]
    )  # fmt: skip


def _weights(checkpoint: str) -> dict[str, object]:
    from safetensors.torch import load_file

    return dict(load_file(str(Path(checkpoint) / "model.safetensors")))


def test_the_child_trains_the_weights_an_in_process_run_trains(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    import torch

    from oopav.trainer.sft import TrainingProcess, train_sft

    threads = torch.get_num_threads()  # the recipe's `threads: 1` is process-wide
    try:
        here = train_sft(_recipe(tmp_path / "here", base_model, tasks_dir), lambda k, f: None)  # type: ignore[arg-type]
    finally:
        torch.set_num_threads(threads)
    side = TrainingProcess(_recipe(tmp_path / "side", base_model, tasks_dir))  # type: ignore[arg-type]
    there = side.result(600)
    assert Path(there).is_relative_to(tmp_path / "side")
    a, b = _weights(str(here["checkpoint"])), _weights(there)
    assert a.keys() == b.keys() and a
    assert all(torch.equal(a[k], b[k]) for k in a)  # type: ignore[arg-type]
    # And training moved them: the comparison is not of two untouched copies.
    assert any(not torch.equal(a[k], v) for k, v in _weights(str(base_model)).items())  # type: ignore[arg-type]


def test_a_failed_training_comes_back_as_one_line(tmp_path: Path, base_model: Path) -> None:
    from oopav.trainer.sft import TrainingProcess

    side = TrainingProcess(_recipe(tmp_path / "out", base_model, tmp_path / "no-such-tasks"))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match=r"^the training failed: \w+Error: .*no-such-tasks"):
        side.result(600)
