"""``synth:`` as the critic: a verdict by rules over the pack the critic is shown, no model.

The pack (reflection/critique.build_pack) carries ``### Gates`` lines (``- name: passed |
skipped | FAILED — evidence``) and a ``### Diff``. The rules, in order:

- a gate that FAILED is a fact: ``block``, the failure a top risk, confidence 0.9;
- no test file in the diff while the tests gate did not pass (skipped or absent): each changed
  source file is a missing test, and the verdict is ``caution``;
- the confidence otherwise grows with the share of listed gates that ran and passed
  (0.5 with no gates listed), and drops by 0.2 without a diff to read (withheld or empty);
- below 0.6 the verdict is ``caution``, else ``approve``.

A pure function of the pack text, so a replay (or a second process) gets the same verdict."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

_GATE = re.compile(r"^- (?P<gate>[a-z_]+): (?P<status>passed|skipped|FAILED)(?: — (?P<why>.*))?$")
_DIFF_PATH = re.compile(r"^\+\+\+ b/(?P<path>\S+)", re.M)
_TEST_FILE = re.compile(
    r"(^|/)(tests?/|test_[^/]*$|[^/]*_test\.[a-z]+$|[^/]*\.(test|spec)\.[a-z]+$)"
)
_SOURCE_SUFFIXES = frozenset(
    {
        ".py",
        ".js",
        ".ts",
        ".tsx",
        ".jsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".rb",
        ".c",
        ".cc",
        ".cpp",
        ".h",
    }
)


def sections(text: str) -> dict[str, str]:
    """``### Title`` sections of the pack by lower-case title."""
    out: dict[str, str] = {}
    for chunk in re.split(r"(?m)^### ", text)[1:]:
        title, _, body = chunk.partition("\n")
        out[title.strip().lower()] = body.strip()
    return out


def review(pack: str) -> dict[str, Any]:
    """The verdict payload (``CriticOutput``'s fields) for ``pack``."""
    parts = sections(pack)
    gates = [m for line in parts.get("gates", "").splitlines() if (m := _GATE.match(line.strip()))]
    diff = parts.get("diff", "")
    changed = sorted(set(_DIFF_PATH.findall(diff)))
    failed = [(m["gate"], (m["why"] or "").strip()) for m in gates if m["status"] == "FAILED"]
    if failed:
        return {
            "verdict": "block",
            "reasons": [f"the {g} gate failed" for g, _ in failed],
            "top_risks": [f"{g}: {why}" if why else g for g, why in failed][:5],
            "missing_tests": [],
            "confidence": 0.9,
        }
    tests_passed = any(m["gate"] == "tests" and m["status"] == "passed" for m in gates)
    tests_changed = [p for p in changed if _TEST_FILE.search(p)]
    sources = [
        p for p in changed if PurePosixPath(p).suffix in _SOURCE_SUFFIXES and p not in tests_changed
    ]
    missing = (
        [f"no test covers the change to {p}" for p in sources[:5]]
        if sources and not tests_changed and not tests_passed
        else []
    )
    if gates:
        ran = sum(1 for m in gates if m["status"] == "passed")
        confidence = 0.5 + 0.5 * ran / len(gates)
    else:
        confidence = 0.5
    if not changed:
        confidence -= 0.2
    confidence = round(max(0.1, min(1.0, confidence)), 2)
    risks = []
    skipped = [m["gate"] for m in gates if m["status"] == "skipped"]
    if skipped:
        risks.append("not checked (skipped): " + ", ".join(skipped))
    if not changed:
        risks.append("no diff to review" + (" (withheld)" if "diff" not in parts else ""))
    verdict = "caution" if missing or confidence < 0.6 else "approve"
    reasons = (
        [
            f"{len(changed)} file(s) changed",
            f"{sum(1 for m in gates if m['status'] == 'passed')} of {len(gates)} gate(s) passed",
        ]
        if gates
        else [f"{len(changed)} file(s) changed", "no gate results shown"]
    )
    return {
        "verdict": verdict,
        "reasons": reasons,
        "top_risks": risks,
        "missing_tests": missing,
        "confidence": confidence,
    }
