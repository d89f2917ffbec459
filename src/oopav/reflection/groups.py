"""Groups of rollouts: one submission with ``group: {k, grid}`` becomes K sessions that share a
group id and differ only in sampling (temperature, top_p, seed).

Member session ids derive from the stored submission and the member index, so a redelivered
submission recreates the same K ids (and JetStream drops the duplicates). Candidates are
always ordered by session id, never by completion order, so a replay sees the same order.
"""

from __future__ import annotations

from typing import Any

import msgspec

from oopav.events.catalog import GroupInfo, TaskSubmitted
from oopav.events.ids import uuid7_from

DEFAULT_TEMPERATURE = 0.7

_PASS = frozenset({"pass", "passed", "success", "succeeded", "ok", "true", "yes", "correct", "1"})
_FAIL = frozenset(
    {"fail", "failed", "failure", "false", "no", "incorrect", "wrong", "0", "aborted", "error"}
)


def normalise_verdict(value: object) -> str | None:
    """``pass`` / ``fail`` from a verdict or one of its aliases (None when it is neither)."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    text = str(value).strip().lower()
    if text in _PASS:
        return "pass"
    if text in _FAIL:
        return "fail"
    return None


def group_info(group: Any, stored_ms: int, entropy: str) -> GroupInfo:
    """The group of a submission (``group`` is the contract's ``GroupIn``) for member 0."""
    k = int(group.k)
    members = sorted(uuid7_from(stored_ms, f"{entropy}:member:{i}") for i in range(k))
    return GroupInfo(
        group_id=uuid7_from(stored_ms, f"{entropy}:group"),
        index=0,
        members=members,
        expected=group.expected,
        **_sampling(group, 0),
    )


def _sampling(group: Any, index: int) -> dict[str, Any]:
    grid = list(getattr(group, "grid", None) or [])
    if grid:
        point = grid[index]
        return {
            "temperature": float(point.temperature),
            "top_p": float(point.top_p),
            "seed": index if point.seed is None else int(point.seed),
        }
    return {"temperature": DEFAULT_TEMPERATURE, "top_p": 1.0, "seed": index}


def fan_out(first: TaskSubmitted, group: Any | None = None) -> list[TaskSubmitted]:
    """The K ``task_submitted`` events of a group submission (``first`` is member 0, built by
    the intake with :func:`group_info`); a plain submission is returned as is."""
    info = first.group
    if info is None or len(info.members) <= 1:
        if info is not None and info.members:
            return [_member(first, info, 0, group)]
        return [first]
    return [_member(first, info, i, group) for i in range(len(info.members))]


def _member(first: TaskSubmitted, info: GroupInfo, index: int, group: Any | None) -> TaskSubmitted:
    sid = info.members[index]
    sampling = (
        _sampling(group, index)
        if group is not None
        else {"temperature": info.temperature, "top_p": info.top_p, "seed": index}
    )
    return msgspec.structs.replace(
        first,
        id=sid,
        aggregate_id=sid,
        correlation_id=sid,
        group=msgspec.structs.replace(info, index=index, **sampling),
    )


def sampling_of(task: TaskSubmitted) -> tuple[Any, int | None]:
    """The ``Sampling`` and seed a session's model calls use (its group's grid point)."""
    from oopav.models.base import Sampling

    g = task.group
    if g is None or g.temperature is None:
        return None, 0
    return Sampling(temperature=g.temperature, top_p=g.top_p or 1.0), g.seed
