"""A one-shot command that starts an embedded server for itself (gc, train, eval, replay)
prints its own output only: the server's start and stop are `oopav up`'s to announce."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_gc_on_a_fresh_data_dir_prints_no_server_log_lines(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OOPAV_NATS_URL", "OOPAV_LOG_LEVEL")}
    proc = subprocess.run(
        [sys.executable, "-m", "oopav.cli", "--data-dir", str(tmp_path / "d"), "gc"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "removed 0 workspace(s)"
    assert "nats_started" not in proc.stderr and "nats_stopped" not in proc.stderr, proc.stderr


def test_status_starts_the_embedded_server_on_demand_when_a_store_exists(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OOPAV_NATS_URL", "OOPAV_LOG_LEVEL")}
    data = tmp_path / "d"

    def status() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "oopav.cli", "--data-dir", str(data), "status"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    nothing = status()
    assert nothing.returncode == 1
    assert nothing.stderr.strip().startswith("error: no NATS server and no embedded store yet")
    # gc leaves the embedded store behind, as `oopav run` does.
    gc = subprocess.run(
        [sys.executable, "-m", "oopav.cli", "--data-dir", str(data), "gc"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gc.returncode == 0, gc.stderr
    proc = status()
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.endswith("(embedded, started for this command)"), proc.stdout
    assert any(line.startswith("OOPAV_EVENTS ") for line in proc.stdout.splitlines()), proc.stdout
    assert "nats_started" not in proc.stderr, proc.stderr
