"""oopav train srl: step samples from tasks or an SRL dataset, scored by reward_srl (CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_policy import Recipe, invoke, policy_fixtures, train
from trainer_sessions import numbered, session

from oopav.events.ids import derive_id
from oopav.trainer.datasets import Filters, session_records, write_dataset
from oopav.trainer.srl import SRLRecipe, load_steps, reward_fn
from oopav.trainer.tasks import target_text

pytest.importorskip("trl")


tasks_dir, base_model = policy_fixtures(
    30, seed=5, hidden=64, tasks_name="srl-tasks", model_name="srl-base"
)


def test_steps_from_an_srl_dataset_and_the_teacher_reward(tmp_path: Path) -> None:
    sid = derive_id("srl", "test", 0)
    recs = session_records(numbered(session(sid)), Filters())
    write_dataset(tmp_path / "srl", "srl", [recs], Filters(), parquet=False)
    cfg = SRLRecipe(output_dir=str(tmp_path / "run"), dataset=str(tmp_path / "srl"))
    train, held, source = load_steps(cfg)
    # The applied rule and the finish: the rejected rule is not a demonstration.
    assert [s.teacher["type"] for s in train] == ["ast_grep", "finish"]
    assert held == train[: cfg.eval_n] and source == str(tmp_path / "srl")
    (msg,) = train[0].messages
    assert msg["role"] == "user" and "Rename fetch to fetch_page" in msg["content"]
    reward = reward_fn(-0.2)
    teacher = [json.dumps(s.teacher) for s in train]
    # The teacher's own answer scores 1, a garbled one the invalid score, a near miss between.
    near = target_text({**train[0].teacher, "rewrite": "fetch_pages($$$A)"})
    got = reward(completions=[s.target() for s in train], teacher=teacher)
    assert got == [1.0, 1.0]
    assert reward(completions=["<action>{", near], teacher=teacher[:1] * 2)[0] == pytest.approx(
        -0.2, abs=1e-3
    )
    assert 0.5 < reward(completions=[near], teacher=teacher[:1])[0] < 1.0

    with pytest.raises(ValueError, match="SRL needs srl"):
        write_dataset(tmp_path / "sft", "sft", [recs], Filters(), parquet=False)
        load_steps(SRLRecipe(output_dir="x", dataset=str(tmp_path / "sft")))
    with pytest.raises(ValueError, match="mode must be grpo or sft"):
        load_steps(SRLRecipe(output_dir="x", dataset=str(tmp_path / "srl"), mode="dpo"))


def test_train_srl_teacher_forced_records_the_run_and_the_loss_falls(
    nats_url: str, tmp_path: Path, recipe: Recipe
) -> None:
    cfg = recipe(
        "run",
        mode="sft",
        max_train=2,
        max_steps=24,
        batch_size=4,
        learning_rate=0.01,
        logging_steps=4,
        eval_n=2,
        max_completion_length=24,
    )
    result, events = train(nats_url, tmp_path, "srl", cfg)
    assert result["status"] == "completed" and result["steps"] == 24
    types = [e.type for e in events]
    assert types[:2] == ["training_started", "evaluation_completed"]
    assert types[-1] == "training_completed" and "checkpoint_saved" in types
    assert events[0].recipe == "srl" and events[0].config["mode"] == "sft"
    losses = [e.loss for e in events if e.type == "training_step_completed"]
    assert len(losses) == 6 and losses[-1] < 0.5 * losses[0]
    before, after = [e for e in events if e.type == "evaluation_completed"]
    assert before.step == 0 and after.step == 24 and before.suite == after.suite
    assert set(after.metrics) >= {"reward_srl", "valid", "exact"}
    # An untrained policy does not answer in the contract: the invalid score.
    assert before.metrics["reward_srl"] == -0.2
    assert -0.2 <= after.metrics["reward_srl"] <= 1.0

    runs = json.loads(invoke(nats_url, tmp_path / "data", "runs", "--json").stdout)
    (run,) = [x for x in runs if x["run_id"] == result["run_id"]]
    assert run["recipe"] == "srl" and run["status"] == "completed"


def test_train_srl_grpo_scores_samples_with_reward_srl(
    nats_url: str, tmp_path: Path, recipe: Recipe
) -> None:
    cfg = recipe(
        "g",
        max_train=4,
        batch_size=8,
        num_generations=8,  # (the mean of eight float32 -0.2 is off by an ulp; four is not)
        max_steps=2,
        max_completion_length=16,
        eval_n=0,
    )
    _, events = train(nats_url, tmp_path, "srl", cfg)
    steps = [e for e in events if e.type == "training_step_completed"]
    assert len(steps) == 2
    # The reward is reward_srl (16 tokens never close an answer: all invalid, −0.2), and
    # validity is logged next to it.
    assert all(s.reward_mean == pytest.approx(-0.2, abs=1e-3) and s.validity == 0.0 for s in steps)
    # Groups of equal rewards are seen as such (exactly zero advantages; rewards.QUANTUM says why).
    assert all(s.zero_std_fraction == 1.0 for s in steps)
    assert "rewards/reward_srl_teacher/mean" in steps[0].metrics
    assert not [e for e in events if e.type == "evaluation_completed"]  # eval_n 0


def test_example_config_loads() -> None:
    from oopav.trainer.config import load_config
    from oopav.trainer.grpo import check

    root = Path(__file__).resolve().parents[2] / "examples" / "training"
    cfg = load_config(SRLRecipe, root / "srl.yaml")
    check(cfg)
    assert cfg.mode == "grpo" and cfg.dataset and cfg.invalid == -0.2
