"""Artifacts on disk: the per-session budget, and what ``oopav gc`` may remove.

Every sandboxed run keeps its full output under ``<data dir>/artifacts/<session>/runs/<key>/``
(the events carry only tails). A command writing without end is stopped per file by
RLIMIT_FSIZE, but a session runs many commands: without a budget, three runs of a test that
writes 2 GB kept 768 MiB. After each run the session's artifacts are measured; over the budget,
the largest output files are cut to their last ``KEEP_TAIL`` bytes (behind a line saying how
much was dropped), newest run first, until the session fits. The byte counts in the events stay
the true sizes.

``oopav gc`` removes the artifact directories of *ended* sessions older than an age, then the
oldest ended ones while the total is over a size (``select_for_gc``, pure)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from oopav.logging import get_logger
from oopav.units import human_size, parse_size  # noqa: F401  (re-exported: `oopav gc`)

log = get_logger("oopav.sandbox.artifacts")

KEEP_TAIL = 64 * 1024
OUTPUT_FILES = ("stdout", "stderr")


def tree_size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (symlinks not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += st.st_size
    return total


def cut_to_tail(path: Path, keep: int = KEEP_TAIL) -> int:
    """Keep the last ``keep`` bytes of ``path`` behind a marker line; returns bytes freed."""
    size = path.stat().st_size
    if size <= keep:
        return 0
    with path.open("rb") as fh:
        fh.seek(size - keep)
        data = fh.read(keep)
    marker = (
        f"[... oopav: {size - keep} of {size} bytes dropped to keep the session within its "
        "artifact budget (limits.artifacts_mb) ...]\n"
    ).encode()
    tmp = path.with_name(path.name + ".cut")
    tmp.write_bytes(marker + data)
    os.replace(tmp, path)
    return size - keep - len(marker)


def enforce_budget(session_dir: Path, budget_bytes: int, newest: Path | None = None) -> int:
    """Cut output files of the session's runs until it fits ``budget_bytes``; the run just
    finished (``newest``) first, then the others, largest first. Returns bytes freed."""
    if budget_bytes <= 0 or not session_dir.is_dir():
        return 0
    used = tree_size(session_dir)
    if used <= budget_bytes:
        return 0
    files: list[tuple[int, int, Path]] = []
    for f in (session_dir / "runs").glob("*/*"):
        if f.name in OUTPUT_FILES and f.is_file():
            first = 0 if newest is not None and f.parent == newest else 1
            files.append((first, -f.stat().st_size, f))
    freed = 0
    for _, _, f in sorted(files):
        if used - freed <= budget_bytes:
            break
        freed += cut_to_tail(f)
    log.warning(
        "artifacts.budget_enforced",
        session=session_dir.name,
        budget_bytes=budget_bytes,
        before_bytes=used,
        freed_bytes=freed,
    )
    return freed


@dataclass(frozen=True)
class ArtifactDir:
    session_id: str
    path: Path
    bytes: int
    mtime: float  # newest modification under it: when the session last wrote


def list_artifacts(root: Path) -> list[ArtifactDir]:
    out: list[ArtifactDir] = []
    if not root.is_dir():
        return out
    for d in sorted(root.iterdir()):
        if not d.is_dir() or d.is_symlink():
            continue
        newest = d.stat().st_mtime
        for sub, _dirs, files in os.walk(d):
            for name in files:
                try:
                    newest = max(newest, os.lstat(os.path.join(sub, name)).st_mtime)
                except OSError:
                    continue
        out.append(ArtifactDir(d.name, d, tree_size(d), newest))
    return out


def select_for_gc(
    items: Iterable[ArtifactDir],
    ended: set[str],
    *,
    max_age_s: float | None,
    max_total_bytes: int | None,
    now: float | None = None,
) -> list[tuple[ArtifactDir, str]]:
    """(directory, why) to remove: ended sessions older than ``max_age_s``, then the oldest
    ended sessions while everything together is over ``max_total_bytes``. Sessions that have
    not ended are never chosen (their artifacts may still be written or read)."""
    now = time.time() if now is None else now
    items = sorted(items, key=lambda a: (a.mtime, a.session_id))
    chosen: list[tuple[ArtifactDir, str]] = []
    picked: set[str] = set()
    for a in items:
        if a.session_id in ended and max_age_s is not None and now - a.mtime > max_age_s:
            chosen.append((a, f"older than {human_age(max_age_s)}"))
            picked.add(a.session_id)
    if max_total_bytes is not None:
        total = sum(a.bytes for a in items if a.session_id not in picked)
        for a in items:
            if total <= max_total_bytes:
                break
            if a.session_id in ended and a.session_id not in picked:
                chosen.append((a, f"total over {human_size(max_total_bytes)}"))
                picked.add(a.session_id)
                total -= a.bytes
    return chosen


def remove(items: Iterable[ArtifactDir]) -> int:
    freed = 0
    for a in items:
        shutil.rmtree(a.path, ignore_errors=True)
        freed += a.bytes
    return freed


def parse_age(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``90s``, ``3600`` -> seconds."""
    raw = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    mult = 1
    if raw and raw[-1] in units:
        mult, raw = units[raw[-1]], raw[:-1]
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{text!r} is not an age; use e.g. 7d, 12h, 30m") from None
    if value < 0:
        raise ValueError(f"{text!r}: an age cannot be negative")
    return value * mult


def human_age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
