"""`oopav show` and `oopav dlq` on a session with garbage on its subjects: the garbage is shown
at its sequence with the reason, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.cli import oopav
from helpers.events import task_submitted
from oopav.bus.store import EventStore


async def test_show_displays_undecodable_events_at_their_sequence(
    nc: Any, nats_url: str, tmp_path: Path
) -> None:
    sid = "01a20000-0000-7000-8000-00000000abcd"
    task = task_submitted(sid)
    await EventStore(nc).append(task)
    await nc.jetstream().publish(f"oopav.ev.session.{sid}.plan_proposed", b"\x00 garbage")
    rc, out, err = await oopav(nats_url, tmp_path, "show", sid)
    assert rc == 0, err
    assert "Traceback" not in out + err
    lines = out.splitlines()
    assert lines[0] == f"session {sid}: 2 events"
    assert "task_submitted" in lines[1]
    assert lines[2].split()[0] == "2" and "(undecodable)" in lines[2] and "undecodable:" in lines[2]
    rc, out, err = await oopav(nats_url, tmp_path, "show", sid, "--json")
    assert rc == 0, err
    rows = json.loads(out)
    assert [r["type"] for r in rows] == ["task_submitted", "(undecodable)"]
    assert rows[1]["seq"] == 2 and rows[1]["reason"] == "undecodable"
