"""The in-process witness that a workspace is exactly at a commit (``sandbox.clean``): what it
spares (rollback's reset + clean, the verifier's `add -A` + diffs) must give git's own answers,
and any change to the files or the index must make it ask git again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oopav.config import Settings
from oopav.context.repomap import tree_key
from oopav.sandbox import clean
from oopav.sandbox.workspace import (
    WorkspaceInfo,
    changed_files,
    changed_lines,
    checkpoint,
    committed_change,
    final_diff,
    git,
    prepare_workspace,
    rollback,
)


def _plain_dir(path: Path) -> Path:
    path.mkdir()
    (path / "app.py").write_text("def main():\n    return 1\n")
    (path / "old.py").write_text("x = 1\n" * 20)
    (path / "data.bin").write_bytes(b"\x00\x01binary")
    return path


@pytest.fixture
def ws(tmp_path: Path, settings: Settings) -> WorkspaceInfo:
    return prepare_workspace(_plain_dir(tmp_path / "repo"), "sess-clean", settings)


def _git_long_way(info: WorkspaceInfo) -> tuple[str, list[str], int]:
    """What the verifier's helpers answered before the witness: `add -A`, then the index."""
    path = Path(info.path)
    git(path, "add", "-A")
    patch = git(path, "diff", "--cached", "--binary", info.base_commit)
    names = [
        n for n in git(path, "diff", "--cached", "--name-only", info.base_commit).split("\n") if n
    ]
    lines = 0
    for row in git(path, "diff", "--cached", "--numstat", info.base_commit).splitlines():
        added, deleted, _ = row.split("\t", 2)
        if added.isdigit() and deleted.isdigit():
            lines += int(added) + int(deleted)
    return patch, names, lines


def test_prepared_and_checkpointed_workspaces_are_known_clean(ws: WorkspaceInfo) -> None:
    path = Path(ws.path)
    assert clean.clean_at(path, ws.base_commit) == ws.base_commit
    (path / "app.py").write_text("def main():\n    return 2\n")
    commit = checkpoint(ws, "step")
    assert commit != ws.base_commit
    assert clean.clean_at(path) == commit
    assert clean.clean_at(path, ws.base_commit) is None  # clean, but at another commit


@pytest.mark.parametrize(
    "change",
    [
        "same_size_rewrite",
        "new_untracked",
        "new_ignored",
        "deleted",
        "empty_dir",
        "index_touched",
        "chmod",
    ],
)
def test_any_change_means_ask_git(ws: WorkspaceInfo, change: str) -> None:
    path = Path(ws.path)
    assert clean.clean_at(path) == ws.base_commit
    if change == "same_size_rewrite":
        # Same size, within the same clock tick as the capture: only the content hash sees it.
        (path / "app.py").write_text("def main():\n    return 7\n")
    elif change == "new_untracked":
        (path / "extra.py").write_text("y = 2\n")
    elif change == "new_ignored":
        (path / "__pycache__").mkdir()
        (path / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"pyc")
    elif change == "deleted":
        (path / "old.py").unlink()
    elif change == "empty_dir":
        (path / "pkg").mkdir()
    elif change == "index_touched":
        git(path, "update-index", "--chmod=+x", "app.py")
    elif change == "chmod":
        os.chmod(path / "app.py", 0o755)
    assert clean.clean_at(path) is None


def test_rollback_restores_what_a_crash_left_and_skips_git_when_clean(
    ws: WorkspaceInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(ws.path)
    (path / "app.py").write_text("half-written by a crashed step\n")
    (path / "stray.py").write_text("z = 3\n")
    assert rollback(ws, ws.base_commit) == ws.base_commit
    assert (path / "app.py").read_text() == "def main():\n    return 1\n"
    assert not (path / "stray.py").exists()
    # Exactly at the target now: a second rollback runs no git at all.
    assert clean.clean_at(path, ws.base_commit) == ws.base_commit
    import oopav.sandbox.workspace as workspace

    def no_git(*args: object, **kwargs: object) -> str:
        raise AssertionError(f"git ran: {args}")

    with monkeypatch.context() as m:
        m.setattr(workspace, "git", no_git)
        assert rollback(ws, ws.base_commit) == ws.base_commit
    assert git(path, "status", "--porcelain") == ""


def test_committed_change_is_git_byte_for_byte(ws: WorkspaceInfo) -> None:
    path = Path(ws.path)
    (path / "app.py").write_text("def main():\n    return 2\n\n\ndef other():\n    pass\n")
    os.rename(path / "old.py", path / "renamed.py")  # a rename, as git detects it
    (path / "data.bin").write_bytes(b"\x00\x02binary!")
    (path / "new file é.py").write_text("v = 1\n")  # quoted by --name-only
    checkpoint(ws, "step")
    assert clean.clean_at(path) is not None
    fast = committed_change(path, ws.base_commit)
    assert fast is not None
    got = (final_diff(ws), changed_files(ws), changed_lines(path, ws.base_commit))
    patch, names, lines = _git_long_way(ws)
    assert got == (patch, names, lines)
    assert "rename to renamed.py" in patch and "GIT binary patch" in patch
    assert fast.lines == lines and fast.patch == patch
    assert '"new file \\303\\251.py"' in names  # git's quoting kept (the long way)


def test_uncommitted_work_still_counts(ws: WorkspaceInfo) -> None:
    """The final diff includes work not yet checkpointed: the witness refuses, git answers."""
    path = Path(ws.path)
    (path / "app.py").write_text("def main():\n    return 3\n")
    assert committed_change(path, ws.base_commit) is None
    assert "+    return 3" in final_diff(ws)
    assert changed_files(ws) == ["app.py"]


def test_repo_map_key_without_status_equals_git_status_key(ws: WorkspaceInfo) -> None:
    path = Path(ws.path)
    fast = tree_key(path)
    clean.forget(path)  # the same question answered by `git status`
    assert tree_key(path) == fast and fast.startswith("git:")
    (path / "app.py").write_text("def main():\n    return 9\n")
    assert not tree_key(path).startswith("git:")  # dirty: the files' fingerprint


def test_worktree_of_a_repository_is_known_clean(tmp_path: Path, settings: Settings) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.py").write_text("a = 1\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"],
        check=True,
    )
    (repo / "b.py").write_text("b = 2\n")  # untracked: snapshotted into the worktree
    info = prepare_workspace(repo, "sess-wt", settings)
    assert info.kind == "worktree" and info.uncommitted == ["b.py"]
    assert clean.clean_at(Path(info.path), info.base_commit) == info.base_commit
    assert git(Path(info.path), "status", "--porcelain") == ""


def test_in_process_init_writes_what_git_init_writes(tmp_path: Path) -> None:
    from oopav.sandbox.workspace import _init_separate

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for d in (ours, theirs):
        d.mkdir()
        (d / "a.py").write_text("a = 1\n")
    _init_separate(ours, tmp_path / "ours.git", "oopav/sess-1")
    separate = f"--separate-git-dir={tmp_path / 'theirs.git'}"
    subprocess.run(
        ["git", "init", "-q", "--template=", separate, "-b", "oopav/sess-1"], cwd=theirs, check=True
    )

    def layout(gitdir: Path) -> dict[str, str]:
        return {
            str(p.relative_to(gitdir)): p.read_text() if p.is_file() else "<dir>"
            for p in sorted(gitdir.rglob("*"))
        }

    assert layout(tmp_path / "ours.git") == layout(tmp_path / "theirs.git")
    assert (ours / ".git").read_text() == f"gitdir: {tmp_path / 'ours.git'}\n"
    git(ours, "add", "-A")
    git(ours, "commit", "-q", "-m", "base")
    assert git(ours, "ls-files") == "a.py\n"
    assert git(ours, "rev-parse", "--abbrev-ref", "HEAD").strip() == "oopav/sess-1"


def test_a_large_workspace_is_left_to_git(
    ws: WorkspaceInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(ws.path)
    monkeypatch.setattr(clean, "MAX_ENTRIES", 2)
    (path / "app.py").write_text("def main():\n    return 5\n")
    commit = checkpoint(ws, "big")
    assert clean.clean_at(path) is None  # no witness: rollback and diffs ask git
    assert rollback(ws, commit) == commit
    assert "+    return 5" in final_diff(ws)
    assert clean.snapshot(path)[1] is None  # and later checkpoints do not walk again


def _tree(path: Path) -> str:
    return git(path, "rev-parse", "HEAD^{tree}").strip()


@pytest.mark.parametrize(
    ("change", "fast"),
    [
        ("modify", True),
        ("delete", True),
        ("chmod", True),
        ("modify_ignored", True),
        ("new_file", False),
        ("new_ignored", False),
        ("file_to_symlink", False),
        ("gitignore_edited", False),
        ("gitignore_removed", False),
        ("nested_repo", False),
    ],
)
def test_checkpoint_commit_a_equals_add_all(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, change: str, fast: bool
) -> None:
    """A checkpoint takes `commit -a` (one git process) only when it commits the same tree
    as `add -A` + `commit`: the same change in two workspaces, one forced the long way."""
    trees = []
    for name, allow in (("long", False), ("short", True)):
        repo = _plain_dir(tmp_path / f"repo-{name}")
        (repo / ".gitignore").write_text("*.log\nhidden/\n")
        (repo / "run.log").write_text("old log\n")
        (repo / "hidden").mkdir()
        (repo / "hidden" / "secret.txt").write_text("s\n")
        info = prepare_workspace(repo, f"sess-ca-{name}", settings)
        path = Path(info.path)
        if change == "modify":
            (path / "app.py").write_text("def main():\n    return 2\n")
        elif change == "delete":
            (path / "old.py").unlink()
        elif change == "chmod":
            os.chmod(path / "app.py", 0o755)
        elif change == "modify_ignored":
            (path / "run.log").write_text("new log\n")
            (path / "app.py").write_text("def main():\n    return 3\n")
        elif change == "new_file":
            (path / "new.py").write_text("N = 1\n")
        elif change == "new_ignored":
            (path / "more.log").write_text("x\n")
        elif change == "file_to_symlink":
            (path / "old.py").unlink()
            (path / "old.py").symlink_to("app.py")
        elif change == "gitignore_edited":
            (path / ".gitignore").write_text("hidden/\n")  # run.log is no longer ignored
        elif change == "gitignore_removed":
            (path / ".gitignore").unlink()
        elif change == "nested_repo":
            (path / "app.py").write_text("def main():\n    return 4\n")
        if change == "nested_repo":
            # A nested repository that was already there when the witness was recorded.
            sub = path / "vendored"
            sub.mkdir()
            (sub / "lib.py").write_text("L = 1\n")
            ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run(["git", "init", "-q", str(sub)], check=True)
            subprocess.run(["git", "-C", str(sub), "add", "-A"], check=True)
            # Fixed dates: the outer tree records the nested commit's id (a gitlink), and the
            # two workspaces' nested commits must be one commit, whatever second each was made in.
            dated = {
                **os.environ,
                "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
                "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
            }
            subprocess.run(
                ["git", *ident, "-C", str(sub), "commit", "-qm", "v"], check=True, env=dated
            )
            clean.record(path, info.base_commit, clean.snapshot(path))
        decided = clean.tracked_changes_only(path, clean.snapshot(path))
        if allow:
            assert decided is fast, change
        else:
            monkeypatch.setattr(clean, "tracked_changes_only", lambda *_: False)
        checkpoint(info, "step")
        monkeypatch.undo()
        trees.append(_tree(path))
        assert clean.clean_at(path) == git(path, "rev-parse", "HEAD").strip()
    assert trees[0] == trees[1], change
