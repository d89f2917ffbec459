"""Rows at a policy's retry states (trainer/feedback.py, bench/flywheel.py --feedback-positives):
a second or later attempt's prompt (the loop's feedback on the refused attempt included) paired
with a verified answer for the same task — the only data that teaches acting on feedback."""

from __future__ import annotations

from typing import Any

import pytest

from oopav.models.profiles import PromptState, render, to_builtins
from oopav.trainer.feedback import feedback_rows


def answer(name: str) -> str:
    return f'<think></think>\n<action>{{"type":"ast_grep","rule":"{name}"}}</action>\n<state_update>{{}}</state_update>'


def state(task: str, feedback: str = "") -> PromptState:
    return PromptState(
        role="actor",
        instruction=f"Rename `{task}` to `{task}_v2`.",
        snippet=f"def f(x):\n    return x.{task}()\n",
        path="mod.py",
        feedback=feedback,
    )


def prompt(s: PromptState) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in render("compact", s)]


def verified(task: str, sid: str, ans: str, feedback: str = "") -> dict[str, Any]:
    s = state(task, feedback)
    return {
        "prompt": prompt(s),
        "completion": [{"role": "assistant", "content": ans}],
        "prompt_state": to_builtins(s),
        "session_id": sid,
    }


def refused(task: str, sid: str, ans: str, feedback: str = "") -> dict[str, Any]:
    s = state(task, feedback)
    return {
        "prompt": prompt(s),
        "rejected": ans,
        "status": "rejected",
        "prompt_state": to_builtins(s),
        "session_id": sid,
    }


FB = "the tests gate failed after rule kind identifier, regex ^get$ -> fix get_v2; undone"


def test_a_retry_state_gets_the_tasks_verified_answer_under_its_feedback_prompt() -> None:
    teacher = verified("get", "teacher-1", answer("good"))  # synth: on the same task
    states = [
        refused("get", "s1", answer("bad"), ""),  # the first attempt: not a retry state
        refused("get", "s1", answer("bad2"), FB),  # the second attempt, after the feedback
    ]
    rows, counts = feedback_rows([teacher], states, {"s1"}, weight=3)
    assert counts["states"] == 1 and counts["first_attempts"] == 1 and counts["rows"] == 3
    row = rows[0]
    assert row["prompt"] == prompt(state("get", FB))  # byte-identical to the loop's retry prompt
    assert "Last attempt refused: the tests gate failed" in row["prompt"][0]["content"]
    assert row["completion"] == [{"role": "assistant", "content": answer("good")}]
    assert row["answer_session_id"] == "teacher-1" and row["session_id"] == "s1"
    assert counts["feedback_kinds"] == {"the": 1}


def test_the_policys_own_late_win_is_a_retry_state_and_is_preferred_as_the_answer() -> None:
    """A session won on its third attempt: the winning record's own prompt (with feedback) is a
    retry state, and its answer — listed first — is the target for the refused second attempt
    too, rather than the teacher's."""
    win = verified("get", "s2", answer("own"), "rejected (no_match): 0 sites")
    teacher = verified("get", "teacher-2", answer("teacher"))
    states = [refused("get", "s2", answer("bad"), FB), win]
    rows, counts = feedback_rows([win, teacher], states, {"s2"})
    assert counts["rows"] == 2 and counts["unmatched"] == 0
    assert {r["completion"][0]["content"] for r in rows} == {answer("own")}
    assert {r["prompt"][0]["content"] for r in rows} == {
        prompt(state("get", FB))[0]["content"],
        prompt(state("get", "rejected (no_match): 0 sites"))[0]["content"],
    }


def test_held_out_sessions_unmatched_states_and_repeats_are_left_out() -> None:
    teacher = verified("get", "teacher", answer("good"))
    states = [
        refused("get", "held-out", answer("bad"), FB),  # not a training session
        refused("put", "s3", answer("bad"), FB),  # no verified answer for this task
        refused("get", "s4", answer("bad"), FB),
        refused("get", "s4", answer("worse"), FB),  # the same state again: one row
    ]
    rows, counts = feedback_rows([teacher], states, {"s3", "s4"})
    assert counts["outside"] == 1 and counts["unmatched"] == 1 and counts["repeats"] == 1
    assert counts["rows"] == 1 and rows[0]["session_id"] == "s4"
    with pytest.raises(ValueError, match="weight must be at least 1"):
        feedback_rows([teacher], states, None, weight=0)
