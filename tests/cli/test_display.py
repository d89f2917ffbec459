"""One honest line per gate (issue 15 §3): pytest's counts and the first failure, not a
fixed-width slice of the output's tail."""

from __future__ import annotations

from oopav.display import evidence_summary, gate_summary, pytest_summary
from oopav.events.catalog import ExecRecord, GateEvaluated


def test_pytest_counts_and_first_failure() -> None:
    out = (
        "..F.\n=== FAILURES ===\n___ test_x ___\nassert 1 == 2\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_a.py::test_x - assert 1 == 2\n"
        "FAILED tests/test_a.py::test_y - assert 0\n"
        "========================= 2 failed, 3 passed in 0.12s ==========================\n"
    )
    assert pytest_summary(out) == "2 failed, 3 passed; first failure: tests/test_a.py::test_x"
    assert pytest_summary("no tests ran in 0.01s\n") == "no tests ran"
    assert pytest_summary("make: *** [test] Error 2\n") == ""


def test_gate_line_uses_stdout_not_a_slice_of_stderr_warnings() -> None:
    warning = "nt loop scope for asynchronous fixtures will default to the fixture scope.\n"
    e = GateEvaluated(
        id="e1", aggregate="session", aggregate_id="s1", causation_id="c", correlation_id="c",
        actor="verifier/0", ts="2026-01-01T00:00:00Z", gate="tests", passed=True,
        evidence=f"`python -m pytest -q` passed\n{warning}",
        execs=[
            ExecRecord(
                key="k", purpose="gate_tests", argv=["pytest"], exit_code=0,
                stdout_tail="....\n4 passed, 1 warning in 0.03s\n", stderr_tail=warning,
            )
        ],
    )  # fmt: skip
    assert gate_summary(e) == "`python -m pytest -q` passed (4 passed, 1 warning)"
    assert "\n" not in evidence_summary("lint", "ruff reports problems:\nx.py:1:1 F401")
