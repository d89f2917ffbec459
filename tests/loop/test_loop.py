"""The loop end to end on a real nats-server with the real sandbox and scripted models."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from loop_harness import (
    FILES,
    PYTEST,
    action_answer,
    assert_causal,
    assert_replays,
    assert_unique_ids,
    events_of,
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
    verdict,
    wait_for,
)


def diff_files(diff: str) -> list[str]:
    return sorted(
        line.split(" b/", 1)[1] for line in diff.splitlines() if line.startswith("diff --git ")
    )


async def test_success_path(nc, nats_url: str, data_dir: Path, example_repo: Path) -> None:
    """The example task with its own pytest suite."""
    repo = example_repo
    script = rename_script()
    _sid, state, events = await run_session(nats_url, script, task(repo, test_command=PYTEST))
    assert state.outcome == "success", state.summary
    assert diff_files(state.diff) == sorted(FILES)
    assert "-def fetch(" in state.diff and "+def fetch_page(" in state.diff
    assert "+from webtool.client import fetch_page" in state.diff
    gates = {g.gate: g for g in of(events, "gate_evaluated")}
    for name in ("stubs", "parse", "tests", "lint"):
        assert gates[name].passed and not gates[name].skipped, (name, gates[name].evidence)
    assert gates["critic"].skipped
    assert len(of(events, "plan_proposed")) == 1
    assert len(of(events, "action_applied")) == 1
    assert of(events, "verification_completed")[0].passed
    assert types(events)[-1] == "session_completed"
    assert_unique_ids(events)
    assert_causal(events)
    # The original repository is untouched: the work happened in the session's workspace.
    assert "def fetch(" in (repo / "webtool" / "client.py").read_text()


async def test_replay_of_a_git_worktree_session(
    nc, nats_url: str, data_dir: Path, example_repo: Path
) -> None:
    script = rename_script()
    sid, state, _ = await run_session(
        nats_url, script, task(example_repo, test_command=["python", "-m", "pytest", "-q"])
    )
    assert state.outcome == "success", state.summary
    await assert_replays(nats_url, sid)


async def test_failing_gate_replans_and_then_succeeds(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer("first try"), plan_answer("second try")],
        "actor": [rename_definition_only(), finish("half"), rename_all(), finish("all")],
    }
    async with loop(nats_url, script) as bus:
        # Per-action tests off: the tests gate is what catches the half rename here.
        sid = await start(bus, task(repo, policy={"tests_per_action": False}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    tests_gates = [g for g in of(events, "gate_evaluated") if g.gate == "tests"]
    assert [g.passed for g in tests_gates] == [False, True]
    assert [g.bounce for g in tests_gates] == [0, 1]
    replans = of(events, "replan_triggered")
    assert [r.source for r in replans] == ["verifier"]
    assert "tests gate failed" in replans[0].reason and replans[0].evidence
    # The replan follows the failed verification and precedes the second plan.
    order = types(events)
    failed_at = order.index("verification_completed")
    assert order.index("replan_triggered") > failed_at
    plans = of(events, "plan_proposed")
    assert [p.attempt for p in plans] == [1, 2]
    assert plans[1].causation_id == replans[0].id
    assert [v.passed for v in of(events, "verification_completed")] == [False, True]
    # The replan's gate scores before and after, and the rollback to the baseline it started from.
    scored = of(events, "replan_scored")
    assert len(scored) == 1 and scored[0].replan_id == replans[0].id
    assert scored[0].before["tests"] is False and scored[0].after["tests"] is True
    assert scored[0].score_after > scored[0].score_before
    rolled = of(events, "workspace_rolled_back")
    assert len(rolled) == 1 and rolled[0].source == "verifier"
    order = [e.id for e in events]
    assert order.index(rolled[0].id) < order.index(replans[0].id)
    assert state.budgets_used.bounces == 1
    assert of(events, "session_completed")[0].metrics["bounces"] == 1
    assert sorted(diff_files(state.diff)) == sorted(FILES)
    assert_unique_ids(events)
    assert_causal(events)
    await assert_replays(nats_url, sid)


async def test_iteration_budget_ends_a_session_that_never_finishes(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    writes = [
        action_answer({"type": "write_file", "path": f"notes{i}.txt", "content": f"{i}\n"})
        for i in range(10)
    ]
    script = {"planner": [plan_answer(steps=8)], "actor": writes}
    sid, state, events = await run_session(nats_url, script, task(repo, budgets={"iterations": 2}))
    assert state.outcome == "aborted", state.summary
    over = of(events, "budget_exceeded")
    assert [(b.budget, b.limit, b.used) for b in over] == [("iterations", 2, 2)]
    assert len(of(events, "action_proposed")) == 2
    assert len(of(events, "action_applied")) == 2
    assert not of(events, "gate_evaluated")
    assert types(events)[-1] == "session_completed"
    assert of(events, "session_completed")[0].reason == "budget"
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


async def test_a_plan_applied_on_the_last_iteration_is_still_verified(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """The iteration budget limits attempts: the hand-over of a plan whose every step was
    applied within it goes to the verifier, not to an ``aborted: budget``."""
    writes = [
        action_answer({"type": "write_file", "path": f"notes{i}.txt", "content": f"{i}\n"})
        for i in range(2)
    ]
    script = {"planner": [plan_answer(steps=2)], "actor": writes}
    sid, state, events = await run_session(nats_url, script, task(repo, budgets={"iterations": 2}))
    assert not of(events, "budget_exceeded")
    assert len(of(events, "action_applied")) == 2
    assert of(events, "verification_completed"), types(events)
    assert state.outcome == "success", state.summary
    await assert_replays(nats_url, sid)


async def test_bounce_budget_fails_a_session_whose_tests_keep_failing(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer("a"), plan_answer("b")],
        # The failed gate rolls the workspace back, so the second attempt does the half again.
        "actor": [
            rename_definition_only(),
            finish("half"),
            rename_definition_only(),
            finish("still half"),
        ],
    }
    async with loop(nats_url, script) as bus:
        body = task(repo, budgets={"bounces": 1}, policy={"tests_per_action": False})
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "failed", state.summary
    assert [v.failed_gate for v in of(events, "verification_completed")] == ["tests", "tests"]
    over = of(events, "budget_exceeded")
    assert [(b.budget, b.limit, b.used) for b in over] == [("bounces", 1, 2)]
    assert len(of(events, "replan_triggered")) == 1
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


async def test_stuck_actor_is_perturbed_then_aborted(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer("first"), plan_answer("perturbed")],
        "actor": [never_matches() for _ in range(8)],
    }
    sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "aborted", state.summary
    assert of(events, "session_completed")[0].reason == "stuck"
    rejected = of(events, "action_rejected")
    assert len(rejected) == 6 and all(r.reason == rejected[0].reason for r in rejected)
    stuck = of(events, "stuck_detected")
    assert [(s.pattern, s.count, s.response) for s in stuck] == [
        ("repeat", 3, "replan"),
        ("repeat", 3, "abort"),
    ]
    replans = of(events, "replan_triggered")
    assert len(replans) == 1 and replans[0].source == "actor" and replans[0].perturbation
    assert replans[0].causation_id == stuck[0].causation_id
    assert len(of(events, "plan_proposed")) == 2
    # Nothing was written: the repository never changed.
    assert not of(events, "action_applied") and state.diff == ""
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


async def test_critic_reject_then_revise_then_approve(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer("first"), plan_answer("revised")],
        # The rejected change is rolled back: the revised plan applies it again.
        "actor": [rename_all(), finish(), rename_all(), finish("reviewed")],
        "critic": [verdict("reject", "the docstring still says fetch"), verdict("approve", "ok")],
    }
    sid, state, events = await run_session(nats_url, script, task(repo, policy={"critic": True}))
    assert state.outcome == "success", state.summary
    verdicts = of(events, "critic_verdict")
    assert [v.verdict for v in verdicts] == ["reject", "approve"]
    assert verdicts[0].reasons == ["the docstring still says fetch"]
    replans = of(events, "replan_triggered")
    assert len(replans) == 1 and replans[0].source == "verifier"
    assert "docstring" in replans[0].evidence
    order = [e.id for e in events]
    assert order.index(verdicts[0].id) < order.index(replans[0].id) < order.index(verdicts[1].id)
    critic_gates = [g for g in of(events, "gate_evaluated") if g.gate == "critic"]
    assert [(g.passed, g.skipped) for g in critic_gates] == [(False, False), (True, False)]
    assert state.budgets_used.bounces == 1
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


async def test_critic_garbage_is_unavailable_and_does_not_block(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer()],
        "actor": [rename_all(), finish()],
        "critic": ["I think it is fine, probably {not json"],
    }
    sid, state, events = await run_session(nats_url, script, task(repo, policy={"critic": True}))
    assert state.outcome == "success", state.summary
    verdicts = of(events, "critic_verdict")
    assert [v.verdict for v in verdicts] == ["unavailable"]
    critic_gate = [g for g in of(events, "gate_evaluated") if g.gate == "critic"]
    assert [(g.passed, g.skipped) for g in critic_gate] == [(True, True)]
    assert not of(events, "replan_triggered")
    await assert_replays(nats_url, sid)


async def test_garbage_actions_are_retried_then_the_budget_fails_the_session(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "planner": [plan_answer()],
        "actor": ["<action>{not json</action>", "no tags at all", "<action>{}</action>"],
    }
    sid, state, events = await run_session(
        nats_url, script, task(repo, budgets={"retries_per_phase": 2})
    )
    assert state.outcome == "failed", state.summary
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    assert len(calls) == 3
    # Each retry tells the model what was wrong with the previous answer.
    assert len(calls[1].request["messages"]) > len(calls[0].request["messages"])
    over = of(events, "budget_exceeded")
    assert [(b.budget, b.limit, b.used, b.phase) for b in over] == [
        ("retries_per_phase", 2, 3, "acting")
    ]
    assert not of(events, "action_proposed")
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


async def test_permission_request_waits_for_a_grant(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from oopav.sandbox import build_grant

    command = action_answer(
        {"type": "run_command", "argv": ["python", "-c", "print(6 * 7)"]}, "run"
    )
    script = {"planner": [plan_answer()], "actor": [command, finish("ran it")]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo))
        events = await wait_for(bus, sid, "permission_requested")
        asked = of(events, "permission_requested")[0]
        assert asked.scope.startswith("exec:python")
        assert not of(events, "action_applied")
        grant = build_grant(sid, "exec:python", uses=1)
        await bus.events.append(grant)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    applied = of(events, "action_applied")
    assert len(applied) == 1 and applied[0].action_id == asked.action_id
    assert applied[0].ok and "42" in applied[0].stdout_tail
    assert applied[0].grants_used == [grant.id]
    order = [e.id for e in events]
    assert order.index(asked.id) < order.index(grant.id) < order.index(applied[0].id)
    assert_unique_ids(events)
    await assert_replays(nats_url, sid)


async def test_an_unattended_run_refuses_an_ungranted_scope_instead_of_waiting(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """With ``policy.escalation: abort`` nobody grants anything: an action whose scope needs a
    grant is refused at once (the model hears why) instead of a wait only the phase's wall
    budget ends (seen in the flywheel bench: a policy's `run_command` stalled its session)."""
    command = action_answer(
        {"type": "run_command", "argv": ["python", "-c", "print(6 * 7)"]}, "run"
    )
    script = {"planner": [plan_answer()], "actor": [command, rename_all(), finish()]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy={"escalation": "abort"}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    assert not of(events, "permission_requested")
    (refused,) = of(events, "action_rejected")
    assert refused.reason == "permission_denied" and "unattended" in refused.message
    assert refused.details["scope"].startswith("exec:python")
    await assert_replays(nats_url, sid)


async def test_a_runaway_path_or_a_failed_write_is_refused_not_a_crash(
    nc, nats_url: str, data_dir: Path, repo: Path, monkeypatch
) -> None:
    """A policy's garbage path (300 bytes in one name: ENAMETOOLONG) and a write the file
    system refuses after planning (no space left) each end in ``action_rejected`` with the
    reason, the workspace as it was; the session goes on to succeed. Both crashed the actor
    before (the flywheel: 13 of 100 held-out sessions dead-lettered)."""
    import errno

    from oopav.sandbox import apply

    long_name = action_answer(
        {"type": "write_file", "path": "a" * 300 + ".py", "content": "x = 1\n"}, "write"
    )
    real_apply = apply.apply_plan
    failed: list[int] = []

    def full_disk(root, plan):  # type: ignore[no-untyped-def]
        if not failed:  # the first file action only
            failed.append(1)
            (root / "half_written.py").write_text("partial")
            raise OSError(errno.ENOSPC, "No space left on device", str(root / "webtool"))
        return real_apply(root, plan)

    monkeypatch.setattr(apply, "apply_plan", full_disk)
    script = {
        "planner": [plan_answer()],
        "actor": [long_name, rename_all(), rename_all(), finish()],
    }
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, budgets={"retries_per_phase": 3}))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    rejected = of(events, "action_rejected")
    assert [r.reason for r in rejected] == ["bad_path", "apply_failed"]
    assert "more than a file name may have" in rejected[0].message
    assert "No space left" in rejected[1].message
    assert not of(events, "session_completed")[0].reason
    diff = "".join(a.diff for a in of(events, "action_applied"))
    assert "half_written" not in diff  # the failed write's part was undone


async def test_replay_detects_a_tampered_model_response(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from oopav.replay import verify_session

    script = rename_script()
    sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success"
    first_actor_call = next(e for e in events if e.type == "model_called" and e.role == "actor")

    def tamper(recorded):  # the recorded answer now renames to another name
        import msgspec

        return [
            (
                seq,
                msgspec.structs.replace(e, response=e.response.replace("fetch_page", "get_page"))
                if e.id == first_actor_call.id
                else e,
            )
            for seq, e in recorded
        ]

    report = await verify_session(nats_url, sid, tamper=tamper, idle_timeout=10.0)
    assert not report.ok
    d = report.first_divergence
    assert d is not None and d.recorded_type == "action_proposed", d
    assert d.field is not None and d.field.startswith("action"), d
    assert events[d.index].type == "action_proposed"


def _spawn(nats_url: str, data_dir: Path, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OOPAV_DATA_DIR": str(data_dir), "OOPAV_LOG_LEVEL": "WARNING"}
    cmd = [sys.executable, "-m", "oopav.cli", "--nats-url", nats_url, "handler", name]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def test_actor_process_killed_mid_session_and_restarted(
    nc, nats_url: str, data_dir: Path, repo: Path, tmp_path: Path
) -> None:
    """The actor runs as its own process (`oopav handler actor`), is SIGKILLed while the session
    waits on it, and a new process picks the session up where the stream says it is: the
    scripted model continues at the right answer and no event is duplicated."""
    from oopav.sandbox import build_grant

    command = action_answer(
        {"type": "run_command", "argv": ["python", "-c", "print(6 * 7)"]}, "run"
    )
    actor_script = [command, rename_all(), finish()]
    script_file = tmp_path / "script.yaml"
    plan = plan_answer(steps=3)
    script_file.write_text(yaml.safe_dump({"planner": [plan], "actor": actor_script}))
    others = ("intake", "grants", "observer", "orient", "planner", "verifier")
    first = _spawn(nats_url, data_dir, "actor")
    second = None
    try:
        async with loop(nats_url, names=others) as bus:
            sid = await start(bus, task(repo, model=f"scripted:{script_file}"))
            events = await wait_for(bus, sid, "permission_requested")
            assert len([e for e in of(events, "model_called") if e.role == "actor"]) == 1
            first.send_signal(signal.SIGKILL)
            assert await asyncio.to_thread(first.wait, 30) == -signal.SIGKILL
            grant = build_grant(sid, "exec:python", uses=1)
            await bus.events.append(grant)
            second = _spawn(nats_url, data_dir, "actor")
            state, events = await finish_session(bus, sid)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                await asyncio.to_thread(proc.wait, 30)
    assert state.outcome == "success", state.summary
    assert_unique_ids(events)
    assert_causal(events)
    assert len(of(events, "plan_proposed")) == 1
    calls = [e for e in of(events, "model_called") if e.role == "actor"]
    # Each scripted answer served exactly once, in order, across the two processes.
    assert [c.response for c in calls] == actor_script
    applied = of(events, "action_applied")
    assert [a.ok for a in applied] == [True, True]
    assert applied[0].grants_used == [grant.id] and "42" in applied[0].stdout_tail
    assert sorted(diff_files(state.diff)) == sorted(FILES)
    await assert_replays(nats_url, sid)


async def test_a_change_applied_but_never_recorded_is_undone_before_the_next_prompt(
    nats_url: str, repo: Path
) -> None:
    """A crash between applying an action and storing its events leaves the workspace ahead
    of the stream (seen when a cluster's stream leader died mid-append). The redelivered step
    must prompt from the files the stream describes, or its replay drifts."""
    others = ("intake", "grants", "observer", "orient", "planner", "verifier")
    async with loop(nats_url, {"planner": [plan_answer()]}, names=others) as bus:
        sid = await start(bus, task(repo))
        events = await wait_for(bus, sid, "plan_proposed")
        workspace = Path(of(events, "workspace_prepared")[0].path)
        client = workspace / "webtool" / "client.py"
        # What a lost attempt would have left behind: the rename, on disk, with no event.
        client.write_text(client.read_text().replace("def fetch(", "def fetch_page("))
        async with loop(nats_url, {"actor": [rename_all(), finish()]}, names=("actor",)):
            state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    first = next(e for e in of(events, "model_called") if e.role == "actor")
    prompt = str(first.request)
    assert "def fetch(url" in prompt and "def fetch_page(url" not in prompt
    await assert_replays(nats_url, sid)


async def test_an_interrupted_session_replays(nats_url: str, repo: Path) -> None:
    """Ctrl-C on `oopav run` while the observer's baseline test run is in flight: the session
    ends aborted(interrupted) by `run`, and `replay --verify` reproduces it (the abort is
    injected like a person's grant; the baseline that never finished has nothing to serve)."""
    from oopav.services import abort_interrupted

    slow = ["python", "-c", "import time; time.sleep(5)"]
    async with loop(nats_url, {"planner": [plan_answer()]}) as bus:
        # fresh_baseline: the same tree was measured before (an earlier run of this test),
        # and this test needs the baseline in flight.
        sid = await start(bus, task(repo, test_command=slow, policy={"fresh_baseline": True}))
        await wait_for(bus, sid, "task_submitted")
        await asyncio.sleep(1.5)  # the observer is preparing the workspace / baseline now
        # What `oopav run` writes on Ctrl-C, while the observer's work is in flight.
        state = await abort_interrupted(bus, sid)
        assert state.outcome == "aborted" and state.end_reason == "interrupted"
        events = await events_of(bus, sid)
    assert types(events)[-1] == "session_completed"
    await assert_replays(nats_url, sid)
