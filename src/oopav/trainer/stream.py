"""Reading finished sessions off the stream for datasets (``oopav export``, the learner)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from oopav.bus.store import EventStore
from oopav.events.codec import EventDecodeError, decode
from oopav.trainer.datasets import (
    FORMATS,
    Filters,
    Manifest,
    SessionRecords,
    session_records,
    write_dataset,
)

COMPLETED_SUBJECT = "oopav.ev.session.*.session_completed"


async def completed_sessions(store: EventStore) -> AsyncIterator[tuple[int, str]]:
    """(stream sequence, session id) of every ``session_completed`` on the stream, in order."""
    seen: set[str] = set()
    async for seq, data in store.iter_raw(COMPLETED_SUBJECT):
        try:
            event = decode(data)
        except EventDecodeError:
            continue
        if event.aggregate_id in seen:
            continue  # a later terminal event does not count twice: the first one wins
        seen.add(event.aggregate_id)
        yield seq, event.aggregate_id


async def records_of(
    store: EventStore, session_id: str, filters: Filters, formats: Iterable[str] = FORMATS
) -> SessionRecords:
    events = await store.read("session", session_id)
    from oopav.history.blobs import BlobStore
    from oopav.history.prompts import expand

    # Datasets hold whole prompts: stored requests are rebuilt (history/prompts.py).
    events = await expand(BlobStore(store.nc), events)
    return session_records(events, filters, formats)


async def export(
    store: EventStore, fmt: str, out: str | Path, filters: Filters, *, parquet: bool = True
) -> Manifest:
    """Build the ``fmt`` dataset from every finished session on the stream into ``out``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
    sessions = [
        await records_of(store, sid, filters, (fmt,)) async for _, sid in completed_sessions(store)
    ]
    return write_dataset(out, fmt, sessions, filters, parquet=parquet)
