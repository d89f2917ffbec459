"""Expert iteration records (trainer/star.py): a verified answer that needed a retry is
learned from the session's first-attempt prompt (the same state without the feedback)."""

from __future__ import annotations

from typing import Any

import pytest

from oopav.models.profiles import PromptState, render, to_builtins
from oopav.trainer.star import first_attempt, star_records

ANSWER = '<think></think>\n<action>{"type":"ast_grep"}</action>\n<state_update>{}</state_update>'


def record(feedback: str) -> dict[str, Any]:
    state = PromptState(
        role="actor",
        instruction="Rename `fetch` to `fetch_page`.",
        snippet="def fetch(url):\n    return url\n",
        path="mod.py",
        feedback=feedback,
    )
    prompt = [{"role": m.role, "content": m.content} for m in render("compact", state)]
    return {
        "prompt": prompt,
        "completion": [{"role": "assistant", "content": ANSWER}],
        "prompt_state": to_builtins(state),
    }


def test_a_retried_answer_is_learned_from_the_first_attempts_prompt() -> None:
    retried, first = record("tests failed: check_mod.py exited 1"), record("")
    assert "Last attempt refused" in retried["prompt"][0]["content"]
    out = first_attempt(retried)
    assert out is not None and out["retried"] is True
    assert out["prompt"] == first["prompt"]  # byte-identical to the first attempt's prompt
    assert out["completion"] == retried["completion"]
    plain = first_attempt(first)
    assert plain is not None and plain["retried"] is False and plain["prompt"] == first["prompt"]


def test_star_records_repeat_the_retried_and_skip_records_without_state() -> None:
    recs = [record(""), record("refused: no match"), {"prompt": [], "completion": []}]
    out, counts = star_records(recs, weight=3)
    assert counts == {"records": 3, "kept": 2, "retried": 1, "rows": 4}
    assert [r["retried"] for r in out] == [False, True, True, True]
    assert all("Last attempt" not in r["prompt"][0]["content"] for r in out)
    with pytest.raises(ValueError, match="weight must be at least 1"):
        star_records(recs, weight=0)


def test_a_session_that_needed_a_retry_counts_when_its_prompt_had_no_feedback() -> None:
    """Under policy.compact_feedback: false the retry's prompt is the first prompt: the
    session, not the prompt, says that the answer needed a retry."""
    a, b = record(""), record("")
    a["session_id"], b["session_id"] = "s-retried", "s-first"
    out, counts = star_records([a, b], weight=2, retried_sessions={"s-retried"})
    assert counts == {"records": 2, "kept": 2, "retried": 1, "rows": 3}
    assert [r["session_id"] for r in out] == ["s-retried", "s-retried", "s-first"]
