"""How evidence and outcomes read on a terminal: one honest line each.

A gate's evidence is the headline (``\\`pytest -q\\` passed``) followed by the tail of the
command's output; a fixed-width slice of that tail shows a fragment of whatever came last (a
warning, say). ``evidence_summary`` keeps the headline and adds what a person wants from the
output: pytest's final counts line and the first failing test."""

from __future__ import annotations

import re

# pytest's last line: "==== 3 passed, 1 warning in 0.12s ====" or, with -q, "3 passed in 0.12s".
_PYTEST_FINAL = re.compile(
    r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)"
    r"(?:, )?)+)(?: in [\d.]+s(?: \([^)]*\))?)?\s*=*$"
)
_NO_TESTS = re.compile(r"^=*\s*(no tests ran)(?: in [\d.]+s)?\s*=*$")
_FIRST_FAILURE = re.compile(r"^(?:FAILED|ERROR) (\S+)")


def pytest_summary(output: str) -> str:
    """pytest's counts (``3 passed, 1 warning``) and the first failing test, or ""."""
    counts = ""
    first = ""
    for line in output.splitlines():
        line = line.strip()
        m = _PYTEST_FINAL.match(line) or _NO_TESTS.match(line)
        if m:
            counts = m.group(1).rstrip(", ")
        f = _FIRST_FAILURE.match(line)
        if f and not first:
            first = f.group(1)
    if first:
        return f"{counts}; first failure: {first}" if counts else f"first failure: {first}"
    return counts


def evidence_summary(gate: str, evidence: str, limit: int = 100) -> str:
    """One line for a gate's evidence: its first line, plus the test summary for tests."""
    head, _, rest = evidence.partition("\n")
    head = " ".join(head.split())
    if gate == "tests" and rest:
        summary = pytest_summary(rest)
        if summary:
            head = f"{head} ({summary})"
    elif rest.strip() and len(head) < limit:
        first = " ".join(rest.strip().splitlines()[0].split())
        head = f"{head} {first}" if head.endswith(":") else head
    return head if len(head) <= limit else head[: limit - 1] + "…"


def gate_summary(e: object, limit: int = 100) -> str:
    """One line for a ``gate_evaluated`` event. The tests gate's counts come from the recorded
    run's stdout (pytest prints them last there; warnings on stderr would hide them)."""
    gate = getattr(e, "gate", "")
    evidence = getattr(e, "evidence", "")
    if gate == "tests":
        outputs = [
            f"{getattr(x, 'stdout_tail', '')}\n{getattr(x, 'stderr_tail', '')}"
            for x in getattr(e, "execs", [])
        ]
        summary = pytest_summary("\n".join(outputs)) if outputs else ""
        if summary:
            head = " ".join(evidence.partition("\n")[0].split())
            line = f"{head} ({summary})"
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return evidence_summary(gate, evidence, limit)


def is_success(outcome: str | None) -> bool:
    """Only the outcome ``success`` is a success; ``success_unverified`` and anything new
    a handler may add is not (the exit status is 0 only for this one)."""
    return outcome == "success"
