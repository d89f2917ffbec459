"""Learned rules in the shape the ast-grep CLI accepts (applied where a rule is rendered).

The CLI (0.51) refuses a rule whose top level names no AST kind it can tell from the rule
alone ("Rule must specify a set of AST kinds to match. Try adding `kind` rule"): a pattern
that is a bare metavariable (``pattern: $STR1``), a ``regex``, ``inside``/``has``/``not`` with
no ``kind``, an ``any`` one of whose branches names none. ast-grep-py, which the synthesiser and
the loop's sandbox use, accepts the same rule and matches any node there; so the rule learned
and verified in process could not be run by a user with ``ast-grep scan``.

:func:`cli_rule` adds the kind where it already is in the rule, so that what the rule matches
does not change: a bare ``pattern: $X`` whose constraint on ``$X`` names kinds (a string
transform's ``STR1: {kind: string, regex: …}``) matches exactly the nodes of those kinds, and
says so at the top (``kind: string``). :func:`potential_kinds` follows ast-grep's own rule
(``potential_kinds`` in ast-grep-core): ``pattern`` (unless a bare metavariable) and ``kind``
name kinds, ``all`` / a mapping of several keys names the kinds one of its parts names, ``any``
only when every branch does; ``regex``, ``nthChild``, relational rules and ``not`` name none.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ast_grep_py import SgRoot

if TYPE_CHECKING:  # core imports this module to render rules
    from oopav.synth.core import SynthResult

_BARE = re.compile(r"^\s*\$\$?([A-Z_][A-Z0-9_]*)\s*$")
# Every kind (None: "any kind", the CLI refuses it at the top of a rule).
Kinds = frozenset[str] | None


def bare_metavariable(pattern: Any) -> str | None:
    """``X`` for a pattern that is one metavariable (``$X`` / ``$$X``), else None."""
    if isinstance(pattern, str):
        m = _BARE.match(pattern)
        return m.group(1) if m else None
    return None


# The character ast-grep puts for `$` in a pattern of languages whose identifiers cannot hold
# `$` (its `expando_char`); JavaScript and TypeScript keep `$`.
_EXPANDO = {"python": "µ", "rust": "µ", "go": "µ", "c": "µ", "cpp": "µ", "csharp": "µ"}


def pattern_root_kind(pattern: str, language: str) -> str | None:
    """The kind of the node a pattern stands for, as ast-grep finds it: from the parsed
    pattern's root down while a node has one child (a zero-width MISSING node, the `;` a Rust
    expression lacks, does not count). ``ERROR`` for a pattern that does not parse as one
    node; None when the language is unknown to ast-grep-py."""
    code = pattern.replace("$", _EXPANDO.get(language, "$"))
    try:
        node = SgRoot(code, language).root()
    except Exception:  # ast-grep-py raises a bare Exception for an unknown language
        return None
    while True:
        children = [c for c in node.children() if c.text()]
        if len(children) != 1:
            return node.kind()
        node = children[0]


def _names_kind(pattern: Any, language: str | None) -> bool:
    """A pattern names its root's kind unless it is a bare metavariable or (``language``
    given) its root is an ``ERROR`` node: the CLI takes such a pattern (a Python ``elif …``
    clause, a Rust ``: $A`` bound, learned as they stand in their parent) for one of no kind,
    where ast-grep-py still matches it."""
    if not isinstance(pattern, str) or bare_metavariable(pattern) is not None:
        return False
    return language is None or pattern_root_kind(pattern, language) != "ERROR"


def potential_kinds(
    rule: Any, utils: dict[str, Any] | None = None, language: str | None = None
) -> Kinds:
    """The kinds a rule can match, as far as the rule alone tells (None: any kind)."""
    if not isinstance(rule, dict):
        return None
    parts: list[Kinds] = []
    for key, value in rule.items():
        if key == "kind" and isinstance(value, str):
            parts.append(frozenset({value}))
        elif key == "pattern":
            if isinstance(value, dict):
                sel = value.get("selector")
                if isinstance(sel, str):
                    parts.append(frozenset({sel}))
                elif _names_kind(value.get("context"), language):
                    parts.append(frozenset({"(pattern)"}))
            elif _names_kind(value, language):
                parts.append(frozenset({"(pattern)"}))
        elif key == "all" and isinstance(value, list):
            parts.extend(potential_kinds(v, utils, language) for v in value)
        elif key == "any" and isinstance(value, list):
            subs = [potential_kinds(v, utils, language) for v in value]
            if subs and all(s is not None for s in subs):
                parts.append(frozenset().union(*[s for s in subs if s is not None]))
        elif key == "matches" and isinstance(value, str) and utils and value in utils:
            parts.append(potential_kinds(utils[value], utils, language))
    known = [p for p in parts if p is not None]
    if not known:
        return None
    out = known[0]
    for p in known[1:]:
        out = out & p if "(pattern)" not in out and "(pattern)" not in p else out | p
    return out


def _constraint_kinds(constraint: Any) -> list[str] | None:
    """The kinds a constraint names, when it names them as kinds (not through a pattern)."""
    kinds = potential_kinds(constraint)
    if kinds is None or "(pattern)" in kinds or not kinds:
        return None
    return sorted(kinds)


def cli_rule(rule: dict[str, Any], constraints: dict[str, Any] | None) -> dict[str, Any]:
    """``rule`` with the kind the CLI needs at its top, where the rule already implies it
    (the rule matches exactly what it matched); unchanged when it names kinds or when its
    kinds cannot be told from it."""
    if potential_kinds(rule) is not None:
        return rule
    name = bare_metavariable(rule.get("pattern"))
    if name is None or not constraints or name not in constraints:
        return rule
    kinds = _constraint_kinds(constraints[name])
    if kinds is None:
        return rule
    return with_kinds(rule, kinds)


def with_kinds(rule: dict[str, Any], kinds: list[str]) -> dict[str, Any]:
    """``rule`` restricted to ``kinds``: ``kind`` next to its pattern, or ``any`` of them."""
    out: dict[str, Any] = {}
    for key, value in rule.items():
        if key == "pattern" and len(kinds) == 1:
            out[key] = value
            out["kind"] = kinds[0]  # next to the pattern it qualifies
        else:
            out[key] = value
    if len(kinds) == 1 and "kind" not in out:
        out = {"kind": kinds[0], **out}
    if len(kinds) > 1:
        alts = [{"kind": k} for k in kinds]
        if "any" not in out:
            out["any"] = alts
        else:
            out["all"] = [*out.get("all", []), {"any": alts}]
    return out


def kinds_from_sites(
    result: SynthResult, befores: list[str], reproduces: Callable[[SynthResult], bool]
) -> list[str]:
    """A rule the rule alone cannot give a kind (``pattern: $A`` inside an import specifier,
    with a names regex: ky's ``import {…}`` made ``import {type …}``) gets the kinds of the
    nodes it matches in the examples, where it was learned; kept only when the rule set still
    reproduces the examples. The rule is then narrower only on code of a kind the examples
    never show it matching. Returns notes (none: the CLI reason is in the docs)."""
    texts = list(befores)
    rules = list(result.rules)
    changed = False
    found: dict[int, list[str]] = {}
    missing: list[int] = []
    for i, rule in enumerate(rules):
        if potential_kinds(rule.cli_rule(), language=result.language) is None:
            config = rule.as_rule().config()
            kinds = sorted(
                {
                    n.kind()
                    for t in texts
                    for n in SgRoot(t, result.language).root().find_all(config)
                }
            )
            if kinds:
                found[i] = kinds
                rules[i] = replace(rule, rule=with_kinds(rule.rule, kinds))
                changed = True
            else:
                missing.append(i)
        texts = [rules[i].apply(t)[0] for t in texts]
    # A rule that matches nothing in the examples (a deletion's companion, for the statement
    # first in its block) takes the kinds of a rule of the same pattern and constraints: one
    # refused document makes the CLI refuse the whole rule file.
    for i in missing:
        rule = rules[i]
        for j, kinds in found.items():
            other = result.rules[j]
            if (other.rule.get("pattern"), other.constraints) == (
                rule.rule.get("pattern"),
                rule.constraints,
            ):
                rules[i] = replace(rule, rule=with_kinds(rule.rule, kinds))
                break
    if changed:
        old = result.rules
        result.rules = rules
        if not reproduces(result):
            result.rules = old
    return []
