"""``GuidanceState``: the fold of one mission's events — the experience library and its history.

``evolve`` is pure and deterministic, so the library at any step can be rebuilt from the
stream alone, byte for byte (:func:`export_library`). The guardrails that decide whether a
proposal may be applied (:func:`plan_operations`) are pure too: the reflector calls them on the
state it folded, and a replay calling them on the same state gets the same answer.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import msgspec

from oopav.events import mission as mev
from oopav.events.catalog import Event
from oopav.events.mission import GuidanceEntry, GuidanceOp

SCHEMA = 1

_KEY = re.compile(r"^G(\d+)$")
MAX_ENTRY_CHARS = 600


class HistoryItem(msgspec.Struct, kw_only=True, frozen=True):
    """One library change as ``oopav guidance history`` shows it."""

    step: int
    event_id: str
    type: str
    op: str = ""
    key: str = ""
    text: str = ""
    rationale: str = ""
    evidence_session_ids: list[str] = msgspec.field(default_factory=list)
    merged_from: list[str] = msgspec.field(default_factory=list)
    proposal_id: str | None = None
    ts: datetime | None = None


class GroupRecord(msgspec.Struct, kw_only=True, frozen=True):
    """A group the reflector decided on: its mean label_match and what came of it."""

    group_id: str
    epoch: int
    label_match: float
    guidance_step: int | None
    decision: str  # proposed | rejected:<reason>
    proposal_id: str | None = None


class SessionOutcome(msgspec.Struct, kw_only=True, frozen=True):
    """A finished session of the mission, as the reflector's signals recorded it: what
    mission-wide fatigue counts (``decide/trends.mission_failures``)."""

    session_id: str
    outcome: str | None
    ts: datetime


class GuidanceState(msgspec.Struct, kw_only=True):
    mission: str = ""
    entries: list[GuidanceEntry] = msgspec.field(default_factory=list)
    step: int = 0
    next_key: int = 0
    seeded: bool = False
    versions: list[list[GuidanceEntry]] = msgspec.field(default_factory=lambda: [[]])
    history: list[HistoryItem] = msgspec.field(default_factory=list)
    pending: list[str] = msgspec.field(default_factory=list)
    proposals_seen: dict[str, mev.ReflectionProposed] = msgspec.field(default_factory=dict)
    decided_groups: dict[str, str] = msgspec.field(default_factory=dict)
    groups: list[GroupRecord] = msgspec.field(default_factory=list)
    tasks: list[mev.TaskSpec] = msgspec.field(default_factory=list)
    ops_per_epoch: dict[int, int] = msgspec.field(default_factory=dict)
    proposals: int = 0
    applied_proposals: list[str] = msgspec.field(default_factory=list)
    rejected: dict[str, int] = msgspec.field(default_factory=dict)
    event_count: int = 0
    last_sequence: int = 0
    event_ids: list[str] = msgspec.field(default_factory=list)
    # Every session a group decision named, once, in the order they were recorded.
    outcomes: list[SessionOutcome] = msgspec.field(default_factory=list)

    def entry(self, key: str) -> GuidanceEntry | None:
        for e in self.entries:
            if e.key == key:
                return e
        return None

    def lines(self) -> list[tuple[str, str]]:
        """The library as the prompt renders it: ``(key, text)`` pairs in order."""
        return [(e.key, e.text) for e in self.entries]


def initial(mission: str = "") -> GuidanceState:
    return GuidanceState(mission=mission)


def evolve(state: GuidanceState, event: Event, sequence: int = 0) -> GuidanceState:
    if sequence and sequence <= state.last_sequence:
        return state
    if not state.mission:
        state.mission = mev.mission_name(event.aggregate_id)
    state.event_count += 1
    if sequence:
        state.last_sequence = sequence
    state.event_ids.append(event.id)
    match event:
        case mev.ExperienceLibrarySeeded():
            _seeded(state, event)
        case mev.GuidanceOpApplied():
            _op_applied(state, event)
        case mev.GuidanceRolledBack():
            _rolled_back(state, event)
        case mev.ReflectionProposed():
            _proposed(state, event)
        case mev.ReflectionRejected():
            _rejected(state, event)
    return state


def fold(events: list[tuple[int, Event]] | list[Event], mission: str = "") -> GuidanceState:
    st = initial(mission)
    for item in events:
        if isinstance(item, tuple):
            evolve(st, item[1], item[0])
        else:
            evolve(st, item)
    return st


def _key_number(key: str) -> int:
    m = _KEY.match(key)
    return int(m.group(1)) if m else -1


def _bump_keys(state: GuidanceState, keys: list[str]) -> None:
    for k in keys:
        state.next_key = max(state.next_key, _key_number(k) + 1)


def _new_step(state: GuidanceState) -> None:
    state.step += 1
    state.versions.append(list(state.entries))


def _seeded(s: GuidanceState, e: mev.ExperienceLibrarySeeded) -> None:
    s.entries = list(e.entries)
    s.seeded = True
    _bump_keys(s, [x.key for x in e.entries])
    _new_step(s)
    for x in e.entries:
        s.history.append(
            HistoryItem(
                step=s.step,
                event_id=e.id,
                type=e.type,
                op="seed",
                key=x.key,
                text=x.text,
                rationale=x.rationale or e.source,
                ts=e.ts,
            )
        )


def _op_applied(s: GuidanceState, e: mev.GuidanceOpApplied) -> None:
    entry = GuidanceEntry(
        key=e.key,
        text=e.text,
        rationale=e.rationale,
        evidence_session_ids=list(e.evidence_session_ids),
        merged_from=list(e.merged_from),
    )
    if e.op == "upsert":
        for i, old in enumerate(s.entries):
            if old.key == e.key:
                s.entries[i] = entry
                break
        else:
            s.entries.append(entry)
    elif e.op == "remove":
        s.entries = [x for x in s.entries if x.key != e.key]
    else:  # merge: the new entry takes the place of the first merged one
        positions = [i for i, x in enumerate(s.entries) if x.key in e.merged_from]
        at = positions[0] if positions else len(s.entries)
        kept = [x for x in s.entries if x.key not in e.merged_from]
        at = min(at, len(kept))
        s.entries = [*kept[:at], entry, *kept[at:]]
    _bump_keys(s, [e.key])
    _new_step(s)
    if e.proposal_id:
        _settle(s, e.proposal_id)
        if e.proposal_id not in s.applied_proposals:
            s.applied_proposals.append(e.proposal_id)
        epoch = next((g.epoch for g in s.groups if g.proposal_id == e.proposal_id), 0)
        s.ops_per_epoch[epoch] = s.ops_per_epoch.get(epoch, 0) + 1
    s.history.append(
        HistoryItem(
            step=s.step,
            event_id=e.id,
            type=e.type,
            op=e.op,
            key=e.key,
            text=e.text,
            rationale=e.rationale,
            evidence_session_ids=list(e.evidence_session_ids),
            merged_from=list(e.merged_from),
            proposal_id=e.proposal_id,
            ts=e.ts,
        )
    )


def _rolled_back(s: GuidanceState, e: mev.GuidanceRolledBack) -> None:
    if 0 <= e.to_step < len(s.versions):
        s.entries = list(s.versions[e.to_step])
    _new_step(s)
    s.history.append(
        HistoryItem(
            step=s.step,
            event_id=e.id,
            type=e.type,
            op="rollback",
            key=f"step {e.to_step}",
            rationale=e.reason or f"rolled back by {e.by}",
            ts=e.ts,
        )
    )


def _settle(s: GuidanceState, proposal_id: str) -> None:
    if proposal_id in s.pending:
        s.pending.remove(proposal_id)


def _mean(signals: list[mev.CandidateSignal]) -> float:
    return sum(1.0 for x in signals if x.label_match) / len(signals) if signals else 0.0


def _group_step(signals: list[mev.CandidateSignal]) -> int | None:
    steps = [x.guidance_step for x in signals if x.guidance_step is not None]
    return max(steps) if steps else None


def _remember_task(s: GuidanceState, task: mev.TaskSpec | None) -> None:
    if task is not None and task not in s.tasks:
        s.tasks.append(task)


def _outcomes(s: GuidanceState, e: mev.ReflectionProposed | mev.ReflectionRejected) -> None:
    seen = {o.session_id for o in s.outcomes}
    for sig in e.signals:
        if sig.session_id not in seen:
            seen.add(sig.session_id)
            s.outcomes.append(
                SessionOutcome(session_id=sig.session_id, outcome=sig.outcome, ts=e.ts)
            )


def _proposed(s: GuidanceState, e: mev.ReflectionProposed) -> None:
    _outcomes(s, e)
    s.proposals += 1
    if e.id not in s.pending:
        s.pending.append(e.id)
    s.proposals_seen[e.id] = e
    s.decided_groups[e.group_id] = e.id
    _remember_task(s, e.task)
    s.groups.append(
        GroupRecord(
            group_id=e.group_id,
            epoch=e.epoch,
            label_match=_mean(e.signals),
            guidance_step=_group_step(e.signals),
            decision="proposed",
            proposal_id=e.id,
        )
    )


def _rejected(s: GuidanceState, e: mev.ReflectionRejected) -> None:
    _outcomes(s, e)
    s.rejected[e.reason] = s.rejected.get(e.reason, 0) + 1
    if e.proposal_id is not None:
        _settle(s, e.proposal_id)
        s.groups = [
            msgspec.structs.replace(g, decision=f"rejected:{e.reason}")
            if g.proposal_id == e.proposal_id
            else g
            for g in s.groups
        ]
        return
    s.decided_groups[e.group_id] = e.id
    _remember_task(s, e.task)
    s.groups.append(
        GroupRecord(
            group_id=e.group_id,
            epoch=e.epoch,
            label_match=_mean(e.signals),
            guidance_step=_group_step(e.signals),
            decision=f"rejected:{e.reason}",
        )
    )


# -- guardrails and preview -----------------------------------------------------------------


class OpsRefused(ValueError):
    """A proposal the guardrails refuse; ``reason`` is a ``reflection_rejected`` reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def plan_operations(
    state: GuidanceState,
    ops: list[GuidanceOp],
    *,
    max_operations: int,
    change_cap_per_epoch: int,
    epoch: int,
) -> list[dict[str, Any]]:
    """Check ``ops`` against the library and the guardrails and resolve them into the fields of
    the ``guidance_op_applied`` events they would produce (new keys assigned in order).

    Raises :class:`OpsRefused` with ``budget`` (too many operations for the proposal or the
    epoch) or ``invalid_operation`` (an unknown key, an empty text, a merge of fewer than two
    entries, or a library left empty)."""
    if not ops:
        raise OpsRefused("invalid_operation", "a refinement needs at least one operation")
    if len(ops) > max_operations:
        raise OpsRefused("budget", f"{len(ops)} operations; at most {max_operations} per proposal")
    used = state.ops_per_epoch.get(epoch, 0)
    if used + len(ops) > change_cap_per_epoch:
        raise OpsRefused(
            "budget",
            f"{len(ops)} operations would bring epoch {epoch} to {used + len(ops)} changes; "
            f"the cap is {change_cap_per_epoch}",
        )
    keys = [e.key for e in state.entries]
    next_key = state.next_key
    out: list[dict[str, Any]] = []
    for i, op in enumerate(ops):
        text = " ".join(op.text.split())
        if len(text) > MAX_ENTRY_CHARS:
            raise OpsRefused(
                "invalid_operation",
                f"operation {i} text is {len(text)} characters; the limit is {MAX_ENTRY_CHARS}",
            )
        if op.op == "upsert":
            if not text:
                raise OpsRefused("invalid_operation", f"operation {i} (upsert) has no text")
            if op.key is None:
                key = f"G{next_key}"
                next_key += 1
                keys.append(key)
            elif op.key in keys:
                key = op.key
            else:
                raise OpsRefused(
                    "invalid_operation",
                    f"operation {i} rewrites {op.key}, which is not in the library "
                    "(leave key out to add an entry)",
                )
            out.append({"op": "upsert", "key": key, "text": text, "merged_from": []})
        elif op.op == "remove":
            if op.key is None or op.key not in keys:
                raise OpsRefused(
                    "invalid_operation",
                    f"operation {i} removes {op.key}, which is not in the library",
                )
            keys.remove(op.key)
            out.append({"op": "remove", "key": op.key, "text": "", "merged_from": []})
        else:
            sources = list(dict.fromkeys(op.merged_from))
            if len(sources) < 2:
                raise OpsRefused(
                    "invalid_operation", f"operation {i} merges fewer than two entries"
                )
            missing = [k for k in sources if k not in keys]
            if missing:
                raise OpsRefused(
                    "invalid_operation",
                    f"operation {i} merges {', '.join(missing)}, not in the library",
                )
            if not text:
                raise OpsRefused("invalid_operation", f"operation {i} (merge) has no text")
            key = f"G{next_key}"
            next_key += 1
            keys = [k for k in keys if k not in sources]
            keys.append(key)
            out.append({"op": "merge", "key": key, "text": text, "merged_from": sources})
        out[-1]["rationale"] = " ".join(op.rationale.split())[:MAX_ENTRY_CHARS]
        if not keys:
            raise OpsRefused(
                "invalid_operation", "the operations would leave the library empty; it never is"
            )
    return out


def preview(state: GuidanceState, planned: list[dict[str, Any]]) -> GuidanceState:
    """The state after applying planned operations (a copy; ``state`` is untouched)."""
    from oopav.events.factory import root_event

    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=GuidanceState)
    for i, fields in enumerate(planned):
        event = root_event(
            mev.GuidanceOpApplied,
            handler="preview",
            aggregate="mission",
            aggregate_id=mev.mission_aggregate_id(state.mission or "preview"),
            event_id=f"preview-{i}",
            **fields,
        )
        _op_applied(copy, event)
    return copy


# -- rendering ------------------------------------------------------------------------------


def export_library(state: GuidanceState) -> bytes:
    """The library as canonical JSON bytes (what ``oopav guidance export`` prints): the same
    events give the same bytes."""
    doc = {
        "mission": state.mission,
        "step": state.step,
        "entries": [msgspec.to_builtins(e) for e in state.entries],
    }
    return msgspec.json.encode(doc, order="sorted")


def library_at(state: GuidanceState, step: int) -> list[GuidanceEntry]:
    if not 0 <= step < len(state.versions):
        raise ValueError(f"step {step} does not exist (the library is at step {state.step})")
    return list(state.versions[step])


def diff_libraries(a: list[GuidanceEntry], b: list[GuidanceEntry]) -> list[str]:
    """Lines ``- [G1]. old`` / ``+ [G1]. new`` between two libraries, by key."""
    old = {e.key: e.text for e in a}
    new = {e.key: e.text for e in b}
    out: list[str] = []
    for e in a:
        if e.key not in new:
            out.append(f"- [{e.key}]. {e.text}")
        elif new[e.key] != e.text:
            out.append(f"- [{e.key}]. {e.text}")
            out.append(f"+ [{e.key}]. {new[e.key]}")
    for e in b:
        if e.key not in old:
            out.append(f"+ [{e.key}]. {e.text}")
    return out


def stats(state: GuidanceState) -> dict[str, Any]:
    """Reflection metrics: acceptance rate, ops per epoch, and precision — the share of applied
    reflections whose next group (run with the new library) scored a better label_match than
    the group they came from."""
    applied = state.applied_proposals
    precise = 0
    judged = 0
    for pid in applied:
        idx = next((i for i, g in enumerate(state.groups) if g.proposal_id == pid), None)
        if idx is None:
            continue
        applied_step = max(
            (h.step for h in state.history if h.proposal_id == pid), default=state.step
        )
        later = [
            g
            for g in state.groups[idx + 1 :]
            if g.guidance_step is not None and g.guidance_step >= applied_step
        ]
        if not later:
            continue
        judged += 1
        if later[0].label_match > state.groups[idx].label_match:
            precise += 1
    by_epoch: dict[int, list[float]] = {}
    for g in state.groups:
        by_epoch.setdefault(g.epoch, []).append(g.label_match)
    return {
        "mission": state.mission,
        "step": state.step,
        "entries": len(state.entries),
        "groups": len(state.groups),
        "proposals": state.proposals,
        "applied": len(applied),
        "rejected": dict(sorted(state.rejected.items())),
        "acceptance_rate": round(len(applied) / state.proposals, 4) if state.proposals else None,
        "precision": round(precise / judged, 4) if judged else None,
        "precision_judged": judged,
        "ops_per_epoch": {str(k): v for k, v in sorted(state.ops_per_epoch.items())},
        "label_match_per_epoch": {
            str(k): round(sum(v) / len(v), 4) for k, v in sorted(by_epoch.items())
        },
        "pending": sorted(state.pending),
    }
