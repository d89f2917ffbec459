"""search/replace, write_file and run_command planning; path safety."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oopav.events.actions import (
    FinishAction,
    RunCommandAction,
    SearchReplaceAction,
    SearchReplaceEdit,
    WriteFileAction,
)
from oopav.sandbox.apply import ActionPlan, Rejection, apply_plan, plan_action, run_plan
from oopav.sandbox.capabilities import GrantState, check
from oopav.sandbox.patch import SearchFailure, apply_edit, similar_lines
from oopav.sandbox.policy import Policy

SRC = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    return x\n"


def sr(path: str, search: str, replace: str) -> SearchReplaceAction:
    return SearchReplaceAction(edits=[SearchReplaceEdit(path=path, search=search, replace=replace)])


def test_exact_single_match_replaces() -> None:
    out = apply_edit(SRC, "    y = x + 1\n", "    y = x + 2\n")
    assert out == SRC.replace("x + 1", "x + 2")


def test_indentation_must_be_exact() -> None:
    with pytest.raises(SearchFailure) as info:
        apply_edit(SRC, "y = x + 1", "y = 2")
    assert info.value.code == "no_match"
    assert info.value.hints[0].line == 2
    assert "indentation 4 instead of 0" in info.value.hints[0].note


def test_multiple_matches_list_lines() -> None:
    with pytest.raises(SearchFailure) as info:
        apply_edit(SRC, "def ", "async def ")
    assert info.value.code == "no_match"  # a partial line never matches
    with pytest.raises(SearchFailure) as info2:
        apply_edit(SRC + "    return y\n", "    return y\n", "    return 0\n")
    assert info2.value.code == "multiple_matches"
    assert info2.value.lines == [3, 8]


def test_crlf_is_normalized_and_restored(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_bytes(SRC.replace("\n", "\r\n").encode())
    plan = plan_action(tmp_path, sr("w.py", "    return x\r\n", "    return -x\r\n"))
    assert isinstance(plan, ActionPlan)
    apply_plan(tmp_path, plan)
    data = (tmp_path / "w.py").read_bytes()
    assert b"    return -x\r\n" in data
    assert data.count(b"\r\n") == data.count(b"\n")


def test_hints_on_large_file_are_the_nearest_lines() -> None:
    lines = [f"    value_{i} = compute({i})" for i in range(10_000)]
    text = "\n".join(lines) + "\n"
    hints = similar_lines(text, "    value_5000 = compute(5001)\n")
    assert len(hints) == 3
    assert hints[0].line == 5001


def test_no_match_rejection_has_hints(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SRC)
    out = plan_action(tmp_path, sr("m.py", "    y = x + 10\n", "    y = 0\n"))
    assert isinstance(out, Rejection)
    assert out.reason == "no_match"
    assert out.details["similar"][0]["line"] == 2


def test_sequential_edits_in_one_file(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SRC)
    action = SearchReplaceAction(
        edits=[
            SearchReplaceEdit(path="m.py", search="def f(x):\n", replace="def f(x, z):\n"),
            SearchReplaceEdit(path="m.py", search="    y = x + 1\n", replace="    y = x + z\n"),
        ]
    )
    plan = plan_action(tmp_path, action)
    assert isinstance(plan, ActionPlan)
    apply_plan(tmp_path, plan)
    assert "def f(x, z):\n    y = x + z\n" in (tmp_path / "m.py").read_text()


def test_parse_regression_rejected_and_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SRC)
    out = plan_action(tmp_path, sr("m.py", "    return x\n", "    return (x\n"))
    assert isinstance(out, Rejection)
    assert out.reason == "parse_error"
    assert out.details["errors"]
    assert (tmp_path / "m.py").read_text() == SRC


def test_already_broken_file_may_be_edited(tmp_path: Path) -> None:
    broken = SRC + "def h(:\n"
    (tmp_path / "m.py").write_text(broken)
    assert isinstance(
        plan_action(tmp_path, sr("m.py", "    return x\n", "    return 2 * x\n")), ActionPlan
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../escape.py", "path_outside_workspace"),
        ("/etc/passwd", "path_outside_workspace"),
        ("link/x.py", "path_outside_workspace"),
        ("alias.py", "symlink"),
        (".git/hooks/post-commit", "protected_path"),
        (".git", "protected_path"),
        # A model's runaway paths: refused, not an OSError (ENAMETOOLONG, EEXIST) in the actor.
        ("a" * 300 + ".py", "bad_path"),
        ("x/" * 3000 + "y.py", "bad_path"),
        ("real.py/inner.py", "bad_path"),
    ],
)
def test_write_paths_are_checked(tmp_path: Path, path: str, reason: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "real.py").write_text("x = 1\n")
    os.symlink(tmp_path, ws / "link")
    os.symlink(ws / "real.py", ws / "alias.py")
    out = plan_action(ws, WriteFileAction(path=path, content="print('pwned')\n"))
    assert isinstance(out, Rejection), out
    assert out.reason == reason
    assert not (tmp_path / "x.py").exists()
    assert not (tmp_path / "escape.py").exists()


def test_write_file_creates_and_policy_protects(tmp_path: Path) -> None:
    plan = plan_action(tmp_path, WriteFileAction(path="pkg/new.py", content="A = 1\n"))
    assert isinstance(plan, ActionPlan) and plan.scopes == []
    assert apply_plan(tmp_path, plan) == ["pkg/new.py"]
    assert (tmp_path / "pkg" / "new.py").read_text() == "A = 1\n"
    policy = Policy(write_protected=[".github/**"])
    guarded = plan_action(
        tmp_path,
        WriteFileAction(path=".github/workflows/ci.yml", content="on: push\n"),
        policy=policy,
    )
    assert isinstance(guarded, ActionPlan)
    assert guarded.scopes == ["fs.write:.github/workflows/ci.yml"]


def test_run_command_needs_allowed_decision(tmp_path: Path, settings) -> None:
    ws = settings.workspace_for("s1")
    ws.mkdir(parents=True)
    plan = plan_action(
        ws, RunCommandAction(argv=["sh", "-c", "echo hi > out.txt"], scopes=["net.any"])
    )
    assert isinstance(plan, ActionPlan)
    assert plan.scopes == ["exec:sh -c 'echo hi > out.txt'", "net.any"]
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    undecided = check(plan.scopes, GrantState(), Policy(allow=["exec:sh"]), now)
    assert undecided.outcome == "ask" and undecided.scope == "net.any"
    with pytest.raises(PermissionError):
        run_plan(ws, plan, undecided, artifacts_dir=settings.artifacts_for("s1"))
    assert not (ws / "out.txt").exists()
    ok = check(plan.scopes, GrantState(), Policy(allow=["exec:sh", "net.any"]), now)
    result = run_plan(ws, plan, ok, artifacts_dir=settings.artifacts_for("s1"))
    assert result.exit_code == 0 and result.network
    assert (ws / "out.txt").read_text() == "hi\n"


def test_finish_and_bad_scope(tmp_path: Path) -> None:
    assert isinstance(plan_action(tmp_path, FinishAction(summary="done")), ActionPlan)
    bad = plan_action(tmp_path, RunCommandAction(argv=["true"], scopes=["net.every"]))
    assert isinstance(bad, Rejection) and bad.reason == "bad_scope"
    assert "unknown scope kind" in bad.message
