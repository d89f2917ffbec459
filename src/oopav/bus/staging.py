"""Atomic batches of the embedded server staged in memory.

nats-server stages every atomic batch of a one-replica file stream in a file store of its own,
``<stream>/batches/<hash>``, created and removed per batch (replicated and memory streams stage
in memory). On an ordinary disk that directory's life costs about 2 ms per batch, against
0.2-0.4 ms for the batch itself (docs/benchmarks.md § Bus), and every handler decision with
more than one event is such a batch.

That staging store is written without fsync (the server opens it with ``AsyncFlush`` and never
``SyncAlways``), so it survives a crash of the server process but not of the machine: a
memory file system (``/dev/shm``) gives exactly the same guarantee. The embedded server's
``batches`` directories are therefore symbolic links to a private directory there. Recovery of
a partial commit after ``kill -9`` reads it through the link as before; the server removes the
link while it recovers, and it is put back once the server answers, after recovery is done.

Anything unexpected (no ``/dev/shm``, a target not owned by this user or open to others, a
batch in flight) leaves that stream staging on disk, as nats-server does by default: slower,
never wrong. ``OOPAV_NATS_BATCH_STAGING=disk`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from pathlib import Path

from oopav.logging import get_logger

log = get_logger("oopav.bus.staging")

SHM = Path("/dev/shm")
_PREFIX = "oopav-batches-"
OWNER = ".oopav-owner"  # inside a target: the stream directory it serves

# Store directories of embedded servers this process started or attached to: a stream created
# later (``ensure_streams``) is linked too.
_LOCAL: set[Path] = set()


def enabled() -> bool:
    return os.environ.get("OOPAV_NATS_BATCH_STAGING", "memory") != "disk" and SHM.is_dir()


def register(store_dir: Path) -> None:
    """Remember an embedded server's store (the ``--store`` of ``EmbeddedServer``)."""
    _LOCAL.add(Path(store_dir))


def forget(store_dir: Path) -> None:
    _LOCAL.discard(Path(store_dir))


def stage_local() -> int:
    """Link the streams of every registered store (after streams were created)."""
    return sum(stage(d) for d in list(_LOCAL))


def stream_dirs(store_dir: Path) -> list[Path]:
    # EmbeddedServer gives nats-server <store_dir>/jetstream as its store_dir, under which the
    # server keeps jetstream/<account>/streams/<name>.
    root = Path(store_dir) / "jetstream"
    return sorted(p for p in root.glob("jetstream/*/streams/*") if p.is_dir())


def target_for(stream_dir: Path) -> Path:
    key = hashlib.sha256(str(Path(stream_dir).resolve()).encode()).hexdigest()[:20]
    return SHM / f"{_PREFIX}{os.getuid()}-{key}"


def stage(store_dir: Path, *, clean: bool = False) -> int:
    """Point each stream's ``batches`` directory of the store at memory; returns how many
    streams stage in memory now. ``clean``: empty the targets first, only right after this
    process started the server (its recovery has read them by then)."""
    if not enabled():
        return 0
    if clean:
        sweep()
    staged = 0
    for sdir in stream_dirs(store_dir):
        with contextlib.suppress(OSError):
            staged += _link(sdir, clean=clean)
    return staged


def _private_dir(path: Path, owner: Path | None = None) -> bool:
    """Create the target, or accept an existing one only if it is this user's own private
    directory (``/dev/shm`` is shared: never follow a name someone else made). ``owner``: the
    stream directory it serves, noted inside so that ``sweep`` can tell when it is gone."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    ok = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    if not ok:
        log.warning("batch_staging_refused", target=str(path), reason="not a private directory")
    elif owner is not None and not (path / OWNER).exists():
        (path / OWNER).write_text(str(Path(owner).resolve()))
    return ok


def sweep() -> int:
    """Remove this user's memory directories whose stream directory no longer exists (a
    deleted store, a test's temporary one; a server killed without ``stop``). Those of a
    store still on disk stay: a restart's recovery may need what they hold."""
    removed = 0
    for target in SHM.glob(f"{_PREFIX}{os.getuid()}-*"):
        with contextlib.suppress(OSError):
            st = os.lstat(target)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            owner = (target / OWNER).read_text().strip() if (target / OWNER).exists() else ""
            if owner and Path(owner).exists():
                continue
            if not owner and any(target.iterdir()):
                continue  # no note (made by an older oopav) and not empty: leave it
            shutil.rmtree(target)
            removed += 1
    return removed


def _link(sdir: Path, *, clean: bool) -> bool:
    target = target_for(sdir)
    link = sdir / "batches"
    if link.is_symlink():
        if os.readlink(link) != str(target):
            return False  # somebody else's arrangement: leave it
        if not _private_dir(target, sdir):
            return False
        if clean:
            _empty(target)
        return True
    if not _private_dir(target, sdir):
        return False
    if clean:
        _empty(target)
    if link.exists():
        try:
            link.rmdir()  # only when empty: a batch being staged keeps its directory
        except OSError:
            return False
    try:
        os.symlink(target, link)
    except FileExistsError:
        return False  # the server made one in between: this stream stages on disk for now
    return True


def _empty(target: Path) -> None:
    for child in target.iterdir():
        if child.name == OWNER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()


def heal() -> bool:
    """Recreate memory directories removed while their server runs (a ``/dev/shm`` cleaner,
    or systemd's ``RemoveIPC`` when the user logs out): the server cannot stage a batch
    through a dangling link. True when one was put back (the caller sends its batch again)."""
    healed = False
    for store_dir in list(_LOCAL):
        for sdir in stream_dirs(store_dir):
            link = sdir / "batches"
            target = target_for(sdir)
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link) == str(target) and not target.exists():
                    if _private_dir(target, sdir):
                        log.warning("batch_staging_repaired", target=str(target))
                        healed = True
    return healed


def release(store_dir: Path) -> None:
    """After the server stopped: remove its empty memory targets (a leftover partial batch
    stays for the next start's recovery)."""
    forget(store_dir)
    for sdir in stream_dirs(store_dir):
        link = sdir / "batches"
        if link.is_symlink():
            target = Path(os.readlink(link))
            if target.parent == SHM and target.name.startswith(_PREFIX):
                with contextlib.suppress(OSError):
                    if [c.name for c in target.iterdir()] == [OWNER]:
                        (target / OWNER).unlink()
                    target.rmdir()
