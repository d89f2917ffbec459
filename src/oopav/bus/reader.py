"""Reading one aggregate from a server url (used by the replay model backend and the CLI)."""

from __future__ import annotations

from oopav.bus.store import EventStore, connect
from oopav.events.catalog import Event


async def read_aggregate(
    url: str, aggregate: str, aggregate_id: str, from_seq: int = 1
) -> list[tuple[int, Event]]:
    """The aggregate's events, model calls with their whole prompts (``history.prompts``):
    what the replay and fork model backends serve from."""
    nc = await connect(url, name="oopav-reader")
    try:
        events = await EventStore(nc).read(
            aggregate, aggregate_id, from_seq=from_seq, skip_undecodable=True
        )
        from oopav.history.blobs import BlobStore
        from oopav.history.prompts import expand

        return await expand(BlobStore(nc), events)
    finally:
        await nc.close()
