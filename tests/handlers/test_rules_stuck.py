"""Stuck detection (oopav.decide.stuck) on real canonical action hashes."""

from __future__ import annotations

import pytest

from oopav.decide import PERTURBATIONS, StuckMatch, detect_stuck, next_response
from oopav.events.actions import (
    AstGrepAction,
    RunCommandAction,
    SearchReplaceAction,
    SearchReplaceEdit,
    action_hash,
)

A = action_hash(AstGrepAction(pattern="fetch($A)", rewrite="fetch_page($A)", language="python"))
B = action_hash(
    SearchReplaceAction(
        edits=[SearchReplaceEdit(path="a.py", search="fetch", replace="fetch_page")]
    )
)
C = action_hash(RunCommandAction(argv=["python", "-m", "pytest", "-q"]))


def test_hashes_are_canonical_so_equal_actions_repeat() -> None:
    # The same action built twice (fields in another order) has the same hash.
    again = action_hash(
        AstGrepAction(language="python", rewrite="fetch_page($A)", pattern="fetch($A)")
    )
    assert again == A
    assert len({A, B, C}) == 3


def test_repeat() -> None:
    assert detect_stuck([C, A, A]) is None
    assert detect_stuck([C, A, A, A]) == StuckMatch("repeat", [A, A, A], 3)
    # The whole run is reported when it is longer than the threshold.
    assert detect_stuck([A, A, A, A, A]) == StuckMatch("repeat", [A] * 5, 5)
    assert detect_stuck([A, A], repeat=2) == StuckMatch("repeat", [A, A], 2)
    # A different action breaks the loop: only the tail counts.
    assert detect_stuck([A, A, A, C]) is None


def test_alternation() -> None:
    assert detect_stuck([A, B, A]) is None
    assert detect_stuck([A, B, A, B]) == StuckMatch("alternation", [A, B, A, B], 4)
    assert detect_stuck([C, B, A, B, A, B]) == StuckMatch("alternation", [B, A, B, A, B], 5)
    assert detect_stuck([A, B, C, B]) is None
    assert detect_stuck([A, B, A, B], alternation=6) is None


def test_consecutive_errors() -> None:
    assert detect_stuck([A, B, C], [True, False, False]) is None
    assert detect_stuck([A, B, C], [False, False, False]) == StuckMatch("errors", [A, B, C], 3)
    assert detect_stuck([C, A, B, C], [False, True, False, False], errors=2) == StuckMatch(
        "errors", [B, C], 2
    )
    # Without ok flags, errors cannot be detected.
    assert detect_stuck([A, B, C]) is None


def test_precedence_repeat_over_errors() -> None:
    match = detect_stuck([A, A, A], [False, False, False])
    assert match is not None and match.pattern == "repeat"
    match = detect_stuck([A, B, A, B], [False] * 4)
    assert match is not None and match.pattern == "alternation"


def test_bad_input() -> None:
    assert detect_stuck([]) is None
    with pytest.raises(ValueError, match="one per action"):
        detect_stuck([A, B], [True])


def test_next_response_replans_once_then_aborts() -> None:
    assert next_response(0) == ("replan", PERTURBATIONS[0])
    assert next_response(1) == ("abort", None)
    assert next_response(5) == ("abort", None)
    # With more replans allowed, the perturbation changes with the count, deterministically.
    assert next_response(1, max_replans=3) == ("replan", PERTURBATIONS[1])
    assert next_response(2, max_replans=3) == next_response(2, max_replans=3)
    assert next_response(len(PERTURBATIONS), max_replans=99) == ("replan", PERTURBATIONS[0])
    with pytest.raises(ValueError):
        next_response(-1)


def test_perturbations_are_distinct_instructions() -> None:
    assert len(set(PERTURBATIONS)) == len(PERTURBATIONS) >= 2
    assert any("different tool" in p for p in PERTURBATIONS)
    assert any("smaller step" in p for p in PERTURBATIONS)
