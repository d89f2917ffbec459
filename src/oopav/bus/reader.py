"""Reading one aggregate from a server url (used by the replay model backend and the CLI)."""

from __future__ import annotations

from oopav.bus.store import EventStore, connect
from oopav.events.catalog import Event


async def read_aggregate(
    url: str, aggregate: str, aggregate_id: str, from_seq: int = 1
) -> list[tuple[int, Event]]:
    nc = await connect(url, name="oopav-reader")
    try:
        return await EventStore(nc).read(
            aggregate, aggregate_id, from_seq=from_seq, skip_undecodable=True
        )
    finally:
        await nc.close()
