"""Building events with a correct envelope: derived ids, causation and correlation."""

from __future__ import annotations

from typing import Any, TypeVar

from oopav import __version__
from oopav.events.catalog import Event
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.ids import DEFAULT_IDS, IdGenerator, derive_id

E = TypeVar("E", bound=Event)


def actor_name(handler: str) -> str:
    return f"{handler}/{__version__}"


def root_event(
    cls: type[E],
    *,
    handler: str,
    aggregate_id: str | None = None,
    event_id: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    ids: IdGenerator = DEFAULT_IDS,
    aggregate: str = "session",
    **fields: Any,
) -> E:
    """A root event: it starts a causal chain (a submitted task, a manual grant)."""
    eid = event_id or ids.new()
    return cls(
        id=eid,
        schema=cls.SCHEMA,
        aggregate=aggregate,  # type: ignore[arg-type]  # str for callers; the event validates the Literal
        aggregate_id=aggregate_id or eid,
        causation_id=None,
        correlation_id=eid,
        actor=actor_name(handler),
        ts=clock.now(),
        **fields,
    )


def caused_event(
    cls: type[E],
    cause: Event,
    *,
    handler: str,
    index: int = 0,
    clock: Clock = SYSTEM_CLOCK,
    aggregate_id: str | None = None,
    aggregate: str | None = None,
    salt: str = "",
    **fields: Any,
) -> E:
    """Output ``index`` of ``handler`` in response to ``cause``; its id is derived, so
    reprocessing ``cause`` yields the same id and JetStream drops the duplicate."""
    return cls(
        id=derive_id(cause.id + salt, handler, index),
        schema=cls.SCHEMA,
        aggregate=aggregate or cause.aggregate,  # type: ignore[arg-type]  # str for callers; the event validates the Literal
        aggregate_id=aggregate_id or cause.aggregate_id,
        causation_id=cause.id,
        correlation_id=cause.correlation_id,
        actor=actor_name(handler),
        ts=clock.now(),
        **fields,
    )
