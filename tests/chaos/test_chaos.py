"""Chaos, short form (CI): kill -9 of handler processes, a server restart mid-session, a
poison message and hostile submissions; `python bench/chaos.py` runs the long form."""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_harness import run_chaos

pytestmark = pytest.mark.chaos


@pytest.mark.timeout(600)
async def test_sessions_survive_kills_a_restart_poison_and_hostile_input(tmp_path: Path) -> None:
    report = await run_chaos(
        tmp_path, sessions=3, kills=2, outage_s=3.0, hostile=10, poison=True, verify=1
    )
    assert report.problems == [], report.describe()
    assert sorted(report.outcomes) == sorted(report.sessions)
    assert all(o == "success" for o in report.outcomes.values()), report.outcomes
    assert report.hostile_answered == report.hostile_sent == 10
    assert report.poison_parked >= 2  # both garbage messages, by the handlers that got them
    assert len(report.verified) == 1
    assert report.restarts == 1 and len(report.kills) == 2
