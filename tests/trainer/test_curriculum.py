"""The training order (issue 30): a curriculum by task difficulty (stages 0-4) and a seeded
shuffle per epoch, recorded in ``training_started.data_order``. Tiny locally built tasks and
policy; the real stream."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from tiny_policy import Recipe, policy_fixtures, train

from oopav.trainer.curriculum import epoch_order, stage_of, stages_by_length
from oopav.trainer.sft import ordered_rows, sft_args

pytest.importorskip("trl")

tasks_dir, base_model = policy_fixtures(40, seed=5)


def test_stages_follow_task_difficulty() -> None:
    assert stage_of("rename_call") == 0 and stage_of("migrate_api") == 4
    assert stage_of("add_kwarg", rewrites=1) == 2 and stage_of("add_kwarg", rewrites=3) == 3
    assert stage_of("migrate_api", rewrites=5) == 4  # capped
    assert stages_by_length([50, 10, 30, 20, 40]) == [4, 0, 2, 1, 3]


def test_each_epoch_is_shuffled_with_its_own_seed_and_the_curriculum_goes_easy_to_hard() -> None:
    stages = [i % 5 for i in range(20)]
    order, record = epoch_order(stages, epochs=3, seed=7, curriculum=False)
    epochs = [order[i * 20 : (i + 1) * 20] for i in range(3)]
    assert all(sorted(e) == list(range(20)) for e in epochs)  # every row once per epoch
    assert epochs[0] != epochs[1] != epochs[2]  # shuffled anew each epoch
    assert (order, record) == epoch_order(stages, epochs=3, seed=7, curriculum=False)
    assert epoch_order(stages, epochs=3, seed=8, curriculum=False)[0] != order
    assert record["epochs"] == 3 and len(set(record["epoch_orders"])) == 3
    assert record["stages"] == {"0": 4, "1": 4, "2": 4, "3": 4, "4": 4}

    staged, record = epoch_order(stages, epochs=2, seed=7, curriculum=True)
    for e in (staged[:20], staged[20:]):
        assert [stages[i] for i in e] == sorted(stages[i] for i in e)  # easy to hard
    assert staged[:4] != staged[20:24]  # still shuffled within a stage
    assert record["curriculum"] == "stages"
    with pytest.raises(ValueError, match="epochs must be at least 1"):
        epoch_order(stages, epochs=0, seed=0, curriculum=True)


def test_the_sampler_keeps_the_recorded_order() -> None:
    rows = [{"prompt": str(i), "completion": "x"} for i in range(6)]
    cfg = SimpleNamespace(shuffle="sampler", curriculum=False, seed=0, max_steps=3, batch_size=4)
    assert ordered_rows(cfg, rows, [0] * 6) == (rows, {})  # as before: the sampler decides
    cfg.shuffle = "epoch"
    ordered, record = ordered_rows(cfg, rows, [0] * 6)
    assert len(ordered) == 12 and record["epochs"] == 2
    cfg.shuffle = "random"
    with pytest.raises(ValueError, match="shuffle must be 'sampler' or 'epoch'"):
        ordered_rows(cfg, rows, [0] * 6)
    args = SimpleNamespace(output_dir="/tmp/x", batch_size=4, learning_rate=1e-3, seed=0,
                           logging_steps=1, use_cpu=True)  # fmt: skip
    assert sft_args(args, max_steps=1, lr_scheduler="constant", warmup_steps=0,
                    sequential=True).train_sampling_strategy == "sequential"  # fmt: skip


def test_a_curriculum_run_records_its_data_order(
    nats_url: str, tmp_path: Path, recipe: Recipe
) -> None:
    cfg = recipe("cur", max_steps=2, batch_size=4, logging_steps=1, eval_n=0, curriculum=True)
    result, events = train(nats_url, tmp_path, "sft", cfg)
    assert result["status"] == "completed"
    started = events[0]
    assert started.type == "training_started"
    order = started.data_order
    assert order["curriculum"] == "stages" and order["shuffle"] == "epoch" and order["seed"] == 0
    assert sum(order["stages"].values()) == started.dataset_records
    assert order["epochs"] == -(-2 * 4 // started.dataset_records)  # enough for 2 steps of 4
    assert started.config["curriculum"] is True
