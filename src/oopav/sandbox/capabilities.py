"""Capabilities: scope strings, the grant state folded from events, and the check run before
every execution.

The grant state is a pure fold over ``permission_granted`` / ``permission_denied`` /
``action_applied`` events; time enters only as an explicit ``now``. Replaying a session's
events therefore re-applies exactly the grants of the original run (DESIGN invariant 7).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

import msgspec

from oopav.events.catalog import ActionApplied, Event, PermissionDenied, PermissionGranted
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.factory import root_event

if TYPE_CHECKING:
    from oopav.sandbox.policy import Policy

ScopeKind = Literal["net.any", "net.http", "net.http.read", "git.fetch", "fs.write", "exec"]
_HOST = re.compile(
    r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*(:\d{1,5})?$"
)
SCOPE_HELP = (
    "valid scopes: net.any, net.http:<host>, net.http.read:<host>, git.fetch:<remote>, "
    "fs.write:<glob>, exec:<argv prefix>"
)
# A git remote: a configured name (origin), '*' for `git fetch --all`, or a URL.
_REMOTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_REMOTE_URL = re.compile(r"^(https?|ssh|git)://[^\s/]+(/\S*)?$|^[\w.-]+@[\w.-]+:\S+$")
# Scopes that turn the command's network namespace on. The sandbox has no proxy, so it cannot
# hold a command to one host or to GET requests: docs/sandbox.md, "Network scopes".
NETWORK_KINDS = ("net.any", "net.http", "net.http.read", "git.fetch")


class ScopeError(ValueError):
    """A scope string that does not parse; the message names the problem and the valid forms."""


class Scope(msgspec.Struct, frozen=True):
    kind: ScopeKind
    arg: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind == "net.any" else f"{self.kind}:{self.arg}"


def parse_scope(text: str) -> Scope:
    """Parse and validate one scope string."""
    if not isinstance(text, str) or not text.strip():
        raise ScopeError(f"empty scope; {SCOPE_HELP}")
    text = text.strip()
    if text == "net.any":
        return Scope("net.any")
    kind, sep, arg = text.partition(":")
    if kind == "net.any":
        raise ScopeError(f"scope 'net.any' takes no argument (got {text!r})")
    if kind not in ("net.http", "net.http.read", "git.fetch", "fs.write", "exec"):
        raise ScopeError(f"unknown scope kind {kind!r} in {text!r}; {SCOPE_HELP}")
    if not sep or not arg.strip():
        raise ScopeError(f"scope {kind!r} needs an argument, e.g. {kind}:{_EXAMPLE[kind]}")
    arg = arg.strip()
    if kind in ("net.http", "net.http.read"):
        if "/" in arg or not _HOST.match(arg):
            raise ScopeError(
                f"{kind} needs a host name like 'pypi.org' or '*.example.com', got {arg!r}"
            )
        return Scope("net.http" if kind == "net.http" else "net.http.read", arg.lower())
    if kind == "git.fetch":
        if arg != "*" and not _REMOTE_NAME.match(arg) and not _REMOTE_URL.match(arg):
            raise ScopeError(
                "git.fetch needs a remote name like 'origin', '*' (every remote) or a URL like "
                f"'https://github.com/o/r.git', got {arg!r}"
            )
        return Scope("git.fetch", arg)
    if kind == "fs.write":
        if arg.startswith("/") or ".." in arg.split("/"):
            raise ScopeError(f"fs.write takes a workspace-relative glob without '..', got {arg!r}")
        return Scope("fs.write", arg)
    try:
        tokens = shlex.split(arg)
    except ValueError as exc:
        raise ScopeError(f"exec prefix {arg!r} does not split like a shell line: {exc}") from exc
    if not tokens:
        raise ScopeError("exec needs an argv prefix, e.g. exec:pytest")
    return Scope("exec", shlex.join(tokens))


_EXAMPLE = {
    "net.http": "pypi.org",
    "net.http.read": "pypi.org",
    "git.fetch": "origin",
    "fs.write": "docs/**",
    "exec": "pytest",
}


def parse_scopes(texts: Iterable[str]) -> list[Scope]:
    return [parse_scope(t) for t in texts]


def exec_scope(argv: Sequence[str]) -> Scope:
    return Scope("exec", shlex.join(argv))


def git_fetch_scope(argv: Sequence[str]) -> Scope | None:
    """The ``git.fetch:<remote>`` scope a ``git fetch`` command needs (None: not a fetch).
    ``--all`` needs ``git.fetch:*``; no remote named means git's default, ``origin``."""
    args = list(argv)
    if len(args) < 2 or os.path.basename(args[0]) != "git":
        return None
    i = 1
    while i < len(args) and args[i] in ("-C", "-c"):  # git -C dir / -c key=value fetch ...
        i += 2
    if i >= len(args) or args[i] != "fetch":
        return None
    rest = args[i + 1 :]
    if "--all" in rest:
        return Scope("git.fetch", "*")
    remote = next((a for a in rest if not a.startswith("-")), "origin")
    return parse_scope(f"git.fetch:{remote}")


def needs_network(scopes: Iterable[str]) -> bool:
    """Whether a command holding these scopes runs with the host's network (namespace shared)."""
    return any(s.partition(":")[0] in NETWORK_KINDS for s in scopes)


def covers(granted: Scope, needed: Scope) -> bool:
    """Whether holding ``granted`` allows ``needed``."""
    if granted.kind == "net.any":
        return needed.kind in NETWORK_KINDS
    if granted.kind == "git.fetch" and needed.kind == "git.fetch":
        return granted.arg in ("*", needed.arg)
    if granted.kind == "net.http" and needed.kind == "net.http.read":
        # Full HTTP to a host includes reading from it.
        return covers(Scope("net.http", granted.arg), Scope("net.http", needed.arg))
    if granted.kind != needed.kind:
        return False
    if granted.kind in ("net.http", "net.http.read"):
        g, n = granted.arg, needed.arg
        if g.startswith("*."):
            return n.endswith(g[1:])
        return g == n
    if granted.kind == "fs.write":
        return granted.arg == needed.arg or fnmatch.fnmatchcase(needed.arg, granted.arg)
    prefix, full = shlex.split(granted.arg), shlex.split(needed.arg)
    return full[: len(prefix)] == prefix


class Grant(msgspec.Struct, kw_only=True, frozen=True):
    scope: str
    granted_by: str
    event_id: str
    expires_at: datetime | None = None
    max_uses: int | None = None
    uses: int = 0

    def active(self, now: datetime) -> bool:
        if self.expires_at is not None and now >= self.expires_at:
            return False
        return self.max_uses is None or self.uses < self.max_uses


class Denial(msgspec.Struct, kw_only=True, frozen=True):
    scope: str
    denied_by: str
    reason: str = ""
    event_id: str = ""


class GrantState(msgspec.Struct, kw_only=True, frozen=True):
    grants: tuple[Grant, ...] = ()
    denials: tuple[Denial, ...] = ()


def apply_event(state: GrantState, event: Event) -> GrantState:
    """One step of the fold. Other event types leave the state unchanged."""
    if isinstance(event, PermissionGranted):
        grant = Grant(
            scope=event.scope,
            granted_by=event.granted_by,
            event_id=event.id,
            expires_at=event.expires_at,
            max_uses=event.max_uses,
        )
        # A grant lifts an earlier denial of the same scope.
        denials = tuple(d for d in state.denials if d.scope != event.scope)
        return GrantState(grants=(*state.grants, grant), denials=denials)
    if isinstance(event, PermissionDenied):
        denial = Denial(
            scope=event.scope, denied_by=event.denied_by, reason=event.reason, event_id=event.id
        )
        grants = tuple(g for g in state.grants if g.scope != event.scope)
        return GrantState(grants=grants, denials=(*state.denials, denial))
    if isinstance(event, ActionApplied) and event.grants_used:
        counted = list(state.grants)
        for used in event.grants_used:
            # grants_used names the grant's event id (preferred) or its scope string.
            for i, g in enumerate(counted):
                if used in (g.event_id, g.scope) and (g.max_uses is None or g.uses < g.max_uses):
                    counted[i] = msgspec.structs.replace(g, uses=g.uses + 1)
                    break
        return GrantState(grants=tuple(counted), denials=state.denials)
    return state


def fold_grants(events: Iterable[Event], state: GrantState | None = None) -> GrantState:
    out = state or GrantState()
    for event in events:
        out = apply_event(out, event)
    return out


class Decision(msgspec.Struct, kw_only=True, frozen=True):
    """``allowed`` (with the grant ids to record in ``action_applied.grants_used``),
    ``denied`` (with the reason), or ``ask`` (the first scope nobody has decided on)."""

    outcome: Literal["allowed", "denied", "ask"]
    scope: str | None = None
    reason: str = ""
    grants_used: list[str] = msgspec.field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.outcome == "allowed"


def check(
    scopes_needed: Iterable[str | Scope],
    grants: GrantState,
    policy: Policy | None,
    now: datetime,
) -> Decision:
    """Decide one execution. Order: a policy deny wins, then an explicit denial event, then
    an active grant, then a policy allow; anything else is asked for (or denied when the
    policy says not to ask)."""
    used: list[str] = []
    for raw in scopes_needed:
        try:
            needed = raw if isinstance(raw, Scope) else parse_scope(raw)
        except ScopeError as exc:
            return Decision(outcome="denied", scope=str(raw), reason=str(exc))
        name = str(needed)
        if policy is not None:
            rule = policy.denies(needed)
            if rule is not None:
                return Decision(outcome="denied", scope=name, reason=f"policy denies {rule}")
        denial = next((d for d in grants.denials if covers(parse_scope(d.scope), needed)), None)
        if denial is not None:
            return Decision(
                outcome="denied",
                scope=name,
                reason=f"denied by {denial.denied_by}"
                + (f": {denial.reason}" if denial.reason else ""),
            )
        grant = next(
            (g for g in grants.grants if g.active(now) and covers(parse_scope(g.scope), needed)),
            None,
        )
        if grant is not None:
            used.append(grant.event_id)
            continue
        if policy is not None and policy.allows(needed) is not None:
            continue
        if policy is not None and not policy.ask_unknown:
            return Decision(outcome="denied", scope=name, reason="not granted (deny by default)")
        return Decision(outcome="ask", scope=name, reason="not granted")
    return Decision(outcome="allowed", grants_used=used)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """'60s', '5m', '1h', '1.5d' or a bare number of seconds."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"cannot read duration {text!r}; use e.g. 30s, 5m, 1h")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if seconds <= 0:
        raise ValueError(f"duration must be positive, got {text!r}")
    return seconds


def build_grant(
    session_id: str,
    scope: str,
    for_seconds: float | None = None,
    uses: int | None = None,
    granted_by: str = "user",
    clock: Clock = SYSTEM_CLOCK,
    *,
    handler: str = "cli.grant",
    event_id: str | None = None,
) -> PermissionGranted:
    """The ``permission_granted`` event for ``oopav grant`` and the grants handler; publishing
    is the caller's job. ``event_id``: a derived id, so reprocessing one submission yields the
    same event (JetStream drops the duplicate); default a fresh one."""
    parsed = parse_scope(scope)
    if uses is not None and uses < 1:
        raise ValueError(f"--uses must be at least 1, got {uses}")
    if for_seconds is not None and for_seconds <= 0:
        raise ValueError(f"--for must be positive, got {for_seconds}")
    now = clock.now()
    expires = now + timedelta(seconds=for_seconds) if for_seconds is not None else None
    return root_event(
        PermissionGranted,
        handler=handler,
        aggregate_id=session_id,
        event_id=event_id,
        clock=clock,
        scope=str(parsed),
        granted_by=granted_by,
        expires_at=expires,
        max_uses=uses,
    )


def build_denial(
    session_id: str,
    scope: str,
    denied_by: str = "user",
    reason: str = "",
    clock: Clock = SYSTEM_CLOCK,
    *,
    handler: str = "cli.deny",
    event_id: str | None = None,
) -> PermissionDenied:
    """The ``permission_denied`` event for ``oopav deny``: it withdraws grants of ``scope`` and
    refuses it from then on (until a later grant)."""
    parsed = parse_scope(scope)
    return root_event(
        PermissionDenied,
        handler=handler,
        aggregate_id=session_id,
        event_id=event_id,
        clock=clock,
        scope=str(parsed),
        denied_by=denied_by,
        reason=reason,
    )
