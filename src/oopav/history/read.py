"""Reading what ``history.diff`` and ``history.tree`` compare, from a bus or a connection."""

from __future__ import annotations

from typing import Any

from oopav.history.diff import RunDiff, diff_runs
from oopav.history.tree import Node, lineage
from oopav.projections.session import SessionState


def node_of(state: SessionState) -> Node:
    task = state.task
    return Node(
        session_id=state.session_id,
        parent=task.parent_session if task else None,
        fork_sequence=task.fork_sequence if task else None,
        outcome=state.outcome,
        phase=state.phase,
        model=task.model if task else None,
        events=state.event_count,
    )


async def session_states(nc: Any, snapshots: Any) -> dict[str, SessionState]:
    """Every session's folded state (the sessions projection, caught up)."""
    from oopav.projections.runner import SESSIONS, ProjectionRunner

    runner = ProjectionRunner(nc, snapshots, SESSIONS)
    await runner.catch_up()
    states = dict(runner.snapshots.items())
    states.update(runner._cache)
    return states


async def read_session(nc: Any, session_id: str) -> list[tuple[int, Any]]:
    from oopav.bus.store import EventStore
    from oopav.history.blobs import BlobStore
    from oopav.history.prompts import expand

    events = await EventStore(nc).read("session", session_id, skip_undecodable=True)
    if not events:
        raise ValueError(f"no events for session {session_id}")
    return await expand(BlobStore(nc), events)


async def diff_sessions(nc: Any, a: str, b: str) -> RunDiff:
    return diff_runs(await read_session(nc, a), await read_session(nc, b))


async def session_tree(
    nc: Any, snapshots: Any, session_id: str, *, divergences: bool = True
) -> Node:
    """The lineage of ``session_id``; with ``divergences``, each fork says where it left its
    parent (the first divergence of ``oopav diff PARENT FORK``)."""
    states = await session_states(nc, snapshots)
    return await tree_of(nc, states, session_id, divergences=divergences)


async def tree_of(
    nc: Any, states: dict[str, SessionState], session_id: str, *, divergences: bool = True
) -> Node:
    """``session_tree`` over states the caller holds (the TUI's model)."""
    nodes = {sid: node_of(st) for sid, st in states.items() if st.task is not None}
    tree = lineage(nodes, session_id)
    if divergences:
        cache: dict[str, list[tuple[int, Any]]] = {}

        async def events(sid: str) -> list[tuple[int, Any]]:
            if sid not in cache:
                cache[sid] = await read_session(nc, sid)
            return cache[sid]

        for node in tree.walk():
            if node.parent and node.parent in nodes:
                d = diff_runs(await events(node.parent), await events(node.session_id))
                node.diverged = (
                    "no divergence" if d.first_divergence is None else d.first_divergence.describe()
                )
    return tree
