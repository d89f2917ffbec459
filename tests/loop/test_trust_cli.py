"""Issue 24 §7–§8 through the real CLI: bad input gets the right answer early — a misspelled
example field is an unknown field, a task with no model and no examples is refused at intake
(before any baseline test runs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from loop_harness import make_repo
from test_project_env import run_cli


async def test_a_misspelled_example_field_is_named_as_unknown(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    task = tmp_path / "task.json"
    task.write_text(
        json.dumps(
            {
                "instruction": "Rename fetch to fetch_page",
                "repo": str(repo),
                "examples": [
                    {"before_text": "def fetch():\n    pass\n", "after": "def fetch_page():\n"}
                ],
            }
        )
    )
    rc, _, err = await run_cli(tmp_path / "data", "run", "--task", str(task), "--json")
    assert rc == 2, err[-2000:]
    assert (
        "unknown field 'examples.0.before_text' (allowed: before, after, path, partial, keep)"
        in err
    ), err
    assert "control character" not in err


async def test_a_task_with_no_model_and_no_examples_is_refused_before_the_baseline(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    os.environ.pop("OOPAV_MODEL", None)  # run_cli drops OOPAV_* from the child's env anyway
    rc, _, err = await run_cli(
        tmp_path / "data",
        "run",
        "--repo",
        str(repo),
        "--test-command",
        "python -m unittest discover -q -s tests -t .",
        "Rename fetch to fetch_page",
    )
    assert rc == 2, err[-2000:]
    assert "rejected: no model: the task names none, has no examples for synth:" in err, err
    assert "(field: model)" in err
    # Refused at intake: no workspace was prepared, no baseline test ran.
    assert not list((tmp_path / "data").rglob("worktrees/*")), err


async def test_the_readme_apply_step_works_as_pasted(tmp_path: Path) -> None:
    """§8: the README's apply line used a placeholder id; `oopav apply --last` needs none."""
    from loop_harness import finish, rename_all
    from test_project_env import script_file

    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    model = script_file(tmp_path / "model.json", [rename_all(), finish()])
    rc, out, err = await run_cli(
        tmp_path / "data",
        "run",
        "--repo",
        str(repo),
        "--model",
        f"scripted:{model}",
        "--json",
        "Rename fetch to fetch_page",
    )
    assert rc == 0, err[-2000:]
    rc, out, err = await run_cli(tmp_path / "data", "apply", "--last")
    assert rc == 0, err[-2000:]
    assert out.startswith(f"applied 4 file(s) to {repo}"), out
    assert "def fetch_page(" in (repo / "webtool" / "client.py").read_text()
    rc, out, err = await run_cli(tmp_path / "data", "apply")
    assert rc == 2 and "give a SESSION id (or a prefix of it) or --last" in err, err
