"""Content-addressed blobs on JetStream's Object Store (DESIGN wave 3, "Content-addressed
blobs"; issue 27).

A blob is named by the SHA-256 of its bytes (hex) in the bucket ``OOPAV_BLOBS``: stored once
however many sessions hold it, checked against its name on every read. A *tree* is a blob too:
its manifest (JSON: path, kind, blob per file, sorted by path) names the files' blobs, so two
sessions of one repository share every unchanged file, and a tree's hash names its whole
content.

What goes in: each session's starting tree (the observer stores it when it prepares the
workspace; ``workspace_prepared.tree`` names it), so replay and forks need nothing but the
store (``oopav session export/import`` carries the blobs a session names).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

# Directories a starting tree never holds: version control, caches and environments (a venv is
# the project's environment, not its content): what the observer's scan skips too.
from oopav.files import SKIP_DIRS

T = TypeVar("T")
BUCKET = "OOPAV_BLOBS"
# Publishing a blob (its chunks and meta subjects): any handler may add content, named by
# its hash; a reader checks the hash, so an overwrite with other bytes is detected.
PUBLISH_SUBJECTS = (f"$O.{BUCKET}.>",)
PARALLEL = 16
TREE_FORMAT = 1
# How long a blob call waits out a cluster failover: when a node is killed, its streams and
# the JetStream meta group elect new leaders, and until they do an API request (the bucket's
# STREAM.INFO, a chunk read) gets no answer. A loaded machine's election took over 10 s (the
# client's own timeout), so a reader right after a leader's death failed instead of waiting.
FAILOVER_DEADLINE = 45.0


class BlobError(RuntimeError):
    """A blob that is missing or does not match its name; the message says which."""


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BlobStore:
    """Put and get blobs by hash over one NATS connection (the bucket is made on first use)."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.js = nc.jetstream(timeout=10.0)
        self._obs: Any = None
        self._known: set[str] = set()  # stored by this process or seen there: no round trip

    async def bucket(self) -> Any:
        if self._obs is None:
            from nats.js.errors import BucketNotFoundError, NotFoundError

            async def lookup() -> Any:
                try:
                    return await self.js.object_store(BUCKET)
                except (BucketNotFoundError, NotFoundError):
                    return await ensure_bucket(self.js)

            self._obs = await through_failover(lookup)
        return self._obs

    async def has(self, digest: str) -> bool:
        if digest in self._known:
            return True
        from nats.js.errors import NotFoundError, ObjectNotFoundError

        obs = await self.bucket()
        try:
            await through_failover(lambda: obs.get_info(digest))
        except (ObjectNotFoundError, NotFoundError):
            return False
        self._known.add(digest)
        return True

    async def put(self, data: bytes) -> str:
        """Store ``data`` unless it is there already; its hash."""
        digest = digest_of(data)
        if await self.has(digest):
            return digest
        obs = await self.bucket()
        # Named by its hash: a put repeated after a lost answer stores the same bytes.
        await through_failover(lambda: obs.put(digest, data))
        self._known.add(digest)
        return digest

    async def put_many(self, blobs: list[bytes]) -> list[str]:
        sem = asyncio.Semaphore(PARALLEL)

        async def one(data: bytes) -> str:
            async with sem:
                return await self.put(data)

        return list(await asyncio.gather(*(one(b) for b in blobs)))

    async def get(self, digest: str) -> bytes:
        from nats.js.errors import NotFoundError, ObjectNotFoundError

        obs = await self.bucket()
        try:
            data = await through_failover(lambda: self._read(obs, digest))
        except (ObjectNotFoundError, NotFoundError):
            raise BlobError(
                f"blob {digest[:16]} is not in {BUCKET}: import the session's archive "
                "(`oopav session import`) on this server"
            ) from None
        if digest_of(data) != digest:
            raise BlobError(f"blob {digest[:16]} does not match its hash: the store was altered")
        self._known.add(digest)
        return data

    async def _read(self, obs: Any, digest: str) -> bytes:
        """The object's bytes by direct stream reads of its chunks: nats-py's ``get`` opens
        an ephemeral ordered consumer per object, and the server keeps each for a few seconds
        after use, so an export reading thousands of prompt blobs in a row hit JetStream's
        consumer limit (err_code 10026) and crashed. A link, or a read that fails otherwise,
        goes through ``get`` as before (the caller checks the hash either way)."""
        info = await obs.get_info(digest)
        if info.is_link() or not info.nuid:
            result = await obs.get(digest)
            return bytes(result.data or b"")
        if not info.size:
            return b""
        stream, subject = f"OBJ_{BUCKET}", f"$O.{BUCKET}.C.{info.nuid}"
        try:
            if (info.chunks or 1) == 1:
                return bytes((await self.js.get_last_msg(stream, subject)).data or b"")
            parts: list[bytes] = []
            seq = 0
            for _ in range(info.chunks):
                msg = await self.js.get_msg(stream, seq=seq + 1, subject=subject, next=True)
                parts.append(bytes(msg.data or b""))
                seq = int(msg.seq or seq + 1)
            return b"".join(parts)
        except Exception:  # an older server without `next`: the consumer path
            result = await obs.get(digest)
            return bytes(result.data or b"")

    async def get_many(self, digests: list[str]) -> dict[str, bytes]:
        sem = asyncio.Semaphore(PARALLEL)
        out: dict[str, bytes] = {}

        async def one(d: str) -> None:
            async with sem:
                out[d] = await self.get(d)

        await asyncio.gather(*(one(d) for d in dict.fromkeys(digests)))
        return out


async def through_failover(call: Callable[[], Awaitable[T]], deadline: float | None = None) -> T:
    """``call()``, again while the server does not answer (a request timed out, JetStream is
    unavailable, no responders) until ``deadline`` seconds have passed; then the last error.
    Only for calls that are safe to repeat (lookups, reads, puts by hash)."""
    import nats.errors
    from nats.js.errors import ServiceUnavailableError

    loop = asyncio.get_running_loop()
    until = loop.time() + (FAILOVER_DEADLINE if deadline is None else deadline)
    pause = 0.25
    while True:
        try:
            return await call()
        except (
            nats.errors.TimeoutError,
            nats.errors.NoRespondersError,
            TimeoutError,
            ServiceUnavailableError,
        ):
            if loop.time() + pause > until:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 4.0)


async def events_replicas(js: Any) -> int:
    """The replica count of the events stream (1 when it cannot be read): the blob bucket and
    the notary KV follow it, so a cluster that keeps its events on three nodes keeps their
    blobs and anchors there too (an R1 bucket on a killed node stops every session)."""
    try:
        # bus.streams.EVENTS_STREAM, by name: bus.streams imports this module.
        info = await js.stream_info("OOPAV_EVENTS")
    except Exception:  # no stream yet, or no right to read it: the single-server default
        return 1
    return int(info.config.num_replicas or 1)


async def follow_replicas(js: Any, stream: str, replicas: int) -> None:
    """Raise ``stream``'s replica count to ``replicas`` (never lowers it)."""
    try:
        info = await js.stream_info(stream)
        if (info.config.num_replicas or 1) < replicas:
            info.config.num_replicas = replicas
            await js.update_stream(info.config)
    except Exception:  # no right to update streams (a least-privilege handler): leave it
        return


async def ensure_bucket(js: Any, replicas: int | None = None) -> Any:
    """The blob bucket, created when missing (file storage: blobs outlive the server), with as
    many replicas as the events stream (``events_replicas``) unless ``replicas`` says."""
    from nats.js.api import ObjectStoreConfig, StorageType
    from nats.js.errors import BucketNotFoundError, NotFoundError

    want = replicas or await events_replicas(js)
    try:
        store = await js.object_store(BUCKET)
    except (BucketNotFoundError, NotFoundError):
        return await js.create_object_store(
            BUCKET,
            config=ObjectStoreConfig(
                bucket=BUCKET,
                description="oopav content-addressed blobs (trees, prompts)",
                storage=StorageType.FILE,
                replicas=want,
            ),
        )
    if want > 1:
        await follow_replicas(js, f"OBJ_{BUCKET}", want)
    return store


# -- trees ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeEntry:
    path: str
    kind: str  # "f" file, "x" executable, "l" symlink (the blob is the target)
    blob: str


def scan(root: Path) -> list[tuple[str, str, bytes]]:
    """``(path, kind, bytes)`` of every file under ``root`` (symlinks as links, never
    followed), sorted, without ``SKIP_DIRS`` and virtualenvs."""
    out: list[tuple[str, str, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        keep = []
        for d in dirnames:
            full = here / d
            if full.is_symlink():
                filenames.append(d)
            elif d not in SKIP_DIRS and not (full / "pyvenv.cfg").is_file():
                keep.append(d)
        dirnames[:] = sorted(keep)
        for name in filenames:
            full = here / name
            rel = full.relative_to(root).as_posix()
            if rel == ".git":
                continue  # a worktree's pointer file
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", os.readlink(full).encode()))
            elif stat.S_ISREG(st.st_mode):
                kind = "x" if st.st_mode & 0o100 else "f"
                out.append((rel, kind, full.read_bytes()))
    out.sort()
    return out


def manifest_bytes(entries: list[TreeEntry]) -> bytes:
    body = {"format": TREE_FORMAT, "entries": [[e.path, e.kind, e.blob] for e in entries]}
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def parse_manifest(data: bytes) -> list[TreeEntry]:
    try:
        body = json.loads(data)
        assert body.get("format") == TREE_FORMAT
        return [TreeEntry(p, k, b) for p, k, b in body["entries"]]
    except (ValueError, AssertionError, KeyError, TypeError):
        raise BlobError("the blob is not a tree manifest") from None


def tree_content(root: Path) -> tuple[str, list[bytes], bytes]:
    """The tree under ``root`` read once: its hash (the manifest's), the files' bytes and the
    manifest — what ``put_tree`` stores; the hash is known before anything is stored."""
    files = scan(root)
    entries = [TreeEntry(p, k, digest_of(data)) for p, k, data in files]
    manifest = manifest_bytes(entries)
    return digest_of(manifest), [data for _, _, data in files], manifest


async def put_tree(blobs: BlobStore, datas: list[bytes], manifest: bytes) -> str:
    """Store a tree read by ``tree_content``: the files first, the manifest last (a stored
    manifest means its files are there); the tree's hash."""
    await blobs.put_many(datas)
    return await blobs.put(manifest)


async def store_tree(blobs: BlobStore, root: Path) -> str:
    """Store the files under ``root`` and their manifest; the tree's hash."""
    _, datas, manifest = await asyncio.to_thread(tree_content, root)
    return await put_tree(blobs, datas, manifest)


async def tree_blobs(blobs: BlobStore, tree: str) -> list[str]:
    """Every blob a tree names, the manifest first."""
    entries = parse_manifest(await blobs.get(tree))
    return [tree, *dict.fromkeys(e.blob for e in entries)]


async def materialize(blobs: BlobStore, tree: str, dest: Path) -> int:
    """Write the tree into ``dest`` (created; must not hold files). Returns the file count."""
    entries = parse_manifest(await blobs.get(tree))
    data = await blobs.get_many([e.blob for e in entries])
    dest.mkdir(parents=True, exist_ok=True)
    for e in entries:
        target = dest / e.path
        if ".." in Path(e.path).parts or Path(e.path).is_absolute():
            raise BlobError(f"tree {tree[:16]} names a path outside it: {e.path!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if e.kind == "l":
            os.symlink(data[e.blob].decode(), target)
        else:
            target.write_bytes(data[e.blob])
            if e.kind == "x":
                target.chmod(0o755)
    return len(entries)
