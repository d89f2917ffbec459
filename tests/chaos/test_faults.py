"""The issue-29 chaos scenarios in a short form (bench/chaos.py --fault runs them at size):
each reports submissions answered, sessions ended and zero events lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults import flip_byte, server_kill

pytestmark = pytest.mark.chaos


async def test_flipped_bytes_are_all_found(tmp_path: Path) -> None:
    report = await flip_byte(tmp_path, sessions=4, flips=2)
    assert report.ok, report.describe()
    assert report.extra["missing_found"] == 2 and report.extra["false_alarms"] == 0


@pytest.mark.timeout(400)
async def test_a_killed_server_under_up_loses_nothing(tmp_path: Path) -> None:
    report = await server_kill(tmp_path, sessions=3, kills=1)
    assert report.ok, (report.describe(), report.problems)
    assert report.extra["restarts"] >= 1 and report.ended == report.accepted == 4
