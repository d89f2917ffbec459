"""Expert iteration (STaR) records from a policy's own verified sessions (issue 25 item 4).

A session that a policy answered in the loop and the verifier passed holds the answer that
worked; when it worked only on a later attempt (a sampled retry after a failed verdict,
``policy.retry_temperature``), that answer is what the policy does not yet give at once — the
new knowledge a next generation can learn. Its SFT record's prompt carries the refusal as
feedback (the retry's prompt); :func:`first_attempt` renders it again from the same recorded
state without the feedback, which is the prompt of the session's first attempt (a failed
attempt is rolled back to the checkpoint the first prompt was read from, so the snippet is the
same), so the next generation learns to give the working answer at the first try.

:func:`star_records` keeps every verified session's answer from its first-attempt prompt and
repeats the records of sessions that needed a retry ``weight`` times: they are the few records
a generation does not already reproduce.
"""

from __future__ import annotations

from typing import Any

from oopav.models.profiles import from_builtins, render


def first_attempt(rec: dict[str, Any]) -> dict[str, Any] | None:
    """``rec`` (a compact SFT record) with its prompt rendered from its recorded state less the
    feedback, and ``retried`` (whether it had feedback); None when it has no prompt state."""
    raw = rec.get("prompt_state")
    if not raw:
        return None
    state = from_builtins(raw)
    retried = bool(state.feedback)
    if retried:
        import msgspec

        state = msgspec.structs.replace(state, feedback="")
    messages = render("compact", state)
    out = dict(rec)
    out["prompt"] = [{"role": m.role, "content": m.content} for m in messages]
    out["retried"] = retried
    return out


def star_records(
    records: list[dict[str, Any]], weight: int = 1, retried_sessions: set[str] | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every record from its first-attempt prompt, a retried one ``weight`` times; with counts
    (records in, kept, retried, rows out). A record is retried when its prompt had feedback or
    its session is in ``retried_sessions`` (under ``policy.compact_feedback: false`` a retry's
    prompt is the first prompt, so only the session says that it needed a retry)."""
    if weight < 1:
        raise ValueError(f"weight must be at least 1, got {weight}")
    out: list[dict[str, Any]] = []
    kept = retried = 0
    for rec in records:
        first = first_attempt(rec)
        if first is None:
            continue
        kept += 1
        first["retried"] = first["retried"] or rec.get("session_id") in (retried_sessions or ())
        copies = weight if first["retried"] else 1
        retried += first["retried"]
        out += [first] * copies
    return out, {"records": len(records), "kept": kept, "retried": retried, "rows": len(out)}
