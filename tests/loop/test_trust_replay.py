"""Issue 24 §4 through live sessions: a fork of a session that ran on the implicit ``synth:``
needs no --model, and replay --verify holds for the fork too."""

from __future__ import annotations

from pathlib import Path

from loop_harness import PYTEST, assert_replays, finish_session, loop, of, start, task
from test_synth_loop import EXAMPLES


async def test_a_fork_without_a_model_continues_on_the_parents_implicit_synth(
    nc, nats_url: str, data_dir: Path, example_repo: Path, monkeypatch
) -> None:
    from oopav.replay import fork_session

    monkeypatch.setenv("OOPAV_NATS_URL", nats_url)  # the fork reads its parent from here
    body = task(example_repo, examples=EXAMPLES, test_command=PYTEST)
    del body["model"]  # no model anywhere: synth: answers
    async with loop(nats_url) as bus:
        sid = await start(bus, body)
        parent, _ = await finish_session(bus, sid, timeout=180)
        assert parent.outcome == "success", parent.summary
        recorded = await bus.events.read("session", sid)
        at = next(seq for seq, e in recorded if e.type == "plan_proposed")
        # Used to crash: 'NoneType' object has no attribute 'complete', then retries.
        child_id = await fork_session(bus, sid, at, None)
        child, events = await finish_session(bus, child_id, timeout=180)
    assert child.outcome == "success", child.summary
    assert child.task.model == f"fork:{sid}@{at}:synth:"
    assert not [c for c in of(events, "model_called") if c.error]
    assert child.diff == parent.diff
    await assert_replays(nats_url, child_id)


async def test_a_fork_of_a_session_that_had_no_model_at_all_says_what_to_pass(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    import pytest

    from oopav.events import catalog as ev
    from oopav.events.factory import root_event
    from oopav.replay import fork_session

    async with loop(nats_url, names=()) as bus:
        submitted = root_event(
            ev.TaskSubmitted, handler="test", instruction="x", repo=str(repo), model=None
        )
        await bus.events.append(submitted, expected=0)
        seq = (await bus.events.read("session", submitted.aggregate_id))[0][0]
        with pytest.raises(ValueError, match="give the fork one with --model"):
            await fork_session(bus, submitted.aggregate_id, seq, None)


async def test_an_example_whose_rule_matches_nothing_stops_before_any_test_with_near_matches(
    nc, nats_url: str, data_dir: Path, example_repo: Path
) -> None:
    """§7: a misspelled example used to run the baseline tests, then retry the no-op rule
    three times (`stuck: repeat x3`)."""
    typo = [
        {
            "path": "webtool/example.py",
            "before": "def fecth(url):\n    return url\n\n\npage = fecth('x')\n",
            "after": "def fecth_page(url):\n    return url\n\n\npage = fecth_page('x')\n",
        }
    ]
    body = task(example_repo, examples=typo, test_command=PYTEST)
    del body["model"]  # synth: answers
    async with loop(nats_url) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "failed", state.summary
    assert "match nothing in the repository (the example changes `fecth`)" in state.summary
    assert "nearest names in the repository: fetch" in state.summary
    assert not of(events, "observation_recorded") and not of(events, "model_called")
    await assert_replays(nats_url, sid)
