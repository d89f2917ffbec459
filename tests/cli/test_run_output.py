"""`oopav run` as in the quick start, inside a larger git repository (issue 15 §1, §3, issue 16
§4): the timeline only on stderr (logs go to a file, or to stderr with -v), a real test
summary after the tests gate, the workspace removed afterwards (--keep keeps it), and
`oopav apply` changing the user's files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def oopav(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OOPAV_")}
    return subprocess.run(
        [sys.executable, "-m", "oopav.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


def project_in_outer_repo(tmp_path: Path) -> Path:
    outer = tmp_path / "checkout"
    proj = outer / "examples" / "rename_fetch"
    shutil.copytree(
        ROOT / "examples" / "rename_fetch",
        proj,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".ruff_cache"),
    )
    (outer / "README.md").write_text("outer\n")
    git = ["git", "-C", str(outer), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return proj


def test_quick_start_run_then_apply(nc: Any, nats_url: str, tmp_path: Path) -> None:
    proj = project_in_outer_repo(tmp_path)
    data = tmp_path / "data"
    run = oopav(
        "run", "--task", "examples/rename_fetch/task.json",
        "--nats-url", nats_url, "--data-dir", str(data),
        cwd=proj.parents[1],
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith("session ") and first.endswith(": success (completed)"), run.stdout
    sid = first.split()[1].rstrip(":")
    err = run.stderr.splitlines()
    # The log file is named once; no log line reaches the terminal.
    assert err[0].startswith("log: ") and sum(line.startswith("log: ") for line in err) == 1
    log_file = Path(err[0].removeprefix("log: "))
    assert log_file.is_relative_to(data / "logs")
    assert '"event": "consumer_started"' in log_file.read_text()
    assert not [line for line in err if line.lstrip().startswith("{")], run.stderr
    # Every timeline line is one event; the tests gate carries pytest's counts.
    [tests_line] = [line for line in err if "gate_evaluated" in line and "tests:" in line]
    assert re.search(r"\b\d+ passed", tests_line), tests_line
    assert "loop scope" not in run.stderr
    # The workspace is gone; the result is kept for apply.
    assert not (data / "workspaces" / sid).exists()
    assert "workspace removed" in run.stderr

    applied = oopav("apply", sid[:13], "--data-dir", str(data), cwd=proj)
    assert applied.returncode == 0, applied.stderr
    assert "applied 4 file(s)" in applied.stdout
    assert "def fetch_page(" in (proj / "webtool" / "client.py").read_text()
    status = subprocess.run(
        ["git", "-C", str(proj), "status", "--porcelain", "."], capture_output=True, text=True
    ).stdout
    assert len(status.splitlines()) == 4, status


def test_run_verbose_and_keep(nc: Any, nats_url: str, tmp_path: Path) -> None:
    proj = project_in_outer_repo(tmp_path)
    data = tmp_path / "data"
    run = oopav(
        "run", "--task", "task.json", "--keep", "-v",
        "--nats-url", nats_url, "--data-dir", str(data),
        cwd=proj,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "log: " not in run.stderr
    assert '"event": "consumer_started"' in run.stderr  # -v: the log lines on stderr
    [sid] = [p.name for p in (data / "workspaces").iterdir() if p.is_dir() and p.name[0] != "."]
    assert (data / "workspaces" / sid / "webtool" / "client.py").exists()


def test_a_failed_run_does_not_point_at_apply(nc: Any, nats_url: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("def f():\n    return 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    run = oopav(
        "run", "--repo", str(repo), "--test-command", "no-such-command-xyz", "--model", "synth:",
        "Rename f to g", "--nats-url", nats_url, "--data-dir", str(tmp_path / "data"),
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1 and ": failed (completed)" in run.stdout, run.stdout + run.stderr
    # The hint to apply the result was printed after any outcome; a failed session has none.
    [removed] = [line for line in run.stderr.splitlines() if "workspace removed" in line]
    assert "oopav apply" not in removed, removed
    # Nor does apply take its result: the gates refused it. --force is the way to insist.
    sid = run.stdout.split()[1].rstrip(":")
    data = str(tmp_path / "data")
    refused = oopav("apply", sid, "--nats-url", nats_url, "--data-dir", data, cwd=repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"session {sid} ended failed" in refused.stderr, refused.stderr
    assert "--force applies it anyway" in refused.stderr
    assert (repo / "a.py").read_text() == "def f():\n    return 1\n"
    forced = oopav("apply", sid, "--force", "--nats-url", nats_url, "--data-dir", data, cwd=repo)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "did not pass the gates" not in forced.stderr
