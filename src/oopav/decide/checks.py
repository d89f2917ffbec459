"""What the compile and doctest gates run, and how their output is compared: the project's configured type checker (only where it configures one), the changed files that carry doc tests, error locations keyed so a baseline's errors are not blamed."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any


def _pyproject_tools(root: Path) -> dict[str, Any]:
    f = root / "pyproject.toml"
    if not f.is_file():
        return {}
    try:
        return tomllib.loads(f.read_text()).get("tool", {})
    except (tomllib.TOMLDecodeError, OSError):
        return {}


def compile_command(root: Path, changed: list[str]) -> tuple[list[str] | None, str]:
    """The project's own compile or type check for this change, or (None, why none).
    mypy / pyright when configured, ``tsc --noEmit`` with a tsconfig.json, ``cargo check`` with
    Cargo.toml, ``go vet`` with go.mod; only when the change touches that language."""
    py = sorted(f for f in changed if f.endswith((".py", ".pyi")))
    tools = _pyproject_tools(root)
    if py and ("mypy" in tools or (root / "mypy.ini").is_file() or (root / ".mypy.ini").is_file()):
        return ["python", "-m", "mypy", "--no-incremental", *py], "mypy is configured"
    if py and ("pyright" in tools or (root / "pyrightconfig.json").is_file()):
        return ["pyright", *py], "pyright is configured"
    if any(f.endswith((".ts", ".tsx")) for f in changed) and (root / "tsconfig.json").is_file():
        return ["npx", "--no-install", "tsc", "--noEmit"], "tsconfig.json is present"
    if any(f.endswith(".rs") for f in changed) and (root / "Cargo.toml").is_file():
        return ["cargo", "check", "--quiet"], "Cargo.toml is present"
    if any(f.endswith(".go") for f in changed) and (root / "go.mod").is_file():
        return ["go", "vet", "./..."], "go.mod is present"
    return None, "no compile or type check is configured for the changed files"


def doctest_files(root: Path, changed: list[str]) -> list[str]:
    """Changed Python files (tests excluded) whose text holds a doctest prompt."""
    out = []
    for f in sorted(changed):
        if not f.endswith(".py") or "/tests/" in f"/{f}" or Path(f).name.startswith("test_"):
            continue
        try:
            if ">>> " in (root / f).read_text(errors="replace"):
                out.append(f)
        except OSError:
            continue
    return out


# Where a checker names a location: ``path:12:5`` (mypy, go vet, ruff), ``path(12,5)`` (tsc),
# ``--> src/x.rs:3:5`` (cargo), ``File "x.py", line 3`` (a Python traceback).
_LOCATION = re.compile(r"(?::\d+)+|\(\d+,\d+\)|, line \d+")


def error_keys(output: str, root_name: str) -> Counter[str]:
    """The error lines of a checker's output as a multiset of location-free keys: line and
    column numbers dropped (an edit above an old error moves it, it does not make it new) and
    the workspace or base-tree prefix of absolute paths removed. Lines without a location
    (summaries such as "Found 2 errors") are not keys."""
    prefix = re.compile(rf"\S*/{re.escape(root_name)}(?:\.base)?/")
    keys: Counter[str] = Counter()
    for line in output.splitlines():
        text = prefix.sub("", line.strip())
        if _LOCATION.search(text):
            keys[_LOCATION.sub("", text).removeprefix("./")] += 1
    return keys
