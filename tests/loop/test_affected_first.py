"""Affected tests first (issue 28 §2): a breaking change fails on the tests that import the
changed module, without running the rest of the suite; a competent change runs those, then
the rest; ``tests: affected`` runs only those. The gate's evidence says which ran and why."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    PYTEST,
    action_answer,
    assert_replays,
    finish,
    finish_session,
    git,
    loop,
    make_repo,
    of,
    plan_answer,
    rename_all,
    start,
    task,
)

# A competent-looking edit that breaks the tests (no stub, parses): the site is empty.
BREAK = action_answer(
    {
        "type": "search_replace",
        "edits": [
            {
                "path": "webtool/client.py",
                "search": "    pages = SITE if site is None else site\n",
                "replace": "    pages = {} if site is None else site\n",
            }
        ],
    },
    "break the default site",
)
OTHER = "def test_{n}():\n    assert sum(range({n})) >= 0\n"


def _repo(tmp_path: Path) -> Path:
    """The example with its pytest suite plus three test files that import nothing of it."""
    repo = make_repo(tmp_path / "repo", pytest_suite=True)
    for n in (1, 2, 3):
        (repo / "tests" / f"test_other{n}.py").write_text(OTHER.format(n=n))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-qm", "others")
    return repo


def _tests_gate(events: list) -> object:  # type: ignore[type-arg]
    return next(g for g in of(events, "gate_evaluated") if g.gate == "tests")


async def test_a_breaking_change_fails_fast_on_the_affected_tests(
    nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    script = {"planner": [plan_answer()], "actor": [BREAK, finish()]}
    body = task(
        repo,
        test_command=PYTEST,
        budgets={"bounces": 0},
        policy={"tests_per_action": False, "lint": False, "tests": {"split": "always"}},
    )
    async with loop(nats_url, script) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "failed"
    gate = _tests_gate(events)
    assert not gate.passed
    assert [r.purpose for r in gate.execs] == ["gate_tests_affected"]
    affected_run = gate.execs[0]
    assert affected_run.argv[-1] == "tests/test_webtool.py"
    assert "1 of 4 test file(s)" in gate.evidence
    assert "tests/test_webtool.py: tests/test_webtool.py imports webtool" in gate.evidence
    assert "fail fast" in gate.evidence
    await assert_replays(nats_url, sid)


async def test_a_competent_change_runs_the_affected_tests_then_the_rest(
    nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    script = {"planner": [plan_answer()] * 2, "actor": [rename_all(), finish()] * 2}
    common = {"test_command": PYTEST}
    async with loop(nats_url, script) as bus:
        sid = await start(
            bus,
            task(
                repo,
                **common,
                policy={"tests_per_action": False, "lint": False, "tests": {"split": "always"}},
            ),
        )
        state, events = await finish_session(bus, sid)
        only = await start(
            bus,
            task(
                repo,
                **common,
                policy={"tests_per_action": False, "lint": False, "tests": "affected"},
            ),
        )
        state2, events2 = await finish_session(bus, only)
    assert state.outcome == "success", state.summary
    gate = _tests_gate(events)
    assert gate.passed
    assert [r.purpose for r in gate.execs] == ["gate_tests_affected", "gate_tests_rest"]
    rest = gate.execs[1]
    assert "--ignore=tests/test_webtool.py" in rest.argv
    assert rest.report is not None and rest.report.passed == 3
    assert "then the rest of the suite" in gate.evidence
    # tests: affected: the rest does not run (and the affected run on this same tree is the
    # first session's, reused and recorded as such).
    assert state2.outcome == "success", state2.summary
    gate2 = _tests_gate(events2)
    assert [r.purpose for r in gate2.execs] == ["gate_tests_affected"]
    assert gate2.execs[0].reused_from is not None
    assert gate2.execs[0].reused_from.startswith(sid)
    assert "tests: affected (policy)" in gate2.evidence
    await assert_replays(nats_url, only)


async def test_by_default_one_run_puts_the_affected_tests_first_and_stops_after_them(
    nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    """``tests.split: auto``: one run of the whole command, in the sandbox, with oopav's plugin
    (the affected file first). A break stops it after the affected tests; a competent change
    runs the whole suite in that one run."""
    repo = _repo(tmp_path)
    policy = {"tests_per_action": False, "lint": False}
    body = task(repo, test_command=PYTEST, budgets={"bounces": 0}, policy=policy)
    async with loop(nats_url, {"planner": [plan_answer()], "actor": [BREAK, finish()]}) as bus:
        broke = await start(bus, body)
        state, events = await finish_session(bus, broke)
    async with loop(
        nats_url, {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    ) as bus:
        good = await start(bus, task(repo, test_command=PYTEST, policy=policy))
        state2, events2 = await finish_session(bus, good)
    assert state.outcome == "failed"
    gate = _tests_gate(events)
    assert not gate.passed
    [run] = gate.execs
    assert run.purpose == "gate_tests"
    assert run.argv[-4:] == ["-p", "oopav_first", "--oopav-first", "tests/test_webtool.py"]
    assert "oopav-first: stopped: " in run.stderr_tail
    assert "3 other test(s) not run" in run.stderr_tail
    # Only the affected file's five tests ran (the suite has eight).
    assert run.report is not None and run.report.failed and run.report.total == 5
    assert "fail fast: the run stopped after them" in gate.evidence
    assert state2.outcome == "success", state2.summary
    gate2 = _tests_gate(events2)
    [run2] = gate2.execs
    assert "oopav_first" in run2.argv and "oopav-first" not in run2.stderr_tail
    assert run2.report is not None and run2.report.passed == run2.report.total == 8
    assert "none failed, the rest ran" in gate2.evidence
    await assert_replays(nats_url, broke)
    await assert_replays(nats_url, good)
