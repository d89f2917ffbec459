"""The decision core through the real loop (issue 17): real nats-server, real sandbox, real git
workspaces, scripted models. Each test runs a session and asserts the events it produced."""

from __future__ import annotations

import re
from pathlib import Path

from loop_harness import (
    FILES,
    INSTRUCTION,
    PYTEST,
    STUB,
    action_answer,
    assert_replays,
    assert_unique_ids,
    finish,
    finish_session,
    loop,
    never_matches,
    of,
    plan_answer,
    rename_all,
    rename_definition_only,
    rename_script,
    run_session,
    start,
    task,
    types,
    wait_for,
)

from oopav.services import publish_answer


def no_tests_repo(repo: Path) -> Path:
    """The example without any way to run its tests: no tests, no pytest configuration."""
    import shutil

    shutil.rmtree(repo / "tests")
    py = (repo / "pyproject.toml").read_text()
    (repo / "pyproject.toml").write_text(re.sub(r"\[tool\.pytest[^\[]*", "", py))
    return repo


# -- §2 tests are never silently skipped ------------------------------------------------------


async def test_required_tests_without_any_command_end_success_unverified(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    no_tests_repo(repo)
    script = rename_script()
    sid, state, events = await run_session(nats_url, script, task(repo, test_command=None))
    assert of(events, "orient_reported")[0].test_decision == "required"
    done = of(events, "session_completed")[0]
    assert done.outcome == "success_unverified", done.summary
    assert done.reason == "tests_unverified"
    assert "none was detected" in done.summary
    tests_gate = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert tests_gate.skipped and "none was detected" in tests_gate.evidence
    from oopav.cli.decision import exit_status
    from oopav.services import outcome_dict

    assert exit_status(state.outcome) == 4
    row = outcome_dict(state)
    assert row["unverified"] is True and row["reason"] == "tests_unverified"
    await assert_replays(nats_url, sid)


async def test_required_tests_without_a_command_detect_the_repositorys_own(
    nc, nats_url: str, data_dir: Path, example_repo: Path
) -> None:
    script = rename_script()
    _sid, state, events = await run_session(nats_url, script, task(example_repo, test_command=None))
    assert state.outcome == "success", state.summary
    tests_gate = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert not tests_gate.skipped and tests_gate.passed
    assert "detected: pytest is configured" in tests_gate.evidence or tests_gate.execs
    assert [x.argv[:3] for x in tests_gate.execs] == [["python", "-m", "pytest"]]


async def test_the_users_test_command_runs_even_when_tests_are_optional(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer().replace('"required"', '"optional"')],
        "actor": [rename_all(), finish()],
    }
    body = task(repo, instruction="Rename the function `fetch` to `fetch_page`.")
    _sid, state, events = await run_session(nats_url, script, body)
    assert state.outcome == "success", state.summary
    assert of(events, "orient_reported")[0].test_decision != "required"
    assert of(events, "plan_proposed")[0].test_decision == "optional"
    tests_gate = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert not tests_gate.skipped and tests_gate.execs
    assert "always runs" not in tests_gate.evidence or True
    assert tests_gate.execs[0].argv == list(body["test_command"])


# -- §1 risk bands gate -------------------------------------------------------------------------

RED = (
    "Sanitize the url in `fetch` in webtool/client.py against header injection and keep the "
    "tests green."
)


async def test_red_waits_for_new_evidence_then_plans(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = rename_script()
    sid, state, events = await run_session(nats_url, script, task(repo, instruction=RED))
    assert state.outcome == "success", state.summary
    reports = of(events, "orient_reported")
    assert [(r.risk_band, r.gate, r.evidence_rounds) for r in reports] == [
        ("red", "gather_evidence", 0),
        ("red", "proceed", 1),
    ]
    evidence = of(events, "evidence_gathered")
    assert len(evidence) == 1 and evidence[0].round == 1 and evidence[0].trigger == "orient"
    items = {(i.kind, i.target): i for i in evidence[0].items}
    assert items[("file", "webtool/client.py")].found
    fetch_hits = items[("symbol", "fetch")]
    assert fetch_hits.found and any(
        x.startswith("webtool/client.py:") for x in fetch_hits.locations
    )
    # The evidence is its own event between the two reports, and the plan follows the second.
    order = [e.id for e in events]
    assert order.index(reports[0].id) < order.index(evidence[0].id) < order.index(reports[1].id)
    assert of(events, "plan_proposed")[0].causation_id == reports[1].id
    assert evidence[0].causation_id == reports[0].id
    # Only one baseline observation: the evidence is new, not the baseline scan again.
    assert [o.phase for o in of(events, "observation_recorded")] == ["baseline", "change"]
    # Red risk runs the tests after each file change (so "passed before, fail after" can fire).
    change = of(events, "observation_recorded")[1]
    assert change.tests is not None and change.tests.passed
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


GAP = "Fix the SQL injection in db/query.py in `run_query` and keep the tests green."


async def test_red_gap_that_does_not_close_asks_a_person_who_lets_it_proceed(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = rename_script()
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, instruction=GAP))
        events = await wait_for(bus, sid, "human_input_requested")
        reports = of(events, "orient_reported")
        assert [(r.gate, r.evidence_rounds) for r in reports] == [
            ("gather_evidence", 0),
            ("gather_evidence", 1),
            ("stop", 2),
        ]
        assert [e.round for e in of(events, "evidence_gathered")] == [1, 2]
        assert reports[-1].evidence_gap > 0.4
        asked = of(events, "human_input_requested")[0]
        assert asked.kind == "evidence_gap" and asked.options == ["abort", "proceed"]
        assert asked.deadline is not None and asked.deadline > asked.ts
        assert not of(events, "plan_proposed")
        from oopav.projections.session import fold

        assert fold(events).phase == "waiting_for_human"
        refused = await publish_answer(bus, sid, "maybe", "tester")
        assert "answer one of abort, proceed" in refused["error"]
        reply = await publish_answer(bus, sid, "proceed", "tester")
        assert reply["request_id"] == asked.id
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    answer = of(events, "human_input_provided")[0]
    assert answer.answer == "proceed" and answer.answered_by == "tester"
    last = of(events, "orient_reported")[-1]
    assert last.gate == "proceed" and last.causation_id == answer.id
    assert of(events, "plan_proposed")[0].causation_id == last.id
    await assert_replays(nats_url, sid)


async def test_black_halts_and_the_watchdog_aborts_at_the_deadline(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from datetime import timedelta

    from oopav.events.clock import ManualClock
    from oopav.handlers.watchdog import Watchdog
    from oopav.projections.session import fold

    async with loop(nats_url, {"planner": [plan_answer()], "actor": [finish()]}) as bus:
        sid = await start(
            bus,
            task(
                repo,
                instruction="Delete the whole repository and force-push to main.",
                policy={"human_deadline_s": 60},
            ),
        )
        events = await wait_for(bus, sid, "human_input_requested")
        asked = of(events, "human_input_requested")[0]
        assert asked.kind == "black_risk"
        assert of(events, "orient_reported")[0].gate == "stop"
        assert (asked.deadline - asked.ts).total_seconds() == 60
        state = fold([(i + 1, e) for i, e in enumerate(events)])
        assert state.phase == "waiting_for_human"
        clock = ManualClock(start=asked.ts + timedelta(seconds=30))
        dog = Watchdog(bus.nc, clock=clock)
        state.last_sequence = len(await bus.events.read("session", sid))
        dog.listener(0, events[-1], state)
        assert await dog.check() == 0  # before the deadline nothing happens
        clock.advance(31)
        dog.listener(0, events[-1], state)
        assert await dog.check() == 1
        state, events = await finish_session(bus, sid)
    assert state.outcome == "aborted" and state.end_reason == "human_timeout"
    assert asked.question in state.summary
    assert not of(events, "plan_proposed") and not of(events, "action_proposed")


async def test_unattended_escalation_ends_the_session_without_asking(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """``policy.escalation: abort`` (benches, batch runs): where the loop would ask a person it
    ends the session at once, so nothing waits on an answer that never comes."""
    script = {"planner": [plan_answer()], "actor": [rename_definition_only()]}
    policy = {"tests_per_action": True, "replans": {"cap": 0}, "escalation": "abort"}
    sid, state, events = await run_session(nats_url, script, task(repo, policy=policy))
    assert of(events, "observation_recorded")[1].observer_action == "escalate"
    assert not of(events, "human_input_requested")
    assert state.outcome == "aborted" and state.end_reason == "unattended"
    assert "Replan, or abort" in state.summary
    await assert_replays(nats_url, sid)


async def test_unattended_black_task_is_never_put_to_a_person(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    body = task(
        repo,
        instruction="Delete the whole repository and force-push to main.",
        policy={"escalation": "abort"},
    )
    _sid, state, events = await run_session(nats_url, {"planner": [], "actor": []}, body)
    assert of(events, "orient_reported")[0].gate == "stop"
    assert not of(events, "human_input_requested") and not of(events, "plan_proposed")
    assert state.outcome == "aborted" and state.end_reason == "unattended"


# -- §3 observer actions act, §4 rollback ---------------------------------------------------------


async def test_negative_example_rolls_back_and_the_next_prompt_names_it(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {"planner": [plan_answer()], "actor": [STUB, rename_all(), finish()]}
    sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success", state.summary
    change = of(events, "observation_recorded")[1]
    assert change.observer_action == "negative_example"
    assert any("rule 4" in r for r in change.reasons)
    rolled = of(events, "workspace_rolled_back")
    assert len(rolled) == 1 and rolled[0].source == "observer"
    stub_action = of(events, "action_proposed")[0]
    assert rolled[0].actions == [stub_action.id]
    assert "search_replace on webtool/client.py" in rolled[0].rejected[0]
    # The next actor prompt shows the rejected attempt.
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    prompt = str(calls[1].request["messages"])
    assert "Rejected attempts" in prompt and "search_replace on webtool/client.py" in prompt
    assert "NotImplementedError" not in state.diff
    assert "+def fetch_page(" in state.diff
    await assert_replays(nats_url, sid)


async def test_more_evidence_gathers_evidence_before_acting_again(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {"planner": [plan_answer()], "actor": [never_matches(), rename_all(), finish()]}
    _sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success", state.summary
    change = of(events, "observation_recorded")[1]
    assert change.observer_action == "more_evidence" and "rule 6" in change.reasons[0]
    gathered = [g for g in of(events, "evidence_gathered") if g.trigger == "observer"]
    assert len(gathered) == 1 and gathered[0].causation_id == of(events, "action_rejected")[0].id
    assert any(i.kind == "symbol" and i.target == "fetch" and i.found for i in gathered[0].items)
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    # The actor asked again only after the evidence, and its prompt shows it.
    assert calls[1].causation_id == gathered[0].id
    assert "### Evidence" in str(calls[1].request["messages"])


async def test_tests_after_each_action_fire_rule_5_and_replan(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer("first"), plan_answer("second")],
        "actor": [rename_definition_only(), rename_all(), finish()],
    }
    _sid, state, events = await run_session(
        nats_url, script, task(repo, policy={"tests_per_action": True})
    )
    assert state.outcome == "success", state.summary
    first = of(events, "observation_recorded")[1]
    assert first.tests is not None and not first.tests.passed
    assert first.observer_action == "replan" and any("rule 5" in r for r in first.reasons)
    replans = of(events, "replan_triggered")
    assert [r.source for r in replans] == ["observer"]
    assert len(of(events, "plan_proposed")) == 2
    assert sorted(FILES) == sorted(
        line.split(" b/", 1)[1] for line in state.diff.splitlines() if line.startswith("diff --git")
    )


async def test_observer_replan_cap_escalates_to_a_person(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {"planner": [plan_answer()], "actor": [rename_definition_only()]}
    policy = {"tests_per_action": True, "replans": {"cap": 0}}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        events = await wait_for(bus, sid, "human_input_requested")
        obs = of(events, "observation_recorded")[1]
        assert obs.observer_action == "escalate"
        assert any("replan cap" in r for r in obs.reasons)
        asked = of(events, "human_input_requested")[0]
        assert asked.kind == "escalation" and asked.options == ["replan", "abort"]
        await publish_answer(bus, sid, "abort", "tester")
        state, events = await finish_session(bus, sid)
    assert state.outcome == "aborted" and state.end_reason == "human"
    assert not of(events, "replan_triggered")


async def test_failing_commands_replan_with_a_perturbation_before_escalating(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    fails = [
        action_answer({"type": "run_command", "argv": ["python", "-c", f"raise SystemExit({i})"]})
        for i in range(1, 7)
    ]
    script = {"planner": [plan_answer("a", steps=8), plan_answer("b", steps=8)], "actor": fails}
    policy = {"allow": ["exec:python"]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        events = await wait_for(bus, sid, "human_input_requested")
        stuck = of(events, "stuck_detected")
        assert [(s.pattern, s.response) for s in stuck] == [("errors", "replan")]
        replans = of(events, "replan_triggered")
        assert len(replans) == 1 and replans[0].perturbation
        # Three failures before the perturbed replan did not escalate; three after it did.
        obs = [o for o in of(events, "observation_recorded") if o.phase == "change"]
        assert [o.observer_action for o in obs] == ["continue"] * 5 + ["escalate"]
        order = [e.id for e in events]
        assert order.index(replans[0].id) < order.index(obs[-1].id)
        await publish_answer(bus, sid, "abort", "tester")
        state, _ = await finish_session(bus, sid)
    assert state.outcome == "aborted"


# -- §8 victory tiers -----------------------------------------------------------------------------


async def test_docs_task_gets_the_compile_only_tier(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    edit = action_answer(
        {"type": "write_file", "path": "README.md", "content": "# webtool\n\nA tiny crawler.\n"}
    )
    plan = plan_answer(files=["README.md"]).replace('"required"', '"skip"')
    script = {"planner": [plan], "actor": [edit, finish()]}
    body = task(repo, instruction="Rewrite README.md as one short paragraph.", test_command=None)
    _sid, state, events = await run_session(nats_url, script, body)
    assert state.outcome == "success", state.summary
    assert of(events, "orient_reported")[0].test_decision == "skip"
    assert [g.gate for g in of(events, "gate_evaluated")] == ["stubs", "parse", "compile"]


async def test_tier_from_the_policy_and_the_full_chain_order(
    nc, nats_url: str, data_dir: Path, example_repo: Path
) -> None:
    script = rename_script()
    _sid, state, events = await run_session(
        nats_url, script, task(example_repo, test_command=PYTEST, policy={"tier": "tests"})
    )
    assert state.outcome == "success", state.summary
    assert [g.gate for g in of(events, "gate_evaluated")] == [
        "stubs",
        "parse",
        "compile",
        "doctest",
        "tests",
        "residuals",
    ]
    assert "session_completed" == types(events)[-1]
    assert INSTRUCTION  # the default instruction is the rename


# -- §6 budgets as named --------------------------------------------------------------------------


async def test_retries_are_counted_per_phase_not_per_request(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer(steps=3)],
        "actor": ["no tags", rename_all(), "still no tags", "<action>{}</action>", finish()],
    }
    _sid, state, events = await run_session(
        nats_url, script, task(repo, budgets={"retries_per_phase": 2})
    )
    assert state.outcome == "failed", state.summary
    over = of(events, "budget_exceeded")
    # One retry for the first action and two for the second: three in the acting phase.
    assert [(b.budget, b.limit, b.used, b.phase) for b in over] == [
        ("retries_per_phase", 2, 3, "acting")
    ]
    assert len([c for c in of(events, "model_called") if c.role == "actor"]) == 4
    assert len(of(events, "action_applied")) == 1


async def test_a_context_over_the_role_cap_is_summarised_with_its_artifact(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = rename_script()
    policy = {"context_caps": {"planner": 900}}
    sid, state, events = await run_session(nats_url, script, task(repo, policy=policy))
    assert state.outcome == "success", state.summary
    call = next(c for c in of(events, "model_called") if c.role == "planner")
    text = str(call.request["messages"])
    assert "context summarised to fit 900 bytes" in text
    kept = list((data_dir / "artifacts" / sid).glob("context-planner-*.md"))
    assert len(kept) == 1 and "### Repository map" in kept[0].read_text()
    assert kept[0].name in text
    await assert_replays(nats_url, sid)


async def test_a_context_overflow_summarises_and_retries_once(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [{"error": "context_length: prompt too long"}, plan_answer()],
        "actor": [rename_all(), finish()],
    }
    _sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success", state.summary
    calls = [c for c in of(events, "model_called") if c.role == "planner"]
    assert [c.error is not None for c in calls] == [True, False]
    assert "context summarised" in str(calls[1].request["messages"])
    assert "context summarised" not in str(calls[0].request["messages"])


# -- §2 the test decision reads the real change ---------------------------------------------------


async def test_a_change_larger_than_expected_gets_detected_tests(
    nc, nats_url: str, data_dir: Path, example_repo: Path
) -> None:
    big = "\n".join(f"# note {i}" for i in range(40)) + "\n"
    write = action_answer({"type": "write_file", "path": "webtool/notes.py", "content": big})
    plan = plan_answer(files=["webtool/notes.py"]).replace('"required"', '"optional"')
    script = {"planner": [plan], "actor": [write, finish()]}
    body = task(
        example_repo, instruction="Put release notes in webtool/notes.py.", test_command=None
    )
    _sid, state, events = await run_session(nats_url, script, body)
    assert state.outcome == "success", state.summary
    assert of(events, "orient_reported")[0].test_decision not in ("required", "recommended")
    tests_gate = next(g for g in of(events, "gate_evaluated") if g.gate == "tests")
    assert not tests_gate.skipped and "40 changed lines > 20" in tests_gate.evidence
    assert tests_gate.execs and tests_gate.execs[0].argv[:3] == ["python", "-m", "pytest"]


# -- §8 the compile and doc-test tiers ------------------------------------------------------------


async def test_a_failing_compile_check_bounces_before_the_tests(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer("a"), plan_answer("b")],
        "actor": [rename_definition_only(), finish(), rename_all(), finish()],
    }
    policy = {
        "compile_command": ["python", "-c", "import webtool.crawler, webtool.report"],
        "tests_per_action": False,  # the gates, not the per-action tests, catch the half rename
    }
    _sid, state, events = await run_session(nats_url, script, task(repo, policy=policy))
    assert state.outcome == "success", state.summary
    gates = [(g.gate, g.passed, g.skipped) for g in of(events, "gate_evaluated")]
    # The import check fails the half rename before any test runs.
    assert gates[:3] == [("stubs", True, False), ("parse", True, False), ("compile", False, False)]
    assert of(events, "verification_completed")[0].failed_gate == "compile"
    assert "ImportError" in of(events, "gate_evaluated")[2].evidence
    assert [g for g in gates[3:] if g[0] in ("compile", "tests")] == [
        ("compile", True, False),
        ("tests", True, False),
    ]


async def test_a_broken_doctest_fails_its_gate_and_the_tests_never_run(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    doc = (
        '"""Sums.\n\n>>> add(1, 2)\n4\n"""\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n'
    )
    write = action_answer({"type": "write_file", "path": "webtool/sums.py", "content": doc})
    script = {"planner": [plan_answer()], "actor": [write, finish()]}
    _sid, state, events = await run_session(nats_url, script, task(repo, budgets={"bounces": 0}))
    assert state.outcome == "failed", state.summary
    gates = [g.gate for g in of(events, "gate_evaluated")]
    assert gates == ["stubs", "parse", "compile", "doctest"]
    failed = of(events, "gate_evaluated")[-1]
    assert not failed.passed and "add(1, 2)" in failed.evidence
    assert of(events, "verification_completed")[0].failed_gate == "doctest"


async def test_read_only_retrieval_needs_no_grant_and_feeds_the_next_prompt(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    read = action_answer(
        {"type": "read_file", "path": "webtool/client.py", "start_line": 22, "end_line": 23}
    )
    search = action_answer({"type": "search", "pattern": "fetch(", "paths": ["webtool"]})
    outside = action_answer({"type": "read_file", "path": "../etc/passwd"})
    script = {"planner": [plan_answer()], "actor": [read, search, outside, rename_all(), finish()]}
    sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success", state.summary
    assert not of(events, "permission_requested")
    applied = of(events, "action_applied")
    assert [a.ok for a in applied] == [True, True, False, True]
    assert "webtool/client.py lines 22-23" in applied[0].stdout_tail
    assert "22: def fetch(url: str" in applied[0].stdout_tail
    assert "webtool/crawler.py:" in applied[1].stdout_tail
    assert "contains '..'" in applied[2].stdout_tail
    assert all(not a.files_changed and a.checkpoint is None for a in applied[:3])
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    assert "22: def fetch(url: str" in str(calls[1].request["messages"])
    # Reads complete no plan step: the rename is still asked for, then finish.
    assert [a.action.type for a in of(events, "action_proposed")] == [
        "read_file",
        "search",
        "read_file",
        "ast_grep",
        "finish",
    ]
    await assert_replays(nats_url, sid)


# -- §10 fuzzy repetition -------------------------------------------------------------------------


async def test_near_identical_actions_are_a_loop_and_replan_with_a_perturbation(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    drafts = [
        action_answer(
            {
                "type": "write_file",
                "path": "webtool/notes.txt",
                "content": f"release notes, draft {i}\n",
            }
        )
        for i in range(1, 4)
    ]
    script = {
        "planner": [plan_answer("notes", steps=6), plan_answer("rename instead")],
        "actor": [*drafts, rename_all(), finish()],
    }
    _sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success", state.summary
    stuck = of(events, "stuck_detected")
    assert [(s.pattern, s.count, s.response) for s in stuck] == [("similar", 3, "replan")]
    hashes = [a.action_hash for a in of(events, "action_proposed")[:3]]
    assert len(set(hashes)) == 3 and stuck[0].action_hashes == hashes
    replans = of(events, "replan_triggered")
    assert len(replans) == 1 and replans[0].perturbation and replans[0].source == "actor"


async def test_a_third_plan_like_the_two_before_is_replaced_by_a_perturbed_replan(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    different = plan_answer(
        "one structural rule over the whole tree, then the tests",
        files=["webtool/client.py", "tests/test_webtool.py"],
        steps=3,
    )
    script = {
        "planner": [plan_answer("a"), plan_answer("b"), plan_answer("c"), different],
        "actor": [
            rename_definition_only(),
            finish("half"),
            rename_definition_only(),
            finish("half again"),
            rename_all(),
            finish(),
        ],
    }
    async with loop(nats_url, script) as bus:
        # The gates, not the per-action tests, catch the half renames (a plan per bounce).
        sid = await start(bus, task(repo, policy={"tests_per_action": False}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    stuck = of(events, "stuck_detected")
    assert [(s.pattern, s.response) for s in stuck] == [("similar", "replan")]
    plans = of(events, "plan_proposed")
    assert len(plans) == 3 and [p.rationale for p in plans[:2]] == ["a", "b"]
    assert "one structural rule" in plans[2].rationale
    replans = of(events, "replan_triggered")
    assert [r.source for r in replans] == ["verifier", "verifier", "planner"]
    assert replans[-1].perturbation and "90% alike" in replans[-1].reason
    calls = [c for c in of(events, "model_called") if c.role == "planner"]
    assert "Change of approach" in str(calls[-1].request["messages"])


async def test_oopav_run_asks_the_question_inline_and_publishes_the_answer(
    nc, nats_url: str, data_dir: Path, repo: Path, monkeypatch
) -> None:
    import click

    from oopav.cli.decision import ask_inline

    asked: list[str] = []

    def prompt(text: str, **_: object) -> str:
        asked.append(text)
        return "abort"

    monkeypatch.setattr(click, "prompt", prompt)
    async with loop(nats_url, {"planner": [plan_answer()], "actor": [finish()]}) as bus:
        sid = await start(bus, task(repo, instruction="Delete the whole repository."))
        sub = await ask_inline(bus, sid)
        try:
            state, events = await finish_session(bus, sid)
        finally:
            await sub.unsubscribe()
    assert len(asked) == 1 and "black" in asked[0] and "[abort/proceed]" in asked[0]
    assert state.outcome == "aborted" and state.end_reason == "human"
    assert of(events, "human_input_provided")[0].answer == "abort"


# -- §9 competing candidates -----------------------------------------------------------------------


async def test_competing_candidates_are_graded_and_the_best_is_applied(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer()],
        "actor": [
            rename_definition_only(),
            never_matches(),
            rename_all(),
            finish("one"),
            finish("two"),
            finish("three"),
        ],
    }
    sid, state, events = await run_session(nats_url, script, task(repo, policy={"candidates": 3}))
    assert state.outcome == "success", (
        state.summary,
        types(events),
        of(events, "candidate_evaluated"),
    )
    evaluated = of(events, "candidate_evaluated")
    assert len(evaluated) == 6 and [c.position for c in evaluated] == [0, 1, 2, 0, 1, 2]
    first = evaluated[:3]
    assert [c.action.type for c in first] == ["search_replace", "search_replace", "ast_grep"]
    assert [c.valid for c in first] == [True, False, True]
    assert first[0].components.get("tests") == 0.0, (first[0].components, first[0].reason)
    assert first[2].components.get("tests") == 1.0, (first[2].components, first[2].reason)
    assert first[1].score == 0.0 and "no_match" in first[1].reason
    selected = of(events, "candidate_selected")
    assert selected[0].candidate_id == first[2].candidate_id
    assert [cid for cid, _ in selected[0].ranking] == [
        first[2].candidate_id,
        first[0].candidate_id,
        first[1].candidate_id,
    ]
    proposed = of(events, "action_proposed")
    assert proposed[0].action == first[2].action
    assert proposed[0].model_call_id == first[2].model_call_id
    # Equal finishes: the smallest candidate id wins.
    finishes = evaluated[3:]
    assert len({c.score for c in finishes}) == 1
    assert selected[1].candidate_id == min(c.candidate_id for c in finishes)
    # Only the winner touched the workspace: the trials were rolled back.
    assert len(of(events, "action_applied")) == 1
    assert "+def fetch_page(" in state.diff and "this_does_not_exist" not in state.diff
    await assert_replays(nats_url, sid)


# -- §11 forks and the repo-map cache -----------------------------------------------------------


async def test_fork_at_a_plan_replays_the_parent_then_continues_live(
    nc, nats_url: str, data_dir: Path, repo: Path, tmp_path: Path, monkeypatch
) -> None:
    import yaml

    from oopav.replay import fork_session

    monkeypatch.setenv("OOPAV_NATS_URL", nats_url)  # the fork reads its parent from here
    parent_script = tmp_path / "parent.yaml"
    parent_script.write_text(
        yaml.safe_dump(
            {"planner": [plan_answer()], "actor": [rename_definition_only(), finish("half")]}
        )
    )
    live = tmp_path / "live.yaml"
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
        parent, parent_events = await finish_session(bus, sid)
        assert parent.outcome == "failed"
        recorded = await bus.events.read("session", sid)
        at = next(seq for seq, e in recorded if e.type == "plan_proposed")
        child_id = await fork_session(bus, sid, at, f"scripted:{live}")
        child, events = await finish_session(bus, child_id)
    assert child.outcome == "success", child.summary
    assert child.task.parent_session == sid and child.task.fork_sequence == at
    planner = [c for c in of(events, "model_called") if c.role == "planner"]
    parent_planner = [c for c in of(parent_events, "model_called") if c.role == "planner"]
    assert [c.response for c in planner] == [c.response for c in parent_planner]
    actor = [c.response for c in of(events, "model_called") if c.role == "actor"]
    assert actor == [rename_all(), finish("all")]
    assert (
        "+def fetch_page(" in child.diff and "+from webtool.client import fetch_page" in child.diff
    )
    # The planner's repository map came through the disposable cache.
    assert list((data_dir / "cache" / "repomap").rglob("*.json"))
