"""Run aggregate events (``oopav.ev.run.<id>.<type>``): training runs — config, steps,
checkpoints and evaluations — recorded on the same stream as the sessions they learn from."""

from __future__ import annotations

from oopav.events.catalog import Event

RUN_EVENTS: tuple[type[Event], ...] = ()
