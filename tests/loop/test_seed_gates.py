"""The seeds' gates through the real loop (issue 30): the critic's structured report, the
confidence tier, ``oopav critic --session`` (a review of a recorded session after the fact,
run as a user runs it, its verdict recorded on the session's stream without breaking the
chain, the first terminal event or replay), the plan adequacy gate and required tests checked
by the plan's manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loop_harness import (
    assert_replays,
    events_of,
    finish,
    of,
    plan_answer,
    rename_all,
    rename_script,
    run_session,
    task,
    verdict,
)

from helpers.cli import oopav
from oopav.events.chain import check_chain


async def test_a_scripted_critic_s_report_is_recorded_and_shown_in_the_gate(
    nc: Any, nats_url: str, repo: Path
) -> None:
    script = {
        **rename_script(),
        "critic": [
            verdict(
                "caution",
                "renames look complete",
                top_risks=["callers outside the repository still use fetch"],
                missing_tests=["a test that calls fetch_page"],
                confidence=0.8,
            )
        ],
    }
    body = task(repo, policy={"critic": {"allowed_artifact_fields": ["task", "diff"]}})
    _, state, events = await run_session(nats_url, script, body)
    assert state.outcome == "success", state.summary
    [v] = of(events, "critic_verdict")
    assert v.top_risks == ["callers outside the repository still use fetch"]
    assert v.missing_tests == ["a test that calls fetch_page"]
    assert v.confidence == 0.8 and v.shown == ["task", "diff"]
    [gate] = [g for g in of(events, "gate_evaluated") if g.gate == "critic"]
    assert "missing tests: a test that calls fetch_page" in gate.evidence
    assert "confidence: 0.80" in gate.evidence
    # Only the allowed sections reached the critic: no plan, no gate results.
    [call] = [c for c in of(events, "model_called") if c.role == "critic"]
    sent = json.dumps(call.request)
    assert "### Diff" in sent and "### Plan" not in sent and "### Gates\\n" not in sent
    assert "plan, gates (not shown to the reviewer)" in sent
    # No threshold set: the confidence tier says why it did not judge.
    [tier] = [g for g in of(events, "gate_evaluated") if g.gate == "confidence"]
    assert tier.skipped and "no threshold set" in tier.evidence


async def test_a_verdict_less_sure_than_the_policy_s_threshold_sends_the_change_back(
    nc: Any, nats_url: str, repo: Path
) -> None:
    script = {
        "planner": [plan_answer(), plan_answer("rename fetch, with the critic's risks")],
        "actor": [rename_all(), finish(), finish()],
        "critic": [
            verdict("approve", "probably fine", top_risks=["untested path"], confidence=0.3),
            verdict("approve", "fine now", confidence=0.9),
        ],
    }
    body = task(repo, policy={"critic": {"min_confidence": 0.6}})
    _, state, events = await run_session(nats_url, script, body)
    tiers = [g for g in of(events, "gate_evaluated") if g.gate == "confidence"]
    assert [t.passed for t in tiers] == [False, True]
    assert "0.30 sure of its approve verdict, below policy.critic.min_confidence 0.60" in (
        tiers[0].evidence
    )
    assert "- risk: untested path" in tiers[0].evidence
    [replan] = of(events, "replan_triggered")
    assert "confidence gate failed" in replan.reason
    assert state.outcome == "success", state.summary


async def test_oopav_critic_reviews_a_recorded_session_after_the_fact(
    nc: Any, nats_url: str, repo: Path, tmp_path: Path
) -> None:
    sid, state, _ = await run_session(nats_url, rename_script(), task(repo))
    assert state.outcome == "success", state.summary
    data = tmp_path / "cli-data"
    # A critic that cannot answer: recorded as unavailable, and the exit status says so.
    gone = tmp_path / "gone.yaml"
    rc, out, err = await oopav(
        nats_url, data, "critic", "--session", sid, "--model", f"scripted:{gone}", "--json"
    )
    assert rc == 1, err
    failed = json.loads(out)
    assert failed["verdict"] == "unavailable" and "cannot read script" in failed["skipped"]
    # Asked again with a model that answers: a new call (an unavailable verdict is not reused).
    rc, out, err = await oopav(
        nats_url, data, "critic", "--session", sid[:13], "--model", "synth:", "--json"
    )
    assert rc == 0, err
    said = json.loads(out)
    assert said["session_id"] == sid and said["outcome"] == "success"
    # synth: reviews by rules: every gate that ran passed, the tests among them.
    assert said["verdict"] == "approve" and said["missing_tests"] == []
    assert 0.5 < said["confidence"] <= 1.0
    assert said["shown"] == ["task", "plan", "gates", "diff"]
    assert not said["cached"] and said["model"] == "synth:"

    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.projections.session import fold

    async with open_bus(Settings(nats_url=nats_url), name="test-critic-review") as bus:
        recorded = await bus.events.read("session", sid)
        events = await events_of(bus, sid)
    # Appended after the end, as a person's request (no loop handler), never terminal.
    assert [e.type for e in events[-5:]] == [
        "session_completed",
        "model_called",
        "critic_verdict",
        "model_called",
        "critic_verdict",
    ]
    assert events[-3].verdict == "unavailable" and events[-4].error is not None
    called, v = events[-2], events[-1]
    assert v.id == said["verdict_id"] and v.trigger == "review" and v.model_call_id == called.id
    assert v.actor.startswith("cli.critic/") and called.role == "critic"
    assert v.causation_id == called.causation_id == events[-3].id
    assert v.confidence == said["confidence"]
    # The critic saw the final diff and the gates of the last verification.
    sent = json.dumps(called.request)
    assert "fetch_page" in sent and "- tests: passed" in sent
    assert check_chain(recorded) == []
    after = fold(recorded)
    assert after.outcome == "success" and after.late_terminals == [] and after.chain_break is None

    # Asked again, the identical payload reuses the verdict; the text form prints it.
    rc, out, err = await oopav(nats_url, data, "critic", "--session", sid, "--model", "synth:")
    assert rc == 0, err
    assert f"session {sid} (success): critic approve" in out
    assert "confidence: " in out and "shown: task, plan, gates, diff" in out
    rc, out, err = await oopav(nats_url, data, "show", sid)
    assert rc == 0, err
    assert "review approve (confidence " in out
    # Replay injects the review as recorded: the session still reproduces exactly.
    await assert_replays(nats_url, sid)

    rc, out, err = await oopav(nats_url, data, "critic", "--session", "zzzz")
    assert rc != 0 and "no session matches 'zzzz'" in err


NAMED = (
    "Rename the function `fetch` to `fetch_page` in webtool/client.py, webtool/crawler.py and "
    "webtool/report.py, and keep the tests green."
)


async def test_an_inadequate_plan_is_replanned_before_acting(
    nc: Any, nats_url: str, repo: Path, tmp_path: Path
) -> None:
    from loop_harness import FILES

    narrow = plan_answer("client only", files=["webtool/client.py", "tests/test_webtool.py"])
    script = {
        "planner": [narrow, plan_answer("every file", files=FILES)],
        "actor": [rename_all(), finish()],
    }
    sid, state, events = await run_session(nats_url, script, task(repo, instruction=NAMED))
    assert state.outcome == "success", state.summary
    # The narrow plan was never proposed: the gate sent it back before any action.
    [replan] = of(events, "replan_triggered")
    assert replan.source == "adequacy"
    assert "adequacy is 0.67, below 0.75 (policy.plan_adequacy.min_score)" in replan.reason
    assert "leaves out webtool/crawler.py, webtool/report.py" in replan.reason
    kinds = [e.type for e in events]
    assert kinds.index("replan_triggered") < kinds.index("plan_proposed")
    [proposed] = of(events, "plan_proposed")
    assert proposed.adequacy == 1.0 and proposed.rationale == "every file"
    # The planner's prompt named the files the task points at, and why it plans again.
    calls = [c for c in of(events, "model_called") if c.role == "planner"]
    second = json.dumps(calls[1].request)
    assert "### Files the task points at" in second and "Why we are planning again" in second
    rc, out, err = await oopav(nats_url, tmp_path / "d", "show", sid)
    assert rc == 0, err
    assert "adequacy: The plan's adequacy is 0.67" in out and "adequacy=1.00" in out


async def test_past_its_bound_an_inadequate_plan_goes_ahead_with_its_score(
    nc: Any, nats_url: str, repo: Path
) -> None:
    narrow = plan_answer("client only", files=["webtool/client.py", "tests/test_webtool.py"])
    script = {"planner": [narrow], "actor": [rename_all(), finish()]}
    body = task(repo, instruction=NAMED, policy={"plan_adequacy": {"replans": 0}})
    _, state, events = await run_session(nats_url, script, body)
    assert state.outcome == "success", state.summary
    assert of(events, "replan_triggered") == []
    [proposed] = of(events, "plan_proposed")
    assert proposed.adequacy == 0.6666


async def test_required_tests_are_enforced_by_the_plan_s_manifest(
    nc: Any, nats_url: str, repo: Path
) -> None:
    from loop_harness import FILES, TEST_COMMAND

    sources = [f for f in FILES if not f.startswith("tests/")]
    # Words about tests, but no test file and not the test command: refused.
    words = plan_answer("rename, then run the tests", files=sources)
    command = plan_answer("rename", files=sources).replace(
        "Run the tests and check they pass", f"Run `{' '.join(TEST_COMMAND)}`"
    )
    script = {"planner": [words, command], "actor": [rename_all(), finish()]}
    body = task(repo, policy={"plan_adequacy": {"min_score": 0}})
    _, state, events = await run_session(nats_url, script, body)
    assert state.outcome == "success", state.summary
    _, second = [c for c in of(events, "model_called") if c.role == "planner"]
    # The refusal is the retry's feedback, recorded in the second call's request.
    retry = second.request["messages"][-1]["content"]
    assert retry.startswith("Your answer was rejected (schema_mismatch): tests are required")
    assert "the plan's files name no test file" in retry
    assert f"or a step that runs `{' '.join(TEST_COMMAND)}`" in retry
    [proposed] = of(events, "plan_proposed")
    assert proposed.steps[-1].description == f"Run `{' '.join(TEST_COMMAND)}`"


# -- the diagnostics and harness contract tiers ---------------------------------------------


def _insert(path: str, after: str, text: str) -> str:
    from loop_harness import action_answer

    edit = {"path": path, "search": after, "replace": after + text}
    return action_answer({"type": "search_replace", "edits": [edit]}, "insert")


async def test_a_type_error_the_change_introduces_fails_the_diagnostics_tier(
    nc: Any, nats_url: str, repo: Path
) -> None:
    bad = _insert(
        "webtool/client.py",
        "from __future__ import annotations\n",
        '\nLIMIT: int = "ten"\n',
    )
    script = {"planner": [plan_answer()], "actor": [rename_all(), bad, finish()]}
    body = task(repo, budgets={"bounces": 0}, policy={"diagnostics": True})  # opt in
    _, state, events = await run_session(nats_url, script, body)
    gates = {g.gate: g for g in of(events, "gate_evaluated")}
    assert gates["tests"].passed and gates["lint"].passed
    diag = gates["diagnostics"]
    assert not diag.passed, diag.evidence
    assert (
        "python: `" in diag.evidence and "error(s) the base version did not have" in diag.evidence
    )
    assert "webtool/client.py" in diag.evidence and "LIMIT" not in diag.evidence.split("\n")[0]
    assert '"Literal[\'ten\']" is not assignable to declared type "int"' in diag.evidence
    assert "crawler.py" not in diag.evidence.split(":\n", 1)[1]
    assert diag.execs and diag.execs[0].purpose == "gate_diagnostics"
    assert state.outcome == "failed" and "diagnostics gate" in state.summary


async def test_the_project_s_declared_checks_all_run_and_a_new_failure_fails_the_harness_tier(
    nc: Any, nats_url: str, repo: Path
) -> None:
    (repo / "Makefile").write_text(
        "lint:\n\tpython -c \"print('lint ok')\"\n\n"
        "check:\n\tpython -c \"import webtool.client as c; assert hasattr(c, 'fetch'), "
        "'the public fetch is gone'\"\n"
    )
    script = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    _, state, events = await run_session(nats_url, script, task(repo, budgets={"bounces": 0}))
    gates = {g.gate: g for g in of(events, "gate_evaluated")}
    assert gates["tests"].passed
    harness = gates["harness"]
    assert not harness.passed, harness.evidence
    lines = harness.evidence.splitlines()
    assert lines[0] == "- Makefile target check: FAILED"
    assert "the public fetch is gone" in harness.evidence
    assert "(the baseline passes this check: every error is new)" in harness.evidence
    assert [r.purpose for r in harness.execs] == ["gate_harness", "gate_harness_base"]
    assert state.outcome == "failed" and "harness gate" in state.summary


async def test_the_harness_tier_runs_every_declared_check_and_says_when_there_are_none(
    nc: Any, nats_url: str, repo: Path, tmp_path: Path
) -> None:
    (repo / "Makefile").write_text(
        "lint:\n\tpython -c \"print('lint ok')\"\n\ntypecheck:\n\tpython -c \"print('types ok')\"\n"
    )
    _, state, events = await run_session(nats_url, rename_script(), task(repo))
    assert state.outcome == "success", state.summary
    [harness] = [g for g in of(events, "gate_evaluated") if g.gate == "harness"]
    assert harness.passed and not harness.skipped
    assert harness.evidence.splitlines() == [
        "2 declared check(s):",
        "- Makefile target lint: `make lint` passed",
        "- Makefile target typecheck: `make typecheck` passed",
    ]
    bare = tmp_path / "bare"
    from loop_harness import make_repo

    make_repo(bare, pytest_suite=False, git_repo=False)
    _, _, events = await run_session(nats_url, rename_script(), task(bare))
    [skipped] = [g for g in of(events, "gate_evaluated") if g.gate == "harness"]
    assert skipped.skipped and skipped.evidence.startswith("the project declares no check commands")
