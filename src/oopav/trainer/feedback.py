"""Verified answers at a policy's retry states: learning to act on the loop's feedback (issue 25).

A compact prompt of a session's second or later attempt carries the last refusal as a feedback
line (``Last attempt refused: …``, models/profiles.py). A policy trained only on generation 0
(``synth:`` from examples, which almost never fails) has never seen one, so it answers them out
of distribution; its own sessions are the only place such states occur. :func:`feedback_rows`
turns them into SFT rows: each **retry state** (a recorded prompt state with a non-empty
feedback) of the sessions named in ``sessions`` — a refused answer's state (a negatives record)
or the state of a verified late attempt (an SFT record) — is paired with **a verified answer for
the same task**: the answer of a verified record whose first-attempt prompt (the state less its
feedback, trainer/star.py ``first_attempt``) is byte-identical to the retry state's. A failed
attempt is rolled back to the checkpoint the first prompt was read from, so a retry's state is
the first state plus the feedback line; the verified answer is the policy's own later winning
attempt or a teacher's session on the same task (the flywheel's ``--failure-positives`` runs
``synth:`` from the task's example there).

The row's prompt is the retry state rendered with the compact profile (byte-identical to what
the loop sends a retry), its completion the verified answer; ``weight`` copies each. A state
without a verified answer for its task is counted ``unmatched`` and left out; a record of a
session outside ``sessions`` (a held-out task) is never used.
"""

from __future__ import annotations

import json
from typing import Any

from oopav.models.profiles import from_builtins, render
from oopav.trainer.preference import _answer, _key
from oopav.trainer.star import first_attempt


def _retry_state(rec: dict[str, Any]) -> bool:
    raw = rec.get("prompt_state") or {}
    return bool(raw.get("feedback"))


def feedback_rows(
    verified: list[dict[str, Any]],
    states: list[dict[str, Any]],
    sessions: set[str] | None = None,
    weight: int = 1,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """SFT rows (prompt: a retry state with its feedback line; completion: a verified answer for
    the task) and their counts.

    ``verified``: compact SFT records of verified sessions with their ``prompt_state`` (the
    first found for a first-attempt prompt is the answer used, so list the preferred source
    first); ``states``: records (negatives or SFT) whose ``prompt_state`` may carry feedback.
    Only ``states`` of ``sessions`` are used (None: all)."""
    if weight < 1:
        raise ValueError(f"weight must be at least 1, got {weight}")
    by_first: dict[str, dict[str, Any]] = {}
    for rec in verified:
        first = first_attempt(rec)
        if first is not None:
            by_first.setdefault(_key(first["prompt"]), rec)
    counts: dict[str, Any] = {"verified_tasks": len(by_first), "states": 0, "first_attempts": 0, "outside": 0,
              "unmatched": 0, "repeats": 0, "rows": 0}  # fmt: skip
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    feedback: dict[str, int] = {}
    for rec in states:
        if sessions is not None and rec.get("session_id") not in sessions:
            counts["outside"] += 1
            continue
        if not _retry_state(rec):
            counts["first_attempts"] += 1
            continue
        counts["states"] += 1
        first = first_attempt(rec)
        good = by_first.get(_key(first["prompt"])) if first is not None else None
        if good is None:
            counts["unmatched"] += 1
            continue
        # The retry's prompt exactly as the loop renders it (feedback line included).
        prompt = [
            {"role": m.role, "content": m.content}
            for m in render("compact", from_builtins(rec["prompt_state"]))
        ]
        answer = _answer(good["completion"])
        key = (json.dumps(prompt, ensure_ascii=False), answer)
        if key in seen:
            counts["repeats"] += 1
            continue
        seen.add(key)
        why = str(rec["prompt_state"].get("feedback", ""))
        kind = why.split(":", 1)[0].split(" ", 1)[0] if why else ""
        feedback[kind] = feedback.get(kind, 0) + 1
        row = {
            "prompt": prompt,
            "completion": [{"role": "assistant", "content": answer}],
            "session_id": rec.get("session_id"),
            "answer_session_id": good.get("session_id"),
            "feedback": why,
        }
        out += [row] * weight
    counts["rows"] = len(out)
    counts["distinct"] = len(seen)
    counts["feedback_kinds"] = feedback
    return out, counts
