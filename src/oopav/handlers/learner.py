"""The learner: finished sessions → training datasets, continuously.

A durable consumer of ``session_completed`` (it starts at the beginning of the stream, then
follows). For each finished session it reads the session's events, turns them into SFT, SRL and
GRPO records (:mod:`oopav.trainer.datasets`) and stores them under
``<data dir>/datasets/sessions/<session id>.json``.

The datasets ``<data dir>/datasets/<format>/`` (JSONL/Parquet shards + manifest) are rebuilt
from those files once when the learner starts (in a child process), in stream order, so they
are the bytes ``oopav export`` would write from the same stream. After that, new sessions are
**appended** (issue 28 §4): a moment after they arrive (``append_delay``), their records become
one new JSONL shard per format and the manifest is rewritten — work proportional to the new
sessions, never to the history. The records, their order and the manifest's ``content_hash``
stay exactly those of a full rebuild (``oopav export`` still rebuilds byte-identical
shards on demand); only the shard boundaries differ. A session that arrives out of completion
order (a redelivery), other filters, or more than ``MAX_APPENDED_SHARDS`` shards make the next
flush a full rebuild again (the compaction).

Everything it writes is a projection (invariant 1): delete ``<data dir>/datasets`` and the next
start drops the durable consumer, so the learner reads the stream again from its start.
Reprocessing a session rewrites the same file, so redeliveries are harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.store import EventStore
from oopav.bus.streams import EVENTS_STREAM
from oopav.events.catalog import Event
from oopav.logging import get_logger
from oopav.trainer.datasets import (
    FORMATS,
    AppendState,
    Filters,
    SessionRecords,
    SessionSource,
    _atomic_write,
    append_dataset,
    can_append,
    load_append_state,
    write_dataset,
)
from oopav.trainer.stream import COMPLETED_SUBJECT, records_of

NAME = "learner"
log = get_logger("oopav.learner")

# A rebuild that takes longer than this is stopped (and tried again at the next change).
REBUILD_TIMEOUT = 600.0
# More shards than this in a dataset (one per flush): the next flush compacts (full rebuild).
MAX_APPENDED_SHARDS = 512


class RebuildFailed(RuntimeError):
    pass


class Learner:
    """Run with ``oopav handler learner`` (a service for ``run_until_signalled``)."""

    name = NAME
    handler = NAME

    def __init__(
        self,
        nc: NATS,
        root: str | Path,
        *,
        filters: Filters | None = None,
        rebuild_every: float = 2.0,
        options: ConsumerOptions | None = None,
        parquet: bool = True,
        out_of_process: bool = True,
        append_delay: float = 0.1,
    ) -> None:
        self.nc = nc
        self.out_of_process = out_of_process
        self.last_rebuild_s = 0.0
        self.root = Path(root)
        self.filters = filters or Filters()
        self.rebuild_every = rebuild_every
        self.parquet = parquet
        self.store = EventStore(nc)
        self.consumer = HandlerConsumer(
            nc, NAME, [COMPLETED_SUBJECT], self.process, options=options or ConsumerOptions()
        )
        self.sessions_seen = 0
        self.rebuilds = 0
        self.appends = 0
        self.append_delay = append_delay
        self._dirty = False
        self._full = False  # the next flush rebuilds everything
        self._pending: dict[str, SessionRecords] = {}
        self._states: dict[str, AppendState] | None = None
        self._wake = asyncio.Event()

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    async def run(self) -> None:
        await self._reset_if_empty()
        # What a previous run stored, before following the stream; in a thread, as under
        # `oopav up` the other handlers share this event loop.
        await self._rebuild()
        await self._load_states()
        flusher = asyncio.create_task(self._flush_loop())
        try:
            await self.consumer.run()
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            if self._dirty:
                await self._flush()

    def stop(self) -> None:
        self.consumer.stop()

    async def _reset_if_empty(self) -> None:
        if self.sessions_dir.is_dir():
            return
        # The files are gone but the durable consumer remembers its position: drop it so the
        # datasets are rebuilt from the start of the stream.
        with contextlib.suppress(Exception):
            await self.nc.jetstream().delete_consumer(EVENTS_STREAM, self.consumer.durable)
            log.info("learner_reset", reason="no datasets on disk; reading the stream again")
        self.sessions_dir.mkdir(parents=True, exist_ok=True)

    async def process(self, event: Event, delivery: Delivery | None) -> None:
        sid = event.aggregate_id
        recs = await records_of(self.store, sid, self.filters)
        path = self.sessions_dir / f"{sid}.json"
        if recs.source is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        data = {"source": recs.source.to_json(), "records": recs.records}
        self._pending[sid] = SessionRecords(recs.source, recs.records)
        await asyncio.to_thread(
            _atomic_write,
            path,
            json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(),
        )
        self.sessions_seen += 1
        self._dirty = True
        self._wake.set()
        log.info(
            "session_learned",
            session_id=sid,
            event_id=event.id,
            handler=NAME,
            **{fmt: len(r) for fmt, r in recs.records.items()},
        )

    async def _flush_loop(self) -> None:
        while True:
            await self._wake.wait()
            # A moment for the sessions completing together to share one shard.
            await asyncio.sleep(self.append_delay)
            self._wake.clear()
            if self._dirty:
                try:
                    await self._flush()
                except asyncio.CancelledError:
                    self._dirty = True  # stopped mid-flush: the final one in run() redoes it
                    raise

    async def _flush(self) -> None:
        """Append the pending sessions, or rebuild everything when appending would not give
        what a rebuild gives (see the module docstring)."""
        self._dirty = False
        pending, self._pending = self._pending, {}
        states = self._states
        too_many = states is not None and any(
            len(st.manifest["shards"]) >= MAX_APPENDED_SHARDS for st in states.values()
        )
        if (
            self._full
            or states is None
            or too_many
            or not all(can_append(states.get(f), pending.values()) for f in FORMATS)
        ):
            self._full = False
            await self._rebuild()
            await self._load_states()
            return
        try:
            await asyncio.to_thread(self._append, states, list(pending.values()))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("learner_append_failed", handler=NAME, error=str(exc))
            self._states = None  # the next flush rebuilds
            self._full = True
            self._dirty = True
            self._wake.set()

    def _append(self, states: dict[str, AppendState], sessions: list[SessionRecords]) -> None:
        for fmt in FORMATS:
            append_dataset(self.root / fmt, fmt, sessions, states[fmt])
        self.appends += 1

    async def _load_states(self) -> None:
        def load() -> dict[str, AppendState] | None:
            out: dict[str, AppendState] = {}
            for fmt in FORMATS:
                st = load_append_state(self.root / fmt, self.filters)
                if st is None:
                    return None
                out[fmt] = st
            return out

        self._states = await asyncio.to_thread(load)

    async def _rebuild(self) -> None:
        """``rebuild`` in a child process when ``out_of_process`` (the default): the whole
        datasets are in memory while they are rebuilt, and a long-running ``oopav up`` would
        keep that peak (malloc arenas, pyarrow's pool) for good, growing with every session
        (docs/benchmarks.md § Memory). The child writes the same bytes (the same function)
        and gives its memory back when it exits. If it cannot run, this process rebuilds."""
        start = time.monotonic()
        try:
            if not self.out_of_process:
                await asyncio.to_thread(self.rebuild)
                return
            try:
                await _run_child(self.root, self.filters, self.parquet, REBUILD_TIMEOUT)
                self.rebuilds += 1
            except RebuildFailed as exc:
                log.warning("learner_rebuild_child_failed", handler=NAME, error=str(exc))
                await asyncio.to_thread(self.rebuild)
        finally:
            self.last_rebuild_s = time.monotonic() - start

    def load_sessions(self) -> list[SessionRecords]:
        out = []
        for path in sorted(self.sessions_dir.glob("*.json")):
            try:
                data: dict[str, Any] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # a torn file is rewritten when its session is redelivered
            out.append(SessionRecords(SessionSource(**data["source"]), data["records"]))
        return out

    def rebuild(self) -> None:
        if not self.sessions_dir.is_dir():
            return
        sessions = self.load_sessions()
        for fmt in FORMATS:
            write_dataset(self.root / fmt, fmt, sessions, self.filters, parquet=self.parquet)
        self.rebuilds += 1


async def _run_child(root: Path, filters: Filters, parquet: bool, timeout: float) -> None:
    """``python -m oopav.handlers.learner ROOT``: one rebuild, then exit."""
    args = [sys.executable, "-m", "oopav.handlers.learner", str(root)]
    args += ["--filters", json.dumps(filters.to_json())]
    if not parquet:
        args.append("--no-parquet")
    try:
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
    except OSError as exc:
        raise RebuildFailed(f"cannot start {sys.executable}: {exc}") from exc
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise RebuildFailed(f"the rebuild took longer than {timeout:.0f}s") from None
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise RebuildFailed(f"exit {proc.returncode}: {tail[0][:300]}")


def _main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m oopav.handlers.learner")
    ap.add_argument("root", help="the learner's datasets directory")
    ap.add_argument("--filters", default="{}", help="Filters.to_json() as JSON")
    ap.add_argument("--no-parquet", action="store_true")
    args = ap.parse_args(argv)
    learner = Learner.__new__(Learner)  # no connection: only the files
    learner.root = Path(args.root)
    learner.filters = Filters.from_json(json.loads(args.filters))
    learner.parquet = not args.no_parquet
    learner.rebuilds = 0
    learner.rebuild()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
