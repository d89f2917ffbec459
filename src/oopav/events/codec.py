"""JSON codec for events, with a type registry and an upcaster chain.

The wire format is JSON so ``nats sub 'oopav.ev.>'`` shows readable events. Decoding takes
one typed msgspec pass in the common case (current schema); only events stored under an older
schema take the slow path: decode to a dict, run the registered upcasters version by version,
convert to the current type.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import msgspec

from oopav.events.catalog import SESSION_EVENTS, Event
from oopav.events.mission import MISSION_EVENTS
from oopav.events.run import RUN_EVENTS

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class EventDecodeError(ValueError):
    """Bytes that are not a valid event. ``reason`` is short and machine-friendly."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class UnknownEventType(EventDecodeError):
    def __init__(self, type_name: str) -> None:
        super().__init__("unknown_event_type", f"no event type {type_name!r} in the catalog")
        self.type_name = type_name


# The attributes a decoded event keeps its stored bytes and their SHA-256 under (``events.chain``).
STORED_BYTES = "_stored_bytes"
STORED_HASH = "_stored_sha256"


def stored_hash(event: Event) -> str | None:
    """The SHA-256 of the bytes ``event`` was decoded from; None for an event built in memory."""
    extra = event.__dict__
    digest = extra.get(STORED_HASH)
    if digest is None:
        data = extra.pop(STORED_BYTES, None)
        if data is None:
            return None
        digest = extra[STORED_HASH] = hashlib.sha256(data).hexdigest()
    return digest


class _Header(msgspec.Struct):
    type: str
    schema: int = 1


_header_decoder = msgspec.json.Decoder(_Header)
_encoder = msgspec.json.Encoder()


class Registry:
    """Which event types exist, their current schemas, and how to upcast old versions."""

    def __init__(self, types: tuple[type[Event], ...] = ()) -> None:
        self._types: dict[str, type[Event]] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}
        self._decoder: msgspec.json.Decoder[Any] | None = None
        for cls in types:
            self.register(cls)

    def register(self, cls: type[Event], *, replace: bool = False) -> type[Event]:
        name = cls.type_name()
        if name in self._types and self._types[name] is not cls and not replace:
            raise ValueError(f"event type {name!r} is already registered")
        self._types[name] = cls
        self._decoder = None
        return cls

    def upcaster(self, type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Register ``fn`` to turn a ``type_name`` event of ``from_version`` into the next."""

        def deco(fn: Upcaster) -> Upcaster:
            self._upcasters[(type_name, from_version)] = fn
            return fn

        return deco

    def types(self) -> dict[str, type[Event]]:
        return dict(self._types)

    def get(self, type_name: str) -> type[Event]:
        try:
            return self._types[type_name]
        except KeyError:
            raise UnknownEventType(type_name) from None

    def _typed_decoder(self) -> msgspec.json.Decoder[Any]:
        if self._decoder is None:
            union = tuple(self._types.values())
            self._decoder = msgspec.json.Decoder(union[0] if len(union) == 1 else _union(union))
        return self._decoder

    def encode(self, event: Event) -> bytes:
        return _encoder.encode(event)

    def decode(self, data: bytes | memoryview) -> Event:
        try:
            event = self._typed_decoder().decode(data)
        except msgspec.DecodeError as exc:
            event = self._slow_decode(data, exc)
        else:
            if event.schema != type(event).SCHEMA:
                event = self._slow_decode(data, None)
        # The chain links stored bytes: an event written under an older schema re-encodes
        # differently (new defaulted fields, upcasters), so remember what was read. The hash
        # is taken when asked for (a projection rebuild never asks for unchained sessions);
        # ``bytes`` are kept by reference, a view is hashed now rather than copied.
        if isinstance(data, bytes):
            event.__dict__[STORED_BYTES] = data
        else:
            event.__dict__[STORED_HASH] = hashlib.sha256(data).hexdigest()
        return event

    def _slow_decode(self, data: bytes | memoryview, first: Exception | None) -> Event:
        try:
            header = _header_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise EventDecodeError("undecodable", _first_line(exc)) from None
        cls = self.get(header.type)
        if header.schema == cls.SCHEMA:
            # Right type and version, wrong content: report the validation error.
            raise EventDecodeError("invalid_event", _first_line(first)) from None
        if header.schema > cls.SCHEMA:
            raise EventDecodeError(
                "schema_from_future",
                f"{header.type} schema {header.schema} is newer than this oopav knows "
                f"({cls.SCHEMA}); upgrade oopav",
            )
        raw: dict[str, Any] = msgspec.json.decode(data)
        version = header.schema
        while version < cls.SCHEMA:
            step = self._upcasters.get((header.type, version))
            if step is None:
                raise EventDecodeError(
                    "no_upcaster",
                    f"{header.type} schema {version} cannot be read: no upcaster to {version + 1}",
                )
            raw = step(dict(raw))
            version += 1
            raw["schema"] = version
        try:
            return msgspec.convert(raw, cls)
        except msgspec.ValidationError as exc:
            raise EventDecodeError("invalid_event", f"after upcasting: {exc}") from None


def _union(types: tuple[type, ...]) -> Any:
    out: Any = types[0]
    for t in types[1:]:
        out = out | t
    return out


def _first_line(exc: Exception | None) -> str:
    return str(exc).splitlines()[0] if exc else "invalid event"


ALL_EVENTS: tuple[type[Event], ...] = SESSION_EVENTS + MISSION_EVENTS + RUN_EVENTS

REGISTRY = Registry(ALL_EVENTS)


@REGISTRY.upcaster("task_submitted", 1)
def _task_submitted_v1(raw: dict[str, Any]) -> dict[str, Any]:
    raw.setdefault("group", None)
    return raw


@REGISTRY.upcaster("model_called", 1)
def _model_called_v1(raw: dict[str, Any]) -> dict[str, Any]:
    raw.setdefault("guidance_step", None)
    return raw


def encode(event: Event) -> bytes:
    return REGISTRY.encode(event)


def decode(data: bytes | memoryview) -> Event:
    return REGISTRY.decode(data)


def comparable(event: Event) -> dict[str, Any]:
    """The event as builtins with its volatile fields (and its id-free envelope) removed, for
    replay comparison."""
    out = msgspec.to_builtins(event)
    out["type"] = event.type
    for name in type(event).volatile_fields():
        out.pop(name, None)
    return out
