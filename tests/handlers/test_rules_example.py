"""The demo task in examples/rename_fetch: shipped green, solvable by a plain rename, and
described correctly by the rules that will see it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oopav.decide import OrientInput, mentioned_paths, orient, scan_tree
from oopav.sandbox.files import WorkspaceFiles

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rename_fetch"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A private copy, so test runs never leave caches in the example."""
    dest = tmp_path / "rename_fetch"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def run_task_tests(repo: Path) -> subprocess.CompletedProcess[str]:
    task = json.loads((repo / "task.json").read_text())
    argv = [sys.executable if a == "python" else a for a in task["test_command"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [*argv, "-p", "no:cacheprovider"],
        cwd=repo / task["repo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_task_file() -> None:
    task = json.loads((EXAMPLE / "task.json").read_text())
    assert task == {
        "instruction": (
            "Rename the function `fetch` to `fetch_page` everywhere in the repository and keep "
            "the tests green."
        ),
        "repo": ".",
        "test_command": ["python", "-m", "pytest", "-q"],
        "model": "synth:",
        "examples": task["examples"],
        # The project's own env (pytest in it), built by uv: never oopav's env.
        "environment": {"build": "uv", "packages": ["pytest"]},
    }
    # The examples teach the rename; the scripted policy lives on as a second example.
    from oopav.synth import synthesize

    result = synthesize(task["examples"])
    assert [(r.rule, r.fix) for r in result.rules] == [
        ({"kind": "identifier", "regex": "^fetch$"}, "fetch_page")
    ]
    scripted = EXAMPLE.parent / "rename_fetch_scripted"
    assert json.loads((scripted / "task.json").read_text())["model"] == "scripted:policy.yaml"
    assert (scripted / "policy.yaml").is_file()
    assert (EXAMPLE / "README.md").is_file()
    assert "[tool.ruff" in (EXAMPLE / "pyproject.toml").read_text()


def test_fetch_is_defined_once_and_used_in_three_files() -> None:
    sources = {p.relative_to(EXAMPLE).as_posix(): p.read_text() for p in EXAMPLE.rglob("*.py")}
    defined = [path for path, text in sources.items() if "def fetch(" in text]
    used = sorted(
        path for path, text in sources.items() if "fetch(" in text and path not in defined
    )
    assert defined == ["webtool/client.py"]
    assert used == ["tests/test_webtool.py", "webtool/crawler.py", "webtool/report.py"]


def test_shipped_tests_pass(repo: Path) -> None:
    result = run_task_tests(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_tests_still_pass_after_a_plain_text_rename(repo: Path) -> None:
    for path in repo.rglob("*.py"):
        path.write_text(path.read_text().replace("fetch", "fetch_page"))
    sources = "".join(p.read_text() for p in repo.rglob("*.py"))
    assert "def fetch_page(" in sources
    assert "fetch(" not in sources
    result = run_task_tests(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_a_half_done_rename_fails_the_tests(repo: Path) -> None:
    # Renaming only the definition must break the tests, or they would not guard the task.
    client = repo / "webtool" / "client.py"
    client.write_text(client.read_text().replace("def fetch(", "def fetch_page("))
    assert run_task_tests(repo).returncode != 0


def test_rules_see_a_clean_green_task(repo: Path) -> None:
    stubs, errors, languages, total = scan_tree(WorkspaceFiles(repo))
    assert (stubs, errors) == ([], [])
    assert languages == {"python": 5, "toml": 1, "json": 1}
    assert total == 8  # with README.md (the scripted policy lives in rename_fetch_scripted)
    instruction = json.loads((repo / "task.json").read_text())["instruction"]
    assert mentioned_paths(instruction) == []
    report = orient(
        OrientInput(
            instruction=instruction,
            files_total=total,
            languages=languages,
            tests_baseline="pass",
        )
    )
    assert (report.category, report.risk_band, report.test_decision, report.gate) == (
        "refactor",
        "green",
        "required",
        "proceed",
    )
