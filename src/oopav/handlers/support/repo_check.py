"""Which directories the handlers may work on.

A task's ``repo`` is copied or turned into a git worktree, scanned file by file and handed to
the sandbox. Kernel pseudo-filesystems (``/proc``, ``/sys``, ``/dev``, cgroups, ...) never end
when walked and must not be copied; system directories and the home directory itself are never
a project. Both the intake (before accepting a task) and the observer (before preparing a
workspace, in case a task reached the stream some other way) ask ``repo_problem``.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOTS_ENV = "OOPAV_REPO_ROOTS"
MAX_PATH_BYTES = 4095  # PATH_MAX minus the terminating NUL
MAX_NAME_BYTES = 255  # NAME_MAX of every common Linux filesystem

# Directories refused as the repository itself (their subdirectories may be projects, e.g. an
# etckeeper checkout of /etc lives *in* /etc, but /etc is refused as a whole).
REFUSED_EXACT = ("/", "/proc", "/sys", "/dev", "/etc", "/boot", "/run", "/root", "/home")
# Trees refused with everything under them, whatever the mount table says.
REFUSED_TREES = ("/proc", "/sys", "/dev")
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "securityfs",
        "debugfs",
        "tracefs",
        "configfs",
        "fusectl",
        "pstore",
        "bpf",
        "mqueue",
        "hugetlbfs",
        "autofs",
        "binfmt_misc",
        "efivarfs",
        "rpc_pipefs",
        "nsfs",
        "selinuxfs",
    }
)


class RepoProblem(ValueError):
    """Why a path cannot be a task's repository; ``code`` is the rejection code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def path_length_problem(path: str, what: str) -> RepoProblem | None:
    """A path longer than the kernel accepts (ENAMETOOLONG), as a clear error."""
    size = len(path.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        return RepoProblem(
            f"{what} is {size} bytes long; the limit is {MAX_PATH_BYTES}", "path_too_long"
        )
    for part in path.split("/"):
        n = len(part.encode("utf-8", "surrogatepass"))
        if n > MAX_NAME_BYTES:
            return RepoProblem(
                f"{what} has a {n}-byte component ({part[:24]}...); "
                f"a file or directory name is at most {MAX_NAME_BYTES} bytes",
                "path_too_long",
            )
    return None


def _unescape_mount(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def filesystem_type(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> str | None:
    """The filesystem type of the mount that holds ``path`` (already resolved), or None when
    the mount table cannot be read."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return None
    best, fstype = "", None
    text = str(path)
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right:
            continue
        mount = _unescape_mount(fields[4])
        inside = text == mount or text.startswith(mount.rstrip("/") + "/")
        # A later line for the same mount point is a mount on top: it wins.
        if inside and len(mount) >= len(best):
            best, fstype = mount, right.split()[0]
    return fstype


def allowed_roots() -> list[Path]:
    raw = os.environ.get(REPO_ROOTS_ENV, "")
    return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip()]


def _data_dir() -> Path | None:
    from oopav.config import default_data_dir

    try:
        return default_data_dir().resolve()
    except (OSError, RuntimeError):
        return None


def _ignored_by_git(repo: Path, inner: Path) -> bool:
    """Whether ``repo`` is a git repository that ignores ``inner`` (then neither its worktree
    nor the snapshot of its untracked files holds ``inner``)."""
    if not os.path.lexists(repo / ".git"):
        return False
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), "check-ignore", "-q", "--", str(inner.relative_to(repo))],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return False
    return proc.returncode == 0


def repo_problem(repo: str) -> RepoProblem | None:
    """None when ``repo`` (an absolute path) is a directory the handlers may work on."""
    too_long = path_length_problem(repo, "repo path")
    if too_long is not None:
        return too_long
    path = Path(repo).expanduser()
    if not path.is_absolute():
        return RepoProblem(
            f"repo must be an absolute path, got {repo!r} "
            "(it is resolved on the machine running the intake handler)",
            "invalid_path",
        )
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        return RepoProblem(f"repo path {repo} does not exist on the intake host", "not_found")
    except (OSError, RuntimeError) as exc:  # a symlink loop, permissions, ...
        return RepoProblem(
            f"repo path {repo} cannot be resolved: {getattr(exc, 'strerror', None) or exc}",
            "invalid_path",
        )
    if not resolved.is_dir():
        return RepoProblem(f"repo path {repo} is not a directory", "not_a_directory")
    text = str(resolved)
    try:
        home = str(Path.home().resolve())
    except (OSError, RuntimeError):  # no HOME and no passwd entry
        home = ""
    if text in REFUSED_EXACT or text == home:
        what = "your home directory" if text == home else "a system directory"
        return RepoProblem(
            f"repo {text} is {what}, not a project: point it at the repository's own directory",
            "forbidden_path",
        )
    for tree in REFUSED_TREES:
        if text.startswith(tree + "/"):
            return RepoProblem(
                f"repo {text} is under {tree}, a kernel pseudo-filesystem: it cannot be a project",
                "forbidden_path",
            )
    fstype = filesystem_type(resolved)
    if fstype in PSEUDO_FILESYSTEMS:
        return RepoProblem(
            f"repo {text} is on a {fstype} pseudo-filesystem: it cannot be a project",
            "forbidden_path",
        )
    data = _data_dir()
    if data is not None and (resolved == data or data in resolved.parents):
        return RepoProblem(
            f"repo {text} is inside oopav's data directory ({data}): point it at your project, "
            "not at a session's workspace or oopav's own state",
            "forbidden_path",
        )
    if data is not None and resolved in data.parents and not _ignored_by_git(resolved, data):
        # A workspace of this repo would hold oopav's own state: a copy (not a git repository)
        # copies the data directory into itself without end until the disk is full; a git
        # worktree's snapshot of untracked files would copy the event store and workspaces.
        return RepoProblem(
            f"oopav's data directory ({data}) is inside repo {text}: a session's workspace "
            "would copy oopav's own state into itself; set OOPAV_DATA_DIR outside the project "
            "(or, in a git repository, have git ignore it)",
            "forbidden_path",
        )
    roots = allowed_roots()
    if roots and not any(resolved == r or r in resolved.parents for r in roots):
        return RepoProblem(
            f"repo {text} is outside the allowed roots ({REPO_ROOTS_ENV}="
            f"{os.pathsep.join(map(str, roots))})",
            "forbidden_path",
        )
    if not os.access(resolved, os.R_OK | os.X_OK):
        return RepoProblem(f"repo {text} is not readable by the handlers", "not_readable")
    return None
