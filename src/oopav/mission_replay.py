"""Replaying a mission: re-run the reflector's decisions from the recording and compare.

A fresh temporary server receives, in their original stream order, the events the reflector
read (the sessions of every group and holdout it decided on) and the mission events nobody
derived (seeds, rollbacks); after each ``session_completed`` the reflector decides, with its
critic and consolidator answers served from the mission's recorded ``model_called`` events
(by request hash). The mission events it produces must equal the recorded ones (volatile
fields aside) and the rebuilt library must export to the same bytes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oopav.events import catalog as ev
from oopav.events import mission as mev
from oopav.events.catalog import Event


@dataclass
class MissionReplayReport:
    mission: str
    ok: bool
    recorded: int
    replayed: int
    library_identical: bool
    first_divergence: Any = None
    library: bytes = b""


def _session_ids(events: list[Event]) -> list[str]:
    ids: list[str] = []
    for e in events:
        if isinstance(e, mev.ReflectionProposed | mev.ReflectionRejected):
            ids += [s.session_id for s in e.signals]
        if isinstance(e, mev.ReflectionProposed):
            ids += [r.session_id for r in e.holdout]
    return list(dict.fromkeys(ids))


async def verify_mission(
    source_url: str,
    mission: str,
    *,
    config: Any = None,
    tamper: Callable[[list[tuple[int, Event]]], list[tuple[int, Event]]] | None = None,
) -> MissionReplayReport:
    from oopav.app import open_bus
    from oopav.bus.store import EventStore, connect
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.handlers.reflector import NAME, Reflector
    from oopav.models.replay import ReplayBackend
    from oopav.projections.guidance import export_library, fold
    from oopav.replay import compare

    agg = mev.mission_aggregate_id(mission)
    nc = await connect(source_url, name="oopav-mission-replay-source")
    try:
        store = EventStore(nc)
        recorded = await store.read("mission", agg)
        sessions: list[tuple[int, Event]] = []
        from oopav.history.blobs import BlobStore
        from oopav.history.prompts import expand

        for sid in _session_ids([e for _, e in recorded]):
            # Whole prompts: the replay backend serves answers by the request's hash.
            sessions += await expand(BlobStore(nc), await store.read("session", sid))
    finally:
        await nc.close()
    if not recorded:
        raise ValueError(f"mission {mission} has no events")
    if tamper is not None:
        recorded = tamper(recorded)
    ours = f"{NAME}/"
    calls = [e for _, e in recorded if isinstance(e, ev.ModelCalled)]
    backend = ReplayBackend(calls, spec=f"replay:mission:{mission}")
    # What the reflector read, not what it wrote: it writes its decisions and the holdout
    # sessions' tasks again itself.
    feed = sorted(
        [(s, e) for s, e in sessions if not e.actor.startswith(ours)]
        + [(s, e) for s, e in recorded if not e.actor.startswith(ours)],
        key=lambda x: x[0],
    )
    if config is None:
        from oopav.handlers.reflector import ReflectorConfig

        decided = next(
            (
                e
                for _, e in recorded
                if isinstance(e, mev.ReflectionProposed | mev.ReflectionRejected) and e.settings
            ),
            None,
        )
        by_role = {c.role: c.backend for c in reversed(calls)}
        config = ReflectorConfig.model_validate(
            {
                **(decided.settings if decided else {}),
                # The specs are recorded as the calls' backend; the replay serves any spec.
                "critic_model": by_role.get("reflection_critic"),
                "consolidator_model": by_role.get("reflection_consolidator"),
            }
        )
    with tempfile.TemporaryDirectory(prefix="oopav-mission-replay-") as tmp:
        settings = Settings(data_dir=Path(tmp), nats_url=None)
        ports = Ports(settings=settings, model_factory=lambda spec: backend, default_model="replay")
        async with open_bus(settings, embedded=True, name="oopav-mission-replay") as bus:
            reflector = Reflector(bus.nc, ports, config)
            for _, event in feed:
                await bus.events.append_many_async([event])
                if isinstance(event, ev.SessionCompleted):
                    await reflector.process(event, None)
            replayed = [e for _, e in await bus.events.read("mission", agg)]
    divergence = compare(recorded, replayed)
    original = export_library(fold(recorded, mission))
    rebuilt = export_library(fold(replayed, mission))
    return MissionReplayReport(
        mission=mission,
        ok=divergence is None and original == rebuilt,
        recorded=len(recorded),
        replayed=len(replayed),
        library_identical=original == rebuilt,
        first_divergence=divergence,
        library=rebuilt,
    )
