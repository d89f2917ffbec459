"""The continuous observer's view: trends over a session's observation history, and the
caution (fatigue) they call for. Pure: facts in, numbers and reasons out.

Trends, over the last observations (at most ``HISTORY``, kept by the session projection):

- ``parse_rate``: the share of observations whose changed files all parse;
- ``test_pass_rate``: the share of observations with a test run whose tests passed;
- ``repetition``: how much of the recent action history repeats (1 - distinct / total);
- ``tests_falling``: the latest test run failed after an earlier one passed.

Caution (fatigue) rises with failures: each rolled-back, rejected or failed action and each
observation whose tests failed counts (a replan is their consequence, not another failure);
failed sessions of the same mission count too. Level 1 from ``at`` failures (``policy.
caution_at``, default 3) or tests falling while actions repeat, level 2 from twice that. Its
effects are in the planner's prompt: smaller steps and more evidence (level 1), and at level 2
to stop and explain rather than try yet another approach.

Mission-wide fatigue: ``mission_failures`` counts the failed or aborted sessions among the last
``MISSION_WINDOW`` sessions of the same mission that ended (as the mission projection's
reflection signals record them) before this session was submitted. "Before" is by recorded
timestamps, so a replay, which appends the mission's later events too, counts the same."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

HISTORY = 20
CAUTION_AT = 3
MISSION_WINDOW = 5
FAILED_OUTCOMES = ("failed", "aborted")


class Ended(Protocol):
    """A finished session of the mission (``projections.guidance.SessionOutcome``)."""

    @property
    def session_id(self) -> str: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def ts(self) -> datetime: ...


def mission_failures(
    ended: Sequence[Ended], before: datetime, own: str, window: int = MISSION_WINDOW
) -> list[str]:
    """The failed sessions among the mission's last ``window`` sessions recorded before
    ``before`` (this session's submission), other than ``own``, oldest first."""
    earlier = [e for e in ended if e.ts < before and e.session_id != own][-window:]
    return [e.session_id for e in earlier if e.outcome in FAILED_OUTCOMES]


class Point(NamedTuple):
    """One observation, as the history keeps it."""

    phase: str
    parse_errors: int
    stubs: int
    tests_passed: bool | None
    changed: int
    action: str


class Trends(NamedTuple):
    observations: int
    parse_rate: float
    test_pass_rate: float | None
    test_runs: int
    repetition: float
    tests_falling: bool

    def describe(self) -> str:
        tests = (
            f"tests {self.test_pass_rate:.0%} of {self.test_runs} run(s)"
            if self.test_pass_rate is not None
            else "no test runs"
        )
        fall = ", falling" if self.tests_falling else ""
        return (
            f"{self.observations} observation(s): parse {self.parse_rate:.0%}, {tests}{fall}, "
            f"repetition {self.repetition:.2f}"
        )


def trends(points: Sequence[Point], action_hashes: Sequence[str] = ()) -> Trends:
    pts = list(points)[-HISTORY:]
    parse_ok = sum(1 for p in pts if p.parse_errors == 0)
    runs = [p.tests_passed for p in pts if p.tests_passed is not None]
    hashes = list(action_hashes)[-HISTORY:]
    repetition = round(1 - len(set(hashes)) / len(hashes), 4) if hashes else 0.0
    falling = bool(runs) and runs[-1] is False and any(runs[:-1])
    return Trends(
        observations=len(pts),
        parse_rate=round(parse_ok / len(pts), 4) if pts else 1.0,
        test_pass_rate=round(sum(runs) / len(runs), 4) if runs else None,
        test_runs=len(runs),
        repetition=repetition,
        tests_falling=falling,
    )


def failures_of(statuses: Sequence[str], points: Sequence[Point]) -> int:
    """A session's failures so far: actions that did not stick, observations whose tests
    failed after a change."""
    bad = sum(1 for s in statuses if s in ("rejected", "rolled_back", "failed"))
    return bad + sum(1 for p in points if p.phase == "change" and p.tests_passed is False)


def caution(
    failures: int, t: Trends, mission_failures: int = 0, at: int = CAUTION_AT
) -> tuple[int, list[str], list[str]]:
    """(level, reasons, effects) for a session with ``failures`` so far (``failures_of``) and
    ``mission_failures`` recent failed sessions of its mission; level 1 from ``at``, level 2
    from twice that."""
    reasons: list[str] = []
    score = failures + mission_failures
    if failures:
        reasons.append(f"{failures} failure(s) in this session")
    if mission_failures:
        reasons.append(f"{mission_failures} recent failed session(s) of the mission")
    if t.tests_falling and t.repetition >= 0.3:
        score = max(score, at)
        reasons.append(f"tests falling while actions repeat ({t.repetition:.2f})")
    level = 2 if score >= 2 * at else 1 if score >= at else 0
    effects = []
    if level >= 1:
        effects += ["smaller steps: one file per step", "more evidence: read before editing"]
    if level >= 2:
        effects.append("earlier escalation: stop and explain instead of another approach")
    return level, reasons, effects


def caution_prompt(level: int, reasons: list[str]) -> str:
    """The planner's prompt section at a caution level (empty at 0)."""
    if level <= 0:
        return ""
    lines = [f"### Caution (level {level})", "Earlier attempts failed: " + "; ".join(reasons) + "."]
    lines.append("Take smaller steps: change one file per step and run the tests after each.")
    lines.append("Read the code you will change before editing it.")
    if level >= 2:
        lines.append("If a step fails again, stop and say why instead of trying another approach.")
    return "\n".join(lines)
