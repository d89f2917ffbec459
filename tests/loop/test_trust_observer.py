"""Issue 24 §5 through live sessions: the observer's "tests passed before, fail after" rule
compares with the previous step, a plan can mark a step that leaves the tests broken on
purpose, and the replan cooldown rolls a step back instead of replanning again."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    FILES,
    action_answer,
    assert_replays,
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_all,
    rename_definition_only,
    start,
    task,
)

from oopav.models.prompt import render_answer

POLICY = {"tests_per_action": True}
DOCSTRING = action_answer(
    {
        "type": "search_replace",
        "edits": [
            {
                "path": "webtool/report.py",
                "search": '"""A one-line summary per page: its URL and its first heading."""\n',
                "replace": '"""One summary line per page: its URL and its first heading."""\n',
            }
        ],
    },
    "a harmless docstring edit",
)


def marked_plan() -> str:
    """attrs: make a signature change, then update the call sites: step 1 breaks the tests."""
    return render_answer(
        "plan",
        {
            "steps": [
                {
                    "id": 1,
                    "description": "rename the definition",
                    "files": ["webtool/client.py"],
                    "tests_may_fail": True,
                },
                {"id": 2, "description": "update the call sites", "files": FILES},
                {"id": 3, "description": "run the tests", "files": []},
            ],
            "files": FILES,
            "test_decision": "required",
            "rationale": "definition first, then its callers",
        },
        think="two edits",
        state_update={"goals": ["fetch is fetch_page"]},
    )


async def test_a_step_the_plan_expects_to_break_the_tests_does_not_trigger_a_replan(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [marked_plan()],
        "actor": [rename_definition_only(), rename_all(), finish()],
    }
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=POLICY))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    assert of(events, "plan_proposed")[0].steps[0].tests_may_fail
    changes = [o for o in of(events, "observation_recorded") if o.phase == "change"]
    first, second = changes[0], changes[1]
    assert first.tests is not None and not first.tests.passed
    assert first.observer_action == "continue"
    assert any(r.startswith("rule 5 waived") for r in first.reasons), first.reasons
    assert second.tests is not None and second.tests.passed
    assert not of(events, "replan_triggered") and not of(events, "workspace_rolled_back")
    await assert_replays(nats_url, sid)


async def test_a_later_step_is_compared_with_the_previous_step_not_the_baseline(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """After one breaking step (left in place by the observer's replan), a harmless docstring
    edit was flagged and rolled back, because the rule compared with the baseline."""
    script = {
        "planner": [plan_answer("first"), plan_answer("second", steps=3)],
        "actor": [rename_definition_only(), DOCSTRING, rename_all(), finish()],
    }
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=POLICY))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    changes = [o for o in of(events, "observation_recorded") if o.phase == "change"]
    assert [o.observer_action for o in changes] == ["replan", "continue", "continue"], [
        (o.reasons, o.changed_files) for o in changes
    ]
    assert [o.tests.passed for o in changes] == [False, False, True]  # type: ignore[union-attr]
    assert [r.source for r in of(events, "replan_triggered")] == ["observer"]
    assert not of(events, "workspace_rolled_back")
    assert '+"""One summary line per page' in state.diff
    await assert_replays(nats_url, sid)


async def test_the_replan_cooldown_rolls_a_breaking_step_back_instead_of_replanning(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """Break → replan; fix; break again within the cooldown → the step is rolled back (a
    negative example), not a second replan."""
    script = {
        "planner": [plan_answer("first"), plan_answer("second", steps=4)],
        "actor": [rename_definition_only(), rename_all(), _break_crawl(), finish()],
    }
    policy = {**POLICY, "replans": {"cooldown_actions": 2}}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    changes = [o for o in of(events, "observation_recorded") if o.phase == "change"]
    assert [o.observer_action for o in changes] == ["replan", "continue", "negative_example"]
    third = changes[2]
    assert any(r.startswith("rule 5:") for r in third.reasons)
    assert any("replan cooldown: 2 action(s) since the last replan" in r for r in third.reasons)
    assert len(of(events, "replan_triggered")) == 1
    rolled = of(events, "workspace_rolled_back")
    assert len(rolled) == 1 and rolled[0].source == "observer"
    assert "-            broken.append(url)" not in state.diff
    await assert_replays(nats_url, sid)


def _break_crawl() -> str:
    return action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/crawler.py",
                    "search": "            broken.append(url)\n",
                    "replace": "            pass\n",
                }
            ],
        },
        "stop recording broken links: breaks the crawl test",
    )
