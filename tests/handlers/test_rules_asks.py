"""decide/asks.py: which earlier answer a new question reuses (pure, no NATS)."""

from __future__ import annotations

from oopav.decide.asks import Answered, normalise, reusable, similarity


def answered(question: str, answer: str, eid: str = "e1") -> Answered:
    return Answered(
        question=question, answer=answer, answered_by="ann", event_id=eid, session_id="s"
    )


def test_questions_are_compared_by_their_content_words() -> None:
    assert normalise("Should I keep the OLD api?") == ("keep", "old", "api")
    assert similarity("Should I keep the old API?", "should we keep the old api") == 1.0
    assert similarity("Keep the old API?", "Drop the old API?") == 0.5
    assert similarity("", "anything") == 0.0


def test_the_most_similar_answer_above_the_threshold_is_reused() -> None:
    prior = [
        answered("Keep the old API?", "yes", "e1"),
        answered("Which Python version is the minimum?", "3.10", "e2"),
    ]
    hit = reusable("what python version is the minimum", [], prior)
    assert hit is not None and hit[0].event_id == "e2" and hit[1] == 1.0
    assert reusable("Drop the old API?", [], prior) is None  # half alike: ask a person
    # among equals the latest answer wins
    later = [*prior, answered("keep old api", "no", "e3")]
    assert reusable("Keep the old API?", [], later)[0].event_id == "e3"  # type: ignore[index]


def test_a_question_with_options_reuses_only_an_answer_among_them() -> None:
    prior = [answered("Keep the old API?", "for now")]
    assert reusable("Keep the old API?", ["yes", "no"], prior) is None
    assert reusable("Keep the old API?", ["for now", "no"], prior) is not None
