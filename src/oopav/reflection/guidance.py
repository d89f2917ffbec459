"""Where the planner and actor get a mission's experience library from: the mission aggregate on
the stream, folded (incrementally) by :class:`StreamGuidance`.

A call renders the library at the latest step, unless a step is pinned: a holdout session
pins the step its proposal was made on (and previews the proposal's operations on top of it),
and a replay pins the step each recorded ``model_called`` used. Either way the step goes into
``model_called.guidance_step``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from oopav.events import mission as mev
from oopav.logging import get_logger
from oopav.projections.guidance import GuidanceState, fold, library_at, preview

GuidanceLines = list[tuple[str, str]]
log = get_logger("oopav.reflection.guidance")


class StreamGuidance:
    """Folds mission aggregates from the event store; the cache only saves re-reading."""

    def __init__(self, events: Any) -> None:
        self.events = events
        self._states: dict[str, GuidanceState] = {}
        self._lock = asyncio.Lock()

    async def state(self, mission: str) -> GuidanceState:
        from oopav.projections.guidance import evolve, initial

        agg = mev.mission_aggregate_id(mission)
        async with self._lock:
            st = self._states.get(agg) or initial(mission)
            for seq, event in await self.events.read("mission", agg, from_seq=st.last_sequence + 1):
                evolve(st, event, seq)
            self._states[agg] = st
            return st

    async def view(
        self, mission: str, *, step: int | None = None, preview_of: str | None = None
    ) -> tuple[int, GuidanceLines]:
        st = await self.state(mission)
        return view_of(st, step=step, preview_of=preview_of)


def view_of(
    st: GuidanceState, *, step: int | None = None, preview_of: str | None = None
) -> tuple[int, GuidanceLines]:
    """The (step, lines) to render: the latest library, the one at ``step``, or that one with
    the operations of proposal ``preview_of`` applied."""
    if preview_of is not None:
        proposal = _proposal(st, preview_of)
        if proposal is not None:
            base = proposal.base_step if step is None else step
            at = _state_at(st, base)
            previewed = preview(at, [_planned(op) for op in proposal.planned])
            return base, previewed.lines()
    if step is None or step == st.step:
        return st.step, st.lines()
    if 0 <= step < len(st.versions):
        return step, [(e.key, e.text) for e in library_at(st, step)]
    return st.step, st.lines()


def _proposal(st: GuidanceState, proposal_id: str) -> mev.ReflectionProposed | None:
    return st.proposals_seen.get(proposal_id)


def _state_at(st: GuidanceState, step: int) -> GuidanceState:
    copy = GuidanceState(mission=st.mission)
    copy.entries = library_at(st, step) if 0 <= step < len(st.versions) else list(st.entries)
    copy.step = step
    copy.next_key = st.next_key
    return copy


def _planned(op: mev.GuidanceOp) -> dict[str, Any]:
    return {
        "op": op.op,
        "key": op.key or "",
        "text": op.text,
        "rationale": op.rationale,
        "merged_from": list(op.merged_from),
    }


async def session_guidance(out: Any, state: Any) -> tuple[int | None, GuidanceLines]:
    """The library a session's next model call renders, and its step (None: no mission)."""
    task = state.task
    ports = out.ports
    source = getattr(ports, "guidance", None)
    if task is None or not task.mission or source is None:
        return None, []
    group = task.group
    pinned: int | None = None
    recorded = getattr(ports, "recorded_guidance", None)
    if recorded:
        pinned = recorded.get(out.next_id)
    preview_of = None
    if group is not None and group.purpose == "holdout":
        if pinned is None:
            pinned = group.guidance_step
        if group.preview:
            preview_of = group.proposal_id
    try:
        return await source.view(task.mission, step=pinned, preview_of=preview_of)
    except Exception as exc:  # guidance is an aid: a session without it still runs
        log.warning("guidance_unavailable", mission=task.mission, error=repr(exc))
        return None, []


__all__ = ["StreamGuidance", "fold", "session_guidance", "view_of"]
