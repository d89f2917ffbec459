"""Baseline reuse (issue 28 §1): a second session on a tree already measured records
``baseline_reused`` instead of running the suite again; any change to the tree, the command or
the policy's ``fresh_baseline`` measures again; the cache is disposable; replay stays exact."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from loop_harness import (
    assert_causal,
    assert_replays,
    finish,
    finish_session,
    git,
    loop,
    make_repo,
    of,
    plan_answer,
    rename_all,
    start,
    task,
)

from oopav.events import catalog as ev


def _script(n: int) -> dict[str, list[str]]:
    return {"planner": [plan_answer()] * n, "actor": [rename_all(), finish()] * n}


def _baseline_execs(events: list) -> list:  # type: ignore[type-arg]
    obs = next(e for e in of(events, "observation_recorded") if e.phase == "baseline")
    return [r for r in obs.execs if r.purpose == "baseline_tests"]


async def test_a_second_session_on_the_same_tree_reuses_the_baseline(
    nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    async with loop(nats_url, _script(6)) as bus:
        first = await start(bus, task(repo))
        _, events1 = await finish_session(bus, first)
        second = await start(bus, task(repo))
        state2, events2 = await finish_session(bus, second)
    assert not of(events1, "baseline_reused")
    reused = of(events2, "baseline_reused")
    assert len(reused) == 1, [e.type for e in events2]
    r = reused[0]
    assert r.from_session == first and r.saved_ms > 0
    assert r.command == task(repo)["test_command"]
    # The verdict is the first session's: the same recorded run (key), passed, with its report.
    before = _baseline_execs(events1)[0]
    assert _baseline_execs(events2) == [before]
    assert state2.baseline is not None and state2.baseline.tests.passed
    assert state2.outcome == "success", state2.summary
    assert [e.type for e in events2].index("baseline_reused") < [e.type for e in events2].index(
        "observation_recorded"
    )
    assert_causal(events2)
    # Replay serves the recorded reuse: the same events, no cache involved.
    await assert_replays(nats_url, second)


async def test_a_changed_tree_command_or_fresh_policy_measures_again(
    nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    async with loop(nats_url, _script(8)) as bus:
        first = await start(bus, task(repo))
        await finish_session(bus, first)
        # An uncommitted file is part of the starting tree: a different content hash.
        (repo / "NOTES.txt").write_text("a note\n")
        changed = await start(bus, task(repo))
        _, events2 = await finish_session(bus, changed)
        (repo / "NOTES.txt").unlink()
        # Another command (the same tests, another argv).
        other = await start(
            bus, task(repo, test_command=[*task(repo)["test_command"], "-p", "test_*.py"])
        )
        _, events3 = await finish_session(bus, other)
        fresh = await start(bus, task(repo, policy={"fresh_baseline": True}))
        _, events4 = await finish_session(bus, fresh)
        # Back to the first tree and command: reused, from the fresh measurement (it was
        # stored again).
        again = await start(bus, task(repo))
        _, events5 = await finish_session(bus, again)
    for events in (events2, events3, events4):
        assert not of(events, "baseline_reused"), [e.type for e in events]
        assert _baseline_execs(events), "the baseline tests ran"
    assert [e.from_session for e in of(events5, "baseline_reused")] == [fresh]


async def test_a_new_commit_measures_again_and_the_cache_is_disposable(
    nats_url: str, data_dir: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    async with loop(nats_url, _script(6)) as bus:
        await finish_session(bus, await start(bus, task(repo)))
        (repo / "webtool" / "extra.py").write_text("X = 1\n")
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-qm", "more")
        _, events2 = await finish_session(bus, await start(bus, task(repo)))
        assert not of(events2, "baseline_reused")
        shutil.rmtree(data_dir / "cache")  # invariant 1: delete it and everything still works
        state3, events3 = await finish_session(bus, await start(bus, task(repo)))
    assert not of(events3, "baseline_reused") and _baseline_execs(events3)
    assert state3.outcome == "success"


async def test_concurrent_claims_measure_once_across_cache_instances(tmp_path: Path) -> None:
    """Two caches on one directory (as two processes would have): the second claim waits on the
    file lock while the first measures, then reuses its verdict."""
    from datetime import UTC, datetime

    from oopav.handlers.support.baseline_cache import BaselineCache

    class Env:
        def project_env(self, spec: object) -> dict[str, str]:
            return {"python": "/usr/bin/python3", "prefix": str(tmp_path / "nowhere")}

    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    a = BaselineCache(tmp_path / "cache", Env())
    b = BaselineCache(tmp_path / "cache", Env())
    t = ev.TaskSubmitted(
        id="t",
        aggregate_id="s1",
        correlation_id="s1",
        actor="test",
        ts=datetime.now(UTC),
        instruction="x",
        repo=str(repo),
    )
    rec = ev.ExecRecord(key="k", purpose="baseline_tests", argv=["t"], exit_code=0, duration_ms=5)
    obs = ev.ObservationRecorded(
        id="o1",
        aggregate_id="s1",
        correlation_id="s1",
        actor="observer",
        ts=datetime.now(UTC),
        files_total=3,
        execs=[rec],
    )
    order: list[str] = []
    holding = asyncio.Event()

    async def measure() -> None:
        async with a.claim("s1", repo, t, ["t"], timeout_s=10) as claim:
            assert claim.hit is None
            order.append("measuring")
            holding.set()
            await asyncio.sleep(0.3)
            claim.store("s1", obs)
            order.append("stored")

    async def wait_then_reuse() -> None:
        await holding.wait()  # the first claim holds the lock (no timing assumed)
        async with b.claim("s2", repo, t, ["t"], timeout_s=10) as claim:
            order.append("reused" if claim.hit is not None else "measured twice")
            assert claim.hit is not None and claim.hit.session_id == "s1"
            assert claim.hit.execs == [rec]

    await asyncio.gather(measure(), wait_then_reuse())
    assert order == ["measuring", "stored", "reused"]
    # A torn entry is a miss, never an error.
    for f in (tmp_path / "cache").glob("*.json"):
        f.write_bytes(b"{not json")
    async with b.claim("s3", repo, t, ["t"], timeout_s=10) as claim:
        assert claim.hit is None and claim.key is not None
