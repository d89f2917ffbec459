"""The session memory: a fold that a rebuild reproduces exactly, queries, persistence."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from oopav.context.embedders import HashingEmbedder
from oopav.context.memory import SessionMemory
from oopav.context.synthetic import session_events
from oopav.events.catalog import (
    Event,
    PlanProposed,
    PlanStep,
    SessionCompleted,
    TaskRejected,
    TaskSubmitted,
)
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator

QUERIES = (
    "rename parse_invoice to parse_bill across the repo",
    "add type hints to load_order in py/pkg1/mod_5.py",
    "fix the off-by-one error when the page list is empty",
    "something entirely different: upgrade the CI image",
)


@pytest.fixture(scope="module")
def stream() -> list[tuple[int, Event]]:
    return session_events(300, seed=3)


def hits_of(memory: SessionMemory, only_successful: bool = False) -> list[list[tuple[str, float]]]:
    return [
        [(h.session_id, h.score) for h in memory.query(q, 7, only_successful=only_successful)]
        for q in QUERIES
    ]


def test_rebuild_equals_the_live_fold(stream: list[tuple[int, Event]]) -> None:
    live = SessionMemory()
    for i, (seq, event) in enumerate(stream):
        live.apply(seq, event)
        if i % 97 == 0:
            live.query("warm the index mid-stream", 3)  # embeds in several uneven batches
    rebuilt = SessionMemory.rebuild(stream)
    assert len(live) == len(rebuilt) == 300
    assert live.fingerprint() == rebuilt.fingerprint()
    assert hits_of(live) == hits_of(rebuilt)
    assert hits_of(live, True) == hits_of(rebuilt, True)
    assert all(len(h) == 7 for h in hits_of(live))


def test_query_finds_the_session_with_the_same_instruction(stream: list[tuple[int, Event]]) -> None:
    memory = SessionMemory.rebuild(stream)
    _seq, task = stream[27]
    assert isinstance(task, TaskSubmitted)
    top = memory.query(task.instruction, 3)
    assert top[0].session_id == task.aggregate_id and top[0].score == pytest.approx(1.0)
    assert top[0].instruction == task.instruction
    assert top[0].plan_summary.startswith("1. locate the definition")
    assert top[0].score >= top[1].score >= top[2].score


def test_only_successful(stream: list[tuple[int, Event]]) -> None:
    memory = SessionMemory.rebuild(stream)
    outcomes = {r.outcome for r in memory.records}
    assert outcomes == {"success", "failed"}
    everything = memory.query(QUERIES[0], 50)
    good = memory.query(QUERIES[0], 50, only_successful=True)
    assert {h.outcome for h in everything} == {"success", "failed"}
    assert good and {h.outcome for h in good} == {"success"}
    successes = [h for h in everything if h.outcome == "success"]
    assert good[: len(successes)] == successes


class _Stream:
    """Hand-built session events with deterministic ids."""

    def __init__(self) -> None:
        self.clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC), step=0.01)
        self.ids = IdGenerator(self.clock, seed=11)
        self.events: list[tuple[int, Event]] = []

    def add(self, event: Event) -> Event:
        self.events.append((len(self.events) + 1, event))
        return event

    def submit(self, instruction: str) -> TaskSubmitted:
        ev = root_event(
            TaskSubmitted,
            handler="intake",
            clock=self.clock,
            ids=self.ids,
            instruction=instruction,
            repo="r",
        )
        self.add(ev)
        return ev

    def plan(self, task: Event, description: str, index: int = 0) -> PlanProposed:
        ev = caused_event(
            PlanProposed,
            task,
            handler="planner",
            index=index,
            clock=self.clock,
            steps=[PlanStep(id=1, description=description, files=["a.py"])],
            files=["a.py"],
        )
        self.add(ev)
        return ev

    def complete(self, cause: Event, outcome: str = "success") -> SessionCompleted:
        ev = caused_event(
            SessionCompleted, cause, handler="verifier", clock=self.clock, outcome=outcome
        )  # type: ignore[arg-type]
        self.add(ev)
        return ev


def test_pieces_stay_pending_until_completion_and_replans_supersede() -> None:
    s = _Stream()
    task = s.submit("rename fetch to fetch_page")
    s.plan(task, "first plan")
    memory = SessionMemory.rebuild(s.events)
    assert len(memory) == 0 and memory.pending_sessions == (task.aggregate_id,)
    assert memory.query("rename fetch", 5) == []

    s.plan(task, "second plan after a replan", index=1)
    s.complete(task, "success")
    memory = SessionMemory.rebuild(s.events)
    assert memory.pending_sessions == ()
    (hit,) = memory.query("rename fetch", 5)
    assert hit.session_id == task.aggregate_id
    assert hit.plan_summary == "1. second plan after a replan [a.py]"
    assert hit.outcome == "success"


def test_redelivery_and_orphans_change_nothing() -> None:
    s = _Stream()
    task = s.submit("add logging to the uploader")
    s.complete(task)
    memory = SessionMemory.rebuild(s.events)
    before = memory.fingerprint()
    for seq, event in s.events:  # redelivered: at or below last_sequence
        assert memory.apply(seq, event) is False
    assert memory.fingerprint() == before and len(memory) == 1
    # A second completion of the same session, and a completion whose submission was never
    # seen, add nothing.
    s.complete(task, "failed")
    orphan = root_event(
        TaskSubmitted, handler="intake", clock=s.clock, ids=s.ids, instruction="x", repo="r"
    )
    s.complete(orphan)
    for seq, event in s.events[2:]:
        memory.apply(seq, event)
    assert [r.outcome for r in memory.records] == ["success"]


def test_a_rejected_task_leaves_nothing_pending() -> None:
    s = _Stream()
    task = s.submit("do something invalid")
    s.add(caused_event(TaskRejected, task, handler="intake", clock=s.clock, error="bad repo"))
    memory = SessionMemory.rebuild(s.events)
    assert memory.pending_sessions == () and len(memory) == 0


def test_ties_are_broken_by_session_id_even_at_the_kth_place() -> None:
    s = _Stream()
    same = []
    for _ in range(25):
        t = s.submit("bump the version number")
        s.complete(t)
        same.append(t.aggregate_id)
    other = s.submit("completely unrelated work on docs")
    s.complete(other)
    memory = SessionMemory.rebuild(s.events)
    hits = memory.query("bump the version number", 4)
    assert [h.session_id for h in hits] == sorted(same)[:4]
    assert len({h.score for h in hits}) == 1
    assert len(memory.query("bump the version number", 100)) == 26


def test_save_load_round_trip(stream: list[tuple[int, Event]], tmp_path: Path) -> None:
    half = len(stream) // 2 + 1  # cuts through interleaved sessions: some are pending
    memory = SessionMemory.rebuild(stream[:half])
    assert memory.pending_sessions
    memory.save(tmp_path / "mem")
    loaded = SessionMemory.load(tmp_path / "mem")
    assert loaded is not None
    assert loaded.last_sequence == memory.last_sequence == stream[half - 1][0]
    assert loaded.pending_sessions == memory.pending_sessions
    assert loaded.fingerprint() == memory.fingerprint()
    assert hits_of(loaded) == hits_of(memory)
    # Resuming the loaded snapshot with the rest of the stream equals a full rebuild.
    for seq, event in stream:
        loaded.apply(seq, event)
    assert loaded.fingerprint() == SessionMemory.rebuild(stream).fingerprint()


def test_load_or_rebuild(stream: list[tuple[int, Event]], tmp_path: Path) -> None:
    starts: list[int] = []

    def events_from(start: int) -> Iterator[tuple[int, Event]]:
        starts.append(start)
        return iter([(seq, ev) for seq, ev in stream if seq >= start])

    directory = tmp_path / "mem"
    full = SessionMemory.rebuild(stream).fingerprint()
    assert SessionMemory.load(directory) is None
    assert SessionMemory.load_or_rebuild(directory, events_from).fingerprint() == full
    assert starts == [1]
    # A usable snapshot is resumed after its last sequence.
    assert SessionMemory.load_or_rebuild(directory, events_from).fingerprint() == full
    assert starts[-1] == stream[-1][0] + 1
    # Another embedder's snapshot is not used.
    assert SessionMemory.load(directory, HashingEmbedder(dim=256)) is None
    other = SessionMemory.load_or_rebuild(directory, events_from, HashingEmbedder(dim=256))
    assert starts[-1] == 1 and other.embedder.dim == 256 and len(other) == 300
    # A damaged snapshot is rebuilt.
    (directory / "index.faiss").write_bytes(b"not an index")
    assert SessionMemory.load(directory, HashingEmbedder(dim=256)) is None
    assert SessionMemory.load_or_rebuild(directory, events_from).fingerprint() == full
    assert starts[-1] == 1
    (directory / "meta.msgpack").write_bytes(b"\x00")
    assert SessionMemory.load(directory) is None


def test_empty_memory_and_bad_k(tmp_path: Path) -> None:
    memory = SessionMemory()
    assert memory.query("anything", 5) == []
    memory.save(tmp_path / "m")
    loaded = SessionMemory.load(tmp_path / "m")
    assert loaded is not None and len(loaded) == 0 and loaded.query("x", 3) == []
    s = _Stream()
    s.complete(s.submit("one"))
    assert SessionMemory.rebuild(s.events).query("one", 0) == []
