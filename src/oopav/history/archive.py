"""Session archives: ``oopav session export SID -o s.tar`` / ``oopav session import s.tar``.

An archive holds everything a session's replay and forks need, and nothing of the machine it
came from: its events as stored (the exact bytes, so the hash chain still links), the events
of its mission when its prompts rendered the mission's library, and every blob the events
name (the starting tree and its files; stored prompts). Importing it into another data dir
(another server) makes ``oopav replay --verify`` and ``--fork-at`` work there after the
repository is gone.

Layout (a tar, gzipped when the name ends in ``.gz``)::

    oopav-archive.json     {"format", "session_id", "events", "mission_events", "blobs"}
    events.ndjson          one stored payload per line, in stream order
    signatures.json        {"signatures": {event id: Oopav-Sig}, "trusted": {identity: [public
                           keys]}, "anchor": the notary's chain head anchor or null}
    mission.ndjson         the mission's events (may be empty)
    blobs/<sha256>         each blob, named by its hash (checked on import)
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

from oopav.events import catalog as ev
from oopav.events.codec import REGISTRY, EventDecodeError
from oopav.history.blobs import BlobError, BlobStore, digest_of, tree_blobs

FORMAT = 1
MANIFEST = "oopav-archive.json"


class ArchiveError(ValueError):
    """An archive that cannot be imported; the message says why."""


async def _raw_events(nc: Any, aggregate: str, aggregate_id: str) -> list[bytes]:
    from oopav.bus.store import EventStore
    from oopav.bus.streams import aggregate_filter

    store = EventStore(nc)
    out: list[bytes] = []
    seq = 1
    while True:
        batch, pending = await store._direct_batch(aggregate_filter(aggregate, aggregate_id), seq)
        out += [bytes(data) for _, data, _ in batch]
        if not batch or not pending:
            return out
        seq = batch[-1][0] + 1


async def referenced_blobs(blobs: BlobStore, events: list[Any]) -> list[str]:
    """Every blob the events name: starting trees (and their files), stored prompts."""
    from oopav.history.prompts import prompt_refs

    out: list[str] = []
    for e in events:
        if isinstance(e, ev.WorkspacePrepared) and e.tree:
            out += await tree_blobs(blobs, e.tree)
        out += prompt_refs(e)
    return list(dict.fromkeys(out))


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = 0  # the same session exports to the same bytes
    tar.addfile(info, io.BytesIO(data))


async def export_session(nc: Any, session_id: str, out: Path) -> dict[str, Any]:
    """Write the archive of ``session_id`` to ``out``; a summary of what it holds."""
    from oopav.events.mission import mission_aggregate_id

    raw = await _raw_events(nc, "session", session_id)
    if not raw:
        raise ArchiveError(f"no events for session {session_id}")
    events = []
    kept: list[bytes] = []
    for data in raw:
        try:
            events.append(REGISTRY.decode(data))
        except EventDecodeError:
            continue  # junk on the session's subjects stays behind (it is in the DLQ)
        kept.append(data)
    task = next((e for e in events if isinstance(e, ev.TaskSubmitted)), None)
    mission_raw: list[bytes] = []
    if task is not None and task.mission:
        mission_raw = await _raw_events(nc, "mission", mission_aggregate_id(task.mission))
    from oopav.bus.store import EventStore
    from oopav.history.signing import anchor_of, trusted_keys

    js = nc.jetstream()
    signed = await EventStore(nc).read_signed("session", session_id)
    sigs = {e.id: h for _, e, h, _ in signed if h}
    names = {h.split(" ", 1)[0] for h in sigs.values()} | {"notary"}
    trusted = {n: sorted(k) for n, k in (await trusted_keys(js)).items() if n in names}
    anchor = await anchor_of(js, session_id)
    signatures = {
        "signatures": sigs,
        "trusted": trusted,
        "anchor": None if anchor is None else anchor.__dict__,
    }
    blobs = BlobStore(nc)
    digests = await referenced_blobs(blobs, events)
    contents = await blobs.get_many(digests)
    summary = {
        "format": FORMAT,
        "session_id": session_id,
        "events": len(kept),
        "mission_events": len(mission_raw),
        "blobs": len(digests),
        "signed": len(sigs),
        "blob_bytes": sum(len(v) for v in contents.values()),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    # ``.tar.gz`` / ``.tgz``: compressed (the committed corpus); reading detects either.
    mode = "w:gz" if out.name.endswith((".gz", ".tgz")) else "w"
    with tarfile.open(tmp, mode) as tar:  # type: ignore[call-overload]
        _add(tar, MANIFEST, json.dumps(summary, indent=1).encode())
        _add(tar, "events.ndjson", b"".join(d + b"\n" for d in kept))
        _add(tar, "mission.ndjson", b"".join(d + b"\n" for d in mission_raw))
        _add(tar, "signatures.json", json.dumps(signatures, indent=1).encode())
        for d in digests:
            _add(tar, f"blobs/{d}", contents[d])
    tmp.replace(out)
    summary["path"] = str(out)
    summary["archive_bytes"] = out.stat().st_size
    return summary


def _read_archive(
    path: Path,
) -> tuple[dict[str, Any], list[bytes], list[bytes], dict[str, bytes], dict[str, Any]]:
    try:
        tar = tarfile.open(path, "r")
    except (OSError, tarfile.TarError) as exc:
        raise ArchiveError(f"{path} is not a session archive: {exc}") from None
    with tar:
        files: dict[str, bytes] = {}
        for member in tar.getmembers():
            if not member.isfile():
                continue
            fh = tar.extractfile(member)
            if fh is not None:
                files[member.name] = fh.read()
    if MANIFEST not in files:
        raise ArchiveError(f"{path} has no {MANIFEST}: not made by `oopav session export`")
    manifest = json.loads(files[MANIFEST])
    if manifest.get("format") != FORMAT:
        raise ArchiveError(f"{path}: archive format {manifest.get('format')!r}, expected {FORMAT}")

    def lines(name: str) -> list[bytes]:
        return [line for line in files.get(name, b"").split(b"\n") if line]

    blobs = {n[len("blobs/") :]: data for n, data in files.items() if n.startswith("blobs/")}
    for name, data in blobs.items():
        if digest_of(data) != name:
            raise ArchiveError(f"{path}: blob {name[:16]} does not match its hash (altered?)")
    signatures = json.loads(files.get("signatures.json", b"{}") or b"{}")
    return manifest, lines("events.ndjson"), lines("mission.ndjson"), blobs, signatures


async def _publish(
    nc: Any, payloads: list[bytes], what: str, sigs: dict[str, str] | None = None
) -> int:
    """Append stored payloads as they are (the same bytes: the chain still links), each with
    its event id as ``Nats-Msg-Id``; events already there are skipped. Returns how many
    were added."""
    from oopav.bus.store import EventStore

    store = EventStore(nc)
    js = nc.jetstream(timeout=10.0)
    decoded = []
    for data in payloads:
        try:
            decoded.append((REGISTRY.decode(data), data))
        except EventDecodeError as exc:
            raise ArchiveError(f"{what}: an event does not decode ({exc})") from None
    if not decoded:
        return 0
    first = decoded[0][0]
    present = {
        e.id
        for _, e in await store.read(first.aggregate, first.aggregate_id, skip_undecodable=True)
    }
    added = 0
    for event, data in decoded:
        if event.id in present:
            continue
        headers = {"Nats-Msg-Id": event.id}
        sig = (sigs or {}).get(event.id)
        if sig:
            from oopav.history.signing import SIG_HEADER

            headers[SIG_HEADER] = sig  # the handler's signature travels with its bytes
        await js.publish(event.subject, data, headers=headers)
        added += 1
    return added


async def import_session(nc: Any, path: Path) -> dict[str, Any]:
    """Import an archive into the server of ``nc``: blobs first (an event never names a blob
    that is not there), then the mission's events, then the session's. Importing twice adds
    nothing; a session that exists with other events is refused."""
    from oopav.bus.store import EventStore

    manifest, events, mission, blobs, signatures = _read_archive(path)
    sid = manifest["session_id"]
    existing = await EventStore(nc).read("session", sid, skip_undecodable=True)
    ids = []
    for data in events:
        try:
            ids.append(REGISTRY.decode(data).id)
        except EventDecodeError as exc:
            raise ArchiveError(f"{path}: an event does not decode ({exc})") from None
    if existing and [e.id for _, e in existing] != ids[: len(existing)]:
        raise ArchiveError(
            f"session {sid} already exists on this server with other events: not imported"
        )
    store = BlobStore(nc)
    try:
        await store.put_many(list(blobs.values()))
    except BlobError as exc:
        raise ArchiveError(str(exc)) from None
    added_mission = await _publish(nc, mission, "mission")
    added = await _publish(nc, events, "session", signatures.get("signatures"))
    await _import_trust(nc, sid, signatures)
    return {
        "session_id": sid,
        "events": len(events),
        "added": added,
        "mission_events_added": added_mission,
        "blobs": len(blobs),
    }


async def _import_trust(nc: Any, session_id: str, signatures: dict[str, Any]) -> None:
    """Trust the archive's signers and keep its anchor: importing is the operator vouching
    for the archive (it needs the notary's or admin's rights on this server)."""
    from oopav.history.signing import notary_kv, register_keys

    js = nc.jetstream()
    trusted = {n: set(keys) for n, keys in (signatures.get("trusted") or {}).items()}
    if trusted:
        await register_keys(js, trusted)
    anchor = signatures.get("anchor")
    if anchor:
        from nats.js.errors import KeyNotFoundError, NotFoundError

        kv = await notary_kv(js)
        try:
            await kv.get(f"head.{session_id}")
        except (KeyNotFoundError, NotFoundError):
            await kv.put(f"head.{session_id}", json.dumps(anchor).encode())
