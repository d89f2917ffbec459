"""Free space: the watermark below which oopav refuses new work, and what a full disk looks
like from the bus.

A full data directory used to leave submissions unanswered and sessions stuck: nats-server
refused the writes (``no space left on device``), the handlers retried until their deliveries
ran out, and the dead letters could not be parked either. Now:

- the intake refuses new tasks with ``code: "storage_full"`` while the free space of the data
  directory is under the watermark (``OOPAV_MIN_FREE``, default 512M; ``off`` disables), and
  answers every request, stored or not (handlers/intake.py);
- a handler whose write fails for lack of space holds its message (in progress) and retries
  in place until space returns, for at most ``OOPAV_STORAGE_PAUSE`` seconds (default 300),
  then dead-letters it with reason ``storage``, which ends the session ``aborted: storage``
  (bus/consumer.py);
- a dead letter that cannot be stored is kept in a local spool and retried (bus/consumer.py);
- ``oopav status`` and ``oopav doctor`` show the condition in one line (``describe``).

The free-space probe is injectable (``set_probe``) so the logic is tested without filling a
disk.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oopav.units import human_size as human
from oopav.units import parse_size

DEFAULT_MIN_FREE = 512 * 1024 * 1024
DEFAULT_PAUSE_S = 300.0

Probe = Callable[[Path], int]


def _statvfs_free(path: Path) -> int:
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


_probe: Probe = _statvfs_free


def set_probe(probe: Probe | None) -> None:
    """Replace the free-space probe (tests, benchmarks); None restores statvfs."""
    global _probe
    _probe = probe or _statvfs_free


def free_bytes(path: Path) -> int:
    return _probe(Path(path))


def min_free_from_env() -> int:
    """``OOPAV_MIN_FREE`` in bytes (0 when ``off``); a bad value is an error naming it."""
    raw = os.environ.get("OOPAV_MIN_FREE", "").strip()
    if not raw:
        return DEFAULT_MIN_FREE
    if raw.lower() in ("off", "0", "none"):
        return 0
    try:
        return parse_size(raw)
    except ValueError as exc:
        raise ValueError(f"OOPAV_MIN_FREE: {exc}") from None


def pause_from_env() -> float:
    raw = os.environ.get("OOPAV_STORAGE_PAUSE", "").strip()
    try:
        return float(raw) if raw else DEFAULT_PAUSE_S
    except ValueError:
        raise ValueError(f"OOPAV_STORAGE_PAUSE: {raw!r} is not a number of seconds") from None


@dataclass(frozen=True)
class Reading:
    path: Path
    free: int
    min_free: int

    @property
    def full(self) -> bool:
        return self.min_free > 0 and self.free < self.min_free

    def describe(self) -> str:
        """The one line `oopav status` and `oopav doctor` print."""
        if self.min_free <= 0:
            return f"{human(self.free)} free in {self.path} (no watermark: OOPAV_MIN_FREE=off)"
        state = "FULL: new tasks are refused (storage_full)" if self.full else "ok"
        return (
            f"{state}: {human(self.free)} free in {self.path}, watermark {human(self.min_free)}"
            " (OOPAV_MIN_FREE)"
        )

    def refusal(self) -> str:
        return (
            f"storage is full: {human(self.free)} free in {self.path}, under the watermark of "
            f"{human(self.min_free)} (OOPAV_MIN_FREE); free some space (`oopav gc`) and submit "
            "again"
        )


@dataclass
class Watermark:
    """The free-space watermark of one directory (the data directory)."""

    path: Path
    min_free: int = DEFAULT_MIN_FREE

    @classmethod
    def from_env(cls, path: Path) -> Watermark:
        return cls(Path(path), min_free_from_env())

    def read(self) -> Reading:
        try:
            free = free_bytes(self.path)
        except OSError:
            free = 0
        return Reading(self.path, free, self.min_free)


# What nats-server and the client say when a write fails for lack of space (JetStream error
# 10047 "insufficient resources", the store's own "no space left on device"), and the
# misleading "atomic publish batch is incomplete" a batch gets when its staging file cannot
# be written.
_MARKERS = (
    "insufficient resources",
    "insufficient storage",
    "no space left",
    "enospc",
    "10047",
    "resource limits exceeded",
    "storage resources",
)


def is_storage_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text += f" {cur!r}".lower()
        if isinstance(cur, OSError) and cur.errno == 28:
            return True
        cur = cur.__cause__ or cur.__context__
    return any(m in text for m in _MARKERS)


class StorageFull(RuntimeError):
    """A write failed for lack of space and space did not return in time."""


# The process's data directory, set by the process wiring (``run_handlers``): the handlers'
# consumers check its watermark when a write fails, and park dead letters they cannot store
# in its spool.
_configured: Watermark | None = None
_spool: Path | None = None


def configure(data_dir: Path, watermark: Watermark | None = None) -> None:
    global _configured, _spool
    _configured = watermark or Watermark.from_env(data_dir)
    _spool = Path(data_dir) / "dlq-spool"


def configured() -> Watermark | None:
    return _configured


def spool_dir() -> Path | None:
    return _spool


def storage_problem(exc: BaseException) -> bool:
    """Whether ``exc`` (a failed write) is for lack of space: its text says so, or the data
    directory is under its watermark right now (nats-server's own errors for a full disk
    are not always specific: "atomic publish batch is incomplete")."""
    if is_storage_error(exc):
        return True
    return _configured is not None and _configured.read().full
