"""Racing environment builds (issue 29, item 3): several processes building the same uv
environment at once all get the one finished environment; none fails with "already exists"
or "File exists", and the environment under the cache key is never half-built.

The repository uses an in-tree PEP 660 backend (no build requirements), and uv runs offline, so
the test needs no package index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

BACKEND = """
import base64, hashlib, os, zipfile

NAME, VERSION = "racer", "0.1"
DIST = f"{NAME}-{VERSION}.dist-info"


def _record(zf, entries):
    lines = []
    for path, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(data)}")
        zf.writestr(path, data)
    lines.append(f"{DIST}/RECORD,,")
    zf.writestr(f"{DIST}/RECORD", "\\n".join(lines) + "\\n")


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    here = os.path.dirname(os.path.abspath(__file__))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        _record(zf, [
            (f"{NAME}.pth", (here + "\\n").encode()),
            (f"{DIST}/METADATA", f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n".encode()),
            (f"{DIST}/WHEEL", b"Wheel-Version: 1.0\\nGenerator: racer\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"),
        ])
    return name


def get_requires_for_build_editable(config_settings=None):
    return []


build_wheel = build_editable
get_requires_for_build_wheel = get_requires_for_build_editable
"""

PYPROJECT = """
[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]

[project]
name = "racer"
version = "0.1"
"""

CHILD = """
import json, os, sys, time
from pathlib import Path
from oopav.sandbox.environment import build_uv
repo, cache, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
deadline = time.monotonic() + 60
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.005)
try:
    venv = build_uv(repo, {}, cache, timeout_s=120)
    print(json.dumps({"venv": str(venv)}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "racer").mkdir(parents=True)
    (repo / "racer" / "__init__.py").write_text("VALUE = 42\n")
    (repo / "backend.py").write_text(BACKEND)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    return repo


def _race(repo: Path, cache: Path, go: Path, n: int) -> list[dict[str, str]]:
    env = {**os.environ, "UV_OFFLINE": "1", "UV_NO_PROGRESS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(repo), str(cache), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(n)
    ]
    time.sleep(0.5)  # let every child reach the starting line
    go.write_text("go")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        assert lines, (out, err)
        results.append(json.loads(lines[-1]))
    return results


def test_two_processes_build_one_environment(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cache = tmp_path / "envs"
    results = _race(repo, cache, tmp_path / "go", 3)
    errors = [r["error"] for r in results if "error" in r]
    assert not errors, errors
    venvs = {r["venv"] for r in results}
    assert len(venvs) == 1, venvs
    venv = Path(venvs.pop())
    assert (venv / ".oopav-built").is_file()
    # The finished environment works: the project is installed editable.
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import racer; print(racer.VALUE)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.strip() == "42", proc.stderr
    # No half-built leftovers beside it.
    assert [p.name for p in cache.iterdir() if ".link-" in p.name] == []
    assert len(list((cache / "builds").iterdir())) == 1
    # A later build is a cache hit on the same environment.
    again = _race(repo, cache, tmp_path / "go2", 2)
    assert {r.get("venv") for r in again} == {str(venv)}


def test_a_failed_build_publishes_nothing_and_the_next_one_succeeds(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    good = (repo / "backend.py").read_text()
    (repo / "backend.py").write_text("raise SystemExit('broken backend')\n")
    cache = tmp_path / "envs"
    [failed] = _race(repo, cache, tmp_path / "go", 1)
    assert "building the project environment failed" in failed.get("error", ""), failed
    assert not any(p.is_symlink() for p in cache.iterdir())
    assert list((cache / "builds").iterdir()) == []
    (repo / "backend.py").write_text(good)  # same key: backend.py is not a dependency file
    [ok] = _race(repo, cache, tmp_path / "go2", 1)
    assert "venv" in ok and Path(ok["venv"], ".oopav-built").is_file(), ok
