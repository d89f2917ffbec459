"""Remove a session's workspace (worktree or copy, and its ``oopav/<id>`` branch) once the
session has completed, for the handlers that ``oopav up`` runs. The session's result is kept,
so ``oopav apply`` still works; a session started with ``oopav run --keep`` is left alone."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from oopav.config import Settings
from oopav.logging import get_logger

log = get_logger("oopav.cleanup")


class WorkspaceCleaner:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._tasks: set[asyncio.Task[None]] = set()

    def listener(self, seq: int, event: Any, state: Any) -> None:
        """For ``ProjectionRunner(listeners=[...])``: act on ``session_completed``."""
        if getattr(event, "type", "") != "session_completed":
            return
        task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(self.remove, state.session_id)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def remove(self, session_id: str) -> None:
        from oopav.sandbox.workspace import (
            WorkspaceError,
            find_workspace,
            is_kept,
            remove_workspace,
        )

        try:
            info = find_workspace(session_id, self.settings)
        except WorkspaceError:
            return
        if is_kept(self.settings, session_id):
            return
        from pathlib import Path

        if not Path(info.path).exists():
            return
        try:
            remove_workspace(info, self.settings)
        except (WorkspaceError, OSError) as exc:
            log.warning("workspace_not_removed", session_id=session_id, error=str(exc))
            return
        log.info("workspace_removed", session_id=session_id, path=info.path)

    async def aclose(self, timeout: float = 30.0) -> None:
        if self._tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*self._tasks, return_exceptions=True), timeout
                )
