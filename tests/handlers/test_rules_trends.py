"""The continuous observer's trends and fatigue (oopav.decide.trends): pure rules."""

from __future__ import annotations

from oopav.decide.trends import HISTORY, Point, caution, caution_prompt, failures_of, trends


def pt(phase: str = "change", parse: int = 0, tests: bool | None = None) -> Point:
    return Point(
        phase=phase, parse_errors=parse, stubs=0, tests_passed=tests, changed=1, action="continue"
    )


def test_trends_over_the_history() -> None:
    points = [
        pt("baseline", tests=True),
        pt(tests=False),
        pt(parse=2),
        pt(tests=True),
        pt(tests=False),
    ]
    t = trends(points, ["a", "b", "a", "a"])
    assert t.observations == 5
    assert t.parse_rate == 0.8
    assert (t.test_pass_rate, t.test_runs) == (0.5, 4)
    assert t.repetition == 0.5  # 2 distinct of 4
    assert t.tests_falling
    assert t.describe() == (
        "5 observation(s): parse 80%, tests 50% of 4 run(s), falling, repetition 0.50"
    )


def test_only_the_last_observations_count() -> None:
    old = [pt(parse=1)] * 30
    recent = [pt()] * HISTORY
    assert trends(old + recent).parse_rate == 1.0
    assert trends([]).test_pass_rate is None and trends([]).parse_rate == 1.0


def test_failures_count_actions_that_did_not_stick_and_failing_tests_after_a_change() -> None:
    points = [pt("baseline", tests=False), pt(tests=False), pt(tests=True)]
    assert failures_of(["applied", "rejected", "rolled_back", "failed", "proposed"], points) == 4


def test_caution_levels_reasons_and_effects() -> None:
    calm = trends([pt(tests=True)])
    assert caution(2, calm)[0] == 0
    level, reasons, effects = caution(3, calm)
    assert level == 1 and reasons == ["3 failure(s) in this session"]
    assert effects == ["smaller steps: one file per step", "more evidence: read before editing"]
    assert caution(6, calm)[0] == 2 and len(caution(6, calm)[2]) == 3
    assert caution(2, calm, mission_failures=1)[0] == 1
    assert caution(1, calm, at=1)[0] == 1 and caution(2, calm, at=1)[0] == 2
    # Tests falling while the actor repeats itself raises caution with few failures.
    stuck = trends([pt(tests=True), pt(tests=False)], ["a", "a", "a"])
    level, reasons, _ = caution(1, stuck)
    assert level == 1 and "tests falling while actions repeat (0.67)" in reasons


def test_the_prompt_section_follows_the_level() -> None:
    assert caution_prompt(0, []) == ""
    assert caution_prompt(1, ["3 failure(s) in this session"]).startswith("### Caution (level 1)")
    assert "stop and say why" in caution_prompt(2, ["x"])
    assert "stop and say why" not in caution_prompt(1, ["x"])
