"""The real-project matrix's overhead (``bench/realprojects.py``): oopav's time is the wall
time less the project's commands that session ran itself — a reused baseline and a verdict
reused from an identical run (issue 28) are not subtracted (they made the figure negative)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace as NS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from realprojects import PROJECT_PURPOSES, ran_here_ms


def _rec(key: str, purpose: str, ms: float, reused_from: str | None = None) -> NS:
    return NS(key=key, purpose=purpose, duration_ms=ms, reused_from=reused_from)


def _obs(phase: str, *execs: NS) -> NS:
    return NS(type="observation_recorded", phase=phase, execs=list(execs))


def test_only_the_commands_run_here_are_the_projects_time() -> None:
    events = [
        NS(type="baseline_reused", execs=None),
        # the reuse: the earlier session's probe and suite
        _obs("baseline", _rec("p", "env_probe", 100), _rec("b", "baseline_tests", 5000)),
        _obs("action", _rec("a", "action_tests", 1000)),
        NS(
            type="gate_evaluated",
            execs=[
                _rec("g", "gate_tests", 2000),
                _rec("c", "gate_compile_base", 700, reused_from="s0/c"),  # served, not run
                _rec("a", "action_tests", 1000),  # the same record named twice: once
            ],
        ),
    ]
    assert ran_here_ms(events, PROJECT_PURPOSES) == 3000
    # A session that measured its own baseline counts it, and a later evidence round too.
    fresh = [_obs("baseline", _rec("b", "baseline_tests", 5000)), *events[2:]]
    assert ran_here_ms(fresh, PROJECT_PURPOSES) == 8000
    rounds = [*events, _obs("baseline", _rec("b2", "baseline_tests", 4000))]
    assert ran_here_ms(rounds, PROJECT_PURPOSES) == 7000
