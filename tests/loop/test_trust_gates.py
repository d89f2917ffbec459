"""Issue 24 §1–§3 through live sessions: a gate that cannot run is skipped with its reason,
never failed; no gate edits the workspace (ruff with --no-fix, a tree-hash guard that restores
and voids a check that edited); doc tests run as the package runs them, baseline-aware.

Real nats-server, real bwrap sandbox, real git workspaces, scripted models; the first test
goes through ``oopav run`` as a user runs it, on a project whose own .venv lacks mypy."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from loop_harness import (
    assert_replays,
    finish,
    finish_session,
    loop,
    make_repo,
    of,
    plan_answer,
    rename_all,
    start,
    task,
)
from test_project_env import commit_all, run_cli, script_file

from oopav.sandbox.environment import host_interpreter


def _gate(events: list, name: str):  # type: ignore[no-untyped-def]
    return next(g for g in of(events, "gate_evaluated") if g.gate == name)


async def test_a_configured_type_checker_missing_from_the_venv_is_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    """click / itsdangerous configure mypy; their venvs lack it. The compile gate used to fail
    with "0 error(s) the baseline did not have" and roll back a good change."""
    import subprocess

    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n[tool.mypy]\nstrict = true\n")
    (repo / ".gitignore").write_text(".venv/\n")
    commit_all(repo)
    venv = [str(host_interpreter()), "-m", "venv", "--without-pip", str(repo / ".venv")]
    await asyncio.to_thread(subprocess.run, venv, check=True, capture_output=True)
    model = script_file(tmp_path / "model.json", [rename_all(), finish()])
    rc, out, err = await run_cli(
        tmp_path / "data",
        "run",
        "--repo",
        str(repo),
        "--model",
        f"scripted:{model}",
        "--test-command",
        "python -m unittest discover -q -s tests -t .",
        "--json",
        "Rename fetch to fetch_page",
    )
    assert out.strip(), err[-3000:]
    result = json.loads(out)
    assert result["outcome"] == "success", (result, err[-2000:])
    assert rc == 0
    reason = (
        "mypy is configured but not installed in .venv: install it or set policy.compile_command"
    )
    assert reason in result["summary"], result["summary"]
    _, out, err = await run_cli(tmp_path / "data", "show", result["session_id"], "--json")
    events = json.loads(out)
    gate = next(e for e in events if e["type"] == "gate_evaluated" and e["gate"] == "compile")
    assert gate["skipped"] and gate["passed"], gate
    assert reason in gate["evidence"]
    assert not [e for e in events if e["type"] == "workspace_rolled_back"]


async def test_a_check_failing_the_same_way_on_the_base_commit_is_skipped_not_failed(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """No error locations to compare, and the base fails too: zero new findings, no failure."""
    policy = {
        "compile_command": ["python", "-c", "import sys; print('broken config'); sys.exit(2)"],
        "tests_per_action": False,
    }
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy, budgets={"bounces": 0}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    gate = _gate(events, "compile")
    assert gate.skipped and gate.passed
    assert "fails on the base commit too (exit 2) and names no finding" in gate.evidence
    assert [x.purpose for x in gate.execs] == ["gate_compile", "gate_compile_base"]
    assert "compile skipped:" in state.summary
    await assert_replays(nats_url, sid)


async def test_a_check_that_edits_the_workspace_is_restored_and_recorded_as_an_error(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """A gate observes, it never edits: what it wrote is undone, the verdict is void, and the
    final diff holds only what the tests judged."""
    sneaky = "open('webtool/client.py', 'a').write('# reformatted\\n'); open('new.txt', 'w')"
    policy = {"compile_command": ["python", "-c", sneaky], "tests_per_action": False}
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    gate = _gate(events, "compile")
    assert gate.skipped and gate.evidence.startswith("error: ")
    assert "changed the workspace (new.txt, webtool/client.py)" in gate.evidence
    assert gate.execs[0].workspace_changed == ["new.txt", "webtool/client.py"]
    assert "# reformatted" not in state.diff and "new.txt" not in state.diff
    assert "+def fetch_page(" in state.diff
    assert "compile: error: the check edited" in state.summary
    # Replay serves the recorded run (nothing edits) and reaches the same verdict.
    await assert_replays(nats_url, sid)


async def test_lint_never_fixes_a_project_with_ruff_fix_true(
    nc, nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    """itsdangerous sets ``fix = true``: a plain ``ruff check`` re-sorted and deleted imports
    after the tests ran, and the session failed replay --verify."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("[tool.ruff]\n", "[tool.ruff]\nfix = true\n")
    )
    crawler = repo / "webtool" / "crawler.py"
    # A pre-existing unused import ruff would delete with fix = true (F401).
    crawler.write_text(crawler.read_text().replace("import re\n", "import os\nimport re\n"))
    commit_all(repo)
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    gate = _gate(events, "lint")
    assert gate.passed and not gate.skipped, gate.evidence
    assert "already in the base version (not blamed)" in gate.evidence
    assert "--no-fix" in gate.execs[0].argv
    assert "-import os" not in state.diff
    assert not any(x.workspace_changed for x in gate.execs)
    await assert_replays(nats_url, sid)


CRAWLER_DOCS = '''

def first_link(html: str) -> str | None:
    """The first link of a page.

    >>> first_link('<a href="https://example.test/a">A</a>')
    'https://example.test/a'
    """
    found = links(html)
    return found[0] if found else None


def old_example() -> int:
    """A doc test that was already wrong at the base commit.

    >>> old_example()
    3
    """
    return 2
'''


async def test_doctests_run_by_package_name_and_only_new_failures_fail(
    nc, nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    """markupsafe: `python -m doctest src/markupsafe/__init__.py` fails on any relative import,
    and was not baseline-aware, so every change to such a file failed."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    crawler = repo / "webtool" / "crawler.py"
    text = crawler.read_text().replace(
        "from webtool.client import PageNotFound, fetch", "from .client import PageNotFound, fetch"
    )
    crawler.write_text(text + CRAWLER_DOCS)
    commit_all(repo)
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy={"tests_per_action": False}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    gate = _gate(events, "doctest")
    assert gate.passed and not gate.skipped, gate.evidence
    assert "1 error(s), all already in the baseline; none new" in gate.evidence
    run = gate.execs[0]
    assert run.argv[:2] == ["python", "-c"] and "webtool.crawler" in run.argv
    assert "DOCTEST-FAIL webtool.crawler.old_example" in run.stdout_tail
    assert "first_link" not in run.stdout_tail  # the relative import worked
    await assert_replays(nats_url, sid)


async def test_policy_format_runs_the_formatter_as_an_action_before_the_tests(
    nc, nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    """Where the project wants formatting, it is a recorded action the tests then judge, not
    a gate rewriting files after them."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    crawler = repo / "webtool" / "crawler.py"
    crawler.write_text(crawler.read_text() + "\n\nLIMITS = {  'depth':3 }\n")
    commit_all(repo)
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    policy = {"format": ["ruff", "format", "webtool"]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    proposed = [e.action for e in of(events, "action_proposed")]
    assert [a.type for a in proposed] == ["ast_grep", "run_command", "finish"]
    assert proposed[1].argv == ["ruff", "format", "webtool"]
    applied = of(events, "action_applied")[1]
    assert applied.ok and "webtool/crawler.py" in applied.files_changed
    kinds = [e.type for e in events]
    assert kinds.index("gate_evaluated") > events.index(applied)  # the tests judge it after
    assert '+LIMITS = {"depth": 3}' in state.diff
    assert of(events, "model_called")[-1].role == "actor"  # no extra model call after it
    await assert_replays(nats_url, sid)
