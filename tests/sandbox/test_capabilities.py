"""Scope parsing, the grant fold (time and use expiry), the check, the policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from oopav.events.catalog import ActionApplied, PermissionDenied, PermissionGranted
from oopav.events.clock import ManualClock
from oopav.events.factory import root_event
from oopav.sandbox.capabilities import (
    ScopeError,
    build_grant,
    check,
    covers,
    fold_grants,
    parse_duration,
    parse_scope,
)
from oopav.sandbox.policy import Policy, load_policy

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty scope"),
        ("net.every", "unknown scope kind"),
        ("net.any:x", "takes no argument"),
        ("net.http:", "needs an argument"),
        ("net.http:https://x.org/a", "host name"),
        ("fs.write:/etc/*", "workspace-relative"),
        ("fs.write:../x", "without '..'"),
        ("exec:'unterminated", "does not split"),
    ],
)
def test_scope_errors_are_clear(text: str, fragment: str) -> None:
    with pytest.raises(ScopeError) as info:
        parse_scope(text)
    assert fragment in str(info.value)


def test_scope_coverage() -> None:
    assert covers(parse_scope("net.any"), parse_scope("net.http:pypi.org"))
    assert covers(parse_scope("net.http:*.example.com"), parse_scope("net.http:api.example.com"))
    assert not covers(parse_scope("net.http:pypi.org"), parse_scope("net.any"))
    assert covers(parse_scope("exec:python -m pytest"), parse_scope("exec:python -m pytest -q"))
    assert not covers(parse_scope("exec:python -m pytest"), parse_scope("exec:python -c 1"))
    assert covers(parse_scope("fs.write:docs/**"), parse_scope("fs.write:docs/a/b.md"))


def grant(scope: str, eid: str, **kw) -> PermissionGranted:
    return root_event(
        PermissionGranted,
        handler="t",
        aggregate_id="s",
        event_id=eid,
        clock=ManualClock(T0),
        scope=scope,
        granted_by="u",
        **kw,
    )


def applied(eid: str, used: list[str]) -> ActionApplied:
    return root_event(
        ActionApplied,
        handler="t",
        aggregate_id="s",
        event_id=eid,
        clock=ManualClock(T0),
        action_id="a",
        grants_used=used,
    )


def test_time_expiry_uses_explicit_now() -> None:
    state = fold_grants([grant("net.any", "g1", expires_at=T0 + timedelta(seconds=60))])
    assert check(["net.any"], state, None, T0 + timedelta(seconds=59)).outcome == "allowed"
    assert check(["net.any"], state, None, T0 + timedelta(seconds=60)).outcome == "ask"


def test_use_expiry_counts_action_applied() -> None:
    events = [grant("exec:pytest", "g1", max_uses=1)]
    first = check(["exec:pytest -q"], fold_grants(events), None, T0)
    assert first.outcome == "allowed" and first.grants_used == ["g1"]
    events.append(applied("a1", first.grants_used))
    assert check(["exec:pytest -q"], fold_grants(events), None, T0).outcome == "ask"


def test_denial_and_policy_order() -> None:
    denied = root_event(
        PermissionDenied,
        handler="t",
        aggregate_id="s",
        event_id="d1",
        clock=ManualClock(T0),
        scope="net.any",
        denied_by="alice",
        reason="no network",
    )
    state = fold_grants([grant("net.any", "g1"), denied])
    d = check(["net.any"], state, None, T0)
    assert d.outcome == "denied" and "alice" in d.reason
    policy = Policy(deny=["net.any"], allow=["exec:make"])
    assert (
        check(["net.http:pypi.org"], fold_grants([grant("net.any", "g2")]), policy, T0).outcome
        == "denied"
    )
    assert check(["exec:make test"], fold_grants([]), policy, T0).outcome == "allowed"
    strict = Policy(ask_unknown=False)
    assert check(["exec:rm -rf x"], fold_grants([]), strict, T0).outcome == "denied"


def test_replay_is_deterministic() -> None:
    events = [grant("net.any", "g1", max_uses=2), applied("a1", ["g1"]), applied("a2", ["g1"])]
    assert fold_grants(events) == fold_grants(list(events))
    assert check(["net.any"], fold_grants(events), None, T0).outcome == "ask"


def test_policy_files(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("allow: [exec:pytest]\ndeny: [net.any]\n")
    assert load_policy(tmp_path / "p.yaml").allow == ["exec:pytest"]
    (tmp_path / "p.json").write_text('{"allow": ["net.http:pypi.org"], "ask_unknown": false}')
    assert load_policy(tmp_path / "p.json").ask_unknown is False
    (tmp_path / "bad.yaml").write_text("allow: [net.everything]\n")
    with pytest.raises(ValueError, match="unknown scope kind"):
        load_policy(tmp_path / "bad.yaml")
    (tmp_path / "typo.yaml").write_text("alow: []\n")
    with pytest.raises(ValueError, match="alow"):
        load_policy(tmp_path / "typo.yaml")


def test_build_grant() -> None:
    clock = ManualClock(T0)
    ev = build_grant(
        "sess-1",
        " net.http:PyPI.org ",
        for_seconds=parse_duration("60s"),
        uses=None,
        granted_by="bob",
        clock=clock,
    )
    assert ev.aggregate_id == "sess-1" and ev.scope == "net.http:pypi.org"
    assert ev.expires_at == T0 + timedelta(seconds=60)
    assert ev.granted_by == "bob" and ev.causation_id is None
    assert build_grant("s", "exec:pytest", uses=1, clock=clock).max_uses == 1
    with pytest.raises(ScopeError):
        build_grant("s", "bogus", clock=clock)
    with pytest.raises(ValueError, match="at least 1"):
        build_grant("s", "net.any", uses=0, clock=clock)
    assert parse_duration("5m") == 300 and parse_duration("2") == 2
    with pytest.raises(ValueError):
        parse_duration("soon")
