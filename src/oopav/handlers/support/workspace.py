"""A session's workspace as the handlers see it: its path, its sandbox policy, the final diff (kept whole as an artifact when too big for an event)."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


# -- starting trees in the blob store (issue 27: replay needs nothing but the store) ---------


@dataclass(frozen=True)
class RestoredTree:
    """A session's starting tree written back from the blob store: the workspace is copied
    from ``path``; the event names the recorded ``kind`` and ``repo``."""

    path: Path
    kind: str
    repo: str
    temporary: bool = False  # removed once the workspace is copied from it


async def restored_tree(task: Any, ports: Ports) -> RestoredTree | None:
    """Where the session's workspace starts when not from the user's repository: the tree a
    replay restored, or for a fork its parent's stored starting tree (a fork starts from
    what its parent started from, even after the repository moved on or was deleted).
    None: start from the repository (a session whose parent stored no tree)."""
    from oopav.events import catalog as ev
    from oopav.history.blobs import materialize

    restored = (ports.restored_trees or {}).get(task.aggregate_id)
    if restored is not None:
        return restored
    if not task.parent_session or ports.store is None or ports.blobs is None:
        return None
    parent = await ports.store.read("session", task.parent_session, skip_undecodable=True)
    ws = next((e for _, e in parent if isinstance(e, ev.WorkspacePrepared) and e.tree), None)
    if ws is None or ws.tree is None:
        return None
    dest = ports.settings.data_dir / "trees" / task.aggregate_id
    await asyncio.to_thread(shutil.rmtree, dest, True)
    await materialize(ports.blobs, ws.tree, dest)
    # The fork's workspace is a copy of the restored tree, and its event says so.
    return RestoredTree(dest, "copy", ws.repo, temporary=True)


async def start_storing_tree(
    root: Path, ports: Ports
) -> tuple[str | None, asyncio.Future[str | None] | None]:
    """The workspace as prepared (before any action), read now — before a test can write in
    it — and its hash; storing it in the blob store goes on in the returned task, beside the
    baseline (the store's round trips are ~0.2 s of waiting on a small project's first
    session, a few ms of CPU). The task's result is the hash, or None when the store refused
    (the session goes on; only its replay elsewhere is lost): the caller awaits it before its
    events are published and records no tree then (``settle_tree``)."""
    from oopav.history.blobs import put_tree, tree_content
    from oopav.logging import get_logger

    if ports.blobs is None:
        return None, None

    def refused(exc: Exception) -> None:
        get_logger("oopav.observer").warning(
            "tree_not_stored", error=f"{type(exc).__name__}: {exc}"[:300]
        )

    try:
        digest, datas, manifest = await asyncio.to_thread(tree_content, root)
    except Exception as exc:  # an unreadable tree must not stop the session
        refused(exc)
        return None, None

    async def store() -> str | None:
        try:
            return await put_tree(ports.blobs, datas, manifest)
        except Exception as exc:  # a full or unreachable store must not stop the session
            refused(exc)
            return None

    return digest, asyncio.ensure_future(store())


async def settle_tree(
    storing: asyncio.Future[str | None] | None, events: list[Any], prepared: Any
) -> None:
    """Wait for ``start_storing_tree``'s task; when the store refused, the not yet published
    ``workspace_prepared`` in ``events`` names no tree (as when it was stored first)."""
    if storing is None:
        return
    if await storing is None and prepared.tree is not None:
        import msgspec

        for i, e in enumerate(events):
            if e is prepared:
                events[i] = msgspec.structs.replace(prepared, tree=None)
