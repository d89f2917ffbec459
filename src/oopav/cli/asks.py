"""Permission asks during ``oopav run``: on a terminal, ask inline (allow once / always for this
session / deny), like other coding CLIs; without one, stop at the first ask with the exact
``oopav grant`` line and the ``--allow`` that would have avoided it.

The answers are ordinary ``permission_granted`` / ``permission_denied`` events (through the
same ``submit_grant`` as ``oopav grant``), so replay re-applies them."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import shlex
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
Ask = Callable[[str, str], str]  # (scope, reason) -> "once" | "always" | "deny"


def grant_line(session_id: str, scope: str) -> str:
    return f"oopav grant {session_id} {shlex.quote(scope)}"


def needs_permission_message(session_id: str, scope: str, reason: str) -> str:
    return (
        f"the session needs a permission nobody can give without a terminal: {scope}"
        + (f" ({reason})" if reason else "")
        + f"\n  rerun with:  --allow {shlex.quote(scope)}"
        + f"\n  or, with `oopav up` running:  {grant_line(session_id, scope)}"
    )


def terminal_ask(scope: str, reason: str) -> str:
    import click

    click.echo(f"\npermission requested: {scope}" + (f" ({reason})" if reason else ""), err=True)
    choice = click.prompt(
        "allow [o]nce, [a]lways for this session, or [d]eny?",
        type=click.Choice(["o", "a", "d"]),
        default="o",
        err=True,
    )
    return {"o": "once", "a": "always", "d": "deny"}[choice]


class PermissionAsks:
    """Watches one session's ``permission_requested`` events while ``oopav run`` waits."""

    def __init__(
        self, bus: Any, session_id: str, *, interactive: bool, ask: Ask = terminal_ask
    ) -> None:
        self.bus = bus
        self.session_id = session_id
        self.interactive = interactive
        self.ask = ask
        self.failed: str | None = None
        self._fail = asyncio.Event()
        self._sub: Any = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        subject = f"oopav.ev.session.{self.session_id}.permission_requested"
        self._sub = await self.bus.nc.subscribe(subject, cb=self._on_request)

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _on_request(self, msg: Any) -> None:
        from oopav.events.codec import decode
        from oopav.handlers.grants import submit_grant

        try:
            event = decode(msg.data)
        except Exception:
            return
        scope, reason = getattr(event, "scope", ""), getattr(event, "reason", "")
        if not self.interactive:
            self.failed = needs_permission_message(self.session_id, scope, reason)
            self._fail.set()
            return
        async with self._lock:
            answer = await asyncio.to_thread(self.ask, scope, reason)
            body: dict[str, Any] = {
                "session_id": self.session_id,
                "scope": scope,
                "by": getpass.getuser(),
            }
            if answer == "once":
                body["uses"] = 1
            elif answer == "deny":
                body["deny"] = True
            handler = "cli.deny" if answer == "deny" else "cli.grant"
            await submit_grant(self.bus.events, body, handler=handler)

    async def race(self, waiting: Awaitable[T]) -> T | None:
        """``waiting``'s result, or None when a non-interactive ask ended the wait first."""
        main = asyncio.ensure_future(waiting)
        fail = asyncio.ensure_future(self._fail.wait())
        try:
            await asyncio.wait({main, fail}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            fail.cancel()
        if main.done():
            return main.result()
        main.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await main
        return None
