"""Per-session workspaces: a git worktree of the target repository (or a copy with its own
git history when the target is not a repository), checkpoints on a session branch, rollback,
the final diff, and applying it to the user's tree on request.

Git runs here directly (it is the adapter's own bookkeeping, not an agent command) with hooks
and fsmonitor disabled, so nothing the agent wrote inside the workspace runs on the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

from oopav.config import Settings

_SAFE_GIT = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "user.name=oopav",
    "-c",
    "user.email=oopav@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "safe.directory=*",
]


class WorkspaceError(RuntimeError):
    """A workspace operation failed; the message says what to do."""


class WorkspaceInfo(msgspec.Struct, kw_only=True, frozen=True):
    """What the observer puts in ``workspace_prepared``."""

    session_id: str
    path: str
    base_commit: str
    branch: str
    kind: Literal["worktree", "copy"]
    repo: str


# Tool caches never belong in a checkpoint or the final diff (the repository's own .gitignore
# applies as well).
_EXCLUDES = Path(__file__).with_name("workspace-excludes")


def git(cwd: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    proc = subprocess.run(
        ["git", *_SAFE_GIT, "-c", f"core.excludesFile={_EXCLUDES}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        input=input,
        check=False,
    )
    if check and proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


def _meta_path(settings: Settings, session_id: str) -> Path:
    return settings.workspaces_dir / f"{session_id}.json"


@contextlib.contextmanager
def _lock(settings: Settings, session_id: str) -> Iterator[None]:
    settings.workspaces_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.workspaces_dir / f".{session_id}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _is_git_repo(path: Path) -> bool:
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve() == path.resolve()


def branch_for(session_id: str) -> str:
    return f"oopav/{session_id}"


def prepare_workspace(
    repo: Path,
    session_id: str,
    settings: Settings | None = None,
    *,
    isolated_at: str | None = None,
) -> WorkspaceInfo:
    """Create the session's workspace, or return the existing one (idempotent: a redelivered
    task gets the same result).

    ``isolated_at``: for a git repository, check out that commit in a private clone instead
    of adding a worktree, leaving the repository's branches and worktree list untouched
    (replay uses it: the original session's worktree may still hold its branch)."""
    st = settings or Settings()
    repo = repo.expanduser().resolve()
    with _lock(st, session_id):
        meta = _meta_path(st, session_id)
        if meta.exists():
            info = msgspec.json.decode(meta.read_bytes(), type=WorkspaceInfo)
            if Path(info.path).is_dir():
                return info
        if not repo.is_dir():
            raise WorkspaceError(f"repository {repo} is not a directory")
        path = st.workspace_for(session_id)
        branch = branch_for(session_id)
        if path.exists():
            # A crash between creating and recording: start again from nothing.
            shutil.rmtree(path)
            if _is_git_repo(repo):
                git(repo, "worktree", "prune", check=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        if _is_git_repo(repo) and isolated_at is not None:
            gitdir = st.workspaces_dir / ".gitdirs" / session_id
            shutil.rmtree(gitdir, ignore_errors=True)
            gitdir.parent.mkdir(parents=True, exist_ok=True)
            git(
                repo.parent,
                "clone",
                "-q",
                "--shared",
                "--no-checkout",
                f"--separate-git-dir={gitdir}",
                str(repo),
                str(path),
            )
            git(path, "checkout", "-q", "-B", branch, isolated_at)
            base = git(path, "rev-parse", "HEAD").strip()
            kind: Literal["worktree", "copy"] = "worktree"
        elif _is_git_repo(repo):
            base = git(repo, "rev-parse", "HEAD").strip()
            git(repo, "worktree", "add", "--force", "-B", branch, str(path), base)
            kind = "worktree"
        else:
            # The copy's git directory lives outside the workspace so that the sandbox (which
            # hides the data dir) cannot touch the history the checkpoints rely on.
            gitdir = st.workspaces_dir / ".gitdirs" / session_id
            shutil.rmtree(gitdir, ignore_errors=True)
            gitdir.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(repo, path, symlinks=True)
            git(path, "init", "-q", "--separate-git-dir", str(gitdir), "-b", branch)
            git(path, "add", "-A")
            git(path, "commit", "-q", "--allow-empty", "-m", "oopav: base copy")
            base = git(path, "rev-parse", "HEAD").strip()
            kind = "copy"
        info = WorkspaceInfo(
            session_id=session_id,
            path=str(path),
            base_commit=base,
            branch=branch,
            kind=kind,
            repo=str(repo),
        )
        meta.write_bytes(msgspec.json.encode(info))
        return info


def find_workspace(session_id: str, settings: Settings | None = None) -> WorkspaceInfo:
    """The workspace of a session, by its id or a unique prefix of it."""
    st = settings or Settings()
    meta = _meta_path(st, session_id)
    if not meta.exists() and session_id and st.workspaces_dir.is_dir():
        matches = sorted(st.workspaces_dir.glob(f"{session_id}*.json"))
        if len(matches) > 1:
            raise WorkspaceError(
                f"{session_id!r} matches {len(matches)} sessions' workspaces; give more characters"
            )
        if matches:
            meta = matches[0]
    if not meta.exists():
        raise WorkspaceError(
            f"no workspace for session {session_id} under {st.workspaces_dir} "
            "(check the session id and OOPAV_DATA_DIR)"
        )
    return msgspec.json.decode(meta.read_bytes(), type=WorkspaceInfo)


def checkpoint(info: WorkspaceInfo, message: str) -> str:
    """Commit everything in the workspace on the session branch; returns the commit (HEAD
    unchanged when nothing changed)."""
    path = Path(info.path)
    git(path, "add", "-A")
    if git(path, "status", "--porcelain").strip():
        git(path, "commit", "-q", "--no-verify", "-m", message)
    return git(path, "rev-parse", "HEAD").strip()


def rollback(info: WorkspaceInfo, commit: str | None = None) -> str:
    """Discard everything since ``commit`` (default: the last checkpoint)."""
    path = Path(info.path)
    target = commit or git(path, "rev-parse", "HEAD").strip()
    git(path, "reset", "-q", "--hard", target)
    git(path, "clean", "-q", "-fd")
    return target


def final_diff(info: WorkspaceInfo) -> str:
    """The whole change against the base commit, uncommitted work included."""
    path = Path(info.path)
    git(path, "add", "-A")
    return git(path, "diff", "--cached", "--binary", info.base_commit)


def changed_files(info: WorkspaceInfo) -> list[str]:
    path = Path(info.path)
    git(path, "add", "-A")
    return [
        line
        for line in git(path, "diff", "--cached", "--name-only", info.base_commit).splitlines()
        if line
    ]


def apply_to_repo(info: WorkspaceInfo, *, check_only: bool = False) -> list[str]:
    """Apply the final diff to the user's repository with ``git apply``. Refuses, changing
    nothing, when the user's tree has changes of its own to the same files or the patch does
    not apply. Returns the files changed."""
    repo = Path(info.repo)
    diff = final_diff(info)
    files = changed_files(info)
    if not diff.strip():
        return []
    if info.kind == "worktree":
        dirty = {
            line[3:].split(" -> ")[-1]
            for line in git(repo, "status", "--porcelain", "--", *files).splitlines()
            if line
        }
        if dirty:
            raise WorkspaceError(
                f"your working tree in {repo} has uncommitted changes to "
                f"{', '.join(sorted(dirty))}, which this session also changes. "
                "Commit or stash them, then run `oopav apply` again."
            )
    proc = subprocess.run(
        ["git", "apply", "--check", "--whitespace=nowarn", "-"],
        cwd=repo,
        input=diff,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise WorkspaceError(
            f"the session's diff does not apply to {repo}: {proc.stderr.strip()}. "
            "Your tree has diverged; update it or apply the diff by hand "
            "(it is printed by `oopav apply --print`)."
        )
    if not check_only:
        subprocess.run(
            ["git", "apply", "--whitespace=nowarn", "-"],
            cwd=repo,
            input=diff,
            capture_output=True,
            text=True,
            check=True,
        )
    return files


def remove_workspace(info: WorkspaceInfo, settings: Settings | None = None) -> None:
    st = settings or Settings()
    path = Path(info.path)
    if info.kind == "worktree":
        git(Path(info.repo), "worktree", "remove", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(st.workspaces_dir / ".gitdirs" / info.session_id, ignore_errors=True)
    _meta_path(st, info.session_id).unlink(missing_ok=True)
