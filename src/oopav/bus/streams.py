"""Stream definitions and their idempotent set-up.

The same definitions are exported as JSON under ``ops/nats/`` (``oopav streams export``) so
that an operator can create them with ``nats stream add --config ops/nats/OOPAV_EVENTS.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import StreamConfig
from nats.js.errors import NotFoundError

from oopav.bus import staging
from oopav.bus.server import MAX_PAYLOAD

EVENTS_STREAM = "OOPAV_EVENTS"
INTAKE_STREAM = "OOPAV_INTAKE"
DLQ_STREAM = "OOPAV_DLQ"

EVENTS_SUBJECTS = "oopav.ev.>"
INTAKE_SUBJECT = "oopav.tasks.submit"
GRANT_SUBJECT = "oopav.grants.submit"
DLQ_PREFIX = "oopav.dlq"

_NS = 1_000_000_000


def subject_for(aggregate: str, aggregate_id: str, event_type: str) -> str:
    return f"oopav.ev.{aggregate}.{aggregate_id}.{event_type}"


def aggregate_filter(aggregate: str, aggregate_id: str) -> str:
    return f"oopav.ev.{aggregate}.{aggregate_id}.>"


def dlq_subject(handler: str) -> str:
    return f"{DLQ_PREFIX}.{handler}"


def stream_definitions(replicas: int = 1) -> dict[str, dict[str, Any]]:
    """Stream configs in the server's JSON form (durations in nanoseconds). ``replicas`` is
    1 on one server and 3 on a cluster (R3: a stream survives the loss of one node)."""
    if replicas not in (1, 3, 5):
        raise ValueError(f"replicas must be 1, 3 or 5 (an odd number for a quorum), not {replicas}")
    defs: dict[str, dict[str, Any]] = {
        EVENTS_STREAM: {
            "name": EVENTS_STREAM,
            "description": "oopav events: oopav.ev.<aggregate>.<aggregate_id>.<type>",
            "subjects": [EVENTS_SUBJECTS],
            "retention": "limits",
            "storage": "file",
            "discard": "old",
            "max_msgs": -1,
            "max_bytes": -1,
            "max_age": 0,
            "max_msg_size": MAX_PAYLOAD,
            "num_replicas": 1,
            # Covers a handler's redelivery after a crash (ack wait x max_deliver, with backoff)
            # so a reprocessed input's outputs are dropped as duplicates.
            "duplicate_window": 2 * 3600 * _NS,
            "allow_direct": True,
            "allow_atomic": True,
            "deny_delete": True,
            "deny_purge": False,
        },
        INTAKE_STREAM: {
            "name": INTAKE_STREAM,
            "description": "task submissions; a plain `nats pub` is stored durably",
            "subjects": ["oopav.tasks.>", "oopav.grants.>"],
            "retention": "limits",
            "storage": "file",
            "discard": "old",
            "max_msgs": -1,
            "max_bytes": -1,
            "max_age": 30 * 24 * 3600 * _NS,
            "max_msg_size": MAX_PAYLOAD,
            "num_replicas": 1,
            # No publish acks: a `nats req` must get the intake handler's answer, not a PubAck.
            "no_ack": True,
            "duplicate_window": 2 * 60 * _NS,
            "allow_direct": False,
            "allow_atomic": False,
        },
        DLQ_STREAM: {
            "name": DLQ_STREAM,
            "description": "dead letters: oopav.dlq.<handler>, with the reason in headers",
            "subjects": [f"{DLQ_PREFIX}.>"],
            "retention": "limits",
            "storage": "file",
            "discard": "old",
            "max_msgs": -1,
            "max_bytes": -1,
            "max_age": 30 * 24 * 3600 * _NS,
            "max_msg_size": MAX_PAYLOAD,
            "num_replicas": 1,
            "duplicate_window": 2 * 60 * _NS,
            "no_ack": False,
            "allow_direct": False,
            "allow_atomic": False,
        },
    }
    for raw in defs.values():
        raw["num_replicas"] = replicas
    return defs


def _to_config(raw: dict[str, Any]) -> StreamConfig:
    return StreamConfig.from_response(dict(raw))


async def ensure_streams(js: JetStreamContext, replicas: int | None = None) -> list[str]:
    """Create the streams, or update them in place when their definition changed.

    ``replicas`` None keeps an existing stream's replica count (1 for a new one), so a handler
    that connects to a cluster never shrinks its R3 streams. Returns what was done per stream
    (``created``, ``updated``, ``unchanged``)."""
    done: list[str] = []
    for name, raw in stream_definitions(replicas or 1).items():
        done.append(await _ensure_one(js, name, raw, replicas))
        if replicas and replicas > 1:
            await _await_leader(js, name)
    # The blob bucket (history/blobs.py) is made here too, where stream creation is allowed
    # (least-privilege handlers may not create streams); it is not listed among the streams.
    from oopav.history.blobs import ensure_bucket

    await ensure_bucket(js, replicas)
    if replicas and replicas > 1:  # the notary's anchors follow the events onto the cluster
        from oopav.history.blobs import follow_replicas

        # history.signing.NOTARY_BUCKET's stream, by name (signing reaches back to the bus).
        await follow_replicas(js, "KV_OOPAV_NOTARY", replicas)
    if any(d.endswith("created") for d in done):
        # A new stream of an embedded server of this process stages its batches in memory.
        staging.stage_local()
    return done


async def _ensure_one(
    js: JetStreamContext, name: str, raw: dict[str, Any], replicas: int | None
) -> str:
    """One stream, retried while a freshly formed cluster has no leader to answer yet (a
    timeout or 503 for up to ``SETUP_DEADLINE`` seconds); a created stream is found by the
    next try, so retrying is safe."""
    import asyncio

    import nats.errors
    from nats.js.errors import ServiceUnavailableError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETUP_DEADLINE
    pause = 0.5
    # Set once this call has asked for the stream: if that answer was lost (a timeout on a
    # fresh cluster) and the next try finds the stream as asked, this call created it.
    asked: str | None = None
    while True:
        want = _to_config(raw)
        try:
            try:
                info = await js.stream_info(name)
            except NotFoundError:
                asked = "created"
                await js.add_stream(want)
                return f"{name}: created"
            if replicas is None:
                want.num_replicas = info.config.num_replicas
            if _differs(info.config, want):
                asked = asked or "updated"
                await js.update_stream(want)
                return f"{name}: updated"
            return f"{name}: {asked or 'unchanged'}"
        except (nats.errors.TimeoutError, TimeoutError, ServiceUnavailableError):
            if loop.time() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 4.0)


SETUP_DEADLINE = 30.0


async def _await_leader(js: JetStreamContext, name: str) -> None:
    """Until a replicated stream has a leader (at once when it has one already): a core
    publish (`nats pub oopav.tasks.submit …`) that reaches it before then is not stored, and
    a submission sent right after `oopav streams --replicas 3` would be lost. Bounded by
    ``SETUP_DEADLINE``; past it the stream is used as it is (the server elects on its own)."""
    import asyncio

    import nats.errors
    from nats.js.errors import ServiceUnavailableError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETUP_DEADLINE
    while loop.time() < deadline:
        try:
            info = await js.stream_info(name)
            if info.cluster is None or info.cluster.leader:
                return
        except (nats.errors.TimeoutError, TimeoutError, ServiceUnavailableError):
            pass
        await asyncio.sleep(0.1)


def _differs(have: StreamConfig, want: StreamConfig) -> bool:
    keys = (
        "subjects",
        "max_msg_size",
        "duplicate_window",
        "no_ack",
        "allow_atomic",
        "allow_direct",
        "max_age",
        "description",
        "num_replicas",
    )
    # The server reports unset booleans as False where the client config has None.
    return any((getattr(have, k) or None) != (getattr(want, k) or None) for k in keys)


def export_definitions(out_dir: Path, replicas: int = 1) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, raw in stream_definitions(replicas).items():
        path = out_dir / f"{name}.json"
        path.write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
