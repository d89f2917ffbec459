"""Health checks of issue 29 for ``oopav doctor`` (and ``oopav status``): each returns
``(status, detail, fix)`` so that doctor registers it in one line, and this module imports
nothing of the CLI."""

from __future__ import annotations

from typing import Literal

from oopav.config import Settings

Status = Literal["ok", "FAIL", "warn"]


def memory_limit(settings: Settings) -> tuple[Status, str, str]:
    """Can sandboxed commands get a memory limit for their whole process tree?"""
    from oopav.sandbox.memory import support

    kind, detail = support()
    if kind is None:
        return (
            "warn",
            f"{detail}: commands keep only the per-process address-space cap (4 GiB each, "
            "up to 256 processes)",
            "run oopav in a cgroup v2 slice with the memory controller delegated "
            "(systemd-run --user -p Delegate=yes ..., or a container with a private cgroup)",
        )
    return "ok", f"{kind}: each command's process tree has a memory limit ({detail})", ""
