"""Deterministic identifiers.

Roots (a submitted task, a mission) get a time-ordered UUIDv7 so that ids sort by creation.
Every output of a handler gets an id derived from (input event id, handler, output index):
a handler that crashes after publishing and reprocesses its input derives the same ids, and
JetStream's ``Nats-Msg-Id`` dedup drops the second copy (DESIGN invariant 4).
"""

from __future__ import annotations

import hashlib
import random
import threading
import uuid
from datetime import datetime

from oopav.events.clock import SYSTEM_CLOCK, Clock

_NAMESPACE = uuid.UUID("6f6f7061-762d-4b65-726e-656c2d696473")  # "oopav-kernel-ids"


def derive_id(input_id: str, handler: str, index: int = 0) -> str:
    """The id of output ``index`` that ``handler`` produced from event ``input_id``."""
    digest = hashlib.sha256(f"{input_id}\x1f{handler}\x1f{index}".encode()).digest()
    # Keep the UUID shape (version 8, "custom") so ids look uniform on the wire.
    raw = bytearray(digest[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


class IdGenerator:
    """UUIDv7 generator; seedable so that tests produce the same ids every run."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, seed: int | None = None) -> None:
        self._clock = clock
        self._rng = random.Random(seed) if seed is not None else random.SystemRandom()
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = 0

    def new(self) -> str:
        with self._lock:
            ms = _ms(self._clock.now())
            if ms <= self._last_ms:
                # Same (or earlier) millisecond: bump a counter so ids stay strictly ordered.
                ms = self._last_ms
                self._counter += 1
                if self._counter > 0xFFF:
                    ms += 1
                    self._counter = 0
            else:
                self._counter = 0
            self._last_ms = ms
            rand_b = self._rng.getrandbits(62)
            value = (ms & 0xFFFFFFFFFFFF) << 80
            value |= 0x7 << 76
            value |= (self._counter & 0xFFF) << 64
            value |= 0b10 << 62
            value |= rand_b
            return str(uuid.UUID(int=value))


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def id_timestamp_ms(event_id: str) -> int | None:
    """The millisecond timestamp embedded in a UUIDv7 root id (None for derived ids)."""
    u = uuid.UUID(event_id)
    if u.version != 7:
        return None
    return u.int >> 80


DEFAULT_IDS = IdGenerator()


def uuid7_from(ms: int, entropy: str) -> str:
    """A UUIDv7 for a given millisecond whose random bits come from ``entropy``: a root id that
    sorts by time yet is the same every time the same input is processed."""
    digest = int.from_bytes(hashlib.sha256(entropy.encode()).digest()[:10], "big")
    value = (ms & 0xFFFFFFFFFFFF) << 80
    value |= 0x7 << 76
    value |= ((digest >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= digest & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))
