"""bench/flywheel.py ``--gen0-from WORKDIR`` (issue 25): generation 0's data of an earlier run
are reused and generation 1 is trained anew on them (e.g. more steps), without running
generation 0's sessions again; ``--gen1-from`` reuses the checkpoint too."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import flywheel  # noqa: E402


def _dataset(path: Path, count: int) -> None:
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"format": "sft", "count": count}))


def test_reuse_gen0_takes_the_minimal_rules_data_when_asked(tmp_path: Path) -> None:
    _dataset(tmp_path / "data-gen0", 7)
    _dataset(tmp_path / "data-gen0-min", 5)
    assert flywheel.reuse_gen0(tmp_path, True) == (tmp_path / "data-gen0-min", 5)
    assert flywheel.reuse_gen0(tmp_path, False) == (tmp_path / "data-gen0", 7)
    with pytest.raises(SystemExit, match=r"no data-gen0-min/manifest\.json"):
        flywheel.reuse_gen0(tmp_path / "nothing", True)


def test_gen0_from_trains_generation_1_anew_on_the_earlier_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "earlier"
    _dataset(src / "data-gen0-min", 5)
    calls: dict[str, Any] = {}

    async def no_sessions(*a: Any, **k: Any) -> Any:
        raise AssertionError("generation 0's sessions ran again")

    def build(out: Path, dataset: Path, shape: str, seed: int, *rest: Any) -> str:
        calls["build"] = (dataset, shape, seed)
        return "base"

    def train(out: Path, dataset: Path, steps: int, model: str, *rest: Any) -> str:
        calls["train"] = (out, dataset, steps, model)
        return str(out / "final")

    monkeypatch.setattr(flywheel, "run_sessions", no_sessions)
    monkeypatch.setattr(flywheel, "build", build)
    monkeypatch.setattr(flywheel, "train", train)
    work = tmp_path / "work"
    args = argparse.Namespace(
        workdir=str(work), tasks=4, pool=0, heldout=2, heldout_b=2, seed=0,
        families="rename_call", shape="small", steps=6000, pretok="code", prompt_loss=True,
        augment=0, augment_parts="all", minimal_rules=True, copy_names=None, gen1_from=None,
        gen0_from=str(src), lr=2e-3, pass_from=None, pass_at="", pass_on="b", pass_only=True,
        gen1_b=False, seed1=1,
    )  # fmt: skip
    f = asyncio.run(flywheel.main_async(args))
    # --seed1: another draw of generation 1 (its initialisation and data order), same tasks
    assert calls["build"] == (src / "data-gen0-min", "small", 1) and f["seed1"] == 1
    assert calls["train"] == (work / "gen1", src / "data-gen0-min", 6000, "base")
    assert f["gen0"] == {"reused": str(src), "records": 5}
    assert "gen1_train" in f


def test_gen1_b_with_pass_only_runs_generation_1_on_held_out_b(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--pass-only --gen1-b``: generation 1's own sessions on B beside its pass@k there, and
    the headroom (pass@max k - generation 1's success on B)."""
    src = tmp_path / "earlier"
    _dataset(src / "data-gen0-min", 5)
    (src / "gen1" / "final").mkdir(parents=True)
    (src / "gen1" / "final" / "config.json").write_text("{}")
    (src / "gen1" / "final" / "oopav_answer_words.json").write_text('{"words": []}')
    seen: dict[str, Any] = {}

    async def evaluate(url: str, work: Path, name: str, tasks: list[Any], ck: str, *a: Any) -> Any:
        seen[name] = (len(tasks), ck)
        return {"n": len(tasks), "success": 1}

    async def pass_at(url: str, work: Path, name: str, tasks: list[Any], *a: Any) -> Any:
        return {"pass_at": {"1": {"k": 1}, "8": {"k": 2}}}

    monkeypatch.setattr(flywheel, "evaluate", evaluate)
    monkeypatch.setattr(flywheel, "pass_at", pass_at)
    args = argparse.Namespace(
        workdir=str(tmp_path / "work"), tasks=40, pool=0, heldout=2, heldout_b=2, seed=0,
        families="rename_call", shape="small", steps=60, pretok="code", prompt_loss=True,
        augment=0, augment_parts="all", minimal_rules=True, copy_names=None, gen1_from=str(src),
        gen0_from=None, lr=2e-3, pass_from=None, pass_at="1,8", pass_on="b", pass_only=True,
        gen1_b=True, verify=0,
    )  # fmt: skip
    f = asyncio.run(flywheel.main_async(args))
    assert seen == {"gen1-B": (2, str(src / "gen1" / "final"))}
    assert f["gen1_b"] == {"n": 2, "success": 1}
    assert f["headroom_b"] == 50.0
    args.gen1_b = False
    seen.clear()
    f = asyncio.run(flywheel.main_async(args))
    assert seen == {} and "gen1_b" not in f


def test_gen2_data_from_trains_another_draw_of_the_step_without_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--gen2-data-from WORKDIR``: generation 2 trains on the records an earlier run built
    (its pool sessions are not run again); the control on generation 0's data; both from the
    same generation 1, with the ``--seed2`` draw; B is evaluated for all three."""
    src = tmp_path / "earlier"
    _dataset(src / "data-gen0-min", 5)
    _dataset(src / "data-gen2", 13)
    (src / "gen1" / "final").mkdir(parents=True)
    (src / "gen1" / "final" / "config.json").write_text("{}")
    (src / "gen1" / "final" / "oopav_answer_words.json").write_text('{"words": []}')
    seen: dict[str, Any] = {}
    trained: dict[str, Any] = {}

    async def evaluate(url: str, work: Path, name: str, tasks: list[Any], ck: str, *a: Any) -> Any:
        seen[name] = (len(tasks), ck)
        # Two tasks: generation 1 and the control solve the first, generation 2 both.
        solved = {"gen2": [True, True], "control": [True, False]}.get(name, [True, False])
        ids = [f"{name}-{i}" for i in range(len(tasks))]
        won = [sid for sid, ok in zip(ids, solved, strict=False) if ok]
        return {"n": len(tasks), "success": len(won), "sids": won, "session_ids": ids}

    def train(
        out: Path, dataset: Path, steps: int, model: str, lr: float, seed: int, *r: Any, **k: Any
    ) -> str:
        trained[out.name] = (dataset, steps, model, seed)
        return str(out / "final")

    def from_recipe(cfg: Any) -> str:
        trained[Path(cfg.output_dir).name] = (
            Path(cfg.dataset),
            cfg.max_steps,
            cfg.model,
            cfg.seed,
            cfg.threads,
        )
        return str(Path(cfg.output_dir) / "final")

    class Side:
        """The control arm's process (side by side with generation 2's training)."""

        def __init__(self, cfg: Any) -> None:
            self.path = from_recipe(cfg)

        def result(self, deadline_s: float) -> str:
            return self.path

        def stop(self) -> None:
            pass

    monkeypatch.setattr(flywheel, "evaluate", evaluate)
    monkeypatch.setattr(flywheel, "train", train)
    monkeypatch.setattr(flywheel, "training_process", Side)
    args = argparse.Namespace(
        workdir=str(tmp_path / "work"), tasks=40, pool=600, heldout=2, heldout_b=2, seed=0,
        families="rename_call", shape="small", steps=60, steps2=30, pretok="code",
        prompt_loss=True, augment=0, augment_parts="all", minimal_rules=True, copy_names=None,
        gen1_from=str(src), gen0_from=None, lr=2e-3, lr2=5e-4, pass_from=None, pass_at="",
        pass_on="b", pass_only=False, gen1_b=False, verify=0, gen2=True,
        gen2_data_from=str(src), seed2=3, negatives=0.0, dpo=0.0, failure_positives=0,
        expert=0, gen1_b_no_feedback=False, no_feedback=False, negative_tokens="all",
        dpo_beta=0.1,
    )  # fmt: skip
    ck1 = str(src / "gen1" / "final")
    control = (src / "data-gen0-min", 30, ck1, 3)
    for serial in (False, True):  # side by side (the default) and --serial-arms alike
        args.serial_arms = serial
        seen.clear()
        trained.clear()
        f = asyncio.run(flywheel.main_async(args))
        assert "gen1-pool" not in seen  # the pool is not run again
        assert set(seen) == {"gen1", "gen1-B", "gen2", "control"}
        assert trained == {
            "gen2": (src / "data-gen2", 30, ck1, 3),
            # Side by side, in its own process on one thread (the second core, not gen 2's).
            "control": control if serial else (*control, 1),
        }
        assert f["gen2_records"] == 13 and f["gen2_gain"] == 50.0 and f["control_gain"] == 0.0
        # Task by task against generation 1 on B: generation 2 wins the second task.
        assert f["gen2_paired"] == {"won": 1, "lost": 0, "p": 1.0}
        assert f["control_paired"] == {"won": 0, "lost": 0, "p": 1.0}
    args.negatives = 0.1
    with pytest.raises(SystemExit, match="reuses generation 2's records only"):
        asyncio.run(flywheel.main_async(args))
