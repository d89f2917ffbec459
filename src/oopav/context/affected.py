"""Which test files exercise a change: the Python import graph of the repository (issue 28 §2).

Every ``.py`` file of the workspace is parsed with ``ast`` (imports only); a module's name is its
path under an import root (``src/`` in a src layout, else the repository root). A test file
(``test_*.py``, ``*_test.py``, or any module under a ``tests``/``test`` directory) is
*affected* when it is a changed file or imports, directly or through other modules of the
repository, a changed module. An import counts for the module it names (``from pkg.mod import
f``: ``pkg.mod``; ``from pkg import f``: ``pkg``, and through its ``__init__`` whatever that
imports); the parent packages that run along count only when their ``__init__.py`` is what
changed — else a package whose ``__init__`` imports everything would make every test affected
by any change. The answer says why for each test file (the chain of imports).

It answers None — "cannot tell, run everything" — when a changed file is not a Python module
of the repository (data files, configuration, ``conftest.py``, which pytest loads for every
test below it), or when nothing reaches a test file. Dynamic imports are not seen: that is why
the whole suite still runs after the affected tests unless the policy says ``tests: affected``.
"""

from __future__ import annotations

import ast
import os
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "build", "dist", "__pycache__", ".tox"}
MAX_FILES = 20_000


@dataclass(frozen=True)
class Affected:
    tests: list[str]
    """Test files (paths relative to the root), sorted."""
    why: dict[str, str]
    """Test file → the import chain that reaches a changed module."""
    total: int = 0
    """Test files in the repository."""


def _py_files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(dirpath, root)
        for f in sorted(filenames):
            if f.endswith(".py"):
                out.append(f if rel == "." else f"{rel}/{f}")
                if len(out) >= MAX_FILES:
                    return out
    return out


def _roots(root: Path) -> list[str]:
    src = root / "src"
    if src.is_dir() and any((d / "__init__.py").is_file() for d in src.iterdir() if d.is_dir()):
        return ["src/", ""]
    return [""]


def module_name(path: str, roots: list[str]) -> str | None:
    for r in roots:
        if r and not path.startswith(r):
            continue
        rel = path[len(r) :][:-3]
        parts = rel.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            return ".".join(parts)
    return None


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if name in ("conftest.py", "__init__.py"):
        return False
    parts = path.split("/")[:-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or any(p in ("tests", "test") for p in parts)
    )


# A line that may start an import statement (at any indentation: imports inside functions
# and ``if TYPE_CHECKING:`` blocks count too).
_IMPORT_LINE = re.compile(r"[ \t]*(?:import|from)[ \t\\]")


def import_statements(source: str) -> list[ast.stmt]:
    """The import statements of a module, parsed one by one from the lines that start one
    (with their parenthesised or backslash continuations), never the whole file: a 400 KB
    generated data module (idna's tables) costs a regular-expression scan, not an ``ast.parse``
    of its literals (seconds). A line inside a string that happens to read like an import
    counts too: that only ever adds a test file, never drops one."""
    out: list[ast.stmt] = []
    if "import" not in source:
        return out
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if not _IMPORT_LINE.match(line):
            continue
        text, j = line.split("#", 1)[0].strip(), i
        # Continuations: an open parenthesis until it closes, a trailing backslash.
        while j + 1 < len(lines) and j - i < 500:
            if text.endswith("\\"):
                text = text[:-1]
            elif text.count("(") <= text.count(")"):
                break
            j += 1
            text += " " + lines[j].split("#", 1)[0].strip()
        for candidate in (text, text.split(";", 1)[0]):
            try:
                out.extend(ast.parse(candidate).body)
                break
            except (SyntaxError, ValueError):
                continue
    return out


def _imports(source: str, module: str, is_package: bool) -> set[str]:
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in import_statements(source):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            if prefix:
                found.add(prefix)
            found.update(f"{prefix}.{a.name}" if prefix else a.name for a in node.names)
    return found


def affected_tests(root: Path, changed: list[str]) -> Affected | None:
    """The test files that import (transitively) a changed module; None: run everything."""
    if not changed:
        return None
    roots = _roots(root)
    files = _py_files(root)
    modules: dict[str, str] = {}  # module → path
    for f in files:
        m = module_name(f, roots)
        if m is not None:
            modules.setdefault(m, f)
        if f.startswith(("tests/", "test/")):
            # pytest puts the test directory on sys.path: `from test_pkg.test_x import ...`.
            alias = module_name(f, [f.split("/", 1)[0] + "/"])
            if alias is not None:
                modules.setdefault(alias, f)
    changed_mods: dict[str, str] = {}
    for c in changed:
        if not c.endswith(".py") or c.rsplit("/", 1)[-1] == "conftest.py":
            return None
        m = module_name(c, roots)
        if m is None or m not in modules:
            if not (root / c).exists():
                continue  # a deleted module: the tests importing it fail at collection anyway
            return None
        changed_mods[m] = c
    changed_pkgs = {m for m, c in changed_mods.items() if c.endswith("__init__.py")}
    # Reverse edges: module → the modules importing it.
    importers: dict[str, set[str]] = {}
    for m, f in modules.items():
        try:
            source = (root / f).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for name in _imports(source, m, f.endswith("__init__.py")):
            parts = name.split(".")
            # The longest prefix that is a module of the repository is what the import names
            # (`from pkg.mod import f` → pkg.mod; `from pkg import f` → pkg). Its parent
            # packages run too, but count only when they are what changed: otherwise a package
            # whose __init__ imports everything would make every test affected by anything.
            for i in range(len(parts), 0, -1):
                target = ".".join(parts[:i])
                if target in modules and target != m:
                    importers.setdefault(target, set()).add(m)
                    for j in range(1, i):
                        parent = ".".join(parts[:j])
                        if parent in changed_pkgs and parent != m:
                            importers.setdefault(parent, set()).add(m)
                    break
    chain: dict[str, str] = {m: c for m, c in changed_mods.items()}
    queue = deque(sorted(changed_mods))
    while queue:
        m = queue.popleft()
        for user in sorted(importers.get(m, ())):
            if user not in chain:
                chain[user] = f"{modules[user]} imports {m}" + (
                    f" ({chain[m]})" if m not in changed_mods else ""
                )
                queue.append(user)
    why: dict[str, str] = {}
    for m, reason in chain.items():
        path = modules.get(m)
        if path is not None and is_test_file(path):
            why[path] = reason if m not in changed_mods else f"{path} changed"
    for c in changed:
        if is_test_file(c) and (root / c).is_file():
            why.setdefault(c, f"{c} changed")
    if not why:
        return None
    total = sum(1 for f in files if is_test_file(f))
    return Affected(sorted(why), why, max(total, len(why)))
