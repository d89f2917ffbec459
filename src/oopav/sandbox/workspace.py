"""Per-session workspaces: a git worktree of the target repository (or a copy with its own
git history when the target is not a repository), checkpoints on a session branch, rollback,
the final diff, and applying it to the user's tree on request.

The workspace starts from the user's working tree, not just HEAD: uncommitted changes and
untracked files that are not ignored are copied into the worktree and committed there as the
session's base (``WorkspaceInfo.uncommitted`` lists them), so the agent sees what the user sees.

``apply_to_repo`` does not use ``git apply``: inside a subfolder of a larger repository git
silently skips paths outside its prefix. It compares each file the session changed with the
content the session started from, refuses on any difference (local changes), writes the
session's content and reads it back to verify.

Git runs here directly (it is the adapter's own bookkeeping, not an agent command) with hooks
and fsmonitor disabled, so nothing the agent wrote inside the workspace runs on the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import msgspec

from oopav.config import Settings
from oopav.sandbox import clean
from oopav.sandbox.clean import _common_dir, _gitdir_of, _hash_in, _head_from_files, _is_hash

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
    # No `git maintenance run --auto` process after each commit (1-2 ms each here), and no
    # background gc started in a user's repository by a session's checkpoints.
    "-c",
    "maintenance.auto=false",
    "-c",
    "gc.auto=0",
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
    # Files taken from the user's working tree on top of HEAD (uncommitted or untracked);
    # empty for a copy, which is the directory as it is.
    uncommitted: list[str] = msgspec.field(default_factory=list)


# Tool caches never belong in a checkpoint or the final diff (the repository's own .gitignore
# applies as well).
_EXCLUDES = Path(__file__).with_name("workspace-excludes")


def _run_git(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return subprocess.run(
        ["git", *_SAFE_GIT, "-c", f"core.excludesFile={_EXCLUDES}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        input=input,
        check=False,
    )


def git(cwd: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    proc = _run_git(cwd, *args, input=input)
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
    # The top level of a repository or worktree always holds a `.git` entry: without one the
    # answer is no, and the git process (a few ms per call) is spared.
    if not os.path.lexists(path / ".git"):
        return False
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve() == path.resolve()


def _snapshot_working_tree(repo: Path, worktree: Path) -> list[str]:
    """Copy the user's uncommitted changes and untracked, non-ignored files into the fresh
    worktree (deleted files are deleted); returns the paths taken."""
    out = git(repo, "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard")
    taken: list[str] = []
    venvs: dict[Path, bool] = {}

    def in_venv(rel: str) -> bool:
        # An untracked, unignored virtualenv is an environment, not the user's work.
        for parent in Path(rel).parents:
            if parent != Path("."):
                if parent not in venvs:
                    venvs[parent] = (repo / parent / "pyvenv.cfg").is_file()
                if venvs[parent]:
                    return True
        return False

    for rel in sorted(set(filter(None, out.split("\0")))):
        if in_venv(rel):
            continue
        src, dst = repo / rel, worktree / rel
        if src.is_dir() and not src.is_symlink():
            continue  # a nested repository or submodule: not ours to copy
        if src.exists() or src.is_symlink():
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.is_symlink() or dst.exists():
                dst.unlink()
            shutil.copy2(src, dst, follow_symlinks=False)
        elif dst.exists() or dst.is_symlink():
            dst.unlink()
        else:
            continue
        taken.append(rel)
    return taken


def _init_separate(path: Path, gitdir: Path, branch: str) -> None:
    """`git init -q --template= --separate-git-dir <gitdir> -b <branch>` for ``path``, written
    here: a new repository is five small files, and the git process cost 2-5 ms per session.

    git's probes of the file system are repeated, so the config says what git would: whether
    the executable bit sticks (``filemode``), symlinks can be made, names ignore case. A branch
    name git would refuse, or a `.git` already there (copied from a broken repository), takes
    git's own init."""
    if not _refname_ok(branch) or os.path.lexists(path / ".git"):
        git(path, "init", "-q", "--template=", "--separate-git-dir", str(gitdir), "-b", branch)
        return
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (gitdir / sub).mkdir(parents=True, exist_ok=True)
    config = gitdir / "config"
    config.write_text("")
    lines = ["[core]", "\trepositoryformatversion = 0"]
    mode = config.stat().st_mode
    os.chmod(config, mode ^ 0o100)
    filemode = (config.stat().st_mode ^ mode) & 0o100 != 0
    os.chmod(config, mode)
    lines.append(f"\tfilemode = {'true' if filemode else 'false'}")
    lines += ["\tbare = false", "\tlogallrefupdates = true"]
    probe = gitdir / "tXXXXXX"
    try:
        os.symlink("testing", probe)
        probe.unlink()
    except OSError:
        lines.append("\tsymlinks = false")
    if (gitdir / "CoNfIg").exists():
        lines.append("\tignorecase = true")
    config.write_text("\n".join(lines) + "\n")
    (gitdir / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    (path / ".git").write_text(f"gitdir: {gitdir}\n")


def _refname_ok(branch: str) -> bool:
    """The branch names this module makes (``oopav/<session id>``): plain ASCII components
    that git's ref-name rules accept."""
    parts = branch.split("/")
    return all(
        part
        and not part.startswith(".")
        and not part.endswith((".lock", "."))
        and ".." not in part
        and all(c.isascii() and (c.isalnum() or c in "-_.") for c in part)
        for part in parts
    )


def branch_for(session_id: str) -> str:
    return f"oopav/{session_id}"


def _skip_dir(skipped: Path) -> Callable[[str, list[str]], set[str]]:
    """A ``copytree`` ignore function that leaves out the directory ``skipped``."""
    target = skipped.expanduser().resolve()

    def ignore(directory: str, names: list[str]) -> set[str]:
        if Path(directory).resolve() != target.parent:
            return set()
        return {n for n in names if n == target.name}

    return ignore


# What a workspace copy of a directory that is not a git repository may hold: a session
# copies such a directory whole, once per session (a git repository gets a worktree instead).
# A home directory's worth of files pointed at by mistake would fill the disk; the limit
# turns that into one line before anything is written. OOPAV_COPY_LIMIT ("2G", "500M",
# bytes) and OOPAV_COPY_LIMIT_FILES raise it.
COPY_LIMIT_BYTES = 2 << 30
COPY_LIMIT_FILES = 200_000
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``"2G"``, ``"500M"``, ``"1048576"`` -> bytes (binary units, a trailing ``B``/``iB``
    allowed). A clear ValueError otherwise."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if m is None:
        raise ValueError(f"not a size: {text!r} (say e.g. 2G, 500M or a number of bytes)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def copy_limits() -> tuple[int, int]:
    """(bytes, files) a copied workspace may hold, from the environment or the defaults."""
    raw = os.environ.get("OOPAV_COPY_LIMIT")
    files = os.environ.get("OOPAV_COPY_LIMIT_FILES")
    try:
        limit = parse_size(raw) if raw else COPY_LIMIT_BYTES
        count = int(files) if files else COPY_LIMIT_FILES
    except ValueError as exc:
        raise WorkspaceError(f"OOPAV_COPY_LIMIT / OOPAV_COPY_LIMIT_FILES: {exc}") from None
    return limit, count


def _size(n: int) -> str:
    """Bytes in binary units, as a person writes them (2 GiB, 500 MiB, 4 KiB)."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def copy_too_big(origin: Path, skipped: Path | None = None) -> str | None:
    """Why copying ``origin`` (leaving out ``skipped``) would be over the limits, or None.
    Stops walking as soon as a limit is passed, so a huge tree costs little to refuse."""
    limit, count = copy_limits()
    total = files = 0
    skip = skipped.resolve() if skipped is not None else None
    for root, dirs, names in os.walk(origin, followlinks=False):
        if skip is not None:
            dirs[:] = [d for d in dirs if Path(root, d).resolve() != skip]
        for name in names:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += st.st_size
            files += 1
            if total > limit or files > count:
                what = (
                    f"more than {_size(limit)}" if total > limit else f"more than {count:,} files"
                )
                return (
                    f"repo {origin} is not a git repository and holds {what}: a session copies "
                    "such a directory whole into its workspace; make it a git repository "
                    "(git init && git add -A && git commit -m base) so sessions use a worktree, "
                    "or raise OOPAV_COPY_LIMIT / OOPAV_COPY_LIMIT_FILES"
                )
    return None


def prepare_workspace(
    repo: Path,
    session_id: str,
    settings: Settings | None = None,
    *,
    isolated_at: str | None = None,
    source: Path | None = None,
) -> WorkspaceInfo:
    """Create the session's workspace, or return the existing one (idempotent: a redelivered
    task gets the same result).

    ``isolated_at``: for a git repository, check out that commit in a private clone instead
    of adding a worktree, leaving the repository's branches and worktree list untouched
    (replay uses it: the original session's worktree may still hold its branch).

    ``source``: copy the starting tree from this directory (a tree restored from the blob
    store: replay, forks) instead of ``repo``, which is still the one recorded (``apply``
    writes there)."""
    st = settings or Settings()
    repo = repo.expanduser().resolve()
    with _lock(st, session_id):
        meta = _meta_path(st, session_id)
        if meta.exists():
            info = msgspec.json.decode(meta.read_bytes(), type=WorkspaceInfo)
            if Path(info.path).is_dir():
                return info
        origin = source if source is not None else repo
        if not origin.is_dir():
            raise WorkspaceError(f"repository {origin} is not a directory")
        path = st.workspace_for(session_id)
        branch = branch_for(session_id)
        if path.exists():
            # A crash between creating and recording: start again from nothing.
            shutil.rmtree(path)
            if _is_git_repo(repo):
                git(repo, "worktree", "prune", check=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        uncommitted: list[str] = []
        is_repo = source is None and _is_git_repo(repo)
        if is_repo and isolated_at is not None:
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
        elif is_repo:
            head = git(repo, "rev-parse", "HEAD").strip()
            _worktree_add(repo, branch, path, head)
            uncommitted = _snapshot_working_tree(repo, path)
            files = clean.snapshot(path)
            base = head
            if uncommitted:
                git(path, "add", "-A")
                git(
                    path,
                    "commit",
                    "-q",
                    "--no-verify",
                    "--allow-empty",
                    "-m",
                    f"oopav: snapshot of the working tree ({len(uncommitted)} file(s))",
                )
                base = git(path, "rev-parse", "HEAD").strip()
                # A ref keeps the snapshot reachable after the session branch is removed, so
                # `oopav replay` can still check it out.
                git(repo, "update-ref", f"refs/oopav/snapshots/{session_id}", base)
            clean.record(path, base, files)
            kind = "worktree"
        else:
            # The copy's git directory lives outside the workspace so that the sandbox (which
            # hides the data dir) cannot touch the history the checkpoints rely on.
            gitdir = st.workspaces_dir / ".gitdirs" / session_id
            shutil.rmtree(gitdir, ignore_errors=True)
            gitdir.parent.mkdir(parents=True, exist_ok=True)
            # Never copy oopav's own data directory (the workspace is inside it): a repo that
            # holds it would copy itself without end (the intake and the observer refuse such a
            # repo; this is the last line).
            # A tree restored from the store (replay, forks) was admitted when it was recorded.
            too_big = None if source is not None else copy_too_big(origin, st.data_dir)
            if too_big is not None:
                raise WorkspaceError(too_big)
            try:
                shutil.copytree(origin, path, symlinks=True, ignore=_skip_dir(st.data_dir))
            except BaseException:
                # A copy cut short (the disk full, Ctrl-C) must not leave a half tree that
                # keeps the disk full until the next attempt at this session.
                shutil.rmtree(path, ignore_errors=True)
                raise
            files = clean.snapshot(path)
            _init_separate(path, gitdir, branch)
            git(path, "add", "-A")
            git(path, "commit", "-q", "--allow-empty", "-m", "oopav: base copy")
            base = _fresh_ref(gitdir, branch) or git(path, "rev-parse", "HEAD").strip()
            clean.record(path, base, files)
            kind = "copy"
        info = WorkspaceInfo(
            session_id=session_id,
            path=str(path),
            base_commit=base,
            branch=branch,
            kind=kind,
            repo=str(repo),
            uncommitted=uncommitted,
        )
        meta.write_bytes(msgspec.json.encode(info))
        return info


def last_workspace(settings: Settings | None = None, repo: Path | None = None) -> WorkspaceInfo:
    """The newest session's workspace record (session ids sort by time): of ``repo`` when it
    has one there, else of any repository (``oopav apply --last``)."""
    st = settings or Settings()
    metas = sorted(st.workspaces_dir.glob("*.json")) if st.workspaces_dir.is_dir() else []
    infos = []
    for meta in reversed(metas):
        with contextlib.suppress(msgspec.DecodeError, OSError):
            infos.append(msgspec.json.decode(meta.read_bytes(), type=WorkspaceInfo))
    if not infos:
        raise WorkspaceError(
            f"no session workspaces under {st.workspaces_dir} (run a task first, or check "
            "OOPAV_DATA_DIR)"
        )
    if repo is not None:
        here = repo.resolve()
        for info in infos:
            with contextlib.suppress(OSError):
                theirs = Path(info.repo).resolve()
                if theirs == here or here in theirs.parents:
                    return info
    return infos[0]


def _worktree_add(repo: Path, branch: str, path: Path, head: str) -> None:
    """``git worktree add``, tried again when it tripped over another session's worktree being
    added or removed at the same moment (git reads every worktree's metadata: "failed to read
    .git/worktrees/<other>/commondir"; seen with 200 sessions on one repository)."""
    import time

    for attempt in range(4):
        try:
            git(repo, "worktree", "add", "--force", "-B", branch, str(path), head)
            return
        except WorkspaceError as exc:
            if attempt == 3 or ".git/worktrees/" not in str(exc):
                raise
            shutil.rmtree(path, ignore_errors=True)
            git(repo, "worktree", "prune", check=False)
            time.sleep(0.05 * (attempt + 1))


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
    files = clean.snapshot(path)
    if clean.tracked_changes_only(path, files):
        # No new path since the witnessed commit: `commit -a` stages what `add -A` would,
        # in one git process instead of two.
        proc = _run_git(path, "commit", "-a", "-q", "--no-verify", "-m", message)
    else:
        git(path, "add", "-A")
        # Commit straight away (one git process fewer than asking `status` first): git exits
        # 1 when there is nothing to commit, and only then is the tree's status looked at.
        proc = _run_git(path, "commit", "-q", "--no-verify", "-m", message)
    if proc.returncode != 0 and (
        proc.returncode != 1 or git(path, "status", "--porcelain").strip()
    ):
        raise WorkspaceError(f"git commit failed in {path}: {proc.stderr.strip()}")
    commit = head_commit(path)
    # The files are now the commit's tree: later steps can know it without asking git.
    clean.record(path, commit, files)
    return commit


def head_commit(path: Path) -> str:
    """The workspace's HEAD commit, like `git rev-parse HEAD`.

    Read from the files when HEAD is a loose ref (as a session branch is while its session
    runs): one git process fewer on every step. Anything else (a packed ref, reftable, an
    unexpected layout) asks git."""
    try:
        found = _head_from_files(_gitdir_of(Path(path)))
    except OSError:
        found = None
    return found or git(Path(path), "rev-parse", "HEAD").strip()


def head_tree(path: Path) -> str | None:
    """The tree of the HEAD commit of the work tree whose top level is ``path``, read from a
    loose commit object (a session's checkpoints are loose), or None when git must be asked
    (no `.git` here, a packed ref or object, another layout)."""
    import zlib

    try:
        gitdir = _gitdir_of(Path(path))
        commit = _head_from_files(gitdir)
        if commit is None or len(commit) != 40:
            return None
        obj = _common_dir(gitdir) / "objects" / commit[:2] / commit[2:]
        data = zlib.decompress(obj.read_bytes())
    except (OSError, zlib.error):
        return None
    header, _, body = data.partition(b"\0")
    if not header.startswith(b"commit ") or not body.startswith(b"tree "):
        return None
    tree = body[5 : body.find(b"\n")].decode("ascii", "replace")
    return tree if _is_hash(tree) else None


def diff_between(path: Path, before: str, after: str) -> tuple[str, list[str]]:
    """``git diff before after`` and the changed paths (``--name-only``, unquoted) from one
    git process: ``--raw -z`` records come first, then the patch, byte for byte the same."""
    out = git(path, "diff", "--raw", "-z", "-p", before, after)
    names, pos = _raw_names(out, 0)
    if out.startswith("\0", pos):
        pos += 1
    return out[pos:], names


def _raw_names(out: str, pos: int) -> tuple[list[str], int]:
    """The paths of ``--raw -z`` records from ``pos`` (the new path of a rename or copy), and
    where the records end."""
    names: list[str] = []
    while out.startswith(":", pos):
        end = out.index("\0", pos)
        status = out[pos:end].rsplit(" ", 1)[-1]
        pos = end + 1
        paths = []
        for _ in range(2 if status[:1] in ("R", "C") else 1):
            end = out.index("\0", pos)
            paths.append(out[pos:end])
            pos = end + 1
        names.append(paths[-1])
    return names, pos


def numstat_and_diff(path: Path, before: str, after: str, *args: str) -> tuple[list[str], str]:
    """``git diff --numstat`` lines and ``git diff <args>`` (a patch) from one git process."""
    out = git(path, "diff", "--numstat", "-p", *args, before, after)
    lines = out.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("diff --git")), len(lines))
    return [line for line in lines[:start] if line], "\n".join(lines[start:])


def _fresh_ref(gitdir: Path, branch: str) -> str | None:
    """The commit of ``branch`` read from its loose ref file in a repository just created
    (no packed refs yet), sparing a `rev-parse` process; None when it is not there."""
    return _hash_in(gitdir / "refs" / "heads" / branch)


def rollback(info: WorkspaceInfo, commit: str | None = None) -> str:
    """Discard everything since ``commit`` (default: the last checkpoint)."""
    path = Path(info.path)
    target = commit or git(path, "rev-parse", "HEAD").strip()
    if clean.clean_at(path, target):
        return target  # exactly there already: reset and clean would change nothing
    git(path, "reset", "-q", "--hard", target)
    git(path, "clean", "-q", "-fd")
    clean.record(path, target, clean.snapshot(path))
    return target


def final_diff(info: WorkspaceInfo) -> str:
    """The whole change against the base commit, uncommitted work included."""
    path = Path(info.path)
    committed = committed_change(path, info.base_commit)
    if committed is not None:
        return committed.patch
    git(path, "add", "-A")
    return git(path, "diff", "--cached", "--binary", info.base_commit)


def changed_files(info: WorkspaceInfo) -> list[str]:
    path = Path(info.path)
    committed = committed_change(path, info.base_commit)
    # `--name-only` quotes unusual paths (`core.quotePath`): those take git's own answer.
    if committed is not None and all(map(_plain, committed.names)):
        return list(committed.names)
    git(path, "add", "-A")
    return [
        line
        for line in git(path, "diff", "--cached", "--name-only", info.base_commit).splitlines()
        if line
    ]


def _plain(name: str) -> bool:
    return all(" " <= c <= "~" and c not in '"\\' for c in name)


class CommittedChange(msgspec.Struct, frozen=True):
    """What the verifier asks about a workspace that is exactly at a commit: the changed
    paths (``--name-only``), added + deleted lines (``--numstat``) and the ``--binary``
    patch against ``base``, from one git process."""

    names: tuple[str, ...]
    lines: int
    patch: str


_COMMITTED: dict[tuple[str, str, str], CommittedChange] = {}


def committed_change(path: Path, base: str) -> CommittedChange | None:
    """The change from ``base`` to the workspace, when the workspace is provably its HEAD
    commit (``sandbox.clean``): then ``git add -A`` + ``diff --cached base`` equals the diff
    between the two commits, which never changes, so it is computed once per pair. None:
    ask git the long way."""
    head = clean.clean_at(path)
    if head is None:
        return None
    key = (str(path), base, head)
    found = _COMMITTED.get(key)
    if found is not None:
        return found
    out = git(path, "diff", "--raw", "-z", "--numstat", "-p", "--binary", base, head)
    names, pos = _raw_names(out, 0)
    lines = 0
    while pos < len(out) and out[pos] != "\0":
        end = out.index("\0", pos)
        added, deleted, rel = out[pos:end].split("\t", 2)
        pos = end + 1
        if not rel:  # a rename: the old and the new path follow
            pos = out.index("\0", out.index("\0", pos) + 1) + 1
        if added.isdigit() and deleted.isdigit():
            lines += int(added) + int(deleted)
    if out.startswith("\0", pos):
        pos += 1
    found = CommittedChange(names=tuple(names), lines=lines, patch=out[pos:])
    if len(_COMMITTED) >= 64:
        _COMMITTED.pop(next(iter(_COMMITTED)))
    _COMMITTED[key] = found
    return found


class FileResult(msgspec.Struct, kw_only=True, frozen=True):
    """One file the session changed: its content at the base and at the end (None: absent)."""

    path: str
    before: bytes | None
    after: bytes | None
    executable: bool = False


class SessionResult(msgspec.Struct, kw_only=True, frozen=True):
    """What ``oopav apply`` needs, kept when the workspace itself is removed."""

    session_id: str
    repo: str
    base_commit: str
    diff: str
    files: list[FileResult]


class ApplyReport(msgspec.Struct, kw_only=True, frozen=True):
    repo: str
    applied: list[str]
    already: list[str]
    checked_only: bool


def _result_path(settings: Settings, session_id: str) -> Path:
    return settings.workspaces_dir / f"{session_id}.result"


def _git_bytes(cwd: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        ["git", *_SAFE_GIT, *args], cwd=cwd, capture_output=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise WorkspaceError(
            f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace').strip()}"
        )
    return proc.stdout


def _collect_result(info: WorkspaceInfo) -> SessionResult:
    path = Path(info.path)
    git(path, "add", "-A")
    out = git(path, "diff", "--cached", "--no-renames", "--name-status", "-z", info.base_commit)
    fields = out.split("\0")
    files: list[FileResult] = []
    for status, rel in zip(fields[0::2], fields[1::2], strict=False):
        if not rel:
            continue
        before = None if status == "A" else _git_bytes(path, "show", f"{info.base_commit}:{rel}")
        target = path / rel
        after: bytes | None = None
        executable = False
        if status != "D":
            after = os.readlink(target).encode() if target.is_symlink() else target.read_bytes()
            executable = os.access(target, os.X_OK) and not target.is_symlink()
        files.append(FileResult(path=rel, before=before, after=after, executable=executable))
    return SessionResult(
        session_id=info.session_id,
        repo=info.repo,
        base_commit=info.base_commit,
        diff=final_diff(info),
        files=files,
    )


def session_result(info: WorkspaceInfo, settings: Settings | None = None) -> SessionResult:
    """The session's changes, from its workspace or, once that is removed, from the record
    kept when it was removed."""
    if Path(info.path).is_dir():
        return _collect_result(info)
    kept = _result_path(settings or Settings(), info.session_id)
    if kept.exists():
        return msgspec.msgpack.decode(kept.read_bytes(), type=SessionResult)
    raise WorkspaceError(
        f"the workspace of session {info.session_id} is gone ({info.path}) and no result was "
        "kept; nothing to apply"
    )


def _inside(repo: Path, rel: str) -> Path:
    target = repo / rel
    if rel.startswith("/") or ".." in Path(rel).parts:
        raise WorkspaceError(f"refusing to apply a path outside {repo}: {rel!r}")
    parent = target.parent.resolve()
    if parent != repo and repo not in parent.parents:
        raise WorkspaceError(f"refusing to apply {rel!r}: it leads outside {repo} (a symlink)")
    return target


def _current(target: Path) -> bytes | None:
    if target.is_symlink():
        return os.readlink(target).encode()
    if target.is_dir():
        return b"\0<directory>"
    return target.read_bytes() if target.exists() else None


def _write(target: Path, data: bytes, executable: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
    mode = (mode | 0o111) if executable else (mode & ~0o111)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".oopav-apply-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply_to_repo(
    info: WorkspaceInfo, *, check_only: bool = False, settings: Settings | None = None
) -> ApplyReport:
    """Apply the session's changes to the user's tree (``info.repo``), file by file.

    Every file the session changed must still hold the content the session started from (or
    already hold the session's result); otherwise nothing is written and the error names the
    files. After writing, each file is read back and compared with the session's result."""
    repo = Path(info.repo).resolve()
    if not repo.is_dir():
        raise WorkspaceError(f"the session's repository {repo} does not exist any more")
    result = session_result(info, settings)
    pending: list[tuple[FileResult, Path]] = []
    already: list[str] = []
    conflicts: list[str] = []
    for f in result.files:
        target = _inside(repo, f.path)
        now = _current(target)
        if now == f.after:
            already.append(f.path)
        elif now != f.before:
            conflicts.append(f.path)
        else:
            pending.append((f, target))
    if conflicts:
        raise WorkspaceError(
            f"not applied: your tree in {repo} has local changes to {', '.join(conflicts)} "
            "(they differ from what the session started from), and the session changes them "
            "too. Commit or stash them, or merge by hand: "
            f"`oopav apply {info.session_id} --print > session.diff && git apply -3 session.diff`."
        )
    report = ApplyReport(
        repo=str(repo), applied=[f.path for f, _ in pending], already=already, checked_only=True
    )
    if check_only:
        return report
    for f, target in pending:
        if f.after is None:
            target.unlink(missing_ok=True)
        else:
            if target.is_symlink() or target.is_dir():
                target.unlink()
            _write(target, f.after, f.executable)
    wrong = [f.path for f, target in pending if _current(target) != f.after]
    if wrong:
        raise WorkspaceError(
            f"applied, but {', '.join(wrong)} in {repo} do not match the session's result "
            "afterwards (something else wrote them?): check `git diff` there"
        )
    return msgspec.structs.replace(report, checked_only=False)


def remove_workspace(info: WorkspaceInfo, settings: Settings | None = None) -> None:
    """Remove the worktree (or copy), its git directory and the session branch; keep the
    session's result so that ``oopav apply`` still works, and the metadata pointing to it."""
    st = settings or Settings()
    path = Path(info.path)
    if path.is_dir():
        result = _collect_result(info)
        _result_path(st, info.session_id).write_bytes(msgspec.msgpack.encode(result))
    repo = Path(info.repo)
    if info.kind == "worktree" and repo.is_dir() and _is_git_repo(repo):
        listed = git(repo, "worktree", "list", "--porcelain", check=False)
        # A replay's private clone is not one of the repository's worktrees, and the branch of
        # that name belongs to the original session: leave both alone.
        if {f"worktree {path}", f"worktree {path.resolve()}"} & set(listed.splitlines()):
            git(repo, "worktree", "remove", "--force", str(path), check=False)
            git(repo, "worktree", "prune", check=False)
            git(repo, "branch", "-D", info.branch, check=False)
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(st.workspaces_dir / ".gitdirs" / info.session_id, ignore_errors=True)
    (st.workspaces_dir / f"{info.session_id}.keep").unlink(missing_ok=True)


def keep_workspace(settings: Settings, session_id: str) -> None:
    """Mark a session's workspace as kept (``oopav run --keep``): the automatic clean-up of
    ``oopav up`` leaves it; ``oopav gc`` still removes it once the session is finished."""
    settings.workspaces_dir.mkdir(parents=True, exist_ok=True)
    (settings.workspaces_dir / f"{session_id}.keep").touch()


def is_kept(settings: Settings, session_id: str) -> bool:
    return (settings.workspaces_dir / f"{session_id}.keep").exists()


def list_workspaces(settings: Settings | None = None) -> list[WorkspaceInfo]:
    st = settings or Settings()
    if not st.workspaces_dir.is_dir():
        return []
    out = []
    for meta in sorted(st.workspaces_dir.glob("*.json")):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError, OSError):
            out.append(msgspec.json.decode(meta.read_bytes(), type=WorkspaceInfo))
    return out


def gc_workspaces(
    settings: Settings | None = None, *, keep: set[str] | None = None, dry_run: bool = False
) -> list[str]:
    """Remove every workspace still on disk except those of the sessions in ``keep``, and
    directories under the workspaces folder that no session records. Returns what it removed
    (or would remove)."""
    st = settings or Settings()
    keep = keep or set()
    removed: list[str] = []
    known: set[str] = set()
    for info in list_workspaces(st):
        known.add(info.session_id)
        if info.session_id in keep or not Path(info.path).is_dir():
            continue
        removed.append(info.path)
        if not dry_run:
            with _lock(st, info.session_id):
                remove_workspace(info, st)
    if st.workspaces_dir.is_dir():
        for d in sorted(st.workspaces_dir.iterdir()):
            if d.is_dir() and not d.name.startswith(".") and d.name not in known | keep:
                removed.append(str(d))
                if not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
    return removed


def export_tree(repo: Path, commit: str, dest: Path) -> Path:
    """The files of ``commit`` (no .git) extracted into ``dest``, replacing what was there: a
    read-only copy of a past state to run a check against (the compile gate's baseline)."""
    import io
    import tarfile

    data = _git_bytes(repo, "archive", "--format=tar", commit)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def changed_lines(root: Path, base: str) -> int:
    """Added plus deleted lines between ``base`` and the working tree (binary files count 0)."""
    committed = committed_change(root, base)
    if committed is not None:
        return committed.lines
    try:
        subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
        out = subprocess.run(
            ["git", "diff", "--cached", "--numstat", base],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    total = 0
    for line in out.splitlines():
        added, deleted, *_ = line.split("\t")
        if added.isdigit() and deleted.isdigit():
            total += int(added) + int(deleted)
    return total


def _with_index(root: Path, index: Path, *args: str, input: str | None = None) -> str:
    """``git <args>`` in ``root`` against a private index file (the real index untouched)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_INDEX_FILE"] = str(index)
    proc = subprocess.run(
        ["git", *_SAFE_GIT, "-c", f"core.excludesFile={_EXCLUDES}", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        input=input,
        check=False,
    )
    if proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args)} failed in {root}: {proc.stderr.strip()}")
    return proc.stdout


def tree_hash(root: Path) -> str:
    """The git tree of the work tree's files as they are now (tracked and untracked, ignored
    ones excluded), written through a private copy of the index so the session's index and
    its stat cache stay as they were. Two calls give the same hash exactly when no file a
    checkpoint would record changed in between: how a gate proves it edited nothing."""
    with tempfile.TemporaryDirectory(prefix="oopav-tree-") as tmp:
        index = Path(tmp) / "index"
        real = Path(git(root, "rev-parse", "--git-path", "index").strip())
        real = real if real.is_absolute() else root / real
        if real.is_file():
            shutil.copyfile(real, index)  # its stat cache spares rehashing unchanged files
        _with_index(root, index, "add", "-A")
        return _with_index(root, index, "write-tree").strip()


def restore_tree(root: Path, tree: str) -> list[str]:
    """Put the work tree back to ``tree`` (from ``tree_hash``): changed and deleted files
    rewritten, files that were not there removed. Returns the paths that differed."""
    now = tree_hash(root)
    if now == tree:
        return []
    changed = [
        p for p in git(root, "diff-tree", "-r", "--name-only", "-z", tree, now).split("\0") if p
    ]
    with tempfile.TemporaryDirectory(prefix="oopav-tree-") as tmp:
        index = Path(tmp) / "index"
        _with_index(root, index, "read-tree", tree)
        _with_index(root, index, "checkout-index", "-a", "-f")
        extra = _with_index(root, index, "ls-files", "-o", "--exclude-standard", "-z")
        for rel in (p for p in extra.split("\0") if p):
            with contextlib.suppress(OSError):
                (root / rel).unlink()
    clean.forget(root)
    return sorted(changed)
