"""oopav train / runs / eval end to end on a tiny policy and the real stream (CPU, seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tiny_policy import Recipe, invoke, last_json, policy_fixtures, read_run, train

from oopav.cli import cli

pytest.importorskip("trl")


tasks_dir, base_model = policy_fixtures(60, seed=3)


def test_train_sft_records_a_run_and_its_checkpoint_evaluates(
    nats_url: str, tmp_path: Path, recipe: Recipe, tasks_dir: Path
) -> None:
    cfg = recipe("run", max_steps=3, batch_size=4, logging_steps=1, eval_n=4)
    result, _ = train(nats_url, tmp_path, "sft", cfg)
    assert result["status"] == "completed" and result["steps"] == 3
    final = Path(result["checkpoint"])
    assert (final / "config.json").exists() and (final / "tokenizer.json").exists()

    r = invoke(nats_url, tmp_path / "data", "runs", "--json")
    (run,) = [x for x in json.loads(r.stdout) if x["run_id"] == result["run_id"]]
    assert run["recipe"] == "sft" and run["status"] == "completed" and run["steps"] == 3
    assert run["checkpoints"] == [str(final)] and run["last_loss"] is not None
    assert set(run["last_eval"]) >= {"valid", "applied", "exact", "reward"}

    types = [e.type for e in read_run(nats_url, result["run_id"])]
    assert types[0] == "training_started" and types[-1] == "training_completed"
    assert types.count("training_step_completed") == 3
    assert "checkpoint_saved" in types and "evaluation_completed" in types

    # The checkpoint is a model directory `--model hf:` can load.
    r = invoke(
        nats_url,
        tmp_path / "data",
        "eval",
        "--model",
        f"hf:{final}",
        "--suite",
        str(tasks_dir),
        "--n",
        "3",
        "--max-new-tokens",
        "16",
        "--json",
    )
    assert r.exit_code == 0, r.output
    report = last_json(r.stdout)
    assert report["n"] == 3 and 0.0 <= report["valid"] <= 1.0 and "families" in report


def test_use_cpu_false_without_a_device_trains_on_the_cpu_and_says_so(
    nats_url: str, tmp_path: Path, recipe: Recipe, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    # No device, also on a machine that has one (the GPU tests cover use_cpu: false there).
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = recipe("run", max_steps=1, batch_size=2, eval_n=0, use_cpu=False)
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(cfg))
    r = invoke(nats_url, tmp_path / "data", "train", "sft", "--config", str(tmp_path / "sft.yaml"))
    assert r.exit_code == 0, r.output
    assert "no_cuda_device" in r.stderr and "training on the CPU" in r.stderr
    result = last_json(r.stdout)
    assert read_run(nats_url, result["run_id"])[0].device == "cpu"


def test_eval_gold_table_and_errors(nats_url: str, tmp_path: Path, tasks_dir: Path) -> None:
    r = invoke(nats_url, tmp_path, "eval", "--model", "gold", "--suite", str(tasks_dir), "--n", "5")
    assert r.exit_code == 0, r.output
    assert "exact" in r.output and "100.0%" in r.output
    r = invoke(
        nats_url,
        tmp_path,
        "eval",
        "--model",
        "gold",
        "--suite",
        str(tasks_dir),
        "--n",
        "4",
        "--json",
        "--record",
    )
    assert r.exit_code == 0 and last_json(r.stdout)["exact"] == 1.0
    runs = json.loads(invoke(nats_url, tmp_path, "runs", "--json").stdout)
    recorded = [x for x in runs if x["recipe"] == "eval"]
    assert recorded and recorded[0]["last_eval"]["exact"] == 1.0
    r = CliRunner().invoke(cli, ["eval", "--model", "gold", "--suite", str(tmp_path / "nope")])
    assert r.exit_code != 0 and "oopav tasks generate" in r.output


def test_grpo_with_a_bad_batch_is_a_failed_run_and_a_clear_error(
    nats_url: str, tmp_path: Path, recipe: Recipe, tasks_dir: Path
) -> None:
    cfg = recipe("g", batch_size=6, num_generations=4)
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(cfg))
    r = invoke(nats_url, tmp_path / "data", "train", "grpo", "--config", str(tmp_path / "g.yaml"))
    assert r.exit_code != 0 and "multiple of num_generations" in r.output
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"output_dir": "x", "learning_rat": 1}))
    r = invoke(nats_url, tmp_path / "data", "train", "sft", "--config", str(tmp_path / "bad.yaml"))
    assert r.exit_code != 0 and "unknown setting(s) learning_rat" in r.output
    for recipe in ("sft", "srl", "grpo", "rft"):
        (tmp_path / "short.yaml").write_text(yaml.safe_dump({"tasks": str(tasks_dir)}))
        r = invoke(
            nats_url, tmp_path / "data", "train", recipe, "--config", str(tmp_path / "short.yaml")
        )
        assert r.exit_code == 1 and "lacks the required setting(s) output_dir" in r.output, (
            recipe,
            r.output,
        )


def test_grpo_trains_from_rewards(nats_url: str, tmp_path: Path, recipe: Recipe) -> None:
    cfg = recipe(
        "g", batch_size=4, num_generations=4, max_steps=2, max_completion_length=16, eval_n=0
    )
    _, events = train(nats_url, tmp_path, "grpo", cfg)
    steps = [e for e in events if e.type == "training_step_completed"]
    assert len(steps) == 2
    # Reward and validity are separate fields of every step.
    assert all(s.reward_mean is not None and s.validity is not None for s in steps)
    assert all(s.zero_std_fraction is not None for s in steps)


def test_example_configs_load() -> None:
    from oopav.trainer.config import load_config
    from oopav.trainer.grpo import GRPORecipe, check
    from oopav.trainer.sft import SFTRecipe

    root = Path(__file__).resolve().parents[2] / "examples" / "training"
    sft = load_config(SFTRecipe, root / "sft.yaml")
    grpo = load_config(GRPORecipe, root / "grpo.yaml")
    assert sft.model == "new" and sft.tasks == "tasks"
    check(grpo)
    assert grpo.batch_size % grpo.num_generations == 0 and grpo.learning_rate > 1e-6
