"""Every evaluation case: the rule learned from at most two training examples reproduces the
training examples and rewrites each held-out file exactly as expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from oopav.synth.evaluate import cases_in, load_case, score_case

CASES = cases_in(Path(__file__).parent / "cases")


def test_there_are_enough_cases_in_every_language() -> None:
    langs = [p.parent.name for p in CASES]
    assert len(CASES) >= 40
    for lang in ("python", "javascript", "typescript", "go", "rust"):
        assert langs.count(lang) >= 6, lang


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_case(path: Path) -> None:
    case = load_case(path)
    assert 1 <= len(case["train"]) <= 3 and 1 <= len(case["heldout"]) <= 3
    score = score_case(case, min(2, len(case["train"])))
    assert score.synthesised, score.error
    assert score.exact, "\n".join(score.details)
    assert score.correct == score.produced == score.expected
