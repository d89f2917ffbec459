"""Resource limits for sandboxed commands: rlimits applied in the child before it execs the
sandbox, and a pids cgroup that caps the process count.

Why a cgroup: RLIMIT_NPROC is counted per kernel uid and never enforced for uid 0, and a
user namespace does not change the kernel uid of a root caller. So as root a fork bomb is only
stopped by the pids controller. As non-root, RLIMIT_NPROC inside a fresh user namespace counts
only the sandbox's processes and is enough on its own.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

MiB = 1024 * 1024


class Limits(msgspec.Struct, kw_only=True, frozen=True):
    """Hard limits for one command. Every field is finite (DESIGN invariant 8)."""

    cpu_seconds: int = 120
    address_space_bytes: int = 4096 * MiB
    processes: int = 256
    file_size_bytes: int = 256 * MiB
    open_files: int = 1024
    # Bytes of each stream returned inline; the full output stays in the artifact files.
    output_tail_bytes: int = 8192
    # Memory of the whole process tree together (a memory cgroup, sandbox/memory.py; 0: none).
    memory_bytes: int = 2048 * MiB
    # Artifacts (full outputs, reports) one session may keep on disk (sandbox/artifacts.py).
    artifacts_bytes: int = 256 * MiB


def _procs_files(cgroup_procs: Path | Sequence[Path] | None) -> list[str]:
    if cgroup_procs is None:
        return []
    if isinstance(cgroup_procs, Path):
        return [str(cgroup_procs)]
    return [str(p) for p in cgroup_procs]


def rlimit_pairs(limits: Limits) -> list[tuple[int, int]]:
    """(resource, value) pairs, soft == hard so the sandboxed command cannot raise them."""
    return [
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_AS, limits.address_space_bytes),
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    ]


def make_preexec(limits: Limits, cgroup_procs: Path | Sequence[Path] | None) -> Callable[[], None]:
    """The function run in the forked child before exec: join the cgroup first (so every
    descendant is counted), then lower the rlimits. Only async-signal-safe-ish work here."""
    pairs = rlimit_pairs(limits)
    files = _procs_files(cgroup_procs)

    def _preexec() -> None:
        for procs in files:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        for res, value in pairs:
            resource.setrlimit(res, (value, value))
        # The parent may ignore SIGPIPE/SIGXFSZ (Python does SIGPIPE); restore defaults so the
        # command sees the usual behaviour.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)

    return _preexec


def apply_limits(
    limits: Limits, pids: Sequence[int], cgroup_procs: Path | Sequence[Path] | None
) -> None:
    """From the parent: move ``pids`` into the cgroup (first, so anything they fork later is
    counted) and set their rlimits. Used while the sandbox is blocked before its command
    starts, so nothing escapes either. Raises OSError (ProcessLookupError: a pid is gone)."""
    for procs in _procs_files(cgroup_procs):
        fd = os.open(procs, os.O_WRONLY)
        try:
            for pid in pids:
                os.write(fd, str(pid).encode())
        finally:
            os.close(fd)
    pairs = rlimit_pairs(limits)
    for pid in pids:
        for res, value in pairs:
            resource.prlimit(pid, res, (value, value))


def _own_cgroup_paths() -> tuple[str | None, str | None]:
    """(v1 pids path, v2 unified path) of this process, from /proc/self/cgroup."""
    v1: str | None = None
    v2: str | None = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "pids" in controllers.split(","):
                v1 = path
            elif controllers == "":
                v2 = path
    return v1, v2


class PidsCgroup:
    """A throw-away pids cgroup for one command: created before, swept and removed after."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    @classmethod
    def create(cls, max_pids: int, root: Path = Path("/sys/fs/cgroup")) -> PidsCgroup | None:
        """A new cgroup with ``pids.max`` set, or None when this host gives us none."""
        v1, v2 = _own_cgroup_paths()
        candidates: list[Path] = []
        if v1 is not None and (root / "pids").is_dir():
            candidates.append(root / "pids" / v1.lstrip("/"))
        if v2 is not None and (root / "cgroup.controllers").exists():
            candidates.append(root / v2.lstrip("/"))
        for parent in candidates:
            path = parent / "oopav" / uuid.uuid4().hex[:16]
            try:
                path.mkdir(parents=True)
                (path / "pids.max").write_text(str(max_pids))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path)
        return None

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.procs.read_text().split()]
        except OSError:
            return []

    def kill_all(self) -> int:
        """SIGKILL whatever is still in the cgroup (a process the pid namespace missed)."""
        killed = 0
        # A fork bomb may refill between reads; the pids.max cap bounds the loop.
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
        return killed

    def remove(self) -> None:
        self.kill_all()
        for _ in range(200):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                # Killed tasks leave the cgroup asynchronously; yield and retry.
                os.sched_yield()
                self.kill_all()


NO_PROCESS_LIMIT = (
    "cannot cap the number of processes: running as root (RLIMIT_NPROC is not enforced for "
    "uid 0) and no writable pids cgroup under /sys/fs/cgroup. Fix: run oopav as a non-root "
    "user, or delegate a pids cgroup to it (cgroup v2: enable +pids in the parent's "
    "cgroup.subtree_control), or set SandboxConfig(allow_unlimited_processes=True) to accept "
    "the risk."
)
