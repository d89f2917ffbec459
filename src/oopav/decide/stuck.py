"""Stuck detection on canonical action hashes (``oopav.events.actions.action_hash``).

An agent that repeats itself is not going to get unstuck by trying once more: the same action
N times, two actions alternating (A, B, A, B: undo / redo), or K failed actions in a row. The
first time that happens the session replans with a perturbation (a different tool, a smaller
step); the second time it aborts, so that nothing loops forever (DESIGN invariant 8).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, NamedTuple

StuckPattern = Literal["repeat", "alternation", "errors", "similar"]

DEFAULT_REPEAT = 3
DEFAULT_ALTERNATION = 4
DEFAULT_ERRORS = 3
DEFAULT_MAX_REPLANS = 1

PERTURBATIONS: tuple[str, ...] = (
    "Use a different tool than in the last actions (for example an ast-grep rule instead of a "
    "search/replace patch, or the reverse).",
    "Take a smaller step: change one file or one occurrence, then observe the result.",
    "Re-read the files involved before acting; quote the exact current text you will change.",
    "Question the plan: state what the last actions assumed and which assumption was wrong.",
)
"""Instructions appended to a stuck replan. Chosen by the stuck count, so a replay picks the
same one."""


class StuckMatch(NamedTuple):
    pattern: StuckPattern
    hashes: list[str]
    """The tail of the history that forms the pattern, oldest first."""
    count: int  # type: ignore[assignment]  # a field named like tuple.count; callers read .count
    """How many actions form the pattern (at least the threshold; the whole run when longer)."""


def _repeat_run(hashes: Sequence[str]) -> int:
    last = hashes[-1]
    run = 0
    for h in reversed(hashes):
        if h != last:
            break
        run += 1
    return run


def _alternation_run(hashes: Sequence[str]) -> int:
    """Length of the A, B, A, B tail with A != B (0 when the last two are equal)."""
    if len(hashes) < 2 or hashes[-1] == hashes[-2]:
        return 0
    a, b = hashes[-1], hashes[-2]
    run = 0
    for i, h in enumerate(reversed(hashes)):
        if h != (a if i % 2 == 0 else b):
            break
        run += 1
    return run


def detect_stuck(
    hashes: Sequence[str],
    oks: Sequence[bool] | None = None,
    *,
    repeat: int = DEFAULT_REPEAT,
    alternation: int = DEFAULT_ALTERNATION,
    errors: int = DEFAULT_ERRORS,
) -> StuckMatch | None:
    """The stuck pattern at the end of an action history, or None.

    ``hashes`` are the canonical hashes of the session's actions, oldest first; ``oks`` (same
    length, when given) whether each action succeeded. Only the tail matters: a pattern that
    was broken by a different action is no longer a loop. When several patterns match, the
    first of ``repeat``, ``alternation``, ``errors`` is reported: a repeat is the most specific
    evidence (an alternation of length 4 can never also be a repeat).
    """
    if oks is not None and len(oks) != len(hashes):
        raise ValueError(
            f"oks has {len(oks)} entries for {len(hashes)} hashes; give one per action"
        )
    if not hashes:
        return None
    run = _repeat_run(hashes)
    if run >= repeat:
        return StuckMatch("repeat", list(hashes[-run:]), run)
    run = _alternation_run(hashes)
    if run >= alternation:
        return StuckMatch("alternation", list(hashes[-run:]), run)
    if oks is not None:
        failed = 0
        for ok in reversed(oks):
            if ok:
                break
            failed += 1
        if failed >= errors:
            return StuckMatch("errors", list(hashes[-failed:]), failed)
    return None


def next_response(
    previous_stuck_count: int, *, max_replans: int = DEFAULT_MAX_REPLANS
) -> tuple[Literal["replan", "abort"], str | None]:
    """What to do about a detected loop, given how many were detected before in the session.

    The first ``max_replans`` times (default once): ``("replan", perturbation)`` with the
    perturbation ``PERTURBATIONS[previous_stuck_count % len(PERTURBATIONS)]``; after that
    ``("abort", None)``, because a second loop after a perturbed replan means the model cannot
    find a way and more attempts only spend budget.
    """
    if previous_stuck_count < 0:
        raise ValueError(f"previous_stuck_count must be >= 0, got {previous_stuck_count}")
    if previous_stuck_count < max_replans:
        return "replan", PERTURBATIONS[previous_stuck_count % len(PERTURBATIONS)]
    return "abort", None


SIMILARITY = 0.9
SIMILAR_RUN = 3


def similarity(a: str, b: str) -> float:
    """How alike two outputs are, 0..1 (difflib's ratio on the texts; deterministic)."""
    import difflib

    if a == b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def detect_similar(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    *,
    threshold: float = SIMILARITY,
    run: int = SIMILAR_RUN,
) -> StuckMatch | None:
    """Fuzzy repetition: the last ``run`` outputs (canonical actions or plans, oldest first)
    are each more than ``threshold`` similar to the one before — a loop that exact hashes miss
    (a patch retried with a changed comment, a plan reworded). ``ids`` name them in the match
    (default: their positions)."""
    if len(texts) < run:
        return None
    tail = list(texts[-run:])
    if all(similarity(x, y) > threshold for x, y in itertools.pairwise(tail)):
        names = (
            list(ids[-run:])
            if ids is not None
            else [str(i) for i in range(len(texts) - run, len(texts))]
        )
        return StuckMatch("similar", names, run)
    return None
