"""The decision core through the real loop, continued (issue 17): the baseline-aware compile
gate, tests after every action of a required decision, competing plans, rejected attempts in
memory. Real nats-server, real sandbox, real git workspaces, scripted models."""

from __future__ import annotations

import json
from pathlib import Path

from loop_harness import (
    FILES,
    STUB,
    TEST_COMMAND,
    action_answer,
    assert_replays,
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_all,
    rename_definition_only,
    rename_script,
    run_session,
    start,
    task,
)

# A tiny type check in mypy's output format: names used but defined nowhere.
TYPECHECK = """import ast
import builtins
import pathlib
import sys

bad = 0
for f in sorted(pathlib.Path("webtool").rglob("*.py")):
    tree = ast.parse(f.read_text())
    known = set(dir(builtins))
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            known.add(n.name)
        elif isinstance(n, ast.alias):
            known.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.arg):
            known.add(n.arg)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            known.add(n.name)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            known.add(n.id)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in known:
            print(f'{f}:{n.lineno}: error: Name "{n.id}" is not defined  [name-defined]')
            bad += 1
print(f"Found {bad} error(s)" if bad else "Success: no issues found")
sys.exit(1 if bad else 0)
"""
LEGACY = "\n\ndef legacy_summary(pages: list[str]) -> str:\n    return legacy_format(pages)\n"
RAISE = "        raise PageNotFound(url) from None\n"


def adds_a_type_error() -> str:
    return action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/client.py",
                    "search": RAISE,
                    "replace": "        report_missing(url)\n" + RAISE,
                }
            ],
        },
        "report missing pages (a helper that does not exist)",
    )


# -- §8 a baseline-aware compile / type-check gate ----------------------------------------------


async def test_the_compile_gate_fails_only_on_errors_the_baseline_did_not_have(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    (repo / "typecheck.py").write_text(TYPECHECK)
    report = repo / "webtool" / "report.py"
    report.write_text(report.read_text() + LEGACY)  # a pre-existing type error
    script = {
        "planner": [plan_answer("a"), plan_answer("b")],
        "actor": [adds_a_type_error(), finish(), rename_all(), finish()],
    }
    # The gates, not the per-action tests, judge the changes here.
    policy = {"compile_command": ["python", "typecheck.py"], "tests_per_action": False}
    sid, state, events = await run_session(nats_url, script, task(repo, policy=policy))
    assert state.outcome == "success", state.summary
    compiles = [g for g in of(events, "gate_evaluated") if g.gate == "compile"]
    assert [(g.passed, g.skipped) for g in compiles] == [(False, False), (True, False)]
    # The first change adds one error beside the baseline's: the gate names only the new one.
    first = compiles[0]
    assert "1 error(s) the baseline did not have (1 pre-existing)" in first.evidence
    assert 'Name "report_missing" is not defined' in first.evidence
    # Blamed: only the new error; the checker's raw output below it is context, not blame.
    assert "legacy_format" not in first.evidence.split("--- output ---")[0]
    assert [x.purpose for x in first.execs] == ["gate_compile", "gate_compile_base"]
    assert all(x.exit_code == 1 for x in first.execs)
    # The replan's change (on a rolled-back workspace) adds none: the old error does not fail it.
    second = compiles[1]
    assert "1 error(s), all already in the baseline; none new" in second.evidence
    assert second.execs[0].exit_code == 1 and "legacy_format" in second.execs[0].stdout_tail
    assert of(events, "verification_completed")[0].failed_gate == "compile"
    assert "report_missing" not in state.diff and "+def fetch_page(" in state.diff
    await assert_replays(nats_url, sid)


# -- §3 rejected attempts go into the retrieval memory -------------------------------------------


async def test_a_rolled_back_attempt_is_remembered_and_a_later_session_is_told_not_to_repeat_it(
    nc, nats_url: str, data_dir: Path, repo: Path, tmp_path: Path
) -> None:
    from loop_harness import make_repo

    first = {"planner": [plan_answer()], "actor": [STUB, rename_all(), finish()]}
    async with loop(nats_url, first) as bus:
        sid1 = await start(bus, task(repo))
        state1, events1 = await finish_session(bus, sid1)
    assert state1.outcome == "success", state1.summary
    rolled = of(events1, "workspace_rolled_back")
    assert len(rolled) == 1 and rolled[0].source == "observer"
    rejected = rolled[0].rejected[0]
    assert rejected.startswith("search_replace on webtool/client.py")
    # The memory (a projection of the stream, saved when the handlers stop) holds the attempt.
    from oopav.context.memory import SessionMemory

    saved = SessionMemory.load(data_dir / "memory")
    assert saved is not None
    assert [(r.session_id, r.rejected) for r in saved.records] == [(sid1, [rejected])]

    # A later, similar session: a fresh process loads the memory and retrieves the attempt.
    other = make_repo(tmp_path / "repo2", pytest_suite=False, git_repo=False)
    second = rename_script()
    async with loop(nats_url, second) as bus:
        sid2 = await start(bus, task(other))
        state2, events2 = await finish_session(bus, sid2)
    assert state2.outcome == "success", state2.summary
    examples = of(events2, "orient_reported")[0].memory_examples
    assert examples[0]["session_id"] == sid1 and examples[0]["rejected"] == [rejected]
    calls = {c.role: str(c.request["messages"]) for c in reversed(of(events2, "model_called"))}
    for role in ("planner", "actor"):
        assert "Rejected in similar sessions" in calls[role], role
        assert rejected[:60] in calls[role], role
    assert not of(events2, "workspace_rolled_back")
    # Issue 24 §4: replay serves the recorded memory hits with what they rolled back.
    await assert_replays(nats_url, sid2)


# -- §3 tests after every action of a decision that requires them --------------------------------

PLAIN = "Rename the function `fetch` to `fetch_page`."  # orient: tests not required


async def test_a_plan_that_requires_tests_runs_them_after_each_action_and_rule_5_replans(
    nc, nats_url: str, data_dir: Path, repo: Path, tmp_path: Path
) -> None:
    from loop_harness import make_repo

    script = {
        "planner": [plan_answer("first"), plan_answer("second")],
        "actor": [rename_definition_only(), rename_all(), finish()],
    }
    sid, state, events = await run_session(nats_url, script, task(repo, instruction=PLAIN))
    optional_plan = plan_answer("optional").replace('"required"', '"optional"')
    script = {"planner": [optional_plan], "actor": [rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        other = make_repo(tmp_path / "repo2", pytest_suite=False, git_repo=False)
        sid2 = await start(bus, task(other, instruction=PLAIN))
        _, optional = await finish_session(bus, sid2)
    assert state.outcome == "success", state.summary
    report = of(events, "orient_reported")[0]
    assert report.test_decision != "required" and report.risk_band not in ("red", "black")
    assert of(events, "plan_proposed")[0].test_decision == "required"
    # No policy switch, no red risk: the plan's "required" alone runs the tests after the edit.
    first = of(events, "observation_recorded")[1]
    assert first.tests is not None and not first.tests.passed
    assert [x.purpose for x in first.execs] == ["action_tests"]
    assert first.observer_action == "replan" and any("rule 5" in r for r in first.reasons)
    assert [r.source for r in of(events, "replan_triggered")] == ["observer"]
    second = of(events, "observation_recorded")[2]
    assert second.tests is not None and second.tests.passed
    assert sorted(FILES) == sorted(
        line.split(" b/", 1)[1] for line in state.diff.splitlines() if line.startswith("diff --git")
    )
    await assert_replays(nats_url, sid)
    # The same task with a plan whose tests are optional: no per-action test run.
    assert of(optional, "plan_proposed")[0].test_decision == "optional"
    change = [o for o in of(optional, "observation_recorded") if o.phase == "change"]
    assert change and all(o.tests is None and not o.execs for o in change)


# -- §9 competing plans ---------------------------------------------------------------------------


def untested_plan() -> str:
    """A plan that names no test file and no step running the test command, though the task
    requires tests."""
    from oopav.models.prompt import render_answer

    sources = [f for f in FILES if not f.startswith("tests/")]
    return render_answer(
        "plan",
        {
            "steps": [{"id": 1, "description": "rename fetch everywhere", "files": sources}],
            "files": sources,
            "test_decision": "required",
            "rationale": "no tests",
        },
        think="planning without tests",
        state_update={"next_focus": "rename"},
    )


async def test_competing_plans_are_graded_and_the_best_is_proposed(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    narrow = plan_answer("client only", files=["webtool/client.py", "tests/test_webtool.py"])
    ghost = plan_answer("ghost files", files=[*FILES, "webtool/ghost.py"])
    script = {
        "planner": [narrow, untested_plan(), plan_answer("everywhere"), ghost],
        "actor": [rename_all(), finish()],
    }
    sid, state, events = await run_session(
        nats_url, script, task(repo, policy={"plan_candidates": 4})
    )
    assert state.outcome == "success", state.summary
    graded = of(events, "plan_candidate_evaluated")
    assert [c.position for c in graded] == [0, 1, 2, 3]
    assert [c.rationale for c in graded] == ["client only", "no tests", "everywhere", "ghost files"]
    # The ids were fixed before any plan was graded: derived from the planning's cause.
    from oopav.events.ids import derive_id

    report = of(events, "orient_reported")[0]
    assert [c.candidate_id for c in graded] == [
        derive_id(report.id, "planner.candidate", i) for i in range(4)
    ]
    narrow_c, untested, everywhere, ghost_c = graded
    assert not untested.valid and untested.score == 0.0
    assert "the plan's files name no test file" in untested.reason
    # `fetch` occurs in five files (the four code files and README.md): coverage is the share
    # of them a plan names.
    assert narrow_c.components["coverage"] == 0.4 and "leaves out README.md" in narrow_c.reason
    assert everywhere.components == {"valid": 1.0, "grounded": 1.0, "coverage": 0.8, "size": 0.8333}
    assert everywhere.score == 3.6333
    assert (
        ghost_c.components["grounded"] == 0.8 and "1 named file(s) do not exist" in ghost_c.reason
    )
    selected = of(events, "candidate_selected")
    assert len(selected) == 1 and selected[0].kind == "plan"
    assert selected[0].candidate_id == everywhere.candidate_id
    assert [cid for cid, _ in selected[0].ranking] == [
        everywhere.candidate_id,
        ghost_c.candidate_id,
        narrow_c.candidate_id,
        untested.candidate_id,
    ]
    # Every candidate was a recorded model call; the winner's is the proposed plan's.
    planner_calls = [c for c in of(events, "model_called") if c.role == "planner"]
    assert [c.id for c in planner_calls] == [c.model_call_id for c in graded]
    plans = of(events, "plan_proposed")
    assert len(plans) == 1 and plans[0].rationale == "everywhere"
    assert plans[0].model_call_id == everywhere.model_call_id
    order = [e.id for e in events]
    assert order.index(selected[0].id) < order.index(plans[0].id)
    await assert_replays(nats_url, sid)


async def test_when_no_competing_plan_is_valid_the_planner_asks_the_ordinary_way(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [untested_plan(), untested_plan(), plan_answer("with tests")],
        "actor": [rename_all(), finish()],
    }
    sid, state, events = await run_session(
        nats_url, script, task(repo, policy={"plan_candidates": 2})
    )
    assert state.outcome == "success", state.summary
    graded = of(events, "plan_candidate_evaluated")
    assert [(c.valid, c.score) for c in graded] == [(False, 0.0), (False, 0.0)]
    selected = of(events, "candidate_selected")[0]
    assert selected.kind == "plan" and selected.candidate_id == min(c.candidate_id for c in graded)
    plans = of(events, "plan_proposed")
    assert len(plans) == 1 and plans[0].rationale == "with tests"
    planner_calls = [c for c in of(events, "model_called") if c.role == "planner"]
    assert len(planner_calls) == 3 and plans[0].model_call_id == planner_calls[2].id
    assert "Candidate plan" not in str(planner_calls[2].request["messages"])
    await assert_replays(nats_url, sid)


# -- the critic's optional triggers: after a plan, on escalation --------------------------------


async def test_the_critic_reviews_each_plan_and_a_block_replans_before_anything_is_done(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from loop_harness import verdict

    script = {
        "planner": [
            plan_answer("client only", files=["webtool/client.py", "tests/test_webtool.py"]),
            plan_answer("all"),
        ],
        "critic": [
            verdict("block", "the plan leaves out crawler.py and report.py"),
            verdict("approve", "covers every caller"),
            verdict("approve", "complete rename"),
        ],
        "actor": [rename_all(), finish()],
    }
    policy = {"critic": {"on": ["plan", "gate"]}}
    sid, state, events = await run_session(nats_url, script, task(repo, policy=policy))
    assert state.outcome == "success", state.summary
    verdicts = of(events, "critic_verdict")
    assert [(v.trigger, v.verdict) for v in verdicts] == [
        ("plan", "block"),
        ("plan", "approve"),
        ("gate", "approve"),
    ]
    replans = of(events, "replan_triggered")
    assert [r.source for r in replans] == ["critic"]
    assert "leaves out crawler.py" in replans[0].reason
    # The blocked plan was never proposed; the second plan's prompt says why it was blocked.
    plans = of(events, "plan_proposed")
    assert [p.rationale for p in plans] == ["all"]
    order = [e.id for e in events]
    assert order.index(replans[0].id) < order.index(plans[0].id)
    assert not [e for e in events[: order.index(plans[0].id)] if e.type == "action_proposed"]
    planner_calls = [c for c in of(events, "model_called") if c.role == "planner"]
    assert "the critic blocks the plan" in str(planner_calls[1].request["messages"])
    critic_calls = [c for c in of(events, "model_called") if c.role == "critic"]
    assert "client only" in str(critic_calls[0].request["messages"])
    await assert_replays(nats_url, sid)


async def test_on_escalation_the_critic_gives_the_person_a_second_opinion(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from loop_harness import verdict, wait_for

    from oopav.services import publish_answer

    script = {
        "planner": [plan_answer()],
        "actor": [rename_definition_only()],
        "critic": [verdict("caution", "the callers still import fetch")],
    }
    policy = {
        "tests_per_action": True,
        "replans": {"cap": 0},
        "critic": {"on": ["escalation"]},
    }
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        events = await wait_for(bus, sid, "human_input_requested")
        verdicts = of(events, "critic_verdict")
        assert [(v.trigger, v.verdict) for v in verdicts] == [("escalation", "caution")]
        asked = of(events, "human_input_requested")[0]
        assert asked.kind == "escalation" and asked.options == ["replan", "abort"]
        assert "second opinion: caution: the callers still import fetch" in asked.question
        assert "second opinion" in asked.context
        critic_call = next(c for c in of(events, "model_called") if c.role == "critic")
        sent = str(critic_call.request["messages"])
        assert "The loop escalates to a person because" in sent and "+def fetch_page(" in sent
        await publish_answer(bus, sid, "abort", "tester")
        state, _ = await finish_session(bus, sid)
    assert state.outcome == "aborted" and state.end_reason == "human"


async def test_repeated_failures_raise_caution_and_the_next_plan_is_asked_for_smaller_steps(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """Fatigue (decide/trends.py): with ``policy.caution_at: 1`` the broken first attempt (its
    tests fail after the change) is enough; the replan records ``caution_raised`` and its prompt
    asks for smaller steps. (The default is 3 failures.)"""
    from oopav.decide.trends import caution_prompt

    script = {
        "planner": [plan_answer(), plan_answer()],
        "actor": [rename_definition_only(), rename_definition_only(), rename_all(), finish()],
    }
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, test_command=TEST_COMMAND, policy={"caution_at": 1}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    raised = of(events, "caution_raised")
    assert [c.level for c in raised] == [1], [c.reasons for c in raised]
    assert raised[0].actor.startswith("planner")
    assert "smaller steps: one file per step" in raised[0].effects
    plans = [c for c in of(events, "model_called") if c.role == "planner"]
    assert "### Caution" not in str(plans[0].request["messages"])
    asked = "\n".join(m["content"] for m in plans[1].request["messages"])
    assert caution_prompt(1, raised[0].reasons) in asked
    assert raised[0].reasons == ["1 failure(s) in this session"]
    assert state.caution_level == 1 and len(state.observations) >= 3
    await assert_replays(nats_url, sid)


async def test_a_tool_the_policy_does_not_name_is_refused_before_anything_runs(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """``policy.tools``: the agent may only read, search and rewrite with ast-grep; a
    write_file is refused (``tool_not_allowed``) and nothing is written; finish always works."""
    write = action_answer({"type": "write_file", "path": "NOTES.md", "content": "hi\n"}, "note")
    script = {"planner": [plan_answer()], "actor": [write, rename_all(), finish()]}
    policy = {"tools": ["read_file", "search", "ast_grep"]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        state, events = await finish_session(bus, sid)
    refused = of(events, "action_rejected")
    assert [r.reason for r in refused] == ["tool_not_allowed"]
    assert refused[0].message == (
        "the policy does not allow the write_file tool; allowed: read_file, search, ast_grep, finish"
    )
    assert "NOTES.md" not in state.diff and "+def fetch_page(" in state.diff
    assert state.outcome == "success", state.summary
    # The prompt's policy names the tools, so the model can see them.
    actor = [c for c in of(events, "model_called") if c.role == "actor"]
    assert '"tools"' in str(actor[0].request["messages"][0])


async def test_an_unknown_tool_in_the_policy_is_refused_at_intake(
    nc, nats_url: str, repo: Path
) -> None:
    from oopav.services import submit_task

    async with loop(nats_url, {"planner": [], "actor": []}) as bus:
        reply = await submit_task(bus, task(repo, policy={"tools": ["shell"]}))
    assert "unknown tool(s) shell" in json.dumps(reply), reply
