"""Workspaces: worktree or copy, idempotent preparation, checkpoints, rollback, final diff,
and `oopav apply` into the user's tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from oopav.cli import cli
from oopav.config import Settings
from oopav.events.actions import WriteFileAction
from oopav.sandbox.apply import ActionPlan, apply_plan, plan_action
from oopav.sandbox.workspace import (
    WorkspaceError,
    apply_to_repo,
    checkpoint,
    final_diff,
    parse_size,
    prepare_workspace,
    rollback,
)


def make_repo(path: Path) -> Path:
    path.mkdir()
    (path / "app.py").write_text("def main():\n    return 1\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
        check=True,
    )
    return path


def write(ws: Path, rel: str, content: str) -> None:
    plan = plan_action(ws, WriteFileAction(path=rel, content=content))
    assert isinstance(plan, ActionPlan), plan
    apply_plan(ws, plan)


def test_worktree_lifecycle(tmp_path: Path, settings: Settings) -> None:
    repo = make_repo(tmp_path / "repo")
    info = prepare_workspace(repo, "sess-a", settings)
    assert info.kind == "worktree" and info.branch == "oopav/sess-a"
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert info.base_commit == head
    assert prepare_workspace(repo, "sess-a", settings) == info  # redelivery: same result
    ws = Path(info.path)
    write(ws, "app.py", "def main():\n    return 2\n")
    good = checkpoint(info, "action 1")
    assert good != info.base_commit
    write(ws, "app.py", "def main():\n    return 3\n")
    (ws / "junk.txt").write_text("x")
    assert rollback(info) == good
    assert (ws / "app.py").read_text().endswith("return 2\n") and not (ws / "junk.txt").exists()
    diff = final_diff(info)
    assert "-    return 1\n+    return 2\n" in diff
    # The user's tree is untouched until they ask.
    assert (repo / "app.py").read_text().endswith("return 1\n")
    assert apply_to_repo(info).applied == ["app.py"]
    assert (repo / "app.py").read_text().endswith("return 2\n")


def test_apply_refuses_conflicting_user_changes(tmp_path: Path, settings: Settings) -> None:
    repo = make_repo(tmp_path / "repo")
    info = prepare_workspace(repo, "sess-b", settings)
    write(Path(info.path), "app.py", "def main():\n    return 2\n")
    (repo / "app.py").write_text("def main():\n    return 99\n")
    with pytest.raises(WorkspaceError, match=r"local changes to app\.py"):
        apply_to_repo(info)
    assert (repo / "app.py").read_text().endswith("return 99\n")
    result = CliRunner().invoke(cli, ["apply", "sess-b"])
    assert result.exit_code == 1
    assert "Commit or stash them" in result.output


def test_cli_apply(tmp_path: Path, settings: Settings) -> None:
    repo = make_repo(tmp_path / "repo")
    info = prepare_workspace(repo, "sess-c", settings)
    write(Path(info.path), "new.py", "X = 1\n")
    checkpoint(info, "add new.py")
    runner = CliRunner()
    assert "+X = 1" in runner.invoke(cli, ["apply", "sess-c", "--print"]).output
    result = runner.invoke(cli, ["apply", "sess-c"])
    assert result.exit_code == 0, result.output
    assert (repo / "new.py").read_text() == "X = 1\n"
    missing = runner.invoke(cli, ["apply", "no-such-session"])
    assert missing.exit_code == 1 and "no workspace for session" in missing.output


def test_copy_for_plain_directory(tmp_path: Path, settings: Settings) -> None:
    src = tmp_path / "plain"
    src.mkdir()
    (src / "a.py").write_text("A = 1\n")
    info = prepare_workspace(src, "sess-d", settings)
    assert info.kind == "copy"
    ws = Path(info.path)
    # The history lives outside the workspace; only a gitdir pointer file is inside.
    assert (ws / ".git").is_file()
    write(ws, "a.py", "A = 2\n")
    checkpoint(info, "edit")
    assert "-A = 1\n+A = 2\n" in final_diff(info)
    assert (src / "a.py").read_text() == "A = 1\n"
    assert apply_to_repo(info).applied == ["a.py"]
    assert (src / "a.py").read_text() == "A = 2\n"


def test_a_copy_leaves_out_the_data_directory_it_would_copy_into(tmp_path: Path) -> None:
    """The last line behind the intake's refusal: a plain directory that holds oopav's data
    directory (the workspace is inside it) is copied without it, not into itself forever."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("A = 1\n")
    settings = Settings(data_dir=project / ".oopav-data")
    info = prepare_workspace(project, "sess-self", settings)
    ws = Path(info.path)
    assert info.kind == "copy" and (ws / "a.py").read_text() == "A = 1\n"
    assert not (ws / ".oopav-data").exists()
    assert ws.is_relative_to(project / ".oopav-data")


def test_a_plain_directory_over_the_copy_limit_is_refused_before_anything_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory that is not a git repository is copied whole into every session's
    workspace: one over the limit (a home directory pointed at by mistake) is refused with one
    line saying what to do, and nothing is written; a git repository is never copied."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    for i in range(5):
        (project / "sub" / f"f{i}.bin").write_bytes(b"x" * 1000)
    settings = Settings(data_dir=tmp_path / "data")
    monkeypatch.setenv("OOPAV_COPY_LIMIT", "4K")
    with pytest.raises(
        WorkspaceError, match=r"not a git repository and holds more than 4 KiB.*git init"
    ):
        prepare_workspace(project, "sess-big", settings)
    assert not settings.workspace_for("sess-big").exists()
    monkeypatch.setenv("OOPAV_COPY_LIMIT", "1M")
    monkeypatch.setenv("OOPAV_COPY_LIMIT_FILES", "3")
    with pytest.raises(WorkspaceError, match="more than 3 files"):
        prepare_workspace(project, "sess-many", settings)
    monkeypatch.setenv("OOPAV_COPY_LIMIT_FILES", "10")
    info = prepare_workspace(project, "sess-ok", settings)
    assert info.kind == "copy" and len(list(Path(info.path, "sub").iterdir())) == 5
    # A git repository over the limit gets a worktree, not a copy.
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(project),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "b",
        ],
        check=True,
    )
    monkeypatch.setenv("OOPAV_COPY_LIMIT", "1K")
    assert prepare_workspace(project, "sess-git", settings).kind == "worktree"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("A = 1\n")
    monkeypatch.setenv("OOPAV_COPY_LIMIT", "two gigs")
    with pytest.raises(WorkspaceError, match="not a size: 'two gigs'"):
        prepare_workspace(plain, "sess-bad", settings)


def test_parse_size() -> None:
    assert parse_size("2G") == 2 << 30
    assert parse_size("500M") == 500 << 20
    assert parse_size("1.5KiB") == 1536
    assert parse_size("1024") == 1024
    with pytest.raises(ValueError, match="not a size"):
        parse_size("-1G")


def test_sandbox_exec_cli(tmp_path: Path, settings: Settings) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    runner = CliRunner()
    res = runner.invoke(
        cli, ["sandbox", "exec", "--workspace", str(ws), "--", "sh", "-c", "echo hi > f; exit 3"]
    )
    assert res.exit_code == 3
    assert (ws / "f").read_text() == "hi\n"
    res = runner.invoke(
        cli,
        [
            "sandbox",
            "exec",
            "--workspace",
            str(ws),
            "--timeout",
            "0.5",
            "--json",
            "--",
            "sleep",
            "30",
        ],
    )
    assert res.exit_code == 124
    assert '"timed_out":true' in res.output
    res = runner.invoke(
        cli, ["sandbox", "exec", "--workspace", str(ws), "--grant", "net.bogus", "--", "true"]
    )
    assert res.exit_code == 2 and "unknown scope kind" in res.output


def source_of_kind(tmp_path: Path, kind: str) -> Path:
    """A git repository (prepared as a ``worktree``) or a plain directory (a ``copy``)."""
    if kind == "worktree":
        return make_repo(tmp_path / "repo")
    src = tmp_path / "plain"
    src.mkdir()
    (src / "app.py").write_text("x = 1\n")
    return src


@pytest.mark.parametrize("kind", ["worktree", "copy"])
def test_head_commit_matches_git_also_after_refs_are_packed(
    tmp_path: Path, settings: Settings, kind: str
) -> None:
    from oopav.sandbox.workspace import git, head_commit

    src = source_of_kind(tmp_path, kind)
    info = prepare_workspace(src, f"head-{kind}", settings)
    assert info.kind == kind
    ws = Path(info.path)
    assert head_commit(ws) == info.base_commit == git(ws, "rev-parse", "HEAD").strip()
    write(ws, "b.py", "y = 2\n")
    first = checkpoint(info, "step 1")
    assert first != info.base_commit and first == git(ws, "rev-parse", "HEAD").strip()
    assert checkpoint(info, "nothing changed") == first  # no empty commit
    git(ws, "pack-refs", "--all")  # the loose ref is gone: git is asked instead
    assert head_commit(ws) == first


@pytest.mark.parametrize("kind", ["worktree", "copy"])
def test_head_tree_and_one_process_diffs_match_git(
    tmp_path: Path, settings: Settings, kind: str
) -> None:
    from oopav.sandbox.workspace import (
        diff_between,
        git,
        head_tree,
        numstat_and_diff,
    )

    src = source_of_kind(tmp_path, kind)
    info = prepare_workspace(src, f"tree-{kind}", settings)
    ws = Path(info.path)
    assert head_tree(ws) == git(ws, "rev-parse", "HEAD^{tree}").strip()
    write(ws, "a b.py", "y = 2\nz = 3\n")
    write(ws, "app.py", "x = 2\n")
    first = checkpoint(info, "step 1")
    git(ws, "mv", "a b.py", "moved.py")  # a rename: two paths in the raw record
    second = checkpoint(info, "step 2")
    assert head_tree(ws) == git(ws, "rev-parse", "HEAD^{tree}").strip()
    for before, after in ((info.base_commit, first), (first, second), (second, second)):
        text, names = diff_between(ws, before, after)
        assert text == git(ws, "diff", before, after)
        assert names == git(ws, "diff", "--name-only", before, after).splitlines()
        numstat, patch = numstat_and_diff(ws, before, after, "-U1")
        assert numstat == git(ws, "diff", "--numstat", before, after).splitlines()
        assert patch == git(ws, "diff", "-U1", before, after)
    assert diff_between(ws, first, second)[1] == ["moved.py"]
    git(ws, "gc", "-q")  # packed objects and refs: git must be asked
    assert head_tree(ws) is None
    assert head_tree(tmp_path / "nowhere") is None
