"""Judging a plan (oopav.decide.plans): which named files are grounded (existing, or
legitimately new), coverage of what the instruction points at, and the plan's adequacy; and
what the harness contract and diagnostics tiers run (oopav.decide.checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oopav.decide.plans import (
    adequacy,
    is_test_file,
    judge_plan,
    legitimately_new,
    named_files,
    pointed_files,
)
from oopav.models.prompt import PlanOutput, PlanStepOutput
from oopav.sandbox.files import WorkspaceFiles


def plan(*steps: tuple[str, list[str]], files: list[str] | None = None) -> PlanOutput:
    return PlanOutput(
        steps=[PlanStepOutput(id=i, description=d, files=f) for i, (d, f) in enumerate(steps, 1)],
        files=files if files is not None else sorted({p for _, f in steps for p in f}),
        test_decision="optional",
        rationale="",
    )


def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "client.py").write_text("def fetch(url):\n    return url\n")
    (tmp_path / "pkg" / "crawler.py").write_text("from pkg.client import fetch\nfetch('x')\n")
    (tmp_path / "tests" / "test_client.py").write_text("from pkg.client import fetch\n")
    (tmp_path / "README.md").write_text("a crawler\n")
    return tmp_path


def judged(p: PlanOutput, root: Path, instruction: str) -> tuple[float, str]:
    """As the planner's adequacy gate judges: coverage of the files the instruction names."""
    named = named_files(WorkspaceFiles(root), instruction)
    valid, components, reason = judge_plan(p, lambda _: None, WorkspaceFiles(root), named, named)
    assert valid
    return adequacy(components), reason


THREE = "Rename `fetch` in pkg/client.py, pkg/crawler.py and tests/test_client.py"


def test_a_plan_naming_every_file_the_task_names_is_adequate(tmp_path: Path) -> None:
    root = repo(tmp_path)
    files = ["pkg/client.py", "pkg/crawler.py", "tests/test_client.py"]
    assert judged(plan(("rename fetch", files)), root, THREE) == (1.0, "")


def test_a_plan_that_leaves_out_files_or_names_ghosts_scores_below_the_default(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    score, reason = judged(plan(("rename fetch", ["pkg/client.py"])), root, THREE)
    assert score == pytest.approx((1.0 + 1 / 3) / 2, abs=1e-3) and score < 0.75
    assert reason == "leaves out pkg/crawler.py, tests/test_client.py"
    ghost = plan(("edit the helpers", ["pkg/client.py", "pkg/crawler.py", "pkg/ghost.py"]))
    score, reason = judged(ghost, root, "Tidy pkg/client.py and pkg/crawler.py")
    assert score == pytest.approx((2 / 3 + 1.0) / 2, abs=1e-3)
    assert "1 named file(s) do not exist and no step creates them: pkg/ghost.py" in reason
    # A plan that names no file at all says nothing about where it acts.
    assert judged(plan(("do it", []), files=[]), root, "Rename `fetch`")[0] == 0.0
    # Files where a mentioned identifier merely occurs are a hint, not a requirement.
    assert pointed_files(WorkspaceFiles(root), "Rename `fetch`") == [
        "pkg/client.py",
        "pkg/crawler.py",
        "tests/test_client.py",
    ]
    assert judged(plan(("rename", ["pkg/client.py"])), root, "Rename `fetch`")[0] == 1.0


def test_a_new_file_is_grounded_when_the_task_names_it_or_a_step_creates_it(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    asked = plan(("edit the notes", ["pkg/notes.py"]))
    assert named_files(WorkspaceFiles(root), "Put release notes in pkg/notes.py and nope/x.py") == [
        "pkg/notes.py"
    ]
    assert judged(asked, root, "Put release notes in pkg/notes.py")[0] == 1.0
    created = plan(("Create pkg/cache.py with a page cache", ["pkg/cache.py"]))
    assert legitimately_new(created, "pkg/cache.py", WorkspaceFiles(root))
    assert judged(created, root, "Add a page cache")[0] == 1.0
    # No step says it creates it, or its directory does not exist: not grounded.
    assert not legitimately_new(
        plan(("edit", ["pkg/cache.py"])), "pkg/cache.py", WorkspaceFiles(root)
    )
    assert not legitimately_new(
        plan(("Create it", ["nope/x.py"])), "nope/x.py", WorkspaceFiles(root)
    )
    assert not legitimately_new(plan(("Create it", ["../x.py"])), "../x.py", WorkspaceFiles(root))
    # A new test file next to the others is a legitimate addition.
    assert legitimately_new(
        plan(("cover it", ["tests/test_cache.py"])), "tests/test_cache.py", WorkspaceFiles(root)
    )


def test_test_files_by_the_runners_conventions() -> None:
    for path in ("tests/test_a.py", "test_a.py", "a/b_test.go", "src/a.test.ts", "conftest.py"):
        assert is_test_file(path), path
    for path in ("src/a.py", "latest.py", "contest/a.py", "docs/testing.md"):
        assert not is_test_file(path), path


# -- the harness contract and diagnostics tiers: what runs (oopav.decide.checks) -------------


def test_declared_checks_come_from_pyproject_package_json_and_the_makefile(tmp_path: Path) -> None:
    import json

    from oopav.decide.checks import declared_checks

    assert declared_checks(WorkspaceFiles(tmp_path))[0] == []
    (tmp_path / "pyproject.toml").write_text(
        '[tool.oopav.checks]\ntypes = "mypy src"\nschema = ["python", "scripts/schema.py"]\n'
    )
    (tmp_path / "package.json").write_text(
        json.dumps({"scripts": {"test": "jest", "lint": "eslint .", "build": "tsc"}})
    )
    (tmp_path / "Makefile").write_text("X := 1\ncheck: lint\n\truff check .\nlint:\n\techo\n")
    checks, looked = declared_checks(WorkspaceFiles(tmp_path))
    assert checks == [
        ("pyproject.toml [tool.oopav.checks] types", ["mypy", "src"]),
        ("pyproject.toml [tool.oopav.checks] schema", ["python", "scripts/schema.py"]),
        ("package.json scripts.lint", ["npm", "run", "--silent", "lint"]),
        ("Makefile target check", ["make", "check"]),
        ("Makefile target lint", ["make", "lint"]),
    ]
    assert "package.json scripts check/lint" in looked


def test_diagnostics_run_per_language_where_a_tool_is_installed() -> None:
    from oopav.decide.checks import diagnostic_keys, diagnostics_plan

    changed = ["a.py", "b.pyi", "web/app.ts", "main.go", "README.md"]
    runs, skipped = diagnostics_plan(changed, {"pyright": ["node", "pr.js"], "gopls": None})
    assert runs == [("python", ["node", "pr.js", "a.py", "b.pyi"])]
    assert skipped[0] == "go: gopls is not installed"
    assert skipped[1].startswith("TypeScript/JavaScript: tsserver speaks only its editor protocol")
    assert diagnostics_plan(["README.md"], {"pyright": ["p"]}) == ([], [])
    output = (
        "/w/ws/a.py\n"
        "  /w/ws/a.py:3:9 - error: Type \"Literal['a']\" is not assignable (reportAssignmentType)\n"
        '  /w/ws/a.py:4:1 - warning: Import "x" is not accessed (reportUnusedImport)\n'
        "1 error, 1 warning, 0 informations\n"
    )
    keys = diagnostic_keys(output, "ws")
    assert list(keys) == [
        "a.py - error: Type \"Literal['a']\" is not assignable (reportAssignmentType)"
    ]
