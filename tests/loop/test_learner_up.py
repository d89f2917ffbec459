"""The learner runs with the other handlers under `oopav up`: a session the loop completes
becomes training records in <data dir>/datasets while everything keeps running."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from loop_harness import PYTEST, finish_session, loop, rename_script, start, task

from oopav.handlers.registry import ALL_HANDLERS


async def test_up_runs_the_learner_and_a_completed_session_lands_in_the_datasets(
    nc, nats_url: str, data_dir: Path, example_repo: Path
) -> None:
    assert "learner" in ALL_HANDLERS  # what `oopav up` starts (unless --no-learner)
    script = rename_script()
    manifest = data_dir / "datasets" / "sft" / "manifest.json"
    async with loop(nats_url, script) as bus:  # every handler, as `oopav up` runs them
        sid = await start(bus, task(example_repo, test_command=PYTEST))
        state, _ = await finish_session(bus, sid)
        assert state.outcome == "success", state.summary
        for _ in range(600):  # the learner rebuilds its datasets a moment after a session
            if manifest.exists() and json.loads(manifest.read_text())["count"]:
                break
            await asyncio.sleep(0.05)
    sft = json.loads(manifest.read_text())
    assert [s["session_id"] for s in sft["sessions"]] == [sid]
    from oopav.trainer.datasets import read_records

    records = read_records(data_dir / "datasets" / "sft")
    # The planner's answer and the actor's two (the rename and the finish), as sent and answered.
    assert sorted(r["role"] for r in records) == ["actor", "actor", "planner"]
    assert all(r["session_id"] == sid and r["outcome"] == "success" for r in records)
    srl = json.loads((data_dir / "datasets" / "srl" / "manifest.json").read_text())
    assert srl["count"] == 2 and (data_dir / "datasets" / "sessions" / f"{sid}.json").exists()


def test_up_no_learner_leaves_it_out() -> None:
    from click.testing import CliRunner

    from oopav.cli import cli
    from oopav.cli.serve import _without

    names = _without("learner")
    assert "learner" not in names and set(names) == set(ALL_HANDLERS) - {"learner"}
    r = CliRunner().invoke(cli, ["up", "--help"])
    assert r.exit_code == 0 and "--no-learner" in r.output
