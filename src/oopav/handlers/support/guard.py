"""A check that must not edit the workspace (DESIGN: a gate observes, it never edits), in one
place so the gates and the test runner (``baseline_cache.run_tests``) share it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from oopav.events.catalog import ExecRecord

if TYPE_CHECKING:  # the ports build the baseline cache, which runs checks through here
    from oopav.handlers.ports import Ports


async def run_check(ports: Ports, root: Path, argv: list[str], **kw: Any) -> ExecRecord:
    """``ports.sandbox.run`` for a check that must not edit the workspace (DESIGN: a gate
    observes, it never edits): the work tree's hash before and after; when they differ, the
    files are restored and the paths it changed are recorded in ``workspace_changed`` (so
    replay, serving the record, reaches the same verdict)."""
    from oopav.sandbox import clean
    from oopav.sandbox.workspace import WorkspaceError, head_tree, restore_tree, tree_hash

    def hash_before() -> tuple[str | None, str | None]:
        # A workspace provably at its commit (``sandbox.clean``: right after a checkpoint)
        # has that commit's tree as its hash: no git process. Else ask git.
        commit = clean.clean_at(root)
        tree = head_tree(root) if commit is not None else None
        return (commit, tree) if tree else (None, tree_hash(root))

    commit: str | None = None
    before = None
    with contextlib.suppress(WorkspaceError, OSError):
        commit, before = await asyncio.to_thread(hash_before)
    rec = await ports.sandbox.run(argv, workspace=root, **kw)
    if commit is not None and await asyncio.to_thread(clean.clean_at, root, commit) == commit:
        return rec  # still exactly the commit's files: nothing to restore, no git process
    if before is not None and not rec.workspace_changed:
        changed: list[str] = []
        with contextlib.suppress(WorkspaceError, OSError):
            changed = await asyncio.to_thread(restore_tree, root, before)
        if changed:
            rec = msgspec.structs.replace(rec, workspace_changed=changed)
    return rec
