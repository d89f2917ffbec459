"""Judging a plan: its file manifest, the files the instruction points at, and a plan's score against them.

A plan's components: ``valid`` (it has steps and honours the test decision), ``grounded`` (the
share of the files it names that exist, or are legitimately new: a file in an existing
directory that the instruction names, or that a step naming it says it creates, or a new test
file there), ``coverage`` (the share of the files the instruction points at that it names) and
``size`` (shorter is better, for ranking candidates only). Its **adequacy**
(:func:`adequacy`) is the mean of grounded and coverage, coverage taken over the files the
instruction names by path (:func:`named_files`; files where a mentioned identifier merely
occurs are a hint in the prompt, too noisy to fail a plan on) — what the plan gets right about
*where* to act; the planner replans a plan below ``policy.plan_adequacy.min_score`` (default
0.75) before acting."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
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


def named_files(root: RepoFiles, instruction: str) -> list[str]:
    """The files an instruction names by path: those that exist, and those it asks for (a
    path with a suffix, in a directory of the repository that exists)."""
    from oopav.decide.orient import mentioned_paths

    out = set()
    for raw in mentioned_paths(instruction):
        p = raw.removeprefix("./")
        if root.is_file(p):
            out.add(p)
        elif (
            PurePosixPath(p).suffix
            and not root.exists(p)
            # The interface reads a path outside the repository as absent.
            and root.is_dir(str(PurePosixPath(p).parent))
        ):
            out.add(p)
    return sorted(out)


def judge_plan(
    plan: Any,
    refuse: Callable[[Any], str | None],
    root: RepoFiles,
    pointed: list[str],
    named: Sequence[str] = (),
    unnamed_ok: bool = False,
) -> tuple[bool, dict[str, float], str]:
    """(valid, components, reason) of one candidate plan (see the module docstring);
    ``refuse`` is the planner's own check (a required test decision honoured).
    ``unnamed_ok``: a plan that names no file where the task points at none (a rule applied
    to every file, as `synth:` plans are) is grounded, not wrong about every file."""
    steps = list(getattr(plan, "steps", []) or [])
    if not steps:
        return False, {"valid": 0.0}, "the plan has no steps"
    refused = refuse(plan)
    if refused is not None:
        return False, {"valid": 0.0}, refused[:300]
    files = manifest(plan)
    components = {"valid": 1.0}
    existing = [f for f in files if root.is_file(f) or legitimately_new(plan, f, root, named)]
    components["grounded"] = (
        round(len(existing) / len(files), 4)
        if files
        else (1.0 if unnamed_ok and not pointed else 0.0)
    )
    reasons = []
    if len(existing) < len(files):
        missing = sorted(set(files) - set(existing))
        reasons.append(
            f"{len(missing)} named file(s) do not exist and no step creates them: "
            + ", ".join(missing[:5])
        )
    if pointed:
        covered = sorted(set(pointed) & set(files))
        components["coverage"] = round(len(covered) / len(pointed), 4)
        missed = sorted(set(pointed) - set(files))
        if missed:
            reasons.append("leaves out " + ", ".join(missed[:5]))
    components["size"] = round(1.0 / (1.0 + len(steps) / 10.0), 4)
    return True, components, "; ".join(reasons)


_CREATES = re.compile(
    r"\b(create|creates|creating|add|adds|adding|new|write|writes|introduce)\b", re.I
)
_TEST_NAME = re.compile(
    r"(^|/)(tests?/|test_[^/]+$|[^/]+_test\.[a-z]+$|[^/]+\.(test|spec)\.[a-z]+$|conftest\.py$)"
)


def is_test_file(path: str) -> bool:
    """A test file by the naming conventions of the common runners (pytest, go test, jest,
    a ``tests/`` directory)."""
    return bool(_TEST_NAME.search(path.removeprefix("./")))


def legitimately_new(plan: Any, path: str, root: RepoFiles, named: Sequence[str] = ()) -> bool:
    """A file the plan names that does not exist yet but may: its directory exists (or is the
    repository's root), and the instruction names it, or it is a test file, or a step that
    names it (in its files or its text) says it creates, adds or writes something."""
    if not root.is_dir(str(PurePosixPath(path).parent)):  # outside the repository: absent
        return False
    if path in named or is_test_file(path):
        return True
    base = PurePosixPath(path).name
    for step in getattr(plan, "steps", []) or []:
        names = {f.strip().removeprefix("./") for f in step.files or []}
        if (path in names or base in step.description) and _CREATES.search(step.description):
            return True
    return False


def adequacy(components: dict[str, float]) -> float:
    """A valid plan's adequacy (0-1): the mean of its ``grounded`` and ``coverage`` (the
    latter only when the instruction points at files). An invalid plan scores 0."""
    if not components.get("valid"):
        return 0.0
    parts = [components["grounded"]]
    if "coverage" in components:
        parts.append(components["coverage"])
    return round(sum(parts) / len(parts), 4)


def names_command(text: str, argv: list[str]) -> bool:
    """Whether ``text`` names the command ``argv`` in full (as typed, or shell-quoted)."""
    import shlex

    flat = " ".join(text.split())
    return any(" ".join(form.split()) in flat for form in (" ".join(argv), shlex.join(argv)))


def missing_tests(plan: Any, decision: str, test_command: list[str] | None) -> str | None:
    """Why a plan does not honour a required test decision, None when it does: by its
    manifest — a test file among the files it names, or a step that names the test command
    (the task's, else the one detected in the repository) — not by words in its steps."""
    if decision != "required":
        return None
    said = getattr(plan, "test_decision", decision)
    if said in ("skip", "optional", "deferred"):
        return (
            f"tests are required for this task; the plan's test_decision must be 'required', "
            f"not {said!r}"
        )
    if any(is_test_file(f) for f in manifest(plan)):
        return None
    steps = getattr(plan, "steps", []) or []
    if test_command and any(names_command(s.description, test_command) for s in steps):
        return None
    run = f" or a step that runs `{' '.join(test_command)}`" if test_command else ""
    return (
        "tests are required for this task, but the plan's files name no test file (tests/…, "
        f"test_*.py, *_test.go, *.test.ts, …){' and no step names the test command' if test_command else ''}: "
        f"add the test files that cover the change to the plan's files{run}"
    )
