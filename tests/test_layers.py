"""The import structure: one direction of dependency, no cycles.

Layers, lowest first: ``events`` ← ``bus`` ← ``projections`` / ``sandbox`` / ``models`` /
``context`` / ``synth`` ← ``decide`` (pure) ← ``reflection`` ← ``handlers`` ← process wiring
(``app``, ``services``, ``replay``, ``mission_replay``, ``corpus``) ← ``tui`` ← ``cli``. A module may
import its own layer and those below it. ``decide`` imports no bus, sandbox, model client or
click; only ``cli`` imports click. Imports inside functions count too (a function-level import
is how a cycle hides), except ``if TYPE_CHECKING:`` blocks, which never run.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "oopav"

# The lowest layer a package may NOT import: events imports nothing of oopav but events; bus
# sits on events; handlers may use everything below the process wiring; nothing below the CLI
# imports it.
WIRING = (
    "oopav.app",
    "oopav.services",
    "oopav.replay",
    "oopav.mission_replay",
    "oopav.corpus",
)
ABOVE_HANDLERS = ("oopav.handlers", *WIRING, "oopav.tui", "oopav.cli")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "oopav.events": (
        "oopav.bus",
        "oopav.projections",
        "oopav.sandbox",
        "oopav.models",
        "oopav.context",
        "oopav.synth",
        "oopav.decide",
        "oopav.reflection",
        *ABOVE_HANDLERS,
    ),
    "oopav.bus": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    "oopav.projections": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    "oopav.sandbox": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    "oopav.models": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    "oopav.context": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    "oopav.synth": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    "oopav.trainer": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    # Durable history (blobs, prompts, trees, signatures, archives): storage the bus and the
    # handlers use, so it may not reach up to them; the corpus replay is wiring (oopav.corpus).
    "oopav.history": ("oopav.decide", "oopav.reflection", *ABOVE_HANDLERS),
    # Pure decisions: facts in, decisions out; nothing that talks to the world.
    "oopav.decide": (
        "oopav.bus",
        "oopav.sandbox",
        "oopav.models",
        "oopav.reflection",
        *ABOVE_HANDLERS,
    ),
    "oopav.reflection": ABOVE_HANDLERS,
    "oopav.handlers": (*WIRING, "oopav.tui", "oopav.cli"),
    "oopav.app": ("oopav.tui", "oopav.cli"),
    "oopav.services": ("oopav.tui", "oopav.cli"),
    "oopav.replay": ("oopav.tui", "oopav.cli"),
    "oopav.mission_replay": ("oopav.tui", "oopav.cli"),
    "oopav.corpus": ("oopav.tui", "oopav.cli"),
    "oopav.tui": ("oopav.cli",),
}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                for n in ast.walk(sub):
                    if hasattr(n, "lineno"):
                        lines.add(n.lineno)
    return lines


def import_graph() -> dict[str, set[str]]:
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("oopav")]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("oopav"):
                    # `from pkg import submodule` depends on the submodule, not the package.
                    subs = [f"{node.module}.{a.name}" for a in node.names]
                    targets = [t for t in subs if t in mods] or [node.module]
            for target in targets:
                found = resolve(target)
                if found and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles (function-level imports included):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_layers_point_one_way() -> None:
    graph = import_graph()
    wrong = []
    for module, deps in sorted(graph.items()):
        for layer, forbidden in FORBIDDEN.items():
            if module == layer or module.startswith(layer + "."):
                for dep in sorted(deps):
                    if any(dep == f or dep.startswith(f + ".") for f in forbidden):
                        wrong.append(f"{module} -> {dep}")
    assert wrong == [], "imports against the layer order:\n" + "\n".join(wrong)


def test_only_the_cli_imports_click() -> None:
    wrong = []
    for name, path in sorted(_modules().items()):
        if name == "oopav.cli" or name.startswith("oopav.cli."):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(
                a.name.split(".")[0] == "click" for a in node.names
            ):
                wrong.append(name)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "click":
                wrong.append(name)
    assert wrong == [], "click imported outside oopav.cli: " + ", ".join(sorted(set(wrong)))


def test_the_checker_sees_a_cycle_hidden_in_a_function() -> None:
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert cycles(graph) == [["a", "b"]]


# -- reading the repository: only through the workspace interface (issue 30) -----------------

# Path methods that read or list the file system, flagged when called with no positional
# argument (``p.is_file()``, ``p.read_text()``): the interface's methods all take the path
# (``files.is_file("x")``, ``files.text("x")``). Listing calls are flagged whatever their args.
_PATH_READS = frozenset(
    {"read_text", "read_bytes", "is_file", "is_dir", "exists", "stat", "iterdir", "is_symlink"}
)
_LISTING = frozenset({"glob", "rglob", "walk", "listdir", "scandir"})
# Reads in handlers/decide of files that are not the repository's, each with its reason.
_NOT_THE_REPOSITORY: dict[str, str] = {
    "oopav.handlers.learner": "the learner's dataset files under the data directory",
    "oopav.handlers.reflector": "the reflector's configuration and template files",
    "oopav.handlers.ports": "a stale junit report in the session's artifacts",
    "oopav.handlers.support.baseline_cache": "the baseline cache and the env's site-packages",
    "oopav.handlers.support.repo_check": "/proc/self/mountinfo",
    "oopav.handlers.support.submission": "the submitted interpreter path exists",
    "oopav.handlers.support.workspace": "whether the workspace directory exists yet",
    "oopav.decide.budgets": "a budgets configuration file named by the operator",
}


def direct_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, call) of each direct file-system read in a module's syntax tree."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id == "open":
            found.append((node.lineno, "open()"))
        elif isinstance(fn, ast.Attribute):
            if isinstance(fn.value, ast.Name) and fn.value.id == "ast":
                continue  # ast.walk: a syntax tree, not the file system
            if fn.attr in _LISTING or (fn.attr in _PATH_READS and not node.args):
                found.append((node.lineno, f".{fn.attr}()"))
            elif fn.attr == "open" and not (isinstance(fn.value, ast.Name) and fn.value.id == "os"):
                found.append((node.lineno, ".open()"))
    return found


def test_handlers_and_decide_read_the_repository_only_through_the_workspace_interface() -> None:
    """The kernel reads a repository only through ``sandbox.files.WorkspaceFiles`` (passed to
    ``decide`` as ``decide.files.RepoFiles``): no handler and no decision opens, stats or
    lists a path itself."""
    wrong = []
    for name, path in sorted(_modules().items()):
        if not name.startswith(("oopav.handlers", "oopav.decide")):
            continue
        if name in _NOT_THE_REPOSITORY:
            continue
        for line, call in direct_reads(ast.parse(path.read_text())):
            wrong.append(f"{name}:{line}: {call}")
    assert wrong == [], (
        "direct file reads in handlers/decide (use oopav.sandbox.files.WorkspaceFiles):\n"
        + "\n".join(wrong)
    )


def test_the_read_checker_sees_a_direct_read() -> None:
    code = (
        "def f(root, files):\n"
        "    (root / 'a').read_text()\n"
        "    open('x')\n"
        "    root.rglob('*.py')\n"
        "    files.text('a')\n"
        "    files.is_file('a')\n"
    )
    assert [c for _, c in direct_reads(ast.parse(code))] == [".read_text()", "open()", ".rglob()"]
