"""The TUI's pure data layer: rows, filtering, timeline entries and the summary panel."""

from __future__ import annotations

from datetime import timedelta

from tui_sessions import DIFF, T0, SessionBuilder

from oopav.events.codec import encode
from oopav.projections.session import fold
from oopav.tui.model import (
    SessionsModel,
    Timeline,
    current_step,
    format_age,
    row_of,
    summary_lines,
)


def texts(lines: list[tuple[str, str]]) -> str:
    return "\n".join(text for text, _ in lines)


def test_format_age() -> None:
    assert [format_age(s) for s in (-3, 0, 59, 60, 3599, 3600, 86399, 86400 * 3)] == [
        "0s",
        "0s",
        "59s",
        "1m",
        "59m",
        "1h",
        "23h",
        "3d",
    ]


def test_model_folds_events_into_rows() -> None:
    b = SessionBuilder("Rename fetch\nto fetch_page", seed=1)
    model = SessionsModel()
    for seq, event in enumerate(b.until_plan(), start=1):
        assert model.apply(seq, event) == b.session_id
    assert model.take_dirty() == {b.session_id}
    assert model.take_dirty() == set()
    [row] = model.rows(T0 + timedelta(seconds=90))
    assert row.session_id == b.session_id
    assert row.phase == "acting"
    assert row.outcome == ""
    assert row.model_tokens == 120
    assert row.age == "1m"
    assert row.instruction == "Rename fetch to fetch_page"  # one line in a table cell
    assert row.cells()[0] == b.session_id[:13]
    assert model.position == 6

    for seq, event in enumerate([*b.act(), *b.finish()], start=7):
        model.apply(seq, event)
    [row] = model.rows(T0)
    assert (row.phase, row.outcome, row.iterations, row.bounces) == ("completed", "success", 2, 0)


def test_apply_adopts_a_state_folded_elsewhere() -> None:
    b = SessionBuilder("x", seed=2)
    events = b.until_plan()
    state = fold(list(enumerate(events, start=1)))
    model = SessionsModel()
    model.apply(6, events[-1], state)
    assert model.states[b.session_id] is state


def test_rows_are_newest_first_and_filter_by_text() -> None:
    old = SessionBuilder("rename fetch", seed=3, start=T0)
    new = SessionBuilder("add type hints", seed=4, start=T0 + timedelta(minutes=5))
    model = SessionsModel()
    seq = 0
    for b in (old, new):
        for event in b.until_plan():
            seq += 1
            model.apply(seq, event)
    now = T0 + timedelta(hours=1)
    assert [r.session_id for r in model.rows(now)] == [new.session_id, old.session_id]
    assert [r.session_id for r in model.rows(now, "TYPE")] == [new.session_id]
    assert [r.session_id for r in model.rows(now, old.session_id[:13])] == [old.session_id]
    assert [r.session_id for r in model.rows(now, "acting")] == [new.session_id, old.session_id]
    assert model.rows(now, "nothing like it") == []
    assert model.resolve(old.session_id[:13]) == old.session_id
    assert model.resolve("") is None  # ambiguous


def test_timeline_entries_and_an_undecodable_message() -> None:
    b = SessionBuilder("rename", seed=5)
    events = b.until_plan()
    tl = Timeline(b.session_id)
    for seq, event in enumerate(events[:3], start=10):
        tl.add(seq, event.subject, encode(event))
    bad = tl.add(13, f"oopav.ev.session.{b.session_id}.plan_proposed", b"{not json")
    assert bad is not None and bad.bad and bad.type == "undecodable"
    assert "plan_proposed" in bad.summary
    unknown = tl.add(14, "s.x", b'{"type": "no_such_event", "id": "1"}')
    assert unknown is not None and unknown.bad and "no_such_event" in unknown.summary
    assert tl.add(10, events[0].subject, encode(events[0])) is None  # redelivery: ignored
    first, second = tl.entries[0], tl.entries[1]
    assert (first.seq, first.offset, first.type, first.actor) == (
        10,
        0.0,
        "task_submitted",
        events[0].actor,
    )
    assert "rename" in first.summary
    assert second.offset == 0.5  # the builder's clock steps 0.5 s per event
    assert "+   0.500s" in second.text()
    assert [e.seq for e in tl.entries] == [10, 11, 12, 13, 14]


def test_summary_marks_the_current_step_and_shows_budgets() -> None:
    b = SessionBuilder("rename fetch", seed=6)
    state = fold(list(enumerate([*b.until_plan(), *b.act()], start=1)))
    assert current_step(state) == 1
    assert state.created_at is not None
    lines = summary_lines(state, state.created_at + timedelta(seconds=30))
    text = texts(lines)
    assert "phase acting · age 30s" in text
    assert "risk yellow · gap 0.25 · rename" in text
    assert " ▶ 1. rename fetch in client.py" in text
    assert "   2. run the tests" in text
    assert "iterations     1 / 30" in text
    assert "model_tokens   120 / 200000" in text
    assert "Outcome" not in text


def test_summary_of_a_completed_session() -> None:
    b = SessionBuilder("rename fetch", seed=7)
    state = fold(list(enumerate(b.complete(), start=1)))
    lines = summary_lines(state)
    text = texts(lines)
    assert " ✓ 1. rename fetch in client.py" in text and " ✓ 2. run the tests" in text
    assert " pass tests (bounce 0)  3 passed" in text
    assert ("success", "bold green") in lines
    assert "fetch is now fetch_page" in text
    assert f"diff: {DIFF.count(chr(10)) + 1} lines (press d)" in text


def test_summary_of_a_rejected_submission() -> None:
    from oopav.events import catalog as ev
    from oopav.events.factory import root_event

    rejected = root_event(
        ev.TaskRejected, handler="intake", error="repo does not exist", field="repo"
    )
    state = fold([(1, rejected)])
    row = row_of(state, rejected.ts)
    assert (row.phase, row.outcome, row.instruction) == (
        "rejected",
        "rejected",
        "repo does not exist",  # the message names its field: no "repo: repo ..."
    )
    assert "rejected: repo does not exist" in texts(summary_lines(state))
