"""oopav's pytest plugin for affected tests first (issue 28 §2), in a real pytest process: the
named files' tests run first; a failure among them stops the run after them (the rest is not
run, the stop is said on stderr); without one the whole suite runs, in one process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from oopav.handlers.support.affected import STOPPED, first_argv, stopped
from oopav.sandbox.environment import PLUGINS_HOST, wants_plugins

# Each test appends its name to ran.txt: the order the tests ran in.
LOG = "def ran(name):\n    with open('ran.txt', 'a') as fh:\n        fh.write(name + '\\n')\n"


def _ran(root: Path) -> list[str]:
    log = root / "ran.txt"
    return log.read_text().split() if log.exists() else []


def _suite(root: Path, broken: bool) -> Path:
    (root / "tests").mkdir(parents=True)
    for name in ("test_a", "test_b", "test_c"):
        (root / "tests" / f"{name}.py").write_text(
            f"{LOG}\ndef test_{name}_1():\n    ran('{name}_1')\n\n"
            f"def test_{name}_2():\n    ran('{name}_2')\n"
        )
    if broken:
        (root / "tests" / "test_c.py").write_text(
            f"{LOG}\ndef test_c_1():\n    assert False\n\ndef test_c_2():\n    ran('c_2')\n"
        )
    return root


def _run(root: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PLUGINS_HOST), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable if a == "python" else a for a in argv],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


BASE = ["python", "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests"]


def test_the_named_files_run_first_and_a_failure_stops_the_run_after_them(tmp_path: Path) -> None:
    argv = first_argv(BASE, ["tests/test_c.py"])
    assert wants_plugins(argv) and not wants_plugins(BASE)
    proc = _run(_suite(tmp_path, broken=True), argv)
    assert proc.returncode == 1
    ran = _ran(tmp_path)
    # test_c's second test still runs (all the affected tests' failures are reported); the
    # other files never start.
    assert ran == ["c_2"], proc.stdout
    assert "test_c.py::test_c_1 FAILED" in proc.stdout
    assert "test_a.py" not in proc.stdout
    assert f"{STOPPED}: 1 failure(s) in the affected tests; 4 other test(s) not run" in proc.stderr


def test_without_a_failure_the_whole_suite_runs_once_affected_first(tmp_path: Path) -> None:
    proc = _run(_suite(tmp_path, broken=False), first_argv(BASE, ["tests/test_b.py"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = _ran(tmp_path)
    assert ran == ["test_b_1", "test_b_2", "test_a_1", "test_a_2", "test_c_1", "test_c_2"], (
        proc.stdout
    )
    assert STOPPED not in proc.stderr


def test_stopped_reads_the_plugins_line() -> None:
    from oopav.events.catalog import ExecRecord

    rec = ExecRecord(key="k", purpose="gate_tests", argv=["pytest"], exit_code=1)
    assert not stopped(rec)
    line = f"{STOPPED}: 2 failure(s) in the affected tests; 9 other test(s) not run\n"
    assert stopped(
        ExecRecord(key="k", purpose="gate_tests", argv=["pytest"], exit_code=1, stderr_tail=line)
    )
    # The plugin spells the line itself (it cannot import oopav): both spellings agree.
    assert f'STOPPED = "{STOPPED}"' in (PLUGINS_HOST / "oopav_first.py").read_text()
