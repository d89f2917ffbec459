"""The compact prompt's feedback after a refused or undone attempt says what it was (the
compact prompt never repeats the refused answer): a rule the verifier's failed gate undid is
named with what it changed (lines, the first change), and a rejected rule is named before the
rejection. Before, a retry after a failed gate had no feedback line at all (the replan clears
the step results, and the rollback recorded nothing), so it saw the first prompt again."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    action_answer,
    assert_replays,
    finish_session,
    loop,
    of,
    rename_all,
    start,
    task,
)

PARTIAL = "id: p\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^fetch$\nfix: fetch_page\n"
NOWHERE = (
    "id: n\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^fetch_page$\nfix: fetch_page\n"
)


async def test_a_retry_after_a_failed_gate_and_a_rejection_says_what_was_refused(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    script = {
        "actor": [
            # renames only the definition: applied, and the tests fail (callers break)
            action_answer(
                {"type": "ast_grep", "rule": PARTIAL, "paths": ["webtool/client.py"]}, "def only"
            ),
            # matches nothing: rejected (no_match)
            action_answer({"type": "ast_grep", "rule": NOWHERE, "paths": ["."]}, "nowhere"),
            rename_all(),
        ]
    }
    # The test fails at the baseline (as the flywheel's tasks' do), so the observer does not
    # judge the change; the verifier's tests gate does, and rolls the partial rename back.
    check = (
        "import pathlib, sys; sys.exit(any('fetch(' in p.read_text() "
        "for p in pathlib.Path('.').rglob('*.py')))"
    )
    body = task(
        repo,
        policy={"prompt_profile": "compact"},
        budgets={"iterations": 6},
        test_command=["python", "-c", check],
    )
    async with loop(nats_url, script) as bus:
        sid = await start(bus, body)
        _state, events = await finish_session(bus, sid)
    assert of(events, "session_completed")
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    feedback = [c.prompt_state["feedback"] for c in calls]
    assert len(feedback) >= 3 and feedback[0] == "", feedback
    undone = feedback[1]
    assert "rule kind identifier, regex ^fetch$ -> fix fetch_page" in undone
    assert "gate failed" in undone or "tests" in undone
    assert (
        "webtool/client.py:" in undone and "`def fetch(" in undone and "`def fetch_page(" in undone
    )
    rejected = feedback[2]
    assert rejected.startswith("rule kind identifier, regex ^fetch_page$ -> fix fetch_page: ")
    assert "rejected (no_match)" in rejected and "no code has that shape" not in rejected
    # The retries' prompts carry it (the line the compact profile renders).
    assert "Last attempt refused: " in calls[1].request["messages"][0]["content"]
    await assert_replays(nats_url, sid)


def test_rule_brief_and_first_change() -> None:
    from oopav.decide.gates import first_change, rule_brief
    from oopav.events.actions import AstGrepAction

    assert (
        rule_brief(AstGrepAction(rule=PARTIAL))
        == "rule kind identifier, regex ^fetch$ -> fix fetch_page"
    )
    assert (
        rule_brief(AstGrepAction(pattern="$A.get($$$B)", rewrite="$A.get_v2($$$B)"))
        == "rule pattern $A.get($$$B) -> fix $A.get_v2($$$B)"
    )
    assert rule_brief(AstGrepAction(rule="id: x\n  : [")).startswith("ast_grep rule")
    diff = (
        "diff --git a/m.py b/m.py\nindex 1..2 100644\n--- a/m.py\n+++ b/m.py\n"
        "@@ -3 +3 @@\n-def get(self):\n+def get_v2(self):\n@@ -9,2 +9,2 @@\n-a\n-b\n+c\n+d\n"
    )
    assert first_change(diff) == ("m.py", 3, "def get(self):", "def get_v2(self):", 3)
    assert first_change("") is None
    only_removed = "--- a/m.py\n+++ b/m.py\n@@ -5 +4,0 @@\n-x = 1\n"
    assert first_change(only_removed) == ("m.py", 5, "x = 1", "", 1)


def test_after_a_new_plan_the_last_rejection_still_stands() -> None:
    """A replan (the stuck detector's, after repeated rejections) clears the step results; the
    last attempt's rejection is still the feedback, not an empty line."""
    from oopav.events.actions import AstGrepAction
    from oopav.handlers.support.compact import feedback
    from oopav.projections.session import ActionRecord, SessionState, StepResult

    state = SessionState(session_id="s")
    rec = ActionRecord(id="a1", type="ast_grep", hash="h", action=AstGrepAction(rule=NOWHERE))
    rec.status, rec.reason = "rejected", "no_match"
    state.actions.append(rec)
    state.recent = [
        StepResult(
            action_id="a1",
            type="ast_grep",
            ok=False,
            summary="rejected (no_match): pattern matched 0 sites in 1 file(s) (the pattern is valid code; no code has that shape). Fix: loosen the pattern",
        )
    ]
    assert feedback(state) == (
        "rule kind identifier, regex ^fetch_page$ -> fix fetch_page: "
        "rejected (no_match): pattern matched 0 sites in 1 file(s)."
    )
    state.recent = []  # a new plan
    assert feedback(state) == (
        "rule kind identifier, regex ^fetch_page$ -> fix fetch_page: rejected (no_match)"
    )
    state.actions[-1].status = "rolled_back"  # undone by a failed gate: the verifier's line
    state.rejected_actions = ["the tests gate failed after …; undone"]
    assert feedback(state) == "the tests gate failed after …; undone"


async def test_a_retry_after_the_observer_saw_the_tests_break_says_so(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """Tests that passed before a change and fail after it make the observer ask for a new
    plan (rule 5) without undoing the change; the retry's feedback says which rule broke them
    and the first failure (before, its feedback line was empty: the new plan cleared the step
    results and nothing was rolled back)."""
    script = {
        "actor": [
            # renames only the definition: the callers break, the tests fail
            action_answer(
                {"type": "ast_grep", "rule": PARTIAL, "paths": ["webtool/client.py"]}, "def only"
            ),
            rename_all(),
        ]
    }
    body = task(repo, policy={"prompt_profile": "compact"}, budgets={"iterations": 6})
    async with loop(nats_url, script) as bus:
        sid = await start(bus, body)
        _state, events = await finish_session(bus, sid)
    assert of(events, "session_completed")
    observed = [o for o in of(events, "observation_recorded") if o.phase == "change"]
    assert observed and observed[0].observer_action == "replan", [
        (o.observer_action, o.reasons) for o in observed
    ]
    calls = [c for c in of(events, "model_called") if c.role == "actor"]
    feedback = [c.prompt_state["feedback"] for c in calls]
    assert len(feedback) >= 2 and feedback[0] == "", feedback
    broke = feedback[1]
    assert broke.startswith("rule kind identifier, regex ^fetch$ -> fix fetch_page: "), broke
    assert "tests passed before" in broke and "fail after" in broke, broke
    # The first failure, with the workspace's path left out (it only costs the small budget).
    assert "first failure: ImportError: cannot import name 'fetch'" in broke, broke
    assert "workspaces" not in broke, broke
    await assert_replays(nats_url, sid)
