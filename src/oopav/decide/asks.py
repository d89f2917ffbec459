"""Questions the actor asks a person (the ``ask`` action): whether an earlier answer, of the
session or of its mission, answers a new question already. Pure: plain data in, a decision out.

Similarity is over normalised text: lower case, words only, common function words dropped
("Should I keep the old API?" and "should we keep the old api" are the same question), scored
as the overlap of the two word sets (Jaccard). A question with options reuses only an answer
that is one of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# At or above this, an earlier answer is taken for a new question without asking again.
REUSE_SIMILARITY = 0.8

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    "a an the i we you it is are be do does did should shall can could would will to of in on "
    "for or and this that these those there here please me us my our your with by at as what "
    "which".split()
)


@dataclass(frozen=True, slots=True)
class Answered:
    """An answered question: its text, the answer, who gave it, and where it was recorded."""

    question: str
    answer: str
    answered_by: str
    event_id: str
    session_id: str


def normalise(text: str) -> tuple[str, ...]:
    """The question's content words, in order (lower case, punctuation and function words
    dropped; a question of function words only keeps them)."""
    words = _WORD.findall(text.lower())
    content = tuple(w for w in words if w not in _STOP)
    return content or tuple(words)


def similarity(a: str, b: str) -> float:
    """How alike two questions are, 0..1: the overlap of their content words."""
    wa, wb = set(normalise(a)), set(normalise(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def reusable(
    question: str,
    options: Sequence[str],
    answered: Sequence[Answered],
    *,
    threshold: float = REUSE_SIMILARITY,
) -> tuple[Answered, float] | None:
    """The earlier answer to take for ``question`` and its similarity, or None (ask a person).
    The most similar wins; among equals, the latest (``answered`` is oldest first)."""
    best: tuple[Answered, float] | None = None
    for prior in answered:
        if options and prior.answer not in options:
            continue
        score = round(similarity(question, prior.question), 6)
        if score >= threshold and (best is None or score >= best[1]):
            best = (prior, score)
    return best
