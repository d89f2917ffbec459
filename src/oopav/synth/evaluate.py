"""Scoring learned rules on held-out files (the evaluation cases under tests/synth/cases/).

A case is a YAML file: ``language``, ``description``, ``train`` (1–3 before/after pairs) and
``heldout`` (1–3 before/expected pairs). :func:`score_case` learns from the first ``k`` training
examples and compares the rules' output with every expected file: exact or not, and the
rewrite sites that are right (precision) and the expected sites reached (recall).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oopav.synth.core import Example, SynthesisError, synthesize
from oopav.synth.sites import SiteError, find_sites, parse


@dataclass
class CaseScore:
    name: str
    language: str
    examples: int  # training examples used
    exact: bool = False
    synthesised: bool = False
    error: str = ""
    produced: int = 0  # sites the rules rewrote
    correct: int = 0  # of those, sites rewritten as expected
    expected: int = 0  # sites the held-out files expect
    ms: float = 0.0
    details: list[str] = field(default_factory=list)


def load_case(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key in ("language", "train", "heldout"):
        if key not in data:
            raise ValueError(f"{path}: a case needs `{key}`")
    data["name"] = f"{path.parent.name}/{path.stem}"
    return data


def _sites(before: str, after: str, language: str) -> set[tuple[int, int, str]]:
    if before == after:
        return set()
    try:
        found = find_sites(0, before, after, parse(before, language), parse(after, language), "")
    except SiteError:
        return {(0, len(before), after)}
    return {(s.start, s.end, s.after_text) for s in found}


def score_case(case: dict[str, Any], k: int) -> CaseScore:
    lang = case["language"]
    score = CaseScore(case["name"], lang, k)
    train = [Example(e["before"], e["after"], language=lang) for e in case["train"][:k]]
    expected = [_sites(h["before"], h["after"], lang) for h in case["heldout"]]
    score.expected = sum(len(e) for e in expected)
    t0 = time.perf_counter()
    try:
        result = synthesize(train)
    except SynthesisError as exc:
        score.ms = (time.perf_counter() - t0) * 1000
        score.error = exc.reason
        return score
    score.ms = (time.perf_counter() - t0) * 1000
    score.synthesised = True
    exact = True
    for h, want in zip(case["heldout"], expected, strict=True):
        got, _ = result.apply(h["before"])
        if got != h["after"]:
            exact = False
            score.details.append(f"held-out differs:\n--- got\n{got}--- expected\n{h['after']}")
        produced = _sites(h["before"], got, lang)
        score.produced += len(produced)
        score.correct += len(produced & want)
    score.exact = exact
    return score


def cases_in(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.yaml"))
