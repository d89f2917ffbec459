"""The short form of bench/learning.py: SFT off the stream raises held-out reward and exact."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("trl")
BENCH = Path(__file__).resolve().parents[2] / "bench" / "learning.py"


def test_short_learning_bench_reward_and_exact_rise(tmp_path: Path) -> None:
    import asyncio

    spec = importlib.util.spec_from_file_location("bench_learning", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = asyncio.run(bench.run(short=True, workdir=tmp_path))
    a = figures["a"]
    assert figures["tasks"]["overlap_sources"] == 0  # held-out tasks come from unseen files
    assert figures["dataset"]["records"] > 100  # the SFT data came through the stream export
    before, after = a["before"], a["after"]
    assert after["reward"] > before["reward"] + 0.2
    assert after["exact"] > before["exact"]
    # Validity and correctness are separate figures: exact cannot exceed validity.
    assert after["exact"] <= after["valid"]
    assert figures["runs_on_stream"] == 1
