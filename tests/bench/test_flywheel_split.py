"""bench/flywheel.py's held-out sets (issue 25): generation 2 trains on generation 1's
sessions of held-out A, so no source file of A may be in B (B measures generation 2)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
from flywheel import split_heldout  # noqa: E402


@dataclass
class T:
    id: str
    source: str


def test_held_out_b_shares_no_file_with_a() -> None:
    held = [T(f"t{i}", f"f{i % 7}.py") for i in range(40)]
    a, b = split_heldout(held, 10, 20)
    assert len(a) == 10 and a == held[:10]
    assert {t.source for t in a}.isdisjoint({t.source for t in b})
    # every file of the pool is in A here (10 tasks over 7 files), so B is empty rather than
    # leaky: a bench with too few files shows n = 0, never a file it trained on
    assert b == []


def test_held_out_b_takes_the_next_tasks_of_other_files() -> None:
    held = [T("a1", "x.py"), T("a2", "y.py"), T("b1", "x.py"), T("b2", "z.py"), T("b3", "w.py")]
    a, b = split_heldout(held, 2, 5)
    assert [t.id for t in a] == ["a1", "a2"]
    assert [t.id for t in b] == ["b2", "b3"]


def test_the_check_passes_only_on_the_expected_code_and_does_not_spell_it_out(
    tmp_path: Path,
) -> None:
    """The loop's compact prompt shows the first file where a name of the instruction occurs:
    a check holding the expected code would put the answer's new name in the prompt."""
    import subprocess

    from flywheel import check_script

    post = "def f(xs):\n    return xs.clear_safe()\n"
    script = check_script(post)
    assert "clear_safe" not in script and "xs" not in script
    (tmp_path / "check_mod.py").write_text(script)

    def passes(code: str) -> bool:
        (tmp_path / "mod.py").write_text(code)
        run = subprocess.run([sys.executable, "check_mod.py"], cwd=tmp_path, timeout=60)
        return run.returncode == 0

    assert passes(
        "def f(xs):\n    # formatting and comments do not matter\n    return xs.clear_safe()"
    )
    assert not passes("def f(xs):\n    return xs.clear()\n")
    assert not passes("def f(xs):\n    return xs.clear_fast()\n")


def test_a_failure_state_on_a_held_out_file_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    """--failure-positives runs synth: with the task's example at generation 1's failure
    states: only on training files — a held-out file's task would put its answer in generation
    2's data. The guard stops the phase before any session or export."""
    import asyncio

    import pytest

    from flywheel import failure_states

    failed = [("s1", T("train-1", "train.py")), ("s2", T("held-1", "held.py"))]
    with pytest.raises(SystemExit, match="failure states on held-out files: \\['held-1'\\]"):
        asyncio.run(failure_states("nats://127.0.0.1:1", tmp_path, failed, 4, False, {"held.py"}))
    assert list(tmp_path.iterdir()) == []  # no repository made, nothing exported
