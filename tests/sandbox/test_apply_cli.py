"""`oopav apply` as a user runs it (issue 15 §1): in a subfolder of a larger repository,
dry run, conflicts, verification; the workspace includes the user's uncommitted work; the
workspace is removed when a session completes and `oopav gc` removes leftovers."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from click.testing import CliRunner

from oopav.cli import cli
from oopav.config import Settings
from oopav.events.actions import WriteFileAction
from oopav.sandbox.apply import ActionPlan, apply_plan, plan_action
from oopav.sandbox.workspace import (
    find_workspace,
    gc_workspaces,
    prepare_workspace,
    remove_workspace,
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def outer_repo_with_project(tmp_path: Path) -> Path:
    """The quick start's shape: the project is a subfolder of a larger git repository."""
    outer = tmp_path / "outer"
    proj = outer / "examples" / "proj"
    (proj / "pkg").mkdir(parents=True)
    (outer / "top.txt").write_text("top\n")
    (proj / "pkg" / "a.py").write_text("def fetch():\n    return 1\n")
    (proj / "b.py").write_text("from pkg.a import fetch\n")
    git(outer, "init", "-q", "-b", "main")
    git(outer, "add", "-A")
    git(outer, "commit", "-qm", "init")
    return proj


def edit(ws: Path, rel: str, content: str) -> None:
    plan = plan_action(ws, WriteFileAction(path=rel, content=content))
    assert isinstance(plan, ActionPlan), plan
    apply_plan(ws, plan)


def invoke(data: Path, *args: str, cwd: Path | None = None) -> tuple[int, str]:
    """Run the CLI in ``cwd`` (the user's project), the global option after the command."""
    with contextlib.chdir(cwd or Path.cwd()):
        result = CliRunner().invoke(cli, [*args, "--data-dir", str(data)])
    return result.exit_code, result.output


def test_apply_in_a_subfolder_of_a_larger_repo_changes_the_files(tmp_path: Path) -> None:
    proj = outer_repo_with_project(tmp_path)
    data = tmp_path / "data"
    info = prepare_workspace(proj, "sess-sub", Settings(data_dir=data))
    assert info.kind == "copy"
    ws = Path(info.path)
    edit(ws, "pkg/a.py", "def fetch_page():\n    return 1\n")
    edit(ws, "b.py", "from pkg.a import fetch_page\n")
    edit(ws, "pkg/new.py", "X = 1\n")

    # --check (global option after the subcommand) writes nothing.
    code, out = invoke(data, "apply", "sess-sub", "--check", cwd=proj)
    assert code == 0, out
    assert "would apply 3 file(s)" in out
    assert (proj / "b.py").read_text() == "from pkg.a import fetch\n"

    code, out = invoke(data, "apply", "sess-sub", cwd=proj)
    assert code == 0, out
    assert "applied 3 file(s)" in out and "verified" in out
    assert (proj / "pkg" / "a.py").read_text() == "def fetch_page():\n    return 1\n"
    assert (proj / "b.py").read_text() == "from pkg.a import fetch_page\n"
    assert (proj / "pkg" / "new.py").read_text() == "X = 1\n"
    # The outer repository sees exactly the session's change, nothing else.
    status = git(proj.parents[1], "status", "--porcelain").split("\n")
    assert sorted(filter(None, status)) == [
        " M examples/proj/b.py",
        " M examples/proj/pkg/a.py",
        "?? examples/proj/pkg/new.py",
    ]
    # Applying again is a no-op, said as such.
    code, out = invoke(data, "apply", "sess-sub")
    assert code == 0 and "already applied" in out and "applied 3" not in out


def test_apply_refuses_local_changes_and_writes_nothing(tmp_path: Path) -> None:
    proj = outer_repo_with_project(tmp_path)
    data = tmp_path / "data"
    info = prepare_workspace(proj, "sess-conf", Settings(data_dir=data))
    edit(Path(info.path), "pkg/a.py", "def fetch_page():\n    return 1\n")
    edit(Path(info.path), "b.py", "from pkg.a import fetch_page\n")
    (proj / "b.py").write_text("from pkg.a import fetch  # mine\n")
    for args in (("apply", "sess-conf", "--check"), ("apply", "sess-conf")):
        code, out = invoke(data, *args)
        assert code == 1
        assert "local changes to b.py" in out and "Commit or stash" in out
    # All or nothing: the file without a conflict was not written either.
    assert (proj / "pkg" / "a.py").read_text() == "def fetch():\n    return 1\n"


def test_workspace_includes_uncommitted_and_untracked_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    (repo / "gone.py").write_text("G = 1\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (repo / "a.py").write_text("A = 2  # uncommitted\n")
    (repo / "new.py").write_text("N = 1\n")
    (repo / "debug.log").write_text("ignored\n")
    (repo / "env" / "lib").mkdir(parents=True)
    (repo / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (repo / "env" / "lib" / "site.py").write_text("")
    (repo / "gone.py").unlink()
    settings = Settings(data_dir=tmp_path / "data")
    info = prepare_workspace(repo, "sess-dirty", settings)
    ws = Path(info.path)
    assert info.kind == "worktree"
    assert sorted(info.uncommitted) == ["a.py", "gone.py", "new.py"]
    assert (ws / "a.py").read_text() == "A = 2  # uncommitted\n"
    assert (ws / "new.py").read_text() == "N = 1\n"
    assert not (ws / "gone.py").exists() and not (ws / "debug.log").exists()
    assert not (ws / "env").exists()  # an untracked virtualenv is not the user's work
    # The base is the snapshot, so the session's diff holds only its own change ...
    edit(ws, "a.py", "A = 3\n")
    code, out = invoke(settings.data_dir, "apply", "sess-dirty", "--print")
    assert code == 0 and "-A = 2  # uncommitted\n+A = 3\n" in out and "new.py" not in out
    # ... and it applies onto the user's (still dirty) tree.
    code, out = invoke(settings.data_dir, "apply", "sess-dirty")
    assert code == 0, out
    assert (repo / "a.py").read_text() == "A = 3\n"
    # The user's branch and index are untouched.
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(repo, "diff", "--cached", "--name-only") == ""


def test_removed_workspace_still_applies_and_gc_cleans_leftovers(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    settings = Settings(data_dir=tmp_path / "data")
    done = prepare_workspace(repo, "sess-done", settings)
    edit(Path(done.path), "a.py", "A = 2\n")
    remove_workspace(done, settings)
    assert not Path(done.path).exists()
    assert "oopav/sess-done" not in git(repo, "branch", "--list")
    assert str(done.path) not in git(repo, "worktree", "list")
    code, out = invoke(settings.data_dir, "apply", "sess-done")
    assert code == 0 and "applied 1 file(s)" in out, out
    assert (repo / "a.py").read_text() == "A = 2\n"

    left = prepare_workspace(repo, "sess-left", settings)
    running = prepare_workspace(repo, "sess-running", settings)
    (settings.workspaces_dir / "orphan").mkdir()
    assert gc_workspaces(settings, keep={"sess-running"}, dry_run=True) == [
        left.path,
        str(settings.workspaces_dir / "orphan"),
    ]
    assert Path(left.path).exists()
    gc_workspaces(settings, keep={"sess-running"})
    assert not Path(left.path).exists() and Path(running.path).exists()
    assert "oopav/sess-left" not in git(repo, "branch", "--list")
    assert "oopav/sess-running" in git(repo, "branch", "--list")
    assert find_workspace("sess-left", settings).session_id == "sess-left"
    code, out = invoke(settings.data_dir, "gc", "--all")
    assert code == 0 and "removed 1 workspace(s)" in out, out
    assert not Path(running.path).exists()


async def test_up_removes_a_completed_sessions_workspace_unless_kept(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from oopav.sandbox.cleanup import WorkspaceCleaner
    from oopav.sandbox.workspace import keep_workspace

    repo = tmp_path / "plain"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    settings = Settings(data_dir=tmp_path / "data")
    done = prepare_workspace(repo, "sess-up-done", settings)
    kept = prepare_workspace(repo, "sess-up-kept", settings)
    running = prepare_workspace(repo, "sess-up-running", settings)
    keep_workspace(settings, "sess-up-kept")
    cleaner = WorkspaceCleaner(settings)
    completed = SimpleNamespace(type="session_completed")
    cleaner.listener(1, completed, SimpleNamespace(session_id="sess-up-done"))
    cleaner.listener(2, completed, SimpleNamespace(session_id="sess-up-kept"))
    cleaner.listener(
        3, SimpleNamespace(type="action_applied"), SimpleNamespace(session_id="sess-up-running")
    )
    await cleaner.aclose()
    assert not Path(done.path).exists()
    assert Path(kept.path).exists() and Path(running.path).exists()
