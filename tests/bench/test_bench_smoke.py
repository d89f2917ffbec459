"""Every bench script runs end to end in its ``--quick`` form and reports its targets.

No timing is asserted (the figures of a quick run mean nothing); what would break is a bench
that crashes, or one that stops printing a verdict per target."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
VERDICT = re.compile(r"\s(PASS|MISS)$", re.M)

sys.path.insert(0, str(BENCH))
from _harness import Figure, report  # noqa: E402


def run_quick(script: str, *extra: str, timeout: float = 240) -> str:
    env = {
        **os.environ,
        "OOPAV_LOG_LEVEL": "WARNING",
        "PYTHONPATH": os.pathsep.join(
            [str(BENCH.parent / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize(
    ("script", "needs"),
    [
        ("bus.py", None),
        ("sandbox.py", None),
        ("loop.py", None),
        ("context.py", None),
        ("history.py", None),
        ("models.py", "xgrammar"),
        ("grammar.py", "xgrammar"),
    ],
)
def test_bench_quick_prints_verdicts(script: str, needs: str | None) -> None:
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed (the [train] extra)")
    out = run_quick(script)
    assert "(median of 1 run, spread min-max)" in out
    assert VERDICT.search(out), out[-2000:]
    assert re.search(r"^targets: \d+/\d+ PASS$", out, re.M), out[-2000:]


def test_memory_bench_quick_reports_the_rss_ratio_with_a_verdict() -> None:
    out = run_quick("load.py", "--memory", "1000")
    assert "(median of 1 run, spread min-max)" in out
    assert re.search(r"RSS after 20 / after 10 .* target <= 1.50x  (PASS|MISS)$", out, re.M), out
    assert re.search(r"sessions that succeeded\s+20\b", out), out


def test_verdict_is_taken_on_the_median_not_the_best_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fig = Figure("x", "ratio", "x", 2.5)
    summary = report(
        "t",
        [fig, Figure("ms", "latency", "ms", 50.0, higher=False)],
        [
            {"x": 3.0, "ms": 10.0},
            {"x": 2.0, "ms": 60.0},
            {"x": 2.1, "ms": 70.0},
        ],
    )
    out = capsys.readouterr().out
    assert summary.missed == ["ratio", "latency"]  # one lucky run of three is not a pass
    assert "(2.00-3.00)" in out and "target >= 2.50x  MISS" in out
    assert "target <= 50.00 ms  MISS" in out


def test_learner_bench_quick_reports_landing_and_flatness() -> None:
    out = run_quick("learner.py")
    assert re.search(r"^target a new session lands <= 1 s: .* -> (PASS|MISS)$", out, re.M), out
    assert re.search(r"^target learner CPU/session flat .* -> (PASS|MISS)$", out, re.M), out


def test_real_tests_load_bench_quick_reuses_the_baseline() -> None:
    out = run_quick("load.py", "--real-tests", timeout=600)
    assert re.search(r"^reuse\s+4 sessions .* baseline reused 3$", out, re.M), out
    assert re.search(r"^target sessions/s >= 5 with baseline reuse: .* -> (PASS|MISS);", out, re.M)


def test_heldout_learning_bench_quick_checks_the_tokenizer_and_reports_intervals() -> None:
    """bench/heldout.py (issue 25, item 5): the tokenizer sees no held-out text, every rate
    carries an interval, validity and correctness are apart, and the target has a verdict."""
    if importlib.util.find_spec("trl") is None:
        pytest.skip("trl is not installed (the [train] extra)")
    out = run_quick("heldout.py", timeout=600)
    assert "tokenizer on" in out and "{'hidden_answers': 0, 'test_prompts': 0}" in out, out
    assert "| policy, tasks | n | valid | applied but wrong | exact |" in out
    # Every rate is printed with its Wilson interval and its counts.
    assert re.search(
        r"\| SFT, shown families \| \d+ \| [\d.]+% \[[\d.]+, [\d.]+\] \(\d+/\d+\)", out
    )
    assert re.search(r"RFT gain .* points \[[-+][\d.]+, [-+][\d.]+\]; control", out), out
    assert VERDICT.search(out), out[-2000:]


def test_train_speed_quick_prints_the_cpu_figure_and_leaves_out_cuda_without_one() -> None:
    pytest.importorskip("trl")
    import torch

    out = run_quick("train_speed.py")
    assert re.search(r"^  CPU, 4 steps\s+\d+\.\d\d steps/s .*info$", out, re.M), out[-2000:]
    if not torch.cuda.is_available():
        assert re.search(r"^  CUDA / CPU\s+\(not measured\)$", out, re.M), out[-2000:]
    else:
        assert re.search(r"^  CUDA / CPU .* target >= 2.00x  (PASS|MISS)$", out, re.M), out
    assert re.search(r"^targets: \d+/\d+ PASS$", out, re.M), out[-2000:]
