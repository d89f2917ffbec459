"""Issue 16 §1–§2 end to end: the project's commands run in the project's own environment
against the workspace, and the gates compare with the baseline.

Black-box: ``oopav run`` as a user runs it, on a small package in a temporary repository with
its own venv, whose site-packages hold a stale installed copy of the package (the way
``click`` resolved to an installed copy instead of the edited workspace)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from loop_harness import (
    PYTEST,
    action_answer,
    finish,
    finish_session,
    loop,
    make_repo,
    of,
    plan_answer,
    rename_all,
    rename_definition_only,
    rename_script,
    run_session,
    start,
    task,
)

from helpers.cli import oopav_env, run_oopav
from oopav.sandbox.environment import host_interpreter


def make_venv(repo: Path) -> Path:
    """The project's own venv (stdlib only), with a stale installed copy of ``webtool`` whose
    ``fetch`` still exists, so a test run that does not import the workspace would pass."""
    venv = repo / ".venv"
    subprocess.run(
        [str(host_interpreter()), "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
    )
    site = next(venv.glob("lib/python*/site-packages"))
    stale = site / "webtool"
    stale.mkdir()
    for name in ("__init__.py", "client.py", "crawler.py", "report.py"):
        src = repo / "webtool" / name
        if src.exists():
            (stale / name).write_text(src.read_text())
    return venv


def commit_all(repo: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@x.invalid", "commit", "-qm", "b"],
        cwd=repo,
        check=True,
    )


async def run_cli(data_dir: Path, *args: str, timeout: float = 240.0) -> tuple[int, str, str]:
    env = oopav_env(clean=True)
    env.pop("VIRTUAL_ENV", None)
    return await run_oopav(
        *args, data_dir=data_dir, env=env, timeout=timeout, stdin=asyncio.subprocess.DEVNULL
    )


async def run_rename(data_dir: Path, repo: Path, model: Path, *extra: str) -> tuple[int, str, str]:
    """``oopav run --json`` of the rename on ``repo`` with the scripted model file ``model``,
    its unittest suite as the test command, and ``extra`` options."""
    unittest = "python -m unittest discover -q -s tests -t ."
    head = ("run", "--repo", str(repo), "--model", f"scripted:{model}", "--test-command", unittest)
    return await run_cli(data_dir, *head, *extra, "--json", "Rename fetch to fetch_page")


async def finish_at_once(nats_url: str, tmp_path: Path, **fields: Any) -> tuple[Any, list[Any]]:
    """A session on the unittest example (task ``fields``) whose actor would only finish:
    (final state, events)."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    script = {"planner": [plan_answer()], "actor": [finish()]}
    _, state, events = await run_session(nats_url, script, task(repo, **fields))
    return state, events


def script_file(path: Path, actor: list[str]) -> Path:
    path.write_text(json.dumps({"planner": [plan_answer()], "actor": actor}))
    return path


async def test_a_change_that_breaks_the_package_import_ends_failed(tmp_path: Path) -> None:
    """Renaming only the definition breaks ``from webtool.client import fetch`` in the other
    modules. With the stale copy first on the path the tests would pass; in the project's env
    with the workspace first they fail, and the session ends ``failed``."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    make_venv(repo)
    model = script_file(tmp_path / "model.json", [rename_definition_only(), finish()])
    gates_only = tmp_path / "policy.json"  # the tests gate, not per-action tests, judges it
    gates_only.write_text('{"tests_per_action": false}')
    extra = ("--budget", "bounces=0", "--policy", str(gates_only))
    rc, out, err = await run_rename(tmp_path / "data", repo, model, *extra)
    result = json.loads(out)
    assert result["outcome"] == "failed", (result, err[-2000:])
    assert rc == 1
    # The sessions stay readable after `oopav run` exits, without `oopav up`.
    rc, out, err = await run_cli(tmp_path / "data", "show", result["session_id"], "--json")
    assert rc == 0, err
    events = json.loads(out)
    probe = [x for e in events for x in e.get("execs", []) if x["purpose"] == "env_probe"]
    assert probe and '"inside": true' in probe[0]["stdout_tail"], probe
    assert ".venv/bin/python" in probe[0]["stdout_tail"]
    gate = next(e for e in events if e["type"] == "gate_evaluated" and e["gate"] == "tests")
    assert not gate["passed"] and "ImportError" in gate["evidence"], gate["evidence"]


async def test_the_correct_change_succeeds_in_the_projects_env(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    make_venv(repo)
    model = script_file(tmp_path / "model.json", [rename_all(), finish()])
    rc, out, err = await run_rename(tmp_path / "data", repo, model)
    assert json.loads(out)["outcome"] == "success", err[-2000:]
    assert rc == 0


async def test_a_package_resolving_outside_the_workspace_stops_before_the_baseline(
    nats_url: str, tmp_path: Path
) -> None:
    state, events = await finish_at_once(nats_url, tmp_path, environment={"probe": "json"})
    assert state.outcome == "failed"
    assert "'json' does not import from the workspace: it resolved from" in state.summary
    assert "json/__init__.py" in state.summary
    assert not of(events, "plan_proposed")


async def test_a_suite_that_cannot_run_at_baseline_is_its_own_outcome(
    nats_url: str, tmp_path: Path
) -> None:
    state, events = await finish_at_once(nats_url, tmp_path, test_command=["no-such-runner", "-q"])
    assert state.outcome == "failed"
    assert state.summary.startswith("the test suite cannot run at baseline: `no-such-runner -q`")
    assert not of(events, "plan_proposed")


async def test_pre_existing_failures_are_reported_not_blamed(nats_url: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=True, git_repo=False)
    (repo / "tests" / "test_old_bug.py").write_text("def test_old_bug():\n    assert 1 == 2\n")
    commit_all(repo)
    script = rename_script()
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, test_command=PYTEST))
        state, events = await finish_session(bus, sid, timeout=180)
    assert state.outcome == "success", state.summary
    gate = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert gate.passed
    assert "pre-existing failures (not caused by the change, not blamed): 1" in gate.evidence
    assert "tests.test_old_bug::test_old_bug" in gate.evidence
    baseline = of(events, "observation_recorded")[0]
    rec = next(r for r in baseline.execs if r.purpose == "baseline_tests")
    assert rec.report is not None and rec.report.failed == ["tests.test_old_bug::test_old_bug"]


async def test_a_test_that_passed_at_baseline_and_fails_after_fails_the_gate(
    nats_url: str, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=True)
    breaking = action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/client.py",
                    "search": "        return pages[url]\n",
                    "replace": "        return pages[url].upper()\n",
                }
            ],
        }
    )
    script = {"planner": [plan_answer()], "actor": [breaking, finish()]}
    async with loop(nats_url, script) as bus:
        body = task(
            repo, test_command=PYTEST, budgets={"bounces": 0}, policy={"tests_per_action": False}
        )
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid, timeout=180)
    assert state.outcome == "failed"
    gate = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert not gate.passed
    assert "- newly failing: tests.test_webtool::" in gate.evidence, gate.evidence


async def test_lint_blames_only_findings_the_change_introduced(
    nats_url: str, tmp_path: Path
) -> None:
    """crawler.py already has an unused import (F401) at baseline; the rename touches the file
    and keeps it: the lint gate passes and says so."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    crawler = repo / "webtool" / "crawler.py"
    text = crawler.read_text()
    crawler.write_text(
        text.replace(
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\nimport os\n",
            1,
        )
    )
    commit_all(repo)
    script = rename_script()
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, budgets={"bounces": 0}))
        state, events = await finish_session(bus, sid, timeout=180)
    lint = [g for g in of(events, "gate_evaluated") if g.gate == "lint"]
    assert lint[0].passed and not lint[0].skipped, lint[0].evidence
    assert "finding(s) already in the base version (not blamed)" in lint[0].evidence
    assert state.outcome == "success", state.summary


async def test_a_lint_finding_the_change_introduces_blocks_the_session(
    nats_url: str, tmp_path: Path
) -> None:
    """The rename also adds an unused import to client.py: tests pass, the lint gate fails on
    the new F401 alone, and with no bounce left the session fails naming it."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    unused = action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/client.py",
                    "search": "from __future__ import annotations\n",
                    "replace": "from __future__ import annotations\n\nimport os\n",
                }
            ],
        }
    )
    script = {"planner": [plan_answer()], "actor": [rename_all(), unused, finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, budgets={"bounces": 0}))
        state, events = await finish_session(bus, sid, timeout=180)
    gates = {g.gate: g for g in of(events, "gate_evaluated")}
    assert gates["tests"].passed
    assert not gates["lint"].passed, gates["lint"].evidence
    assert "webtool/client.py" in gates["lint"].evidence and "F401" in gates["lint"].evidence
    assert "crawler.py" not in gates["lint"].evidence
    assert state.outcome == "failed"


async def test_a_test_run_that_outlives_its_budget_fails_the_gate_as_timed_out(
    nats_url: str, tmp_path: Path
) -> None:
    """The tests hang once the change is in (here: a sleep when the new name appears): the
    gate stops them at the phase's wall budget and fails with `timed out`, never hangs."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
    hang = [
        "python",
        "-c",
        "import pathlib, time; "
        "time.sleep(120) if 'fetch_page' in pathlib.Path('webtool/client.py').read_text() else 0",
    ]
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        body = task(
            repo,
            test_command=hang,
            budgets={"bounces": 0, "wall_seconds_per_phase": 8},
            policy={"tests_per_action": False, "lint": False},
        )
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid, timeout=180)
    tests = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert not tests.passed and "timed out" in tests.evidence, tests.evidence
    assert state.outcome == "failed"


async def test_run_without_a_terminal_fails_fast_with_the_grant_line_or_takes_allow(
    tmp_path: Path,
) -> None:
    """`echo hi` needs `exec:echo hi`: without a terminal `oopav run` stops at the ask with
    the exact lines; `--allow exec:echo` lets it through. The task's own test command is
    allowed for the model's actions without asking."""
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    test_cmd = "python -m unittest discover -q -s tests -t ."
    actions = [
        action_answer({"type": "run_command", "argv": test_cmd.split()}, "run the tests"),
        action_answer({"type": "run_command", "argv": ["echo", "hi"]}, "say hi"),
        rename_all(),
        finish(),
    ]
    model = script_file(tmp_path / "model.json", actions)
    args = [
        "run",
        "--repo",
        str(repo),
        "--model",
        f"scripted:{model}",
        "--test-command",
        test_cmd,
        "Rename fetch to fetch_page",
    ]
    rc, out, err = await run_cli(tmp_path / "data", *args)
    assert rc == 3, (out, err[-2000:])
    assert "needs a permission nobody can give without a terminal: exec:echo hi" in err
    assert "rerun with:  --allow 'exec:echo hi'" in err
    assert "oopav grant " in err and " 'exec:echo hi'" in err
    rc, out, err = await run_cli(tmp_path / "data2", *args, "--allow", "exec:echo", "--json")
    assert rc == 0, err[-2000:]
    assert json.loads(out)["outcome"] == "success"


async def test_inline_answers_to_permission_asks_become_grant_events(
    nats_url: str, tmp_path: Path
) -> None:
    """What `oopav run` does on a terminal: each ask is answered inline (here by a function
    standing in for the prompt) and recorded like `oopav grant` / `oopav deny`."""
    from oopav.cli.asks import PermissionAsks

    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    asked: list[str] = []

    def answer(scope: str, reason: str) -> str:
        asked.append(scope)
        return "once" if scope == "exec:echo hi" else "deny"

    say = action_answer({"type": "run_command", "argv": ["echo", "hi"]}, "say hi")
    nope = action_answer({"type": "run_command", "argv": ["touch", "x"]}, "touch")
    script = {"planner": [plan_answer(steps=3)], "actor": [say, nope, rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        from oopav.services import wait_session

        sid = await start(bus, task(repo))
        asks = PermissionAsks(bus, sid, interactive=True, ask=answer)
        await asks.start()
        state = await asks.race(wait_session(bus, sid, 90))
        await asks.stop()
        events = [e for _, e in await bus.events.read("session", sid)]
    assert state is not None and state.outcome == "success", state and state.summary
    assert asked == ["exec:echo hi", "exec:touch x"]
    granted = of(events, "permission_granted")
    assert [(g.scope, g.max_uses) for g in granted] == [("exec:echo hi", 1)]
    assert [d.scope for d in of(events, "permission_denied")] == ["exec:touch x"]
