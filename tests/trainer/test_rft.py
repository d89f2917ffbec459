"""oopav train rft: rejection-sampling fine-tuning from reward_env verdicts (CPU, tiny policy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tiny_policy import Recipe, invoke, policy_fixtures, train

pytest.importorskip("trl")


tasks_dir, base_model = policy_fixtures(40, seed=5)


def task_of(prompt: str, tasks: list[Any]) -> Any:
    (task,) = [t for t in tasks if t.instruction in prompt and t.pre in prompt]
    return task


def scripted_samples(tasks_dir: Path) -> Any:
    """A stand-in sampler: per prompt, the gold answer once, a no-op rule, an unparsable
    answer and a rule that renames the wrong thing."""
    from oopav.trainer.tasks import load_tasks, target_text

    tasks = load_tasks(tasks_dir)

    def sample(model: Any, tokenizer: Any, prompts: list[str], cfg: Any, deadline: float) -> Any:
        out = []
        for p in prompts:
            task = task_of(p, tasks)
            gold = target_text(task.rule)
            noop = target_text({**task.rule, "rewrite": task.rule["pattern"]})
            wrong = target_text({**task.rule, "rewrite": "nothing_like_it()"})
            out.append([noop, "not an action", gold, wrong, gold][: cfg.samples])
        return out

    return sample


def test_rft_keeps_only_rewarded_samples_and_fine_tunes_on_them(
    tmp_path: Path, tasks_dir: Path, base_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oopav.trainer import rft
    from oopav.trainer.rewards import score_env
    from oopav.trainer.tasks import load_tasks

    monkeypatch.setattr(rft, "sample", scripted_samples(tasks_dir))
    events: list[tuple[str, dict[str, Any]]] = []
    cfg = rft.RFTRecipe(
        output_dir=str(tmp_path / "r"),
        model=str(base_model),
        tasks=str(tasks_dir),
        rounds=2,
        samples=5,
        keep_per_prompt=2,
        batch_size=4,
        eval_n=0,
    )
    result = rft.train_rft(cfg, lambda kind, fields: events.append((kind, fields)))
    train = load_tasks(tasks_dir)
    kept = [json.loads(line) for line in (tmp_path / "r" / "kept.jsonl").read_text().splitlines()]
    # Gold once per prompt (its duplicate and the unrewarded samples are dropped), and the
    # second round finds nothing new.
    assert result["kept"] == len(kept) == len(train)
    by_prompt = {k["prompt"]: k for k in kept}
    assert len(by_prompt) == len(train)
    for prompt, k in by_prompt.items():
        t = task_of(prompt, train)
        assert score_env(k["completion"], t.pre, t.post).exact and k["reward"] == 1.0
    steps = [f for kind, f in events if kind == "step"]
    assert [s["metrics"]["kept_new"] for s in steps] == [len(train), 0]
    assert all(s["zero_std_fraction"] == 0.0 for s in steps)  # every group's rewards differ
    assert steps[0]["validity"] == pytest.approx(4 / 5)
    # It fine-tuned on the kept samples, and not again when a round kept nothing new.
    assert steps[0]["step"] == steps[1]["step"] == result["steps"] > 0
    assert steps[0]["loss"] is not None and steps[1]["loss"] is None
    assert events[0][0] == "started"
    assert ("checkpoint", True) in [(kind, f.get("final")) for kind, f in events]


def test_train_rft_cli_records_a_run(nats_url: str, tmp_path: Path, recipe: Recipe) -> None:
    cfg = recipe(
        "r", families=["swap_args"], rounds=2, samples=3, max_completion_length=12, eval_n=2
    )
    result, events = train(nats_url, tmp_path, "rft", cfg)
    assert result["status"] == "completed"
    types = [e.type for e in events]
    assert types[0] == "training_started" and types[-1] == "training_completed"
    assert events[0].recipe == "rft"
    assert types.count("training_step_completed") == 2  # one per round
    assert "checkpoint_saved" in types and "evaluation_completed" in types
    steps = [e for e in events if e.type == "training_step_completed"]
    assert all(s.reward_mean is not None and s.validity is not None for s in steps)
    assert all(s.metrics["prompts"] > 0 for s in steps)
    # An untrained policy's samples earn no reward, so nothing may be kept.
    kept = (tmp_path / "r" / "kept.jsonl").read_text().splitlines()
    assert all(json.loads(k)["reward"] >= 1.0 for k in kept)

    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**cfg, "keep_min_reward": -1.0}))
    r = invoke(nats_url, tmp_path / "data", "train", "rft", "--config", str(tmp_path / "bad.yaml"))
    assert r.exit_code != 0 and "keep_min_reward" in r.output


def test_example_rft_config_loads() -> None:
    from oopav.trainer.config import load_config
    from oopav.trainer.rft import RFTRecipe, check

    root = Path(__file__).resolve().parents[2] / "examples" / "training"
    cfg = load_config(RFTRecipe, root / "rft.yaml")
    check(cfg)
    assert cfg.keep_min_reward == 1.0 and cfg.model == "runs/sft/final"


def test_pass_at_k_counts_a_task_solved_by_any_sample_and_samples_with_the_tiny_policy(
    tasks_dir: Path, base_model: Path
) -> None:
    """pass@k (how bench/learning.py checks a held-out family is reachable before training on
    verdicts): a task counts once however many samples are exact, a task with none counts 0;
    the sampling form draws k completions per task from a real (tiny) policy."""
    from oopav.trainer.evaluate import load_hf, pass_at_k_summary
    from oopav.trainer.rft import pass_at_k
    from oopav.trainer.tasks import load_tasks, target_text

    tasks = load_tasks(tasks_dir)[:3]
    gold = [target_text(t.rule) for t in tasks]
    noop = [target_text({**t.rule, "rewrite": t.rule["pattern"]}) for t in tasks]
    groups = [
        [noop[0], gold[0], gold[0], "junk"],
        [noop[1]] * 4,
        ["junk", "junk", gold[2], noop[2]],
    ]
    got = pass_at_k_summary(tasks, groups)
    assert got["n"] == 3 and got["k"] == 4
    assert got["pass_at_k"] == pytest.approx(2 / 3)
    assert got["samples"]["exact"] == pytest.approx(3 / 12)
    assert got["samples"]["valid"] == pytest.approx(9 / 12)
    assert got["reasons"]["exact"] == 3 and got["reasons"]["noop"] == 6

    model, tok = load_hf(base_model)
    sampled = pass_at_k(model, tok, tasks, k=3, temperature=1.0, max_new_tokens=8)
    assert sampled["n"] == 3 and sampled["k"] == 3 and sampled["temperature"] == 1.0
    assert sum(sampled["reasons"].values()) == 9
    assert 0.0 <= sampled["pass_at_k"] <= 1.0
    with pytest.raises(ValueError, match="k must be at least 1"):
        pass_at_k(model, tok, tasks, k=0)
