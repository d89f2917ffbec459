"""bench/flywheel.py ``--pass-at`` (issue 25): generation 1's pass@k — each task submitted
once as a group of k independent one-attempt sessions through the real loop, sampled; a task
counts for pass@k when any of its first k sessions passed its test."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import flywheel  # noqa: E402
from flywheel import pass_at_rates  # noqa: E402


def test_pass_at_counts_a_task_when_any_of_its_first_k_sessions_passed() -> None:
    solved = [
        [False, False, True, False],  # third session: pass@1 no, pass@4 yes
        [True, True, True, True],
        [False, False, False, False],
        [True, False, False, False],
    ]
    r = pass_at_rates(solved, [1, 2, 4])
    assert (r["1"]["k"], r["2"]["k"], r["4"]["k"]) == (2, 2, 3)
    assert r["4"]["n"] == 4 and r["4"]["rate"] == 0.75
    assert 0 < r["4"]["low"] < 0.75 < r["4"]["high"] <= 1
    # The unbiased estimate from all n = 4 sessions: pass@1 is the mean solved fraction,
    # pass@4 (= n) the any-of-all count.
    assert r["1"]["unbiased"] == pytest.approx((1 / 4 + 1 + 0 + 1 / 4) / 4)
    assert r["4"]["unbiased"] == pytest.approx(0.75)
    # pass@2 of a task with 1 of 4 solved: 1 - C(3, 2) / C(4, 2) = 0.5
    assert r["2"]["unbiased"] == pytest.approx((0.5 + 1 + 0 + 0.5) / 4)
    with pytest.raises(ValueError):
        pass_at_rates(solved, [8])


@dataclass
class T:
    id: str
    source: str
    instruction: str
    pre: str
    post: str


RULE = "id: r\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^fetch$\nfix: fetch_page\n"


async def test_pass_at_runs_k_sessions_per_task_through_the_loop(
    tmp_path: Path, nats_url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The --short scale: two tasks, groups of two through the real loop (a scripted policy
    whose one answer, a rename of ``fetch``, solves the first task and matches nothing in the
    second): 2 x 2 sessions, each member sampled at the temperature with its own seed."""
    from oopav.bus.store import EventStore, connect
    from oopav.models.prompt import render_answer

    answer = render_answer(
        "action",
        {"type": "ast_grep", "rule": RULE, "paths": ["."]},
        think="rename",
        state_update={"history": "rename"},
    )
    script = tmp_path / "policy.json"
    script.write_text(json.dumps({"actor": [answer] * 8}))
    tasks = [
        T("a" * 12, "x.py", "Rename fetch to fetch_page", "def fetch():\n    return 1\n",
          "def fetch_page():\n    return 1\n"),
        T("b" * 12, "y.py", "Rename load to load_all", "def load():\n    return 2\n",
          "def load_all():\n    return 2\n"),
    ]  # fmt: skip
    bodies: list[dict[str, Any]] = []
    orig = flywheel.body

    def scripted_body(*a: Any, **k: Any) -> dict[str, Any]:
        # The scripted policy under the compact profile (the hf: policy's by default): the
        # plan is the loop's one-step plan, the policy answers the actor only.
        out = orig(*a, **k)
        out["model"] = f"scripted:{script}"
        out["policy"]["prompt_profile"] = "compact"
        bodies.append(out)
        return out

    monkeypatch.setattr(flywheel, "body", scripted_body)
    args = argparse.Namespace(pass_iterations=1, pass_temperature=0.7, copy_names=None)
    res = await flywheel.pass_at(nats_url, tmp_path, "B", tasks, "unused", [1, 2], args)
    assert res["sessions"] == 4
    assert [len(v) for v in res["verified"]] == [2, 0]
    assert res["pass_at"]["1"]["k"] == 1 and res["pass_at"]["2"]["k"] == 1
    assert res["solved_per_task"] == {0: 1, 2: 1}
    # One attempt per session, and each member its own sampling (seed = member index).
    assert (
        bodies[0]["budgets"]["iterations"] == 1 and bodies[0]["budgets"]["retries_per_phase"] == 0
    )
    nc = await connect(nats_url, name="test-pass-at")
    try:
        store = EventStore(nc)
        groups = []
        for sid in res["verified"][0]:
            events = await store.read("session", sid)
            submitted = next(e for _, e in events if e.type == "task_submitted")
            groups.append((submitted.group.temperature, submitted.group.seed))
    finally:
        await nc.close()
    assert sorted(groups) == [(0.7, 0), (0.7, 1)]


def _record(sid: str, answer: str) -> dict[str, Any]:
    state = {"feedback": "", "instruction": "Rename fetch to fetch_page", "language": "python",
             "path": "mod.py", "role": "actor", "snippet": "def fetch():\n    return 1\n"}  # fmt: skip
    return {
        "session_id": sid,
        "prompt": [{"role": "user", "content": "as recorded"}],
        "prompt_state": state,
        "completion": [{"role": "assistant", "content": answer}],
    }


def test_expert_iteration_keeps_distinct_verified_answers_per_task_at_most_m() -> None:
    from flywheel import expert_records

    records = [
        _record("s1", "A"),
        _record("s2", "A"),  # the same answer again: one row
        _record("s3", "B"),
        _record("s4", "C"),  # a third distinct answer: over M = 2
        _record("t1", "A"),
        _record("x9", "Z"),  # a session not among the verified: never a row
    ]
    rows, counts = expert_records(records, [["s1", "s2", "s3", "s4"], ["t1"], []], 2)
    assert [(r["session_id"], r["completion"][0]["content"]) for r in rows] == [
        ("s1", "A"),
        ("s3", "B"),
        ("t1", "A"),
    ]
    # each from its first-attempt prompt, rendered from the recorded state (the loop's)
    assert all(r["prompt"][0]["content"] != "as recorded" for r in rows)
    assert counts["tasks"] == 2 and counts["tasks_with_verified"] == 2
    assert counts["verified_sessions"] == 5 and counts["rows"] == 3
