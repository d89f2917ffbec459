"""Retrieval memory: a FAISS index of finished sessions, kept as a projection of the stream.

``SessionMemory`` is a fold. ``apply(sequence, event)`` consumes ``task_submitted`` (the
instruction), ``plan_proposed`` (the latest plan wins, so a replan supersedes) and
``session_completed`` (the outcome), ``workspace_rolled_back`` (the attempts a session rejected,
kept so a later, similar session is told not to repeat them), and ``task_rejected`` drops what
was pending; a session enters the index when it completes, with the
pieces kept pending until then. ``rebuild(events)`` folds a stream from scratch into an index
identical to the live one: same records in the same order (stream order), same vectors (the
default embedder is a pure function of the text), hence the same hits and scores.

Queries are deterministic: the index is exact (``IndexFlatIP`` over L2-normalised vectors, i.e.
cosine similarity), scores are rounded to 6 decimals so last-bit noise cannot reorder them, and
equal scores are ordered by session id, including ties at the k-th place. The orient handler
and the planner record the ids and scores they retrieved, so replay reads them from the stream.

A saved index (``save``/``load``) is a disposable snapshot with its last applied sequence: a
missing, damaged or mismatched one (other format, other embedder) is rebuilt from the stream
(``load_or_rebuild``). faiss is imported only when an index is first needed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from oopav.context.embedders import Embedder, HashingEmbedder
from oopav.events.catalog import (
    Event,
    PlanProposed,
    SessionCompleted,
    TaskRejected,
    TaskSubmitted,
    WorkspaceRolledBack,
)

# 2: records carry the attempts their session rolled back (``rejected``).
MEMORY_FORMAT_VERSION = 2
MAX_REJECTED = 10
SCORE_DECIMALS = 6
PLAN_SUMMARY_CHARS = 600
_META = "meta.msgpack"
_INDEX = "index.faiss"


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    score: float
    instruction: str
    plan_summary: str
    outcome: str
    summary: str = ""
    rejected: list[str] = msgspec.field(default_factory=list)


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A finished session as the memory knows it. ``sequence`` is that of its completion."""

    session_id: str
    sequence: int
    instruction: str
    plan_summary: str
    outcome: str
    summary: str = ""
    mission: str | None = None
    files: list[str] = msgspec.field(default_factory=list)
    rejected: list[str] = msgspec.field(default_factory=list)
    """Attempts the session rolled back (the observer's negative examples): what not to do."""


class _Pending(msgspec.Struct, kw_only=True):
    instruction: str | None = None
    mission: str | None = None
    plan_summary: str = ""
    files: list[str] = msgspec.field(default_factory=list)
    rejected: list[str] = msgspec.field(default_factory=list)


class _Meta(msgspec.Struct, kw_only=True):
    format: int
    embedder: str
    dim: int
    last_sequence: int
    records: list[SessionRecord]
    pending: dict[str, _Pending]
    index_sha256: str


def summarize_plan(plan: PlanProposed, limit: int = PLAN_SUMMARY_CHARS) -> str:
    """``1. step [files]; 2. step`` cut to ``limit`` characters: enough for a planner example."""
    parts = []
    for step in plan.steps:
        files = f" [{', '.join(step.files)}]" if step.files else ""
        parts.append(f"{step.id}. {step.description}{files}")
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_FAISS_CONFIGURED = False


def _faiss() -> Any:
    """faiss, imported on first use. OpenMP is limited to ``OOPAV_FAISS_THREADS`` (default 1)
    threads: queries here are single vectors over at most some 100k rows, where fork/join
    costs more than it saves (10k rows, 2 cores: 12 ms with 2 threads, 0.7 ms with 1)."""
    global _FAISS_CONFIGURED
    import faiss

    if not _FAISS_CONFIGURED:
        faiss.omp_set_num_threads(int(os.environ.get("OOPAV_FAISS_THREADS", "1")))
        _FAISS_CONFIGURED = True
    return faiss


class SessionMemory:
    """The fold of finished sessions into a similarity index (see the module docstring)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder or HashingEmbedder()
        self.last_sequence = 0
        self._records: list[SessionRecord] = []
        self._ids: set[str] = set()
        self._pending: dict[str, _Pending] = {}
        # Vectors of records[:_embedded] are in the indexes; the rest are embedded in one batch
        # at the next query or save, which makes a rebuild of 10k sessions one numpy pass.
        self._embedded = 0
        self._all: Any = None
        self._ok: Any = None
        self._ok_rows: list[int] = []

    # --- the fold -------------------------------------------------------------------------

    def apply(self, sequence: int, event: Event) -> bool:
        """Fold one event; returns whether the memory changed. Events at or below
        ``last_sequence`` are ignored, so redelivery and resuming after a load are safe."""
        if sequence <= self.last_sequence:
            return False
        self.last_sequence = sequence
        if event.aggregate != "session":
            return False
        sid = event.aggregate_id
        pending: _Pending | None
        if isinstance(event, TaskSubmitted):
            if sid in self._ids:
                return False
            pending = self._pending.setdefault(sid, _Pending())
            pending.instruction = event.instruction
            pending.mission = event.mission
            return True
        if isinstance(event, PlanProposed):
            if sid in self._ids:
                return False
            pending = self._pending.setdefault(sid, _Pending())
            pending.plan_summary = summarize_plan(event)
            pending.files = sorted(set(event.files) | {f for s in event.steps for f in s.files})
            return True
        if isinstance(event, WorkspaceRolledBack):
            if sid in self._ids or not event.rejected:
                return False
            pending = self._pending.setdefault(sid, _Pending())
            pending.rejected = (pending.rejected + list(event.rejected))[-MAX_REJECTED:]
            return True
        if isinstance(event, TaskRejected):
            # A rejected task never completes: drop its pieces instead of holding them forever.
            return self._pending.pop(sid, None) is not None
        if isinstance(event, SessionCompleted):
            pending = self._pending.pop(sid, None)
            # A completion without its submission (the stream was trimmed) cannot be searched
            # by instruction; a second completion of one session changes nothing.
            if pending is None or pending.instruction is None or sid in self._ids:
                return pending is not None
            self._records.append(
                SessionRecord(
                    session_id=sid,
                    sequence=sequence,
                    instruction=pending.instruction,
                    plan_summary=pending.plan_summary,
                    outcome=event.outcome,
                    summary=event.summary,
                    mission=pending.mission,
                    files=pending.files,
                    rejected=pending.rejected,
                )
            )
            self._ids.add(sid)
            return True
        return False

    @classmethod
    def rebuild(
        cls, events: Iterable[tuple[int, Event]], embedder: Embedder | None = None
    ) -> SessionMemory:
        """Fold ``(sequence, event)`` pairs from the start of the stream."""
        memory = cls(embedder)
        for sequence, event in events:
            memory.apply(sequence, event)
        return memory

    # --- reading --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> tuple[SessionRecord, ...]:
        return tuple(self._records)

    @property
    def pending_sessions(self) -> tuple[str, ...]:
        return tuple(sorted(self._pending))

    def _ensure_index(self) -> None:
        if self._all is None:
            faiss = _faiss()
            self._all = faiss.IndexFlatIP(self.embedder.dim)
            self._ok = faiss.IndexFlatIP(self.embedder.dim)
        if self._embedded == len(self._records):
            return
        new = self._records[self._embedded :]
        vecs = self.embedder.embed([r.instruction for r in new])
        self._add_vectors(vecs, start=self._embedded)

    def _add_vectors(self, vecs: np.ndarray, start: int) -> None:
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        if vecs.shape != (len(self._records) - start, self.embedder.dim):
            raise ValueError(
                f"embedder {self.embedder.name} returned shape {vecs.shape}, "
                f"expected ({len(self._records) - start}, {self.embedder.dim})"
            )
        self._all.add(vecs)
        ok = [i for i in range(start, len(self._records)) if self._records[i].outcome == "success"]
        if ok:
            self._ok.add(np.ascontiguousarray(vecs[[i - start for i in ok]]))
            self._ok_rows.extend(ok)
        self._embedded = len(self._records)

    def query(self, text: str, k: int = 5, *, only_successful: bool = False) -> list[Hit]:
        """The ``k`` sessions whose instruction is most similar to ``text`` (cosine similarity,
        rounded to 6 decimals), best first, equal scores by session id."""
        if k <= 0 or not self._records:
            return []
        self._ensure_index()
        index = self._ok if only_successful else self._all
        n = int(index.ntotal)
        if n == 0:
            return []
        q = np.ascontiguousarray(self.embedder.embed([text]), dtype=np.float32)
        want = min(k, n)
        fetch = min(n, 2 * k + 16)
        while True:
            dist, idx = index.search(q, fetch)
            scores = [round(float(d), SCORE_DECIMALS) for d in dist[0]]
            # faiss orders by the raw score; rounding keeps that order, so once the last
            # fetched score is below the k-th nothing further can tie with it.
            if fetch >= n or scores[-1] < scores[want - 1]:
                break
            fetch = min(n, fetch * 2)
        rows = [int(i) for i in idx[0]]
        if only_successful:
            rows = [self._ok_rows[i] for i in rows]
        found = sorted(
            zip(scores, rows, strict=True),
            key=lambda sr: (-sr[0], self._records[sr[1]].session_id),
        )
        hits = []
        for score, row in found[:want]:
            r = self._records[row]
            hits.append(
                Hit(
                    session_id=r.session_id,
                    score=score,
                    instruction=r.instruction,
                    plan_summary=r.plan_summary,
                    outcome=r.outcome,
                    summary=r.summary,
                    rejected=list(r.rejected),
                )
            )
        return hits

    def fingerprint(self) -> str:
        """A hash of everything the memory holds (records, pending pieces, last sequence,
        vectors): a rebuilt memory equals the live one exactly when the fingerprints match."""
        self._ensure_index()
        h = hashlib.sha256()
        h.update(self.embedder.name.encode())
        h.update(str(self.last_sequence).encode())
        h.update(msgspec.msgpack.encode(self._records))
        h.update(msgspec.msgpack.encode(sorted(self._pending.items())))
        if self._all.ntotal:
            h.update(self._all.reconstruct_n(0, self._all.ntotal).tobytes())
        return h.hexdigest()

    # --- persistence ----------------------------------------------------------------------

    def save(self, directory: str | Path) -> None:
        """Write the index, the records, the pending pieces and the last sequence. The index
        file is written first and its hash recorded in the metadata written last, so a crash
        between the two leaves a snapshot that ``load`` rejects rather than a wrong one."""
        self._ensure_index()
        faiss = _faiss()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        index_bytes = faiss.serialize_index(self._all).tobytes()
        meta = _Meta(
            format=MEMORY_FORMAT_VERSION,
            embedder=self.embedder.name,
            dim=self.embedder.dim,
            last_sequence=self.last_sequence,
            records=self._records,
            pending=dict(sorted(self._pending.items())),
            index_sha256=hashlib.sha256(index_bytes).hexdigest(),
        )
        _atomic_write(directory / _INDEX, index_bytes)
        _atomic_write(directory / _META, msgspec.msgpack.encode(meta))

    @classmethod
    def load(cls, directory: str | Path, embedder: Embedder | None = None) -> SessionMemory | None:
        """The memory saved in ``directory``, or None when it is missing, damaged, of another
        format or made by another embedder: the caller then rebuilds from the stream."""
        directory = Path(directory)
        memory = cls(embedder)
        try:
            meta = msgspec.msgpack.decode((directory / _META).read_bytes(), type=_Meta)
            index_bytes = (directory / _INDEX).read_bytes()
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if (
            meta.format != MEMORY_FORMAT_VERSION
            or meta.embedder != memory.embedder.name
            or meta.dim != memory.embedder.dim
            or hashlib.sha256(index_bytes).hexdigest() != meta.index_sha256
        ):
            return None
        faiss = _faiss()
        try:
            stored = faiss.deserialize_index(np.frombuffer(index_bytes, dtype=np.uint8))
        except RuntimeError:
            return None
        if stored.d != memory.embedder.dim or stored.ntotal != len(meta.records):
            return None
        memory.last_sequence = meta.last_sequence
        memory._records = list(meta.records)
        memory._ids = {r.session_id for r in meta.records}
        memory._pending = dict(meta.pending)
        memory._all = faiss.IndexFlatIP(memory.embedder.dim)
        memory._ok = faiss.IndexFlatIP(memory.embedder.dim)
        if stored.ntotal:
            memory._add_vectors(stored.reconstruct_n(0, stored.ntotal), start=0)
        return memory

    @classmethod
    def load_or_rebuild(
        cls,
        directory: str | Path,
        events_from: Callable[[int], Iterable[tuple[int, Event]]],
        embedder: Embedder | None = None,
        *,
        save: bool = True,
    ) -> SessionMemory:
        """Resume from the snapshot in ``directory`` with the events after its last sequence,
        or fold the whole stream when there is no usable snapshot. ``events_from(start)``
        yields ``(sequence, event)`` from sequence ``start`` on (1 is the stream's start)."""
        memory = cls.load(directory, embedder)
        if memory is None:
            memory = cls(embedder)
        for sequence, event in events_from(memory.last_sequence + 1):
            memory.apply(sequence, event)
        if save:
            memory.save(directory)
        return memory


def _atomic_write(path: Path, data: bytes) -> None:
    from oopav.files import atomic_write

    atomic_write(path, data)
