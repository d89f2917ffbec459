"""Issue 24 §6 through live sessions: after a rename, the old name's remaining occurrences the
change did not cover (a C extension, docs, strings) are reported in the outcome, or fail the
gate with ``policy.residuals: fail``; tests skipped before and after are named."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    PYTEST,
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
from test_project_env import commit_all

SPEEDUPS = """#include <Python.h>
/* the C twin of webtool.client.fetch */
static PyObject* fetch(PyObject* self, PyObject* args) { Py_RETURN_NONE; }
static PyMethodDef methods[] = {{"fetch", fetch, METH_VARARGS, NULL}, {NULL}};
"""
DOCS = "Fetching\n========\n\nCall ``webtool.client.fetch(url)`` to get a page.\n"
SKIPPED = """import pytest


@pytest.mark.skip(reason="the C extension is not built in the workspace")
def test_speedups_match():
    pass
"""


def _project(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", pytest_suite=True, git_repo=False)
    (repo / "webtool" / "_speedups.c").write_text(SPEEDUPS)
    (repo / "docs").mkdir()
    (repo / "docs" / "fetching.rst").write_text(DOCS)
    (repo / "tests" / "test_speedups.py").write_text(SKIPPED)
    commit_all(repo)
    return repo


async def test_an_incomplete_rename_is_reported_in_the_outcome(
    nc, nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    """markupsafe: renaming soft_str succeeded while _speedups.c still exported the old name
    and the docs kept it; the extension's tests were skipped before and after."""
    repo = _project(tmp_path)
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, test_command=PYTEST))
        state, events = await finish_session(bus, sid, timeout=180)
    assert state.outcome == "success", state.summary
    gate = next(g for g in of(events, "gate_evaluated") if g.gate == "residuals")
    assert gate.passed and not gate.skipped
    assert "`fetch` (renamed to `fetch_page`) still appears" in gate.evidence
    assert "webtool/_speedups.c:3:" in gate.evidence and "docs/fetching.rst:4:" in gate.evidence
    assert "residuals: " in state.summary and "webtool/_speedups.c" in state.summary
    tests = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    named = "tests.test_speedups::test_speedups_match"
    assert f"1 test(s) skipped both before and after: not verified ({named})" in state.summary
    assert named in tests.evidence
    await assert_replays(nats_url, sid)


async def test_policy_residuals_fail_fails_the_gate(
    nc, nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    repo = _project(tmp_path)
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        body = task(repo, test_command=PYTEST, policy={"residuals": "fail"}, budgets={"bounces": 0})
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid, timeout=180)
    assert state.outcome == "failed", state.summary
    assert of(events, "verification_completed")[0].failed_gate == "residuals"
    gate = of(events, "gate_evaluated")[-1]
    assert gate.gate == "residuals" and not gate.passed
    assert "(policy.residuals: fail)" in gate.evidence and "webtool/_speedups.c:3:" in gate.evidence
