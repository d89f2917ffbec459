"""Pure rules of the reflector: the signals of a group's candidates and whether the group
calls for a reflection (eligibility)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from oopav.events import catalog as ev
from oopav.events.mission import CandidateSignal

EligibilityPolicy = Literal[
    "selected_mismatch_or_all_wrong", "contradictions_only", "contradictions_or_all_wrong"
]
AllWrongStrategy = Literal["reflect_diagnose", "manual_review"]
SelectionPolicy = Literal["confidence", "label_first"]
SELECTION_POLICIES: tuple[str, ...] = get_args(SelectionPolicy)
ELIGIBILITY_POLICIES: tuple[str, ...] = get_args(EligibilityPolicy)


def candidate_signal(
    session_id: str, events: Sequence[ev.Event], diffs: Sequence[str] = ()
) -> CandidateSignal:
    """The signals of one finished session, from its events alone.

    ``verdict`` is the verifier's (a successful session passed its gates); ``label_match``
    compares it with the group's expected outcome when the task gives one, else it is the
    verdict itself; ``confidence`` is the share of evaluated (not skipped) gates that passed
    in its last verification; ``self_consistency`` the share of the group (``diffs``, one per
    candidate) that produced the same final diff."""
    task = next((e for e in events if isinstance(e, ev.TaskSubmitted)), None)
    done = next((e for e in reversed(events) if isinstance(e, ev.SessionCompleted)), None)
    outcome = done.outcome if done is not None else None
    verdict: Literal["pass", "fail"] = "pass" if outcome == "success" else "fail"
    expected = task.group.expected if task is not None and task.group is not None else None
    label_match = verdict == expected if expected is not None else verdict == "pass"
    last_bounce = max((e.bounce for e in events if isinstance(e, ev.GateEvaluated)), default=0)
    gates = [
        e
        for e in events
        if isinstance(e, ev.GateEvaluated) and e.bounce == last_bounce and not e.skipped
    ]
    confidence = sum(1 for g in gates if g.passed) / len(gates) if gates else 0.0
    steps = [
        e.guidance_step
        for e in events
        if isinstance(e, ev.ModelCalled) and e.guidance_step is not None
    ]
    consistency = None
    if diffs and done is not None:
        mine = _norm(done.diff)
        consistency = round(sum(1 for d in diffs if _norm(d) == mine) / len(diffs), 4)
    return CandidateSignal(
        session_id=session_id,
        outcome=outcome,
        verdict=verdict,
        expected=expected,
        label_match=label_match,
        confidence=round(confidence, 4),
        self_consistency=consistency,
        guidance_step=max(steps) if steps else None,
    )


def _norm(diff: str) -> str:
    return "\n".join(
        line.rstrip() for line in diff.splitlines() if not line.startswith(("index ", "diff --git"))
    )


def group_signals(sessions: Mapping[str, Sequence[ev.Event]]) -> list[CandidateSignal]:
    """Signals of every candidate, ordered by session id (never by completion order)."""
    ids = sorted(sessions)
    diffs = []
    for sid in ids:
        done = next(
            (e for e in reversed(sessions[sid]) if isinstance(e, ev.SessionCompleted)), None
        )
        diffs.append(done.diff if done is not None else "")
    return [candidate_signal(sid, sessions[sid], diffs) for sid in ids]


def selected(signals: Sequence[CandidateSignal], policy: str = "confidence") -> CandidateSignal:
    """The candidate the group would answer with.

    - ``confidence`` (default): highest confidence, then self-consistency, then the lowest
      session id — what the group would answer without knowing the labels;
    - ``label_first``: a candidate that matches its label first (when the task gives labels,
      the best answer the group *had*), then the same tie-break: confidence, self-consistency,
      lowest session id. Under it a group is a "selected mismatch" only when no candidate
      matched, so reflection targets groups that never found the answer."""
    if policy not in SELECTION_POLICIES:
        raise ValueError(
            f"unknown selection policy {policy!r}; known: {', '.join(SELECTION_POLICIES)}"
        )
    first = policy == "label_first"
    return sorted(
        signals,
        key=lambda s: (
            0 if (s.label_match or not first) else 1,
            -s.confidence,
            -(s.self_consistency or 0.0),
            s.session_id,
        ),
    )[0]


def eligibility(
    signals: Sequence[CandidateSignal],
    policy: str = "selected_mismatch_or_all_wrong",
    all_wrong_strategy: str = "reflect_diagnose",
    selection: str = "confidence",
) -> tuple[bool, str, str]:
    """(eligible, rejection reason when not, why) for a group under ``policy``; ``selection``
    says which candidate the group answers with (``selected``)."""
    if policy not in ELIGIBILITY_POLICIES:
        raise ValueError(
            f"unknown eligibility policy {policy!r}; known: {', '.join(ELIGIBILITY_POLICIES)}"
        )
    if not signals:
        return False, "ineligible", "the group has no candidates"
    matches = sum(1 for s in signals if s.label_match)
    all_wrong = matches == 0
    contradiction = 0 < matches < len(signals)
    chosen = selected(signals, selection)
    mismatch = not chosen.label_match
    facts = (
        f"{matches}/{len(signals)} candidates match their label; selected {chosen.session_id[:13]} "
        f"{'mismatches' if mismatch else 'matches'}"
    )
    if policy == "selected_mismatch_or_all_wrong":
        ok = mismatch or all_wrong
    elif policy == "contradictions_only":
        ok = contradiction
    else:
        ok = contradiction or all_wrong
    if not ok:
        return False, "ineligible", f"{policy}: {facts}"
    if all_wrong and all_wrong_strategy == "manual_review":
        return False, "manual_review", f"every candidate is wrong ({facts}); left to a person"
    mode = "diagnose" if all_wrong else "contrast"
    return True, "", f"{policy} ({mode}): {facts}"


def mean_label_match(signals: Sequence[CandidateSignal] | Sequence[Any]) -> float:
    return sum(1.0 for s in signals if s.label_match) / len(signals) if signals else 0.0
