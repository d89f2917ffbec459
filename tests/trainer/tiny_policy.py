"""The trainer tests' shared set-up: a small synthetic task set and a tiny policy built on it
(CPU, seconds), and reading a run's events back from the stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def make_tasks(factory: pytest.TempPathFactory, n: int, seed: int, name: str = "tasks") -> Path:
    from oopav.trainer.tasks import generate, write_tasks

    out = factory.mktemp(name)
    write_tasks(generate(n, seed=seed, holdout=0.3, families=("rename_call", "swap_args")), out)
    return out


def make_policy(
    factory: pytest.TempPathFactory, tasks_dir: Path, hidden: int = 32, name: str = "base"
) -> Path:
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.tasks import load_tasks, target_text

    texts = [t.instruction + t.pre + target_text(t.rule) for t in load_tasks(tasks_dir)]
    shape = PolicyShape(
        vocab_size=400,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        layers=1,
        heads=2,
        kv_heads=1,
    )
    return build_policy(factory.mktemp(name) / "m", texts, shape=shape)


def policy_fixtures(
    n_tasks: int,
    seed: int,
    *,
    hidden: int = 32,
    tasks_name: str = "tasks",
    model_name: str = "base",
    model_fixture: str = "base_model",
) -> tuple[Any, Any]:
    """A module's two fixtures, built once per module: ``tasks_dir`` (``n_tasks`` synthetic
    tasks) and the tiny policy built on them (fixture ``model_fixture``). Assign both at module
    level: ``tasks_dir, base_model = policy_fixtures(40, seed=5)``."""

    @pytest.fixture(scope="module", name="tasks_dir")
    def tasks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return make_tasks(tmp_path_factory, n_tasks, seed=seed, name=tasks_name)

    @pytest.fixture(scope="module", name=model_fixture)
    def model(tmp_path_factory: pytest.TempPathFactory, tasks_dir: Path) -> Path:
        return make_policy(tmp_path_factory, tasks_dir, hidden=hidden, name=model_name)

    return tasks_dir, model


def recipe_config(
    output_dir: Path, model: Path, tasks_dir: Path, **settings: Any
) -> dict[str, Any]:
    """A training recipe's settings: where it writes, the policy it starts from, its tasks and
    ``settings``."""
    return {"output_dir": str(output_dir), "model": str(model), "tasks": str(tasks_dir), **settings}


# The ``recipe`` fixture (conftest.py): ``recipe(out, **settings)`` → a recipe's settings.
Recipe = Callable[..., dict[str, Any]]


def read_run(nats_url: str, run_id: str) -> list[Any]:
    from oopav.bus.store import EventStore, connect

    async def go() -> list[Any]:
        nc = await connect(nats_url, name="test")
        try:
            return [e for _, e in await EventStore(nc).read("run", run_id)]
        finally:
            await nc.close()

    return asyncio.run(go())


def invoke(nats_url: str, data_dir: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from oopav.cli import cli

    return CliRunner().invoke(
        cli, ["--nats-url", nats_url, "--data-dir", str(data_dir), *args], catch_exceptions=False
    )


def last_json(text: str) -> dict[str, Any]:
    import json

    for line in reversed(text.splitlines()):
        if line.startswith('{"'):
            return dict(json.loads(line))
    raise AssertionError(f"no JSON result in {text[-500:]!r}")


def train(
    nats_url: str, tmp_path: Path, recipe: str, cfg: dict[str, Any]
) -> tuple[dict[str, Any], list[Any]]:
    """`oopav train RECIPE --config` with ``cfg``; the run's result line and its events."""
    import yaml

    config = tmp_path / f"{recipe}.yaml"
    config.write_text(yaml.safe_dump(cfg))
    r = invoke(nats_url, tmp_path / "data", "train", recipe, "--config", str(config))
    assert r.exit_code == 0, r.output
    result = last_json(r.stdout)
    return result, read_run(nats_url, result["run_id"])


# Datasets of refused answers and preference pairs (the negatives and preference tests, and
# the GPU test that trains with every loss term at once).


def write_negatives(out: Path, recs: list[dict[str, Any]], fmt: str = "negatives") -> Path:
    """A dataset directory of format ``fmt`` (one shard and its manifest) holding ``recs``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{fmt}-00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    manifest = {"format": fmt, "count": len(recs), "shards": [{"path": f"{fmt}-00000.jsonl"}]}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def _renamed_wrong(tasks: Path, n: int) -> list[tuple[list[dict[str, str]], str, str]]:
    """(prompt, answer, wrong answer) of the train split's first ``n`` rename tasks: the wrong
    answer has the NEW name where the old one belongs (generation 1's commonest mistake)."""
    from oopav.trainer.tasks import load_tasks, target_text, task_messages

    out = []
    for t in load_tasks(tasks, "train"):
        if t.family != "rename_call" or len(out) == n:
            continue
        good = target_text(t.rule)
        old, new = t.rule["pattern"].split("(")[0], t.rule["rewrite"].split("(")[0]
        bad = good.replace(f'"pattern":"{old}(', f'"pattern":"{new}(')
        assert bad != good
        out.append((task_messages(t.instruction, t.pre), good, bad))
    return out


def wrong_answers(tasks: Path, n: int) -> list[dict[str, Any]]:
    """Negatives records: each rename task's prompt and its wrong answer."""
    return [{"prompt": p, "rejected": bad, "why": "x"} for p, _, bad in _renamed_wrong(tasks, n)]


def write_pairs(out: Path, recs: list[dict[str, Any]]) -> Path:
    return write_negatives(out, recs, "pairs")


def task_pairs(tasks: Path, n: int) -> list[dict[str, Any]]:
    """Pairs records: chosen the task's answer, rejected the wrong one, at the same prompt."""
    return [
        {
            "prompt": p,
            "chosen": [{"role": "assistant", "content": good}],
            "rejected": [{"role": "assistant", "content": bad}],
        }
        for p, good, bad in _renamed_wrong(tasks, n)
    ]
