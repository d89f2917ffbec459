"""`oopav diff` and `oopav show --tree` on real sessions: a parent and a fork that continues
with another scripted model, run by the real loop (real nats-server, bwrap, git)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from history_harness import oopav
from loop_harness import (
    finish,
    finish_session,
    loop,
    plan_answer,
    rename_all,
    rename_definition_only,
    start,
    task,
)


async def _parent_and_fork(nats_url: str, repo: Path, tmp: Path) -> tuple[str, str, int]:
    from oopav.replay import fork_session

    parent_script = tmp / "parent.yaml"
    parent_script.write_text(
        yaml.safe_dump(
            {"planner": [plan_answer()], "actor": [rename_definition_only(), finish("half")]}
        )
    )
    live = tmp / "live.yaml"
    live.write_text(yaml.safe_dump({"actor": [rename_all(), finish("all")]}))
    async with loop(nats_url) as bus:
        sid = await start(
            bus,
            task(
                repo,
                model=f"scripted:{parent_script}",
                budgets={"bounces": 0},
                policy={"tests_per_action": False},
            ),
        )
        parent, _ = await finish_session(bus, sid)
        assert parent.outcome == "failed"
        recorded = await bus.events.read("session", sid)
        at = next(seq for seq, e in recorded if e.type == "plan_proposed")
        child = await fork_session(bus, sid, at, f"scripted:{live}")
        state, _ = await finish_session(bus, child)
        assert state.outcome == "success", state.summary
    return sid, child, at


async def test_diff_names_the_first_divergence_and_tree_shows_the_fork(
    nc: Any, nats_url: str, data_dir: Path, repo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("OOPAV_NATS_URL", nats_url)  # the fork reads its parent from here
    sid, child, at = await _parent_and_fork(nats_url, repo, tmp_path)

    rc, out, err = await oopav(nats_url, data_dir, "diff", sid, child, "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["relation"] == f"B is a fork of A at seq {at}"
    assert not d["identical"]
    first = d["first_divergence"]
    # The fork replays the parent's plan; the actor's first answer is where it leaves it.
    assert first["a_type"] == first["b_type"] == "model_called", (
        first["field"],
        first["a_value"],
        first["b_value"],
    )
    assert first["field"].startswith("response"), first
    assert "search_replace" in first["a_value"] and "ast_grep" in first["b_value"]
    assert d["same_prefix"] >= 5
    down = d["downstream"]
    assert down["outcome"] == {"same": False, "a": "failed", "b": "success"}
    assert down["plans"]["same"] is True  # the plan was replayed
    assert down["actions"]["same"] is False
    assert down["actions"]["a"][0].startswith("search_replace")
    assert down["actions"]["b"][0].startswith("ast_grep")
    assert down["gate verdicts"]["same"] is False
    assert "+from webtool.client import fetch_page" in d["diff_of_diffs"]

    rc, text, err = await oopav(nats_url, data_dir, "diff", sid, child, "--steps")
    assert rc == 0, err
    assert "first divergence: step" in text and "model_called" in text
    assert "≠ outcome" in text and "= plans" in text
    assert "final diffs differ" in text

    # A session against itself: identical.
    rc, out, err = await oopav(nats_url, data_dir, "diff", sid, sid, "--json")
    assert rc == 0 and json.loads(out)["identical"] is True

    # The fork tree, from either end.
    for who in (sid, child[:13]):
        rc, out, err = await oopav(nats_url, data_dir, "show", "--tree", who, "--json")
        assert rc == 0, err
        tree = json.loads(out)
        assert tree["session_id"] == sid and tree["outcome"] == "failed"
        assert [c["session_id"] for c in tree["children"]] == [child]
        fork = tree["children"][0]
        assert fork["fork_sequence"] == at and fork["outcome"] == "success"
        assert fork["diverged"].startswith("step ") and "model_called" in fork["diverged"]
    rc, out, err = await oopav(nats_url, data_dir, "show", "--tree", child)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(sid) and "failed" in lines[0]
    assert lines[1].startswith(f"└─ fork@{at} {child}") and lines[1].endswith("")
    assert "success" in lines[1] and "*" in lines[1]  # the session asked about is marked
