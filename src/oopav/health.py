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


def storage(settings: Settings) -> tuple[Status, str, str]:
    """The free-space watermark of the data directory, and dead letters waiting in the spool."""
    from oopav.bus import spool
    from oopav.bus import storage as st

    try:
        mark = st.Watermark.from_env(settings.data_dir)
    except ValueError as exc:
        return "FAIL", str(exc), "set OOPAV_MIN_FREE to a size such as 512M or 2G, or off"
    reading = mark.read()
    waiting = spool.count(settings.data_dir / "dlq-spool")
    detail = reading.describe() + (
        f"; {waiting} dead letter(s) spooled, stored when space returns" if waiting else ""
    )
    if reading.full:
        return "FAIL", detail, "free some space (`oopav gc`) or move --data-dir to a larger disk"
    return ("warn" if waiting else "ok"), detail, ""
