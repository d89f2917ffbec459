"""Tamper evidence: every session event carries the hash of the session's previous event.

``prev_hash`` in the envelope is the SHA-256 of the previous event's stored bytes: the codec
keeps that hash on every event it decodes, and an event built in memory hashes its encoding
(which is what the store writes). Hashing a re-encoding instead broke every link after an event
whose type later gained a defaulted field (``model_called`` did): the old bytes decode fine but
encode differently. The first event of a session carries ``GENESIS`` (empty). The event store fills it in when it
appends (``bus/store.py``), so no handler has to; a batch chains within itself.

A link is checked as soon as a session is chained (its first event carries ``GENESIS``, or
some event carries a hash). Events written before this field existed decode with
``prev_hash=None`` and a session made only of them is simply unchained. The first terminal
event (``session_completed``, ``task_rejected``) is final: a later one is reported here,
ignored by the session projection and dead-lettered by the watchdog.

Only hashes, no keys: this makes edits, insertions and forged events visible (an event
published by hand with ``nats pub`` does not link, and the next real event does not link to
it either); it does not stop someone who recomputes the chain on purpose.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from oopav.events.catalog import Event
from oopav.events.codec import REGISTRY, stored_hash

GENESIS = ""
TERMINAL_TYPES = frozenset({"session_completed", "task_rejected"})


def event_hash(event: Event) -> str:
    """The hash the next event of the session must carry as its ``prev_hash``: that of the
    bytes ``event`` was read from, or of its encoding when it was built in memory."""
    return stored_hash(event) or hashlib.sha256(REGISTRY.encode(event)).hexdigest()


def event_hashes(event: Event) -> tuple[str, ...]:
    """Every hash a link to ``event`` may carry: that of its stored bytes, then (when it
    differs) that of its re-encoding under today's schema. Sessions recorded before links
    hashed stored bytes carry the second where the two differ (an int stored in a float field
    re-encodes as ``1.0``); both are fixed by the stored content, so accepting either loosens
    nothing an attacker could use."""
    primary = event_hash(event)
    if stored_hash(event) is None:
        return (primary,)
    canonical = hashlib.sha256(REGISTRY.encode(event)).hexdigest()
    return (primary,) if canonical == primary else (primary, canonical)


def _short(h: str) -> str:
    return h[:12] or "(empty)"


def link_problem(
    event: Event,
    *,
    first: bool,
    chained: bool,
    previous_hash: str | None,
    previous_alt: str | None = None,
) -> str | None:
    """Why ``event`` does not link to the event before it, or None when it does.

    ``chained``: the session's chain has started; ``previous_hash``: ``event_hash`` of the
    event before (None when that one was not hashed: an unchained stretch); ``previous_alt``:
    the other hash ``event_hashes`` accepts for it, if any."""
    got = event.prev_hash
    if first:
        if got not in (None, GENESIS):
            return f"it is the session's first event but names a predecessor ({_short(got)})"
        return None
    if got is None:
        return "it carries no prev_hash in a chained session" if chained else None
    if got == GENESIS:
        return "it claims to be the session's first event (empty prev_hash)"
    if previous_hash is not None and got != previous_hash and got != previous_alt:
        return (
            f"its prev_hash {_short(got)} is not the hash of the event before it "
            f"({_short(previous_hash)})"
        )
    return None


@dataclass(frozen=True)
class ChainFinding:
    """A broken link or a terminal event after the first one."""

    kind: str  # "broken_link" | "late_terminal"
    sequence: int
    event_id: str
    event_type: str
    detail: str

    def describe(self) -> str:
        what = "broken link" if self.kind == "broken_link" else "terminal event after the end"
        return f"{what} at seq {self.sequence} ({self.event_type} {self.event_id}): {self.detail}"

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def check_chain(events: Iterable[tuple[int, Event]]) -> list[ChainFinding]:
    """Every broken link and late terminal event of one session, in stream order."""
    findings: list[ChainFinding] = []
    chained = False
    previous: tuple[str, ...] = ()
    terminal: tuple[int, Event] | None = None
    for i, (seq, event) in enumerate(events):
        problem = link_problem(
            event,
            first=i == 0,
            chained=chained,
            previous_hash=previous[0] if previous else None,
            previous_alt=previous[1] if len(previous) > 1 else None,
        )
        if problem is not None:
            findings.append(ChainFinding("broken_link", seq, event.id, event.type, problem))
        chained = chained or event.prev_hash is not None
        previous = event_hashes(event)
        if event.type in TERMINAL_TYPES:
            if terminal is None:
                terminal = (seq, event)
            else:
                findings.append(
                    ChainFinding(
                        "late_terminal",
                        seq,
                        event.id,
                        event.type,
                        f"the session already ended at seq {terminal[0]} "
                        f"({terminal[1].type} by {terminal[1].actor}); this one is ignored",
                    )
                )
    return findings
