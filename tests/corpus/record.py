"""Re-record the replay corpus with the current code: ``python tests/corpus/record.py``.

Each case runs the project's own example (``examples/rename_fetch``) through `oopav run` in a
fresh data dir, with a scripted policy or ``synth:``, and is exported with `oopav session
export` to ``tests/corpus/sessions/<case>.tar.gz``. ``tests/history/test_corpus.py`` imports
them and runs `oopav replay --all --verify`: a change of behaviour shows as a named divergence
(handler and rule). Re-record when the change is intended, and commit the archives.

The project's tests run in this interpreter's environment (it has pytest), recorded like every
execution, so the replay needs neither the environment nor the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "loop"))

from loop_harness import TEST_COMMAND, finish, plan_answer, rename_definition_only  # noqa: E402


def _repo(tmp: Path) -> Path:
    from loop_harness import make_repo

    return make_repo(tmp / "rename_fetch", pytest_suite=False, git_repo=True)


def cases(tmp: Path) -> dict[str, dict[str, object]]:
    example = json.loads((ROOT / "examples" / "rename_fetch" / "task.json").read_text())
    policy = ROOT / "examples" / "rename_fetch_scripted" / "policy.yaml"
    half = tmp / "half.yaml"
    import yaml

    half.write_text(
        yaml.safe_dump(
            {"planner": [plan_answer()], "actor": [rename_definition_only(), finish("half")]}
        )
    )
    base = {
        "instruction": example["instruction"],
        "test_command": TEST_COMMAND,
        "environment": {"python": sys.executable},
    }
    return {
        # synth: the rule learned from the example's before/after pair.
        "rename_synth": {**base, "model": "synth:", "examples": example["examples"]},
        # The scripted policy of examples/rename_fetch_scripted: a plan, an ast-grep rename.
        "rename_scripted": {**base, "model": f"scripted:{policy}"},
        # Half a rename: the tests gate fails and the session ends failed.
        "rename_half_failed": {
            **base,
            "model": f"scripted:{half}",
            "budgets": {"bounces": 0},
            "policy": {"tests_per_action": False},
        },
    }


def oopav(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OOPAV_LOG_LEVEL": "WARNING"}
    env.pop("OOPAV_NATS_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "oopav.cli", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def main() -> int:
    out_dir = HERE / "sessions"
    out_dir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="oopav-corpus-") as t:
        tmp = Path(t)
        for name, body in cases(tmp).items():
            work = tmp / name
            work.mkdir()
            repo = _repo(work)
            task = work / "task.json"
            task.write_text(json.dumps({**body, "repo": str(repo)}))
            data = work / "data"
            run = oopav(data, "run", "--task", str(task), "--json")
            if not run.stdout.strip().startswith("{"):
                print(f"{name}: run failed: {run.stderr[-2000:]}", file=sys.stderr)
                return 1
            result = json.loads(run.stdout)
            target = out_dir / f"{name}.tar.gz"
            exp = oopav(data, "session", "export", result["session_id"], "-o", str(target))
            if exp.returncode != 0:
                print(f"{name}: export failed: {exp.stderr[-2000:]}", file=sys.stderr)
                return 1
            print(f"{name}: {result['outcome']}, {result['events']} events -> {target.name}")
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
