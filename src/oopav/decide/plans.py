"""Judging a plan: its file manifest, the files the instruction points at, and a plan's score against them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from oopav.decide.files import RepoFiles


def manifest(plan: Any) -> list[str]:
    """Every file a plan names (its manifest and its steps' files), normalised and sorted."""
    names = set(getattr(plan, "files", []) or [])
    for step in getattr(plan, "steps", []) or []:
        names.update(step.files or [])
    return sorted({n.strip().removeprefix("./") for n in names if n.strip()})


def pointed_files(root: RepoFiles, instruction: str) -> list[str]:
    """The files an instruction points at: the paths it names that exist, and the files where
    an identifier it names occurs as a whole word."""
    from oopav.decide.evidence import _files, _text, mentioned_symbols
    from oopav.decide.orient import mentioned_paths

    out = {p for p in mentioned_paths(instruction) if root.is_file(p)}
    symbols = mentioned_symbols(instruction)
    if symbols:
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(s) for s in symbols) + r")\b")
        for f in _files(root):
            text = _text(root, f)
            if text is not None and pattern.search(text):
                out.add(f)
    return sorted(out)


def judge_plan(
    plan: Any, refuse: Callable[[Any], str | None], root: RepoFiles, pointed: list[str]
) -> tuple[bool, dict[str, float], str]:
    """(valid, components, reason) of one candidate plan (see the module docstring);
    ``refuse`` is the planner's own check (a required test decision honoured)."""
    steps = list(getattr(plan, "steps", []) or [])
    if not steps:
        return False, {"valid": 0.0}, "the plan has no steps"
    refused = refuse(plan)
    if refused is not None:
        return False, {"valid": 0.0}, refused[:300]
    files = manifest(plan)
    components = {"valid": 1.0}
    existing = [f for f in files if root.is_file(f)]
    components["grounded"] = round(len(existing) / len(files), 4) if files else 0.0
    reasons = []
    if len(existing) < len(files):
        reasons.append(f"{len(files) - len(existing)} named file(s) do not exist")
    if pointed:
        covered = sorted(set(pointed) & set(files))
        components["coverage"] = round(len(covered) / len(pointed), 4)
        missed = sorted(set(pointed) - set(files))
        if missed:
            reasons.append("leaves out " + ", ".join(missed[:5]))
    components["size"] = round(1.0 / (1.0 + len(steps) / 10.0), 4)
    return True, components, "; ".join(reasons)
