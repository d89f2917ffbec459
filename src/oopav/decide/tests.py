"""Which tests run before a session may claim success (issue 17 §2): never silently none.

- The user's ``test_command`` always runs, whatever the test decision.
- Without one, a ``required`` or ``recommended`` decision looks for the repository's own test
  runner (pytest, ``npm test``, ``cargo test``, ``go test``); when a required decision finds
  none, the session ends ``success_unverified`` with the reason instead of ``success``.
- The decision itself is re-derived at verify time from the plan's manifest and the real
  changed-line count, so a change that grew beyond what orient expected gets its tests.

Pure; ``detect_test_command`` asks the workspace interface it is given (``RepoFiles``);
``changed_lines`` lives with the workspace, ``sandbox/workspace.py``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Literal, NamedTuple

from oopav.decide.files import RepoFiles
from oopav.decide.policy import TestPolicy

# The files that say how a project is built, installed or tested: a change to one can break
# everything without touching a line of code, so it always gets the tests (issue 30).
BUILD_MANIFESTS = frozenset(
    {
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
        "tox.ini",
        "noxfile.py",
        "conftest.py",
        "pytest.ini",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "go.mod",
        "go.sum",
        "Makefile",
        "CMakeLists.txt",
        "meson.build",
        "build.gradle",
        "build.gradle.kts",
        "pom.xml",
        "Gemfile",
    }
)


def build_manifests(paths: list[str]) -> list[str]:
    """The paths among ``paths`` that are a language manifest or build file."""
    return [p for p in paths if Path(p).name in BUILD_MANIFESTS]


DECISION_RANK = {"skip": 0, "deferred": 1, "optional": 2, "recommended": 3, "required": 4}


class TestSelection(NamedTuple):
    argv: list[str] | None
    """What the tests gate runs; None when nothing runs."""
    source: Literal["task", "detected", "none"]
    decision: str
    why: str
    unverified: bool
    """Tests were required and nothing could run them: the outcome is ``success_unverified``."""


def _has_pytest_config(root: RepoFiles) -> bool:
    if root.is_file("pytest.ini") or root.is_file("conftest.py"):
        return True
    if root.is_file("tests/conftest.py"):
        return True
    text = root.text("pyproject.toml")
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = {}
        if "pytest" in data.get("tool", {}):
            return True
    for name in ("setup.cfg", "tox.ini"):
        cfg = root.text(name)
        if cfg is not None and ("[tool:pytest]" in cfg or "[pytest]" in cfg):
            return True
    return False


def _python_tests(root: RepoFiles) -> bool:
    for d in ("tests", "test"):
        if root.is_dir(d) and root.find("**/test*.py", d):
            return True
    return bool(root.find("test_*.py"))


def detect_test_command(root: RepoFiles) -> tuple[list[str] | None, str]:
    """The repository's own test command and how it was found, or (None, what was looked for).
    Order: pytest (configured or test files present), ``npm test`` (a real ``scripts.test``),
    ``cargo test`` (Cargo.toml), ``go test ./...`` (go.mod)."""
    if _has_pytest_config(root):
        return ["python", "-m", "pytest", "-q"], "pytest is configured in the repository"
    if _python_tests(root):
        return (
            ["python", "-m", "pytest", "-q"],
            "Python test files (tests/test*.py) are present",
        )
    pkg = root.text("package.json")
    if pkg is not None:
        try:
            script = (json.loads(pkg).get("scripts") or {}).get("test")
        except (ValueError, AttributeError):
            script = None
        if isinstance(script, str) and script and "no test specified" not in script:
            return ["npm", "test", "--silent"], "package.json has a test script"
    if root.is_file("Cargo.toml"):
        return ["cargo", "test", "--quiet"], "Cargo.toml is present"
    if root.is_file("go.mod"):
        return ["go", "test", "./..."], "go.mod is present"
    return None, (
        "no test command was given and none was detected (looked for pytest configuration or "
        "Python test files, a package.json test script, Cargo.toml, go.mod)"
    )


def effective_decision(
    base: str,
    *,
    manifest: list[str],
    changed: list[str],
    lines: int,
    policy: TestPolicy,
    complexity: int = 1,
) -> tuple[str, str]:
    """Orient's (or the plan's) decision, raised — never lowered — by what the change really is:

    - more than ``required_files`` files (the plan's manifest, or the changed files when
      larger) with complexity ≥ ``required_complexity`` → required;
    - more than ``large_change_lines`` changed lines → at least recommended;
    - a code file changed under a ``skip`` decision (e.g. a "docs-only" task that touched
      code) → at least optional;
    - a language manifest or build file changed (``BUILD_MANIFESTS``) → required.
    """
    touched = build_manifests(changed)
    if touched and DECISION_RANK[base] < DECISION_RANK["required"]:
        return (
            "required",
            f"tests required: the change touches build files ({', '.join(touched[:3])})",
        )
    files = max(len(set(manifest)), len(set(changed)))
    if complexity >= policy.required_complexity and files > policy.required_files:
        if DECISION_RANK[base] < DECISION_RANK["required"]:
            return "required", (
                f"tests required: complexity {complexity} with {files} files in the change"
            )
    if lines > policy.large_change_lines and DECISION_RANK[base] < DECISION_RANK["recommended"]:
        return "recommended", (
            f"tests recommended: {lines} changed lines > {policy.large_change_lines}"
        )
    code = [f for f in changed if Path(f).suffix.lower() not in set(policy.skip_suffixes)]
    if base == "skip" and code:
        return "optional", f"tests no longer skipped: code changed ({', '.join(code[:3])})"
    return base, f"test decision {base}"


def select_tests(
    decision: str,
    test_command: list[str] | None,
    detected: tuple[list[str] | None, str] | None,
    policy: TestPolicy,
    why_decision: str = "",
) -> TestSelection:
    """What the tests gate runs (see the module docstring). ``detected`` is
    ``detect_test_command``'s answer, or None when detection was not attempted."""
    prefix = f"{why_decision}; " if why_decision else ""
    if test_command:
        return TestSelection(
            list(test_command),
            "task",
            decision,
            prefix + f"the task's test command always runs (decision {decision})",
            False,
        )
    if decision not in ("required", "recommended"):
        return TestSelection(None, "none", decision, prefix + f"test decision is {decision}", False)
    if policy.detect and detected is not None and detected[0] is not None:
        return TestSelection(
            detected[0], "detected", decision, prefix + f"detected: {detected[1]}", False
        )
    reason = detected[1] if detected is not None else "test detection is off (policy.tests.detect)"
    return TestSelection(
        None,
        "none",
        decision,
        prefix + f"tests are {decision} but {reason}",
        decision == "required",
    )
