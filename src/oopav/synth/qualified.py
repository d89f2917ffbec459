"""A Go package's name where other packages use it: ``pkg.Name`` (wave 3u).

In Go a package-level name is written bare inside its own package (``NewContext(a, set,
set)``, ``Get(ContentType)``) and qualified everywhere else (``cli.NewContext(…)``,
``echo.ContentType``): the tests of a ``pkg_test`` package, the sub-packages, the examples.
A rule learned from the package's own files matched the bare spelling only. urfave/cli
65d50017 (`NewContext(a, set, set)` -> `NewContext(a, set, nil)` in `app.go`, the held-out
tests call `cli.NewContext(app, set, set)`) and labstack/echo 8b5772cf (`ContentType` ->
`HeaderContentType` in `echo.go`, the middleware reads `echo.ContentType`) reproduced none of
their held-out files.

Each rule over a bare *exported* name of the examples' package gets a follow-up (``follow_up:
qualified``, optional: a repository may hold no other package) that does the same to the
qualified spelling — only where the operand is the package's name *and* the file imports
that package unaliased by a module path (``"github.com/labstack/echo"``, also ``…/cli.v2``
and ``…/cli/v2``), so a standard package of the same name (``context``, ``errors``) or a
local variable is left alone:

- a rename (``regex: ^ContentType$`` over the value names): the member name of a selector
  whose operand is the package (``kind: field_identifier``);
- a plain pattern headed by the name (``NewContext($A, $B, $B)``, ``Config{$$$A}``) whose fix
  starts with the same or another exported name: the pattern and the fix with the package
  written before them.

Go only: a qualified reference is how Go spells every other package's name; in Python,
JavaScript and Rust a name is imported and then written bare (imports.py follows it), or the
rename already reaches members of that name. Kept only where the rule set still reproduces
every example (an example that keeps ``pkg.Name`` refuses it). The package is read from the
changed examples' ``package`` clauses: one name for all, not ``main`` (nothing imports it) and
not a ``_test`` package (its names are no one else's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oopav.synth.sites import parse

if TYPE_CHECKING:
    from oopav.synth.core import SynthResult, SynthRule

_EXPORTED = re.compile(r"^[A-Z]\w*$")
# A pattern headed by a bare name: the name, then what follows it (a call, a literal).
_HEAD = re.compile(r"^(?P<name>[A-Z]\w*)(?=[({])")
# The keys of a rename candidate over the value names, and of a plain pattern rule.
_RENAME_KEYS = frozenset({"regex", "any", "kind"})
_PLAIN_KEYS = frozenset({"pattern", "not"})
_VALUE_KINDS = frozenset({"identifier", "type_identifier", "package_identifier"})


def package_of(befores: list[str]) -> str | None:
    """The one package the Go files ``befores`` declare, where others can import it."""
    names: set[str] = set()
    for text in befores:
        clause = parse(text, "go").find(kind="package_clause")
        ident = clause.find(kind="package_identifier") if clause is not None else None
        if ident is None:
            return None
        names.add(ident.text())
    if len(names) != 1:
        return None
    name = names.pop()
    return None if name == "main" or name.endswith("_test") else name


def _imports(package: str) -> dict[str, Any]:
    """The file imports ``package`` by a module path, unaliased (its first element has a
    dot, as no standard package's has; ``.vN`` and ``/vN`` major versions allowed)."""
    path = rf'^"[^"/]*\.[^"/]*/(?:[^"]*/)?{re.escape(package)}(?:\.v\d+)?(?:/v\d+)?"$'
    return {
        "inside": {
            "kind": "source_file",
            "stopBy": "end",
            "has": {"kind": "import_spec", "regex": path, "stopBy": "end"},
        }
    }


def _renamed(rule: dict[str, Any]) -> str | None:
    """The exported name a plain value-name rename rule matches, or None."""
    if not set(rule) <= _RENAME_KEYS:
        return None
    m = re.fullmatch(r"\^([A-Z]\w*)\$", str(rule.get("regex", "")))
    kinds = {rule["kind"]} if "kind" in rule else set()
    for alt in rule.get("any", []):
        if not isinstance(alt, dict) or set(alt) != {"kind"}:
            return None
        kinds.add(alt["kind"])
    if m is None or "identifier" not in kinds or not kinds <= _VALUE_KINDS:
        return None
    return m.group(1)


def qualified_twin(rule: SynthRule, package: str) -> tuple[dict[str, Any], str] | None:
    """(rule, fix) of ``rule``'s qualified follow-up, or None (module doc)."""
    if rule.language != "go" or rule.follow_up or rule.companion or rule.transform:
        return None
    if rule.expand_start or rule.expand_end:
        return None
    name = _renamed(rule.rule)
    if name is not None:
        if not _EXPORTED.match(rule.fix):
            return None
        twin = {
            "kind": "field_identifier",
            "regex": rule.rule["regex"],
            "inside": {
                "kind": "selector_expression",
                "field": "field",
                "stopBy": "neighbor",
                "has": {"field": "operand", "regex": f"^{re.escape(package)}$"},
            },
            "all": [_imports(package)],
        }
        return twin, rule.fix
    pattern = rule.rule.get("pattern")
    if not set(rule.rule) <= _PLAIN_KEYS or not isinstance(pattern, str):
        return None
    if _HEAD.match(pattern) is None or _HEAD.match(rule.fix) is None:
        return None
    return (
        {**rule.rule, "pattern": f"{package}.{pattern}", "all": [_imports(package)]},
        f"{package}.{rule.fix}",
    )


def add_qualified_rules(
    result: SynthResult, reproduces: Callable[[SynthResult], bool], befores: list[str]
) -> list[str]:
    """Append the qualified follow-up of each rule that has one, when the rule set still
    reproduces the examples with it; the notes say which."""
    if result.language != "go" or not befores:
        return []
    package = package_of(befores)
    if package is None:
        return []
    notes: list[str] = []
    rules = list(result.rules)
    for rule in list(rules):
        found = qualified_twin(rule, package)
        if found is None:
            continue
        new, fix = found
        extra = replace(
            rule, id=f"synth-{len(rules) + 1}", rule=new, fix=fix, sites=0, follow_up="qualified"
        )
        if reproduces(replace(result, rules=[*rules, extra])):
            rules.append(extra)
            notes.append(f"{extra.id}: {rule.id} where another package names it `{package}.…` too")
    result.rules = rules
    return notes
