"""What the compile and doctest gates run, and how their output is compared: the project's configured type checker (only where it configures one), the changed files that carry doc tests, error locations keyed so a baseline's errors are not blamed."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

from oopav.decide.files import RepoFiles


def _pyproject_tools(root: RepoFiles) -> dict[str, Any]:
    text = root.text("pyproject.toml")
    if text is None:
        return {}
    try:
        tools: dict[str, Any] = tomllib.loads(text).get("tool", {})
        return tools
    except tomllib.TOMLDecodeError:
        return {}


def compile_command(root: RepoFiles, changed: list[str]) -> tuple[list[str] | None, str]:
    """The project's own compile or type check for this change, or (None, why none).
    mypy / pyright when configured, ``tsc --noEmit`` with a tsconfig.json, ``cargo check`` with
    Cargo.toml, ``go vet`` with go.mod; only when the change touches that language."""
    py = sorted(f for f in changed if f.endswith((".py", ".pyi")))
    tools = _pyproject_tools(root)
    if py and ("mypy" in tools or root.is_file("mypy.ini") or root.is_file(".mypy.ini")):
        return ["python", "-m", "mypy", "--no-incremental", *py], "mypy is configured"
    if py and ("pyright" in tools or root.is_file("pyrightconfig.json")):
        return ["pyright", *py], "pyright is configured"
    if any(f.endswith((".ts", ".tsx")) for f in changed) and root.is_file("tsconfig.json"):
        return ["npx", "--no-install", "tsc", "--noEmit"], "tsconfig.json is present"
    if any(f.endswith(".rs") for f in changed) and root.is_file("Cargo.toml"):
        return ["cargo", "check", "--quiet"], "Cargo.toml is present"
    if any(f.endswith(".go") for f in changed) and root.is_file("go.mod"):
        return ["go", "vet", "./..."], "go.mod is present"
    return None, "no compile or type check is configured for the changed files"


def doctest_files(root: RepoFiles, changed: list[str]) -> list[str]:
    """Changed Python files (tests excluded) whose text holds a doctest prompt."""
    out = []
    for f in sorted(changed):
        if not f.endswith(".py") or "/tests/" in f"/{f}" or Path(f).name.startswith("test_"):
            continue
        if ">>> " in (root.text(f, errors="replace") or ""):
            out.append(f)
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


def environment_name(executable: str | None) -> str:
    """How a reason names the project's environment: ``.venv`` for ``…/.venv/bin/python``."""
    if not executable:
        return "the project's environment"
    parts = Path(executable).parts
    if len(parts) >= 3 and parts[-2] == "bin":
        name = parts[-3]
        if len(name) >= 16 and all(c in "0123456789abcdef" for c in name):
            # oopav's own build (environment: {build: uv}) is cached under a hash.
            return f"the environment oopav built with uv ({Path(*parts[:-2])})"
        return name
    return executable


_NO_MODULE = re.compile(r"No module named '?([A-Za-z0-9_.]+)'?")


def cannot_run(argv: list[str], exit_code: int | None, output: str, where: str) -> str | None:
    """Why a check's command could not run at all (so its exit says nothing about the change),
    or None. A missing executable (126/127, the sandbox's 125 for an unusable environment), or
    ``python -m TOOL`` whose TOOL is not installed."""
    if exit_code in (125, 126, 127):
        return f"`{argv[0]}` cannot run in {where} (exit {exit_code})"
    if len(argv) >= 3 and argv[1] == "-m" and Path(argv[0]).name.startswith("python"):
        tool = argv[2]
        m = _NO_MODULE.search(output)
        if m and m.group(1).split(".")[0] == tool.split(".")[0]:
            return f"{tool} is configured but not installed in {where}"
    return None


def pytest_doctest_configured(root: RepoFiles) -> bool:
    """Whether the project runs its doc tests with pytest (``--doctest-modules`` in its pytest
    configuration: pyproject.toml, pytest.ini, setup.cfg or tox.ini)."""
    tools = _pyproject_tools(root)
    opts = tools.get("pytest", {}).get("ini_options", {}).get("addopts", "")
    if "--doctest-modules" in (" ".join(opts) if isinstance(opts, list) else str(opts)):
        return True
    for name in ("pytest.ini", "setup.cfg", "tox.ini"):
        text = root.text(name, errors="replace") or ""
        if "--doctest-modules" in text and ("[pytest]" in text or "[tool:pytest]" in text):
            return True
    return False


def module_name(path: str) -> str | None:
    """The importable name of a Python file of the project: ``src/pkg/mod.py`` → ``pkg.mod``,
    ``pkg/__init__.py`` → ``pkg``; None for a path that is no module name."""
    parts = list(Path(path).with_suffix("").parts)
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


# Doc tests by package name: each module imported as the package does (so relative imports
# work), its doctests run, every failure printed as one keyed line the gate compares with
# the baseline's. ``src`` goes on the path for src layouts whose package is not installed.
DOCTEST_SCRIPT = """import doctest, importlib, os, sys
if os.path.isdir("src"):
    sys.path.insert(1, os.path.abspath("src"))
bad = 0
for name in sys.argv[1:]:
    try:
        mod = importlib.import_module(name)
    except BaseException as exc:
        print(f"DOCTEST-FAIL {name} (import): {type(exc).__name__}: {exc}")
        bad += 1
        continue
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    for test in finder.find(mod, name):
        result = runner.run(test, out=sys.stdout.write)
        for _ in range(result.failed):
            print(f"DOCTEST-FAIL {test.name}")
            bad += 1
print(f"doctest: {bad} failure(s)")
sys.exit(1 if bad else 0)
"""


def doctest_command(root: RepoFiles, files: list[str]) -> tuple[list[str], str]:
    """How this project's doc tests run: with pytest where its configuration asks for
    ``--doctest-modules``, else each module imported by package name. (argv, mode)."""
    if pytest_doctest_configured(root):
        pytest = ["python", "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider"]
        return [*pytest, "--doctest-modules", *files], "pytest"
    names = [n for n in (module_name(f) for f in files) if n]
    return ["python", "-c", DOCTEST_SCRIPT, *names], "import"


def doctest_failures(output: str) -> Counter[str]:
    """The failing doc tests named in the output (the import mode's ``DOCTEST-FAIL`` lines,
    pytest's ``FAILED`` summary lines), as a multiset."""
    keys: Counter[str] = Counter()
    for line in output.splitlines():
        if line.startswith("DOCTEST-FAIL "):
            keys[line.removeprefix("DOCTEST-FAIL ").strip()] += 1
        elif line.startswith(("FAILED ", "ERROR ")):
            keys[line.split(" - ")[0].strip()] += 1
    return keys


# -- the harness contract tier: the project's declared check commands ------------------------

CONTRACT_SCRIPTS = ("check", "lint", "typecheck", "type-check", "types")
"""package.json scripts that declare a check (``test`` is the tests gate's)."""
CONTRACT_TARGETS = ("check", "lint", "typecheck")
"""Makefile targets that declare a check."""
MAX_CONTRACT_CHECKS = 6
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", re.M)


def declared_checks(root: RepoFiles) -> tuple[list[tuple[str, list[str]]], str]:
    """The check commands the project declares, as (where declared, argv), and where they were
    looked for: ``[tool.oopav.checks]`` in pyproject.toml (name = "command" or [argv]),
    package.json scripts named check / lint / typecheck / type-check / types (run with
    ``npm run --silent``), Makefile targets check / lint / typecheck. tox environments are not
    run: tox builds their environments from the network the sandbox denies (docs/loop.md)."""
    import json
    import shlex

    out: list[tuple[str, list[str]]] = []
    table = _pyproject_tools(root).get("oopav", {})
    checks = table.get("checks") if isinstance(table, dict) else None
    if isinstance(checks, dict):
        for name, cmd in checks.items():
            if isinstance(cmd, str) and cmd.strip():
                out.append((f"pyproject.toml [tool.oopav.checks] {name}", shlex.split(cmd)))
            elif isinstance(cmd, list) and cmd and all(isinstance(a, str) for a in cmd):
                out.append((f"pyproject.toml [tool.oopav.checks] {name}", list(cmd)))
    package = root.text("package.json")
    if package is not None:
        try:
            scripts = json.loads(package).get("scripts") or {}
        except (ValueError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict):
            for name in CONTRACT_SCRIPTS:
                if isinstance(scripts.get(name), str) and scripts[name].strip():
                    out.append((f"package.json scripts.{name}", ["npm", "run", "--silent", name]))
    for makefile in ("GNUmakefile", "makefile", "Makefile"):
        text = root.text(makefile, errors="replace")
        if text is not None:
            targets = set(_MAKE_TARGET.findall(text))
            for name in CONTRACT_TARGETS:
                if name in targets:
                    out.append((f"{makefile} target {name}", ["make", name]))
            break
    seen: set[tuple[str, ...]] = set()
    unique = []
    for where, argv in out:
        if tuple(argv) not in seen:
            seen.add(tuple(argv))
            unique.append((where, argv))
    looked = (
        "[tool.oopav.checks] in pyproject.toml, package.json scripts "
        + "/".join(CONTRACT_SCRIPTS)
        + ", Makefile targets "
        + "/".join(CONTRACT_TARGETS)
    )
    return unique[:MAX_CONTRACT_CHECKS], looked


# -- the per-file diagnostics tier: a language server or type checker per language ----------

DIAGNOSTIC_TOOLS: dict[str, tuple[tuple[str, ...], str]] = {
    # language: (file suffixes, tool)
    "python": ((".py", ".pyi"), "pyright"),
    "go": ((".go",), "gopls"),
}
UNSUPPORTED_DIAGNOSTICS: dict[tuple[str, ...], str] = {
    (".ts", ".tsx", ".js", ".jsx"): "TypeScript/JavaScript: tsserver speaks only its editor "
    "protocol; the compile gate runs tsc --noEmit where tsconfig.json is present",
    (".rs",): "Rust: rust-analyzer diagnoses whole crates, not files; the compile gate runs "
    "cargo check where Cargo.toml is present",
}


def diagnostics_plan(
    changed: list[str], tools: dict[str, list[str] | None]
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Which diagnostics run for the changed files: (language, argv) per language with a tool
    in ``tools`` (tool name → the argv that runs it, None where not installed), and the
    reasons for the changed languages that get none."""
    runs: list[tuple[str, list[str]]] = []
    skipped: list[str] = []
    for language, (suffixes, tool) in DIAGNOSTIC_TOOLS.items():
        files = sorted(f for f in changed if f.endswith(suffixes))
        if not files:
            continue
        run = tools.get(tool)
        if not run:
            skipped.append(f"{language}: {tool} is not installed")
        else:
            runs.append((language, [*run, *files]))
    for suffixes, why in UNSUPPORTED_DIAGNOSTICS.items():
        if any(f.endswith(suffixes) for f in changed):
            skipped.append(why)
    return runs, skipped


_PYRIGHT_SEVERITY = re.compile(r" - (error|warning|information): ")


def diagnostic_keys(output: str, root_name: str) -> Counter[str]:
    """The errors of a diagnostics run as location-free keys (``error_keys``); pyright's
    warnings and notes are not errors and never fail the gate."""
    lines = [
        line
        for line in output.splitlines()
        if not (m := _PYRIGHT_SEVERITY.search(line)) or m.group(1) == "error"
    ]
    return error_keys("\n".join(lines), root_name)
