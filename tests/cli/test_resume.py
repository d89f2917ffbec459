"""Interrupted sessions: the abort `oopav run` writes on Ctrl-C, and where `oopav resume`
continues from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers.cli import oopav
from helpers.events import task_submitted as _task
from oopav.app import Bus
from oopav.bus.store import EventStore
from oopav.config import Settings
from oopav.events import catalog as ev
from oopav.events.factory import caused_event
from oopav.services import abort_interrupted, resume_point


async def test_interrupt_then_resume_point(nc: Any, tmp_path: Path) -> None:
    sid = "01a20000-0000-7000-8000-0000000000aa"
    store = EventStore(nc)
    root = _task(sid)
    await store.append(root)
    note = caused_event(ev.CriticVerdict, root, handler="critic", verdict="approve")
    await store.append(note)
    bus = Bus(nc=nc, url="", events=store, settings=Settings(data_dir=tmp_path))
    state = await abort_interrupted(bus, sid)
    assert state.phase == "completed" and state.outcome == "aborted"
    events = await store.read("session", sid)
    assert [e.type for _, e in events] == ["task_submitted", "critic_verdict", "session_completed"]
    assert events[-1][1].reason == "interrupted" and events[-1][1].causation_id == note.id
    # Aborting again is a no-op: the session already ended.
    await abort_interrupted(bus, sid)
    assert len(await store.read("session", sid)) == 3
    assert await resume_point(bus, sid) == events[1][0]


async def test_only_interrupted_sessions_resume(nc: Any, nats_url: str, tmp_path: Path) -> None:
    sid = "01a20000-0000-7000-8000-0000000000bb"
    store = EventStore(nc)
    root = _task(sid)
    await store.append(root)
    done = caused_event(
        ev.SessionCompleted, root, handler="verifier", outcome="success", summary="done"
    )
    await store.append(done)
    bus = Bus(nc=nc, url="", events=store, settings=Settings(data_dir=tmp_path))
    with pytest.raises(ValueError, match="only an interrupted session can be resumed"):
        await resume_point(bus, sid)
    rc, _out, err = await oopav(nats_url, tmp_path, "resume", sid)
    assert rc != 0 and "only an interrupted session can be resumed" in err
    assert "Traceback" not in err
    # The handlers' JSON log lines go to a file, as with `oopav run`, not over the timeline.
    assert err.startswith("log: ") and "/logs/resume-" in err.splitlines()[0], err
