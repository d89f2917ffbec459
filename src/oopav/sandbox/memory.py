"""A memory limit for the whole sandboxed process tree: a throw-away memory cgroup per command.

RLIMIT_AS caps each process's address space (4 GiB by default), but a command may fork up to
``processes`` of them, and a memory hog in one process is only stopped by that per-process
cap. A memory cgroup counts every process of the command together (and its tmpfs ``/tmp``
pages), and the kernel OOM-kills inside the cgroup when the total passes the limit: the
command fails with SIGKILL, the host and the other sessions are untouched.

cgroup v2 (``memory.max``, ``memory.swap.max = 0``) where the unified hierarchy delegates the
memory controller to us; a writable cgroup v1 memory hierarchy (``memory.limit_in_bytes``,
``memory.memsw.limit_in_bytes``) otherwise. Where neither is available the command runs with
its per-process limits only, and ``oopav doctor`` says so (``check_memory_limit``).
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from oopav.sandbox.limits import PidsCgroup

ROOT = Path("/sys/fs/cgroup")


def _own_paths() -> tuple[str | None, str | None]:
    """(v1 memory path, v2 unified path) of this process, from /proc/self/cgroup."""
    v1: str | None = None
    v2: str | None = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                v1 = path
            elif controllers == "":
                v2 = path
    return v1, v2


class MemoryCgroup(PidsCgroup):
    """A memory cgroup for one command (the process sweep and removal of ``PidsCgroup``)."""

    def __init__(self, path: Path, version: int, limit_bytes: int, shared: bool = False) -> None:
        super().__init__(path)
        self.version = version
        self.limit_bytes = limit_bytes
        # On cgroup v2 a process is in exactly one cgroup: the limit is set on the command's
        # pids cgroup itself, which its owner removes.
        self.shared = shared

    @classmethod
    def create(
        cls, limit_bytes: int, root: Path | None = None, *, share: PidsCgroup | None = None
    ) -> MemoryCgroup | None:
        """A new cgroup limited to ``limit_bytes`` (on v2: the limit set on ``share``, the
        command's pids cgroup, when it lives there), or None when this host gives us none."""
        root = root or ROOT
        if share is not None and (root / "cgroup.controllers").exists():
            with contextlib.suppress(OSError):
                (share.path / "memory.max").write_text(str(limit_bytes))
                with contextlib.suppress(OSError):
                    (share.path / "memory.swap.max").write_text("0")
                return cls(share.path, 2, limit_bytes, shared=True)
            return None
        v1, v2 = _own_paths()
        candidates: list[tuple[int, Path]] = []
        if v2 is not None and (root / "cgroup.controllers").exists():
            candidates.append((2, root / v2.lstrip("/")))
        if v1 is not None and (root / "memory").is_dir():
            candidates.append((1, root / "memory" / v1.lstrip("/")))
        for version, parent in candidates:
            path = parent / "oopav" / uuid.uuid4().hex[:16]
            try:
                path.mkdir(parents=True)
                if version == 2:
                    (path / "memory.max").write_text(str(limit_bytes))
                    with contextlib.suppress(OSError):  # no swap accounting: fine
                        (path / "memory.swap.max").write_text("0")
                else:
                    (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                    with contextlib.suppress(OSError):  # swap accounting off: fine
                        (path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path, version, limit_bytes)
        return None

    def remove(self) -> None:
        if not self.shared:
            super().remove()

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of this cgroup for passing the limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        if self.version == 1:  # kernels before 4.13 have no oom_kill count
            with contextlib.suppress(OSError, ValueError):
                peak = int((self.path / "memory.max_usage_in_bytes").read_text())
                return peak >= self.limit_bytes - 64 * 4096
        return False


def support(root: Path | None = None) -> tuple[str | None, str]:
    """("cgroup v2" | "cgroup v1" | None, detail): can commands get a tree-wide memory limit?"""
    cg = MemoryCgroup.create(64 * 1024 * 1024, root or ROOT)
    if cg is None:
        _, v2 = _own_paths()
        where = "no cgroup v2 hierarchy" if v2 is None else f"cgroup v2 at {v2}"
        return None, (
            f"no writable memory cgroup ({where}; memory controller not delegated to this user)"
        )
    try:
        return f"cgroup v{cg.version}", str(cg.path.parent)
    finally:
        cg.remove()


def killed_note(limit_bytes: int) -> str:
    return (
        f"\noopav: the command was killed: its processes together passed the memory limit of "
        f"{limit_bytes // (1024 * 1024)} MiB (limits.memory_mb of the task's environment)\n"
    )
