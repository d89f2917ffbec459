"""Runaway commands (issue 29, item 5): a memory limit for the whole sandboxed process tree,
and a per-session artifact budget."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from oopav.sandbox import memory
from oopav.sandbox.artifacts import tree_size
from oopav.sandbox.environment import EnvironmentError_, limits_for, normalize_spec
from oopav.sandbox.limits import Limits, MiB
from oopav.sandbox.runner import SandboxConfig, default_config, run_sandboxed

PY = "python"
# Touches every page (b"x" * n writes them; a bytearray of zeros may not).
HOG = "import sys; a = b'x' * ({mb} << 20); print('allocated', len(a)); sys.stdout.flush()"
# Four processes of 100 MiB each: every one is under any per-process cap.
FORKS = (
    "import os, time\n"
    "kids = []\n"
    "for _ in range(4):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        a = b'x' * (100 << 20); time.sleep(3); os._exit(0)\n"
    "    kids.append(pid)\n"
    "codes = [os.waitpid(p, 0)[1] for p in kids]\n"
    "print('children', codes)\n"
)


def run(argv: list[str], ws: Path, art: Path, cfg: SandboxConfig, **kw: object):
    return run_sandboxed(argv, workspace=ws, artifacts_dir=art, config=cfg, **kw)  # type: ignore[arg-type]


@pytest.fixture
def memcg() -> str:
    kind, detail = memory.support()
    if kind is None:
        pytest.skip(f"this host has no memory cgroup for us: {detail}")
    return kind


def test_a_memory_hog_is_killed_by_the_tree_limit(workspace, artifacts, settings, memcg):
    # 400 MiB is well under the 4 GiB address-space cap per process: only the tree limit stops it.
    cfg = default_config(settings, limits=Limits(memory_bytes=128 * MiB))
    r = run([PY, "-c", HOG.format(mb=400)], workspace, artifacts, cfg, timeout_s=60)
    assert r.signal == signal.SIGKILL, (r.exit_code, r.stderr_tail)
    assert "allocated" not in r.stdout_tail
    assert "passed the memory limit of 128 MiB" in r.stderr_tail


def test_the_limit_counts_every_process_together(workspace, artifacts, settings, memcg):
    cfg = default_config(settings, limits=Limits(memory_bytes=256 * MiB))
    r = run([PY, "-c", FORKS], workspace, artifacts, cfg, timeout_s=60)
    # At least one child was killed (status 9), though each alone is under the limit.
    assert "children" in r.stdout_tail, r.stderr_tail
    codes = eval(r.stdout_tail.split("children", 1)[1])
    assert any(c & 0x7F == signal.SIGKILL for c in codes), codes
    # Under the limit the same program runs clean.
    ok = run([PY, "-c", FORKS], workspace, artifacts, default_config(settings), timeout_s=60)
    assert "children [0, 0, 0, 0]" in ok.stdout_tail, ok.stderr_tail


def test_a_command_under_the_limit_is_untouched(workspace, artifacts, settings, memcg):
    cfg = default_config(settings, limits=Limits(memory_bytes=512 * MiB))
    r = run([PY, "-c", HOG.format(mb=64)], workspace, artifacts, cfg, timeout_s=60)
    assert r.exit_code == 0 and "allocated" in r.stdout_tail
    assert "memory limit" not in r.stderr_tail


def test_the_session_artifacts_stay_within_their_budget(workspace, artifacts, settings):
    # Each run writes 8 MiB (under the 16 MiB per-file cap); the session may keep 4 MiB.
    cfg = default_config(
        settings,
        limits=Limits(file_size_bytes=16 * MiB, artifacts_bytes=4 * MiB, output_tail_bytes=100),
    )
    flood = [PY, "-c", "import sys; sys.stdout.write(('y' * 1023 + '\\n') * 8192); print('END')"]
    for i in range(3):
        r = run(flood, workspace, artifacts, cfg, timeout_s=60, run_id=f"r{i}")
        assert r.exit_code == 0
        assert r.stdout_bytes == 8 * MiB + 4  # the true size is still reported
        assert r.stdout_tail.endswith("END\n")
        assert tree_size(artifacts) <= 4 * MiB
    kept = (artifacts / "runs" / "r2" / "stdout").read_text()
    assert kept.startswith("[... oopav: ") and "artifact budget" in kept and kept.endswith("END\n")


def test_per_task_limits_come_from_the_environment_spec() -> None:
    spec = normalize_spec({"limits": {"memory_mb": 512, "artifacts_mb": 10}})
    lim = limits_for(Limits(), spec)
    assert lim.memory_bytes == 512 * MiB and lim.artifacts_bytes == 10 * MiB
    assert limits_for(Limits(), {}) == Limits()
    for bad, message in (
        ({"limits": {"memory_gb": 1}}, "unknown environment.limits key 'memory_gb'"),
        ({"limits": {"memory_mb": 1}}, "memory_mb must be a whole number from 16"),
        ({"limits": {"memory_mb": "1G"}}, "memory_mb must be a whole number"),
        ({"limits": [1]}, "environment.limits must be an object"),
    ):
        with pytest.raises(EnvironmentError_, match=message):
            normalize_spec(bad)


def test_doctor_says_when_there_is_no_memory_cgroup(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    from oopav.cli import cli

    r = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "d"), "doctor"])
    line = next(x for x in r.output.splitlines() if "memory limit" in x)
    kind, _ = memory.support()
    assert (line.startswith("ok") and kind in line) if kind else line.startswith("warn")
    monkeypatch.setattr(memory, "ROOT", tmp_path / "no-cgroups")
    r = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "d"), "doctor"])
    line = next(x for x in r.output.splitlines() if "memory limit" in x)
    assert line.startswith("warn") and "no writable memory cgroup" in line, r.output
    assert "per-process address-space cap" in line
