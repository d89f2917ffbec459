"""An in-process proof that a workspace is exactly at one of its commits, so that the git
processes asking the same question (`reset --hard` + `clean -fd` before an actor step,
`status` for the repo map's key, `add -A` before every diff against the base) can be spared.

Right after a checkpoint (``git add -A`` + ``commit``) the files are the commit's tree. A
*witness* records, for that commit, every path under the work tree (``lstat``: inode, size,
mode, mtime and ctime in nanoseconds; a content hash for files changed too recently for
their timestamps to be trusted), and the stat of the git index. Later, the workspace is
*clean at* the commit when HEAD (read from the ref files) is that commit, the index file is
untouched and a fresh walk gives the same entries. Any difference, or anything this module
does not understand, answers "not known to be clean" and the caller asks git as before: the
witness can only spare work, never change a result.

Why the timestamps are enough: a write changes a file's ctime (which no one can set back) and
its mtime, except within one tick of the kernel's coarse clock, which is why a file whose
timestamps fall within ``RACY_NS`` before the capture (or later) carries a content hash, checked on every
use (git's "racy clean" rule, with the same remedy). Ignored files are part of the witness
(a stricter test than `git status`, which skips them). Witnesses live in this process only:
disposable, never shared with the sandbox, and a process without one asks git.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# Beyond this many entries a walk costs about what the git processes it would spare do.
MAX_ENTRIES = 2000
# Files whose mtime/ctime fall this close to the capture are hashed (coarse clock ticks).
RACY_NS = 2_000_000_000
MAX_WITNESSES = 256

_Entry = tuple[int, int, int, int, int, str]  # ino, size, mode, mtime_ns, ctime_ns, digest


@dataclass(frozen=True, slots=True)
class Witness:
    commit: str
    index: tuple[int, int, int, int] | None  # ino, size, mtime_ns, ctime_ns of the git index
    entries: dict[str, _Entry]
    since_ns: int  # files with timestamps from here on carry a content hash


_lock = threading.Lock()
_witnesses: dict[str, Witness] = {}
_too_big: set[str] = set()


def _digest(path: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return hashlib.sha1(os.readlink(path).encode("utf-8", "surrogateescape")).hexdigest()
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()
    return ""


def _walk(root: str, since_ns: int) -> dict[str, _Entry] | None:
    """Every entry under ``root`` except its top-level ``.git`` (None past ``MAX_ENTRIES`` or
    on an error). Files whose mtime or ctime is at or after ``since_ns`` get a content hash."""
    out: dict[str, _Entry] = {}
    stack = [""]
    try:
        while stack:
            rel_dir = stack.pop()
            with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                for entry in it:
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    if rel == ".git":
                        continue
                    st = entry.stat(follow_symlinks=False)
                    digest = ""
                    if max(st.st_mtime_ns, st.st_ctime_ns) >= since_ns and not stat.S_ISDIR(
                        st.st_mode
                    ):
                        digest = _digest(entry.path, st)
                    out[rel] = (
                        st.st_ino,
                        st.st_size,
                        st.st_mode,
                        st.st_mtime_ns,
                        st.st_ctime_ns,
                        digest,
                    )
                    if len(out) > MAX_ENTRIES:
                        return None
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(rel)
    except OSError:
        return None
    return out


def _index_stat(gitdir: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(gitdir / "index")
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _head(root: Path) -> tuple[Path, str] | None:
    try:
        gitdir = _gitdir_of(root)
        commit = _head_from_files(gitdir)
    except OSError:
        return None
    return (gitdir, commit) if commit else None


Snapshot = tuple[int, dict[str, _Entry] | None]


def snapshot(root: Path) -> Snapshot:
    """The entries of ``root`` now: the first half of ``record``, taken before git runs."""
    since = time.time_ns() - RACY_NS
    key = str(root)
    if key in _too_big:
        return since, None  # walked past MAX_ENTRIES once: git answers for this one
    entries = _walk(key, since)
    if entries is None:
        with _lock:
            if len(_too_big) >= MAX_WITNESSES:
                _too_big.pop()
            _too_big.add(key)
    return since, entries


def record(root: Path, commit: str, before: Snapshot) -> None:
    """After git made ``commit`` from the files of ``root`` (``before``: ``snapshot`` taken
    before git looked at them), remember that they are that commit's tree. Nothing is
    recorded when the files changed while git ran, or HEAD is not ``commit``."""
    key = str(root)
    forget(root)
    since, entries = before
    if entries is None:
        return
    found = _head(root)
    if found is None or found[1] != commit:
        return
    gitdir, _ = found
    if _walk(key, since) != entries:
        return  # something wrote while git ran: no proof
    witness = Witness(commit, _index_stat(gitdir), entries, since)
    with _lock:
        if len(_witnesses) >= MAX_WITNESSES:
            _witnesses.pop(next(iter(_witnesses)))
        _witnesses[key] = witness


def forget(root: Path) -> None:
    with _lock:
        _witnesses.pop(str(root), None)


def clean_at(root: Path, commit: str | None = None) -> str | None:
    """The commit the workspace at ``root`` provably is (HEAD, with exactly the files and index
    recorded for it), when that is ``commit`` (or any commit when None); else None: ask git."""
    key = str(root)
    with _lock:
        witness = _witnesses.get(key)
    if witness is None or (commit is not None and witness.commit != commit):
        return None
    found = _head(root)
    if found is None or found[1] != witness.commit:
        return None
    gitdir, _ = found
    if _index_stat(gitdir) != witness.index:
        return None
    now = _walk(key, witness.since_ns)
    if now is None or now.keys() != witness.entries.keys():
        return None
    for rel, entry in now.items():
        was = witness.entries[rel]
        if entry[:5] != was[:5]:
            return None
        if entry[5] and entry[5] != was[5]:
            return None  # a racy file whose content is not what was recorded
    return witness.commit


def tracked_changes_only(root: Path, now: Snapshot) -> bool:
    """True when ``git commit -a`` would commit exactly what ``git add -A`` + ``git commit``
    would: the workspace is at its witnessed commit with the index untouched, and the files in
    ``now`` (a ``snapshot`` taken just before) add no path the witness lacks, change no file's
    type, and leave every ignore file and nested repository as it was. ``commit -a`` stages
    modified and removed tracked files only; every path here was tracked or ignored at the
    commit (``add -A`` ran just before it), so with the same ignore rules nothing is missed.
    Anything else, or any doubt: False (the caller adds first)."""
    key = str(root)
    with _lock:
        witness = _witnesses.get(key)
    _, entries = now
    if witness is None or entries is None:
        return False
    found = _head(root)
    if found is None or found[1] != witness.commit:
        return False
    if _index_stat(found[0]) != witness.index:
        return False
    was = witness.entries
    if not entries.keys() <= was.keys():
        return False
    for rel, entry in was.items():
        base = rel.rsplit("/", 1)[-1]
        if base == ".git":
            # A nested repository can outlive `clean -fd` untracked; `add -A` would add it
            # as a gitlink and `commit -a` would not.
            return False
        if base == ".gitignore" and entries.get(rel) != entry:
            return False  # the ignore rules changed: `add -A` may see new files
    for rel, entry in entries.items():
        if stat.S_IFMT(entry[2]) != stat.S_IFMT(was[rel][2]):
            return False
    return True


# -- git's own files, read without a git process (HEAD, refs) ------------------------------


def _common_dir(gitdir: Path) -> Path:
    commondir = gitdir / "commondir"
    if commondir.is_file():
        return (gitdir / commondir.read_text().strip()).resolve()
    return gitdir


def _head_from_files(gitdir: Path) -> str | None:
    head = (gitdir / "HEAD").read_text().strip()
    if head.startswith("ref: "):
        ref = head[5:].strip()
        for base in (gitdir, _common_dir(gitdir)):
            value = _hash_in(base / ref)
            if value:
                return value
        return None
    return head if _is_hash(head) else None


def _gitdir_of(path: Path) -> Path:
    dotgit = path / ".git"
    if dotgit.is_dir():
        return dotgit
    text = dotgit.read_text().strip()
    if not text.startswith("gitdir: "):
        raise OSError(f"unexpected {dotgit}")
    return (path / text[8:].strip()).resolve()


def _is_hash(value: str) -> bool:
    return len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


def _hash_in(ref_file: Path) -> str | None:
    try:
        value = ref_file.read_text().strip()
    except OSError:
        return None
    return value if _is_hash(value) else None
