"""Recorded sessions as regression tests (``oopav replay --all``): replay every session of a
store (or those since a time) with the current code and report which decisions it makes
differently, grouped by handler and rule (``replay.rule_of``).

Without ``verify`` each session's projection is rebuilt from its events and compared with the
stored snapshot (fast: no handler runs); with ``verify`` the handlers re-run on the recording
as ``oopav replay --verify`` does, one session after another.

The committed corpus (``tests/corpus/``, archives from ``oopav session export``) is imported
into a server and replayed this way in CI; ``python tests/corpus/record.py`` re-records it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``2026-11-26T10:00:00Z``, ``2026-11-26`` or a span back from now: ``30m``, ``2h``, ``7d``."""
    text = text.strip()
    m = _RELATIVE.match(text)
    if m:
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give an ISO time (2026-11-26T10:00Z, 2026-11-26) or a span "
            "such as 30m, 2h, 7d"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass
class Entry:
    session_id: str
    ok: bool
    events: int = 0
    projection_ok: bool = True
    projection_differences: list[str] = field(default_factory=list)
    handler: str | None = None
    rule: str | None = None
    divergence: str | None = None
    started_from: str | None = None
    error: str | None = None


@dataclass
class CorpusReport:
    verified: bool
    entries: list[Entry] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(e.ok for e in self.entries)

    def by_rule(self) -> dict[str, dict[str, list[str]]]:
        """``{handler: {rule: [session ids]}}`` of every diverging session."""
        out: dict[str, dict[str, list[str]]] = {}
        for e in self.entries:
            if not e.ok:
                handler = e.handler or ("projection" if not e.projection_ok else "(error)")
                rule = e.rule or (
                    ", ".join(e.projection_differences[:3]) if not e.projection_ok else e.error
                )
                out.setdefault(handler, {}).setdefault(str(rule), []).append(e.session_id)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "verified": self.verified,
            "sessions": len(self.entries),
            "diverged": sum(not e.ok for e in self.entries),
            "by_handler": self.by_rule(),
            "entries": [asdict(e) for e in self.entries],
        }

    def lines(self) -> list[str]:
        what = "handlers re-run" if self.verified else "projections rebuilt"
        bad = [e for e in self.entries if not e.ok]
        out = [
            f"{len(self.entries)} session(s) replayed ({what}): "
            + ("all reproduce" if not bad else f"{len(bad)} diverge")
        ]
        for handler, rules in sorted(self.by_rule().items()):
            out.append(f"{handler}:")
            for rule, sids in sorted(rules.items()):
                out.append(f"  {rule}: {len(sids)} session(s): {', '.join(sids)}")
        for e in bad:
            out.append(f"{e.session_id}: {e.error or e.divergence or 'projection differs'}")
        return out


async def replay_all(
    bus: Any, *, since: datetime | None = None, verify: bool = False
) -> CorpusReport:
    from oopav.replay import verify_session
    from oopav.services import list_sessions, replay_projection

    rows = [r for r in await list_sessions(bus, 1_000_000) if r["phase"] != "rejected"]
    if since is not None:
        rows = [
            r for r in rows if r["created_at"] and datetime.fromisoformat(r["created_at"]) >= since
        ]
    report = CorpusReport(verified=verify)
    for row in sorted(rows, key=lambda r: r["session_id"]):
        sid = row["session_id"]
        entry = Entry(session_id=sid, ok=True, events=row["events"])
        try:
            projection = await replay_projection(bus, sid, verify=True)
            entry.projection_ok = bool(projection["matches"])
            entry.projection_differences = list(projection["differences"])
            if verify:
                recorded = await bus.events.read("session", sid, skip_undecodable=True)
                handlers = await verify_session(bus.url, sid, recorded=recorded)
                entry.started_from = handlers.started_from
                if not handlers.ok:
                    d = handlers.first_divergence
                    entry.divergence = handlers.describe()
                    if d is not None:
                        entry.handler, entry.rule = d.handler, d.rule
                    elif handlers.tampering:
                        entry.handler, entry.rule = "chain", handlers.tampering[0].kind
                    elif handlers.signatures is not None and not handlers.signatures.ok:
                        entry.handler = "signatures"
                        entry.rule = handlers.signatures.problems[0]
            entry.ok = entry.projection_ok and entry.divergence is None
        except Exception as exc:  # one broken session must not hide the others' results
            entry.ok = False
            entry.error = f"{type(exc).__name__}: {exc}"[:500]
        report.entries.append(entry)
    return report
