"""Dead letters kept on local disk while the server cannot store them (a full disk, an
outage): one fsynced JSON file per letter under ``<data dir>/dlq-spool/``, written before the
message is terminated, removed once the letter is stored on ``oopav.dlq.<handler>`` and its
outcome (a session abort) is appended. The DLQ publish is deduplicated by its
``Nats-Msg-Id``, so a letter stored twice is one dead letter. Without a configured data
directory (a bare consumer in a test) the spool is ``$TMPDIR/oopav-dlq-spool-<uid>``."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from oopav.bus import storage


@dataclass
class Letter:
    handler: str
    subject: str
    seq: int
    reason: str
    detail: str
    digest: str
    headers: dict[str, str]
    data: bytes
    published: bool = False

    def to_json(self) -> bytes:
        raw = asdict(self)
        raw["data"] = base64.b64encode(self.data).decode()
        return json.dumps(raw).encode()

    @classmethod
    def from_json(cls, blob: bytes) -> Letter:
        raw = json.loads(blob)
        raw["data"] = base64.b64decode(raw["data"])
        return cls(**raw)


def directory() -> Path:
    configured = storage.spool_dir()
    if configured is not None:
        return configured
    return Path(tempfile.gettempdir()) / f"oopav-dlq-spool-{os.getuid()}"


def _name(handler: str, stream: str, seq: int) -> str:
    return f"{handler.replace('/', '_')}--{stream}--{seq}.json"


def write(letter: Letter, stream: str) -> Path:
    """Write (or rewrite) the letter durably; raises OSError when even that is impossible."""
    d = directory()
    d.mkdir(parents=True, exist_ok=True)
    path = d / _name(letter.handler, stream, letter.seq)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, letter.to_json())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return path


def has_pending(handler: str, stream: str) -> bool:
    d = directory()
    if not d.is_dir():
        return False
    prefix = f"{handler.replace('/', '_')}--{stream}--"
    return any(p.name.startswith(prefix) and p.suffix == ".json" for p in d.iterdir())


def pending(
    handler: str | None = None, stream: str | None = None, root: Path | None = None
) -> Iterator[tuple[Path, Letter]]:
    """Spooled letters (of one handler and stream), oldest sequence first."""
    d = root or directory()
    if not d.is_dir():
        return
    found = []
    for p in d.glob("*.json"):
        parts = p.stem.split("--")
        if len(parts) != 3:
            continue
        if handler is not None and parts[0] != handler.replace("/", "_"):
            continue
        if stream is not None and parts[1] != stream:
            continue
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            found.append((int(parts[2]), p, Letter.from_json(p.read_bytes())))
    for _, p, letter in sorted(found, key=lambda t: (t[0], t[1].name)):
        yield p, letter


def count(root: Path | None = None) -> int:
    return sum(1 for _ in pending(root=root))
