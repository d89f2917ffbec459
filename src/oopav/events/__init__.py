"""The event catalog: envelope, typed events, codec, ids & clock, upcasters."""

from oopav.events.actions import (
    Action,
    AstGrepAction,
    FinishAction,
    RunCommandAction,
    SearchReplaceAction,
    SearchReplaceEdit,
    WriteFileAction,
    action_hash,
    action_json_schema,
    decode_action,
)
from oopav.events.catalog import *  # noqa: F403
from oopav.events.catalog import SESSION_EVENTS, Event
from oopav.events.clock import SYSTEM_CLOCK, Clock, ManualClock, SystemClock
from oopav.events.codec import (
    REGISTRY,
    EventDecodeError,
    Registry,
    UnknownEventType,
    comparable,
    decode,
    encode,
)
from oopav.events.factory import actor_name, caused_event, root_event
from oopav.events.ids import IdGenerator, derive_id

__all__ = [
    "REGISTRY",
    "SESSION_EVENTS",
    "SYSTEM_CLOCK",
    "Action",
    "AstGrepAction",
    "Clock",
    "Event",
    "EventDecodeError",
    "FinishAction",
    "IdGenerator",
    "ManualClock",
    "Registry",
    "RunCommandAction",
    "SearchReplaceAction",
    "SearchReplaceEdit",
    "SystemClock",
    "UnknownEventType",
    "WriteFileAction",
    "action_hash",
    "action_json_schema",
    "actor_name",
    "caused_event",
    "comparable",
    "decode",
    "decode_action",
    "derive_id",
    "encode",
    "root_event",
]
