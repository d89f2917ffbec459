"""bench/flywheel.py ``--pool-b N`` (issue 25): transductive self-training — unlabelled tasks on
held-out B's own source files, never one of B's tasks (no shared (file, target name)); generation
1's verified sessions there join generation 2's data, never the control's; with ``--pass-at``
and ``--pass-on pool-b`` they are sampled as groups instead."""

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

FAMILIES = ("rename_call", "rename_method", "rename_attr")


def _held_b(n: int = 4) -> list[Any]:
    from oopav.trainer.tasks import generate

    got = generate(228, seed=0, holdout=0.5, families=FAMILIES)
    _, held_b = flywheel.split_heldout([t for t in got.tasks if t.split == "test"], 2, n)
    assert held_b
    return held_b


def test_target_names_are_the_patterns_identifiers_without_metavariables() -> None:
    def task(pattern: str) -> Any:
        return argparse.Namespace(rule={"pattern": pattern, "rule": None})

    assert flywheel.target_names(task("$OBJ.update($$$ARGS)")) == {"update"}
    assert flywheel.target_names(task("len($X)")) == {"len"}
    assert flywheel.target_names(task("$OBJ._extra_reducers")) == {"_extra_reducers"}


def test_pool_on_files_is_on_b_files_and_never_one_of_b_tasks() -> None:
    held_b = _held_b()
    pool = flywheel.pool_on_files(held_b, 12, FAMILIES, 0, per_name=2, max_seeds=20)
    assert pool, "no unlabelled task on B's files"
    b_sources = {t.source for t in held_b}
    b_keys = {(t.source, n) for t in held_b for n in flywheel.target_names(t)}
    assert {t.source for t in pool} <= b_sources
    assert not {t.id for t in pool} & {t.id for t in held_b}
    for t in pool:
        assert not {(t.source, n) for n in flywheel.target_names(t)} & b_keys
    assert len({t.id for t in pool}) == len(pool)
    # At most per_name pool tasks share one (file, name).
    keys = [(t.source, n) for t in pool for n in flywheel.target_names(t)]
    assert max(keys.count(k) for k in keys) <= 2
    assert flywheel.pool_on_files(held_b, 0, FAMILIES, 0) == []


def _args(tmp_path: Path, src: Path, **over: Any) -> argparse.Namespace:
    base = dict(
        workdir=str(tmp_path / "work"), tasks=70, pool=0, pool_b=5, heldout=2, heldout_b=4,
        seed=0, families=",".join(FAMILIES), shape="small", steps=60, steps2=60, pretok="code",
        prompt_loss=True, augment=0, augment_parts="all", minimal_rules=True, copy_names=None,
        gen1_from=str(src), gen0_from=None, lr=2e-3, lr2=5e-4, pass_from=None, pass_at="",
        pass_on="b", pass_only=False, gen1_b=False, verify=0, gen2=True, expert=0,
        explore_iterations=None, replay=0, failure_positives=0, feedback_positives=0, star=0,
        negatives=0.0, negatives_from="all", negative_tokens="all", dpo=0.0, dpo_beta=0.1,
        seed2=None, gen1_b_no_feedback=False, no_feedback=False,
        # Both arms through `train` (faked here); side by side, the control trains in its own
        # process (tests/bench/test_flywheel_gen0_from.py).
        serial_arms=True,
    )  # fmt: skip
    return argparse.Namespace(**(base | over))


def _earlier(tmp_path: Path) -> Path:
    src = tmp_path / "earlier"
    (src / "data-gen0-min").mkdir(parents=True)
    (src / "data-gen0-min" / "manifest.json").write_text(json.dumps({"count": 5}))
    (src / "gen1" / "final").mkdir(parents=True)
    (src / "gen1" / "final" / "config.json").write_text("{}")
    (src / "gen1" / "final" / "oopav_answer_words.json").write_text('{"words": []}')
    return src


def test_pool_b_sessions_join_generation_2_and_never_the_control(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _earlier(tmp_path)
    evaluated: dict[str, list[Any]] = {}
    exported: list[set[str]] = []
    trained: dict[str, Path] = {}
    merged: list[tuple[Path, ...]] = []

    async def evaluate(url: str, work: Path, name: str, tasks: list[Any], *a: Any) -> Any:
        evaluated[name] = tasks
        return {"n": len(tasks), "success": 1, "sids": [f"{name}:ok"],
                "session_ids": [f"{name}:ok", f"{name}:no"], "retried_sids": []}  # fmt: skip

    async def export_compact(url: str, out: Path, sids: set[str] | None = None) -> int:
        exported.append(set(sids or ()))
        return len(sids or ())

    def merge(out: Path, *dirs: Path) -> int:
        merged.append(dirs)
        return 7

    def train(out: Path, dataset: Path, *rest: Any, **kw: Any) -> str:
        trained[out.name] = dataset
        return str(out / "final")

    monkeypatch.setattr(flywheel, "evaluate", evaluate)
    monkeypatch.setattr(flywheel, "export_compact", export_compact)
    monkeypatch.setattr(flywheel, "merge", merge)
    monkeypatch.setattr(flywheel, "train", train)
    f = asyncio.run(flywheel.main_async(_args(tmp_path, src)))
    assert f["tasks"]["pool_b"] == 5 and len(f["held_b_ids"]) == 4
    pool_b = evaluated["gen1-poolB"]
    held_b = evaluated["gen1-B"]
    assert [t.id for t in held_b] == f["held_b_ids"]
    assert {t.source for t in pool_b} <= {t.source for t in held_b}
    assert not {t.id for t in pool_b} & set(f["held_b_ids"])
    # Generation 1's verified sessions on B's files join generation 2's own data.
    assert exported == [{"gen1:ok", "gen1-poolB:ok"}]
    work = tmp_path / "work"
    assert trained == {"gen2": work / "data-gen2", "control": src / "data-gen0-min"}
    assert merged == [(src / "data-gen0-min", work / "data-gen1")]
    assert "gen1_pool_b" in f
    # Without the option, no task on B's files is attempted.
    evaluated.clear()
    exported.clear()
    f = asyncio.run(flywheel.main_async(_args(tmp_path, src, pool_b=0)))
    assert "gen1-poolB" not in evaluated and exported == [{"gen1:ok"}]
    assert f["tasks"]["pool_b"] == 0


def test_pass_on_pool_b_samples_the_pool_b_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _earlier(tmp_path)
    sampled: dict[str, int] = {}

    async def pass_at(url: str, work: Path, name: str, tasks: list[Any], *a: Any) -> Any:
        sampled[name] = len(tasks)
        return {"pass_at": {"1": {"k": 1}}, "verified": [[] for _ in tasks]}

    monkeypatch.setattr(flywheel, "pass_at", pass_at)
    args = _args(tmp_path, src, pass_at="1,8", pass_on="pool-b", pass_only=True, gen2=False)
    f = asyncio.run(flywheel.main_async(args))
    assert sampled == {"pool-B": 5}
    assert f["pass_at"]["pool_b"]["verified"] == [[]] * 5
