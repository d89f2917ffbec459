"""Mission aggregate events (``oopav.ev.mission.<name>.<type>``): the experience library that
the reflector maintains per mission. Every guidance change is one of these facts."""

from __future__ import annotations

from oopav.events.catalog import Event

MISSION_EVENTS: tuple[type[Event], ...] = ()
