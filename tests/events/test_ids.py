"""Deterministic ids (invariants 4 and 10)."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime

from oopav.events import catalog as ev
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator, derive_id, id_timestamp_ms, uuid7_from


def test_derive_id_is_deterministic_and_distinct() -> None:
    assert derive_id("in-1", "planner", 0) == derive_id("in-1", "planner", 0)
    ids = {
        derive_id(i, h, n) for i in ("in-1", "in-2") for h in ("planner", "actor") for n in range(3)
    }
    assert len(ids) == 12
    u = uuid.UUID(derive_id("in-1", "planner", 0))
    assert u.version == 8


def test_seeded_generator_repeats_and_increases() -> None:
    def run() -> list[str]:
        gen = IdGenerator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC), step=0.0), seed=42)
        return [gen.new() for _ in range(5000)]  # > 4096 in one millisecond: counter rolls

    a, b = run(), run()
    assert a == b
    assert all(x < y for x, y in itertools.pairwise(a))
    assert len(set(a)) == len(a)
    assert all(uuid.UUID(x).version == 7 for x in a)
    assert id_timestamp_ms(a[0]) == int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
    other = IdGenerator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), seed=43)
    assert other.new() != a[0]


def test_uuid7_from() -> None:
    a = uuid7_from(1_700_000_000_000, "OOPAV_INTAKE:1:abc")
    assert a == uuid7_from(1_700_000_000_000, "OOPAV_INTAKE:1:abc")
    assert a != uuid7_from(1_700_000_000_000, "OOPAV_INTAKE:2:abc")
    assert uuid.UUID(a).version == 7
    assert id_timestamp_ms(a) == 1_700_000_000_000
    assert uuid7_from(1_700_000_000_000, "z") < uuid7_from(1_700_000_000_001, "a")
    assert id_timestamp_ms(derive_id("x", "y")) is None


def test_factory_envelope() -> None:
    clock = ManualClock()
    root = root_event(
        ev.TaskSubmitted,
        handler="intake",
        clock=clock,
        ids=IdGenerator(clock, seed=1),
        instruction="i",
        repo="/r",
    )
    assert root.aggregate_id == root.id == root.correlation_id and root.causation_id is None
    out = caused_event(
        ev.CriticVerdict, root, handler="verifier", index=1, clock=clock, verdict="approve"
    )
    assert out.id == derive_id(root.id, "verifier", 1)
    assert out.causation_id == root.id and out.correlation_id == root.id
    assert out.aggregate_id == root.aggregate_id
    assert out.actor.startswith("verifier/")
