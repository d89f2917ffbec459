"""``oopav fsck``: find the damage a corrupted store did to sessions.

nats-server drops a message whose block fails its checksum (one flipped byte is enough) and
says nothing to clients: the stream keeps its first and last sequence and message count, and
``get`` of that sequence answers "no message found". A lost mid-session event shows as a
broken link of the next one; a lost *terminal* event leaves the session without an end, while
the LMDB snapshot still says it completed. Garbage published on a session subject decodes as
nothing. This module checks, for every session (or one):

- **missing sequences**: every stream sequence between the first and the last is read (oopav
  never deletes inside ``OOPAV_EVENTS``); a gap is a lost message, attributed to the session
  whose next event does not link across it, or to a session without an end whose last event
  came before it;
- **broken links and late terminal events** (events/chain.py);
- **undecodable entries** on a session's subjects;
- **snapshot drift**: the stored projection state against a fold of the stream up to the
  snapshot's position (a snapshot that ended a session the stream cannot end).

Results are kept in ``<data dir>/fsck.json`` so that ``oopav sessions`` and ``oopav show``
mark the damaged sessions without scanning again.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from oopav.bus.store import EventStore, Undecodable
from oopav.bus.streams import EVENTS_STREAM
from oopav.events.catalog import Event
from oopav.events.chain import TERMINAL_TYPES, check_chain
from oopav.events.codec import EventDecodeError

# Fields of the session state that a snapshot and a fold of the same events must agree on.
DRIFT_FIELDS = ("phase", "outcome", "last_sequence", "event_count")


@dataclass(frozen=True)
class Finding:
    session_id: str | None
    kind: str  # missing_sequence | broken_link | late_terminal | undecodable | no_end | snapshot_drift
    sequence: int | None
    detail: str

    def describe(self) -> str:
        where = f" at seq {self.sequence}" if self.sequence is not None else ""
        return f"{self.kind.replace('_', ' ')}{where}: {self.detail}"


@dataclass
class Report:
    first_seq: int = 0
    last_seq: int = 0
    messages: int = 0
    sessions: int = 0
    missing: list[int] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def damaged(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = defaultdict(list)
        for f in self.findings:
            if f.session_id is not None:
                out[f.session_id].append(f)
        return dict(out)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "messages": self.messages,
            "sessions": self.sessions,
            "missing": self.missing,
            "findings": [asdict(f) for f in self.findings],
            "damaged": sorted(self.damaged()),
            "seconds": round(self.seconds, 3),
        }


def _split(subject: str) -> tuple[str, str] | None:
    parts = subject.split(".")
    if len(parts) < 5 or parts[0] != "oopav" or parts[1] != "ev":
        return None
    return parts[2], parts[3]


async def read_all(
    events: EventStore, first: int, last: int, subject: str = "oopav.ev.>"
) -> tuple[dict[str, list[tuple[int, Event | Undecodable]]], list[int], int]:
    """Every message of the events stream from ``first`` to ``last``: session entries by id,
    the sequences that are gone, and how many messages were read."""
    sessions: dict[str, list[tuple[int, Event | Undecodable]]] = defaultdict(list)
    seen: list[int] = []
    seq = max(first, 1)
    decode = events.registry.decode
    while seq <= last:
        batch, pending = await events._direct_batch(subject, seq)
        for s, data, subj in batch:
            if s > last:
                break
            seen.append(s)
            where = _split(subj)
            if where is None or where[0] != "session":
                continue
            item: Event | Undecodable
            try:
                item = decode(data)
            except EventDecodeError as exc:
                item = Undecodable(s, subj, exc.reason, exc.detail, bytes(data[:500]))
            sessions[where[1]].append((s, item))
        if not batch or not pending:
            break
        seq = batch[-1][0] + 1
    present = set(seen)
    missing = [s for s in range(max(first, 1), last + 1) if s not in present]
    return sessions, missing, len(seen)


def check_session(
    sid: str,
    entries: list[tuple[int, Event | Undecodable]],
    missing: list[int],
    snapshot: Any = None,
    snapshot_position: int = 0,
) -> tuple[list[Finding], set[int]]:
    """The findings of one session, and the missing sequences attributed to it."""
    findings: list[Finding] = []
    claimed: set[int] = set()
    decoded: list[tuple[int, Event]] = []
    for seq, item in entries:
        if isinstance(item, Undecodable):
            findings.append(Finding(sid, "undecodable", seq, f"{item.reason}: {item.detail[:200]}"))
        else:
            decoded.append((seq, item))
    previous_seq = {seq: (decoded[i - 1][0] if i else 0) for i, (seq, _) in enumerate(decoded)}
    for finding in check_chain(decoded):
        detail = finding.detail
        if finding.kind == "broken_link":
            before = previous_seq.get(finding.sequence, 0)
            lost = [m for m in missing if before < m < finding.sequence]
            if lost:
                claimed.update(lost)
                for m in lost:
                    findings.append(
                        Finding(
                            sid,
                            "missing_sequence",
                            m,
                            f"an event of this session between seq {before} and "
                            f"{finding.sequence} is gone from the stream (corrupted store?)",
                        )
                    )
        findings.append(Finding(sid, finding.kind, finding.sequence, detail))
    ended = any(e.type in TERMINAL_TYPES for _, e in decoded)
    last = entries[-1][0] if entries else 0
    if not ended and decoded:
        after = [m for m in missing if m > last]
        if after:
            claimed.add(after[0])
            findings.append(
                Finding(
                    sid,
                    "no_end",
                    after[0],
                    f"the session has no terminal event and stream seq {after[0]}, after its "
                    f"last event (seq {last}), is gone: its end was probably lost",
                )
            )
    if snapshot is not None and snapshot_position:
        from oopav.projections.session import fold

        upto = [(s, e) for s, e in decoded if s <= snapshot_position]
        rebuilt = msgspec.to_builtins(fold(upto))
        stored = msgspec.to_builtins(snapshot)
        diffs = [k for k in DRIFT_FIELDS if rebuilt.get(k) != stored.get(k)]
        if diffs:
            said = ", ".join(f"{k}={stored.get(k)!r}" for k in diffs)
            has = ", ".join(f"{k}={rebuilt.get(k)!r}" for k in diffs)
            drift_seq: int | None = (
                stored.get("last_sequence") if "last_sequence" in diffs else None
            )
            findings.append(
                Finding(
                    sid,
                    "snapshot_drift",
                    drift_seq,
                    f"the snapshot says {said}; the stream gives {has}",
                )
            )
    return findings, claimed


async def scan(
    events: EventStore,
    snapshots: Any = None,
    *,
    session: str | None = None,
) -> Report:
    """Check every session of the stream (or only ``session``; the whole stream is still read
    to find missing sequences). ``snapshots``: the session projection's ``Snapshots``."""
    t0 = time.monotonic()
    info = await events.js.stream_info(EVENTS_STREAM)
    state = info.state
    report = Report(first_seq=state.first_seq, last_seq=state.last_seq)
    if state.last_seq == 0:
        report.seconds = time.monotonic() - t0
        return report
    sessions, missing, read = await read_all(events, state.first_seq, state.last_seq)
    report.messages = read
    report.missing = missing
    position = snapshots.last_sequence() if snapshots is not None else 0
    claimed: set[int] = set()
    ids = [session] if session is not None else sorted(sessions)
    if snapshots is not None and session is None:
        # A session the snapshot knows but the stream has nothing of: all its events are gone.
        for sid, _ in snapshots.items():
            if sid not in sessions:
                ids.append(sid)
    report.sessions = len(ids)
    for sid in ids:
        snap = snapshots.get(sid) if snapshots is not None else None
        entries = sessions.get(sid, [])
        if not entries and snap is not None:
            report.findings.append(
                Finding(
                    sid,
                    "snapshot_drift",
                    None,
                    "the snapshot knows this session; the stream has none of its events",
                )
            )
            continue
        found, got = check_session(sid, entries, missing, snap, position)
        report.findings.extend(found)
        claimed |= got
    if session is None:
        for m in missing:
            if m not in claimed:
                report.findings.append(
                    Finding(
                        None,
                        "missing_sequence",
                        m,
                        "gone from the stream; no session's chain names it (a mission or run "
                        "event, or a session event that nothing followed)",
                    )
                )
    report.seconds = time.monotonic() - t0
    return report


# -- the record sessions/show read -------------------------------------------------------------


def record_path(data_dir: Path) -> Path:
    return Path(data_dir) / "fsck.json"


def save(data_dir: Path, report: Report) -> Path:
    path = record_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "scanned_at": time.time(),
        "last_seq": report.last_seq,
        "damaged": {sid: [f.describe() for f in found] for sid, found in report.damaged().items()},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1))
    tmp.replace(path)
    return path


def recorded_damage(data_dir: Path) -> dict[str, list[str]]:
    """Damaged sessions from the last ``oopav fsck`` (empty when it never ran)."""
    try:
        raw = json.loads(record_path(data_dir).read_text())
        damaged = raw.get("damaged", {})
        return {str(k): [str(x) for x in v] for k, v in damaged.items()}
    except (OSError, ValueError, AttributeError):
        return {}


async def lost_ends(events: EventStore, snapshots: Any, sids: list[str]) -> dict[str, str]:
    """Sessions whose snapshot's last event is gone from the stream (one direct get each):
    how ``oopav sessions`` notices a lost terminal event without a full scan."""
    out: dict[str, str] = {}
    for sid in sids:
        snap = snapshots.get(sid)
        seq = getattr(snap, "last_sequence", 0) if snap is not None else 0
        if not seq:
            continue
        try:
            msg = await events.js.get_msg(EVENTS_STREAM, seq)
        except Exception:
            out[sid] = f"its last event (seq {seq}) is gone from the stream"
            continue
        if f".{sid}." not in (msg.subject or ""):
            out[sid] = f"stream seq {seq}, its last event, holds another subject"
    return out


async def session_damage(
    events: EventStore,
    snapshots: Any,
    sid: str,
    entries: list[tuple[int, Event | Undecodable]],
    data_dir: Path | None = None,
) -> list[Finding]:
    """What is wrong with one session, without a scan of the whole stream (``show``,
    ``replay --verify``): its undecodable entries and broken links, the sequences gone between
    a broken link and the event before it, the snapshot's disagreement with the stream, a last
    event the snapshot names that is gone, and what the last ``oopav fsck`` recorded."""
    decoded = [(s, e) for s, e in entries if not isinstance(e, Undecodable)]
    missing: list[int] = []
    previous = {seq: (decoded[i - 1][0] if i else 0) for i, (seq, _) in enumerate(decoded)}
    for finding in check_chain(decoded):
        if finding.kind == "broken_link":
            before = previous.get(finding.sequence, 0)
            if finding.sequence - before > 1:
                _, gone, _ = await read_all(events, before + 1, finding.sequence - 1)
                missing.extend(gone)
    valid = snapshots is not None and snapshots.valid()
    snap = snapshots.get(sid) if valid else None
    position = snapshots.last_sequence() if valid else 0
    findings, _ = check_session(sid, entries, sorted(set(missing)), snap, position)
    if valid:
        lost = await lost_ends(events, snapshots, [sid])
        if sid in lost:
            seq = getattr(snap, "last_sequence", None)
            findings.append(Finding(sid, "missing_sequence", seq, lost[sid]))
    if data_dir is not None:
        known = {f.describe() for f in findings}
        for line in recorded_damage(data_dir).get(sid, []):
            if line not in known:
                findings.append(Finding(sid, "recorded", None, f"{line} (last `oopav fsck`)"))
    return findings
