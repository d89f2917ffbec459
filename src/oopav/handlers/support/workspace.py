"""A session's workspace as the handlers see it: its path, its sandbox policy, the final diff (kept whole as an artifact when too big for an event)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from oopav.decide.policy import LOOP_POLICY_KEYS
from oopav.handlers.ports import Ports
from oopav.projections.session import SessionState

if TYPE_CHECKING:
    from oopav.sandbox.policy import Policy
    from oopav.sandbox.workspace import WorkspaceInfo


def sandbox_policy(state: SessionState) -> Policy:
    from oopav.sandbox.policy import policy_from

    policy = dict((state.task.policy if state.task else None) or {})
    for k in LOOP_POLICY_KEYS:
        policy.pop(k, None)
    return policy_from(policy)


def workspace_path(state: SessionState) -> Path:
    if state.workspace is None:
        raise RuntimeError("the session has no workspace yet")
    return Path(state.workspace.path)


def workspace_info(state: SessionState, ports: Ports | None) -> WorkspaceInfo:
    from oopav.sandbox.workspace import WorkspaceInfo

    w = state.workspace
    assert w is not None
    return WorkspaceInfo(
        session_id=state.session_id,
        path=w.path,
        base_commit=w.base_commit,
        branch=w.branch,
        kind=w.kind,
        repo=w.repo,
    )


async def final_diff(state: SessionState, ports: Ports) -> str:
    if state.workspace is None or not Path(state.workspace.path).exists():
        return ""
    from oopav.sandbox.workspace import final_diff as diff

    return await asyncio.to_thread(diff, workspace_info(state, ports))


MAX_EVENT_DIFF = 1024 * 1024


def cap_diff(diff: str, ports: Ports, session_id: str, name: str) -> str:
    """A diff small enough for one event. A larger one is kept whole as an artifact file and
    the event carries its head with a pointer, so an oversized change cannot make the append
    fail (and the session with it)."""
    data = diff.encode()
    if len(data) <= MAX_EVENT_DIFF:
        return diff
    path = ports.settings.artifacts_for(session_id) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    head = data[: MAX_EVENT_DIFF - 512].decode("utf-8", "ignore")
    return head + f"\n[... diff truncated: {len(data)} bytes in all; the whole diff is in {path}]\n"
