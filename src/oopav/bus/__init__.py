"""JetStream: streams, append (dedup + optimistic concurrency), consumers, embedded server."""

from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer, run_until_signalled
from oopav.bus.errors import AppendRejected, BusError, ConcurrencyConflict, NatsUnavailable
from oopav.bus.server import EmbeddedServer, ServerError, find_running
from oopav.bus.store import Appended, EventStore, connect
from oopav.bus.streams import (
    DLQ_STREAM,
    EVENTS_STREAM,
    INTAKE_STREAM,
    INTAKE_SUBJECT,
    aggregate_filter,
    dlq_subject,
    ensure_streams,
    subject_for,
)

__all__ = [
    "DLQ_STREAM",
    "EVENTS_STREAM",
    "INTAKE_STREAM",
    "INTAKE_SUBJECT",
    "AppendRejected",
    "Appended",
    "BusError",
    "ConcurrencyConflict",
    "ConsumerOptions",
    "Delivery",
    "EmbeddedServer",
    "EventStore",
    "HandlerConsumer",
    "NatsUnavailable",
    "ServerError",
    "aggregate_filter",
    "connect",
    "dlq_subject",
    "ensure_streams",
    "find_running",
    "run_until_signalled",
    "subject_for",
]
