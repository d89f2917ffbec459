"""A function's definition and its calls (wave 3h, synth7): the follow-ups that make a
change of one side reach the other.

A commit that renames a function or gives it a new parameter changes its definition and its
calls together; the example files often hold only one side (the calls in `adapters/http.js`,
the `function buildUrl(…)` in `helpers/buildUrl.js`). A rule learned from one side alone is
exact there and misses the other. Two follow-ups (``follow_up: definition``, optional: a
repository may hold only one side), each kept only where the rule set still reproduces
every example (an example that keeps the other side unchanged refuses it):

- a **call head renamed** (`NAME($$$A)` -> `NEW($$$A)`, any receiver): the function or
  method *defined* as ``NAME`` is renamed too (``kind: identifier, inside: {kind:
  function_declaration, field: name}``); a variable bound to it (`var buildUrl =
  require(…)`) is no definition and stays;
- a **parameter appended** to the definitions of some names (`function enhanceError(error,
  config, code)` -> `…, response)`, the names read from where the rule matches in the
  examples): their calls pass the same name at the end (`$F($$$A)` -> `$F($$$A, response)`,
  ``F`` the names, a call that passes nothing or passes it already left alone).

Not the other way round from the calls: an argument appended to calls is no evidence of the
parameter's name or place (jinja's `PythonTranslator.process(…, source)` kept `def
process(environment, node)` — a wrong hunk in a trial). Only the plain pattern of a call
(or a statement around one, `return NAME($$$A)`) is read for a rename: a rule narrowed by
contexts or constraints names where its calls are, and the definition is not there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ast_grep_py import SgRoot

from oopav.sandbox.astgrep import Rule

if TYPE_CHECKING:
    from oopav.synth.core import SynthResult, SynthRule

# Per language: the definition kinds whose ``name`` field names a function, the kinds of
# that name node, and the parameter list's kind with a wrapper that parses it alone.
_DEFS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str, str]] = {
    "python": (("function_definition",), ("identifier",), "parameters", "def _f({}): pass"),
    "javascript": (
        ("function_declaration", "function_expression", "method_definition"),
        ("identifier", "property_identifier"),
        "formal_parameters",
        "function _f({}) {{}}",
    ),
    "typescript": (
        ("function_declaration", "function_expression", "method_definition"),
        ("identifier", "property_identifier"),
        "formal_parameters",
        "function _f({}) {{}}",
    ),
    "tsx": (
        ("function_declaration", "function_expression", "method_definition"),
        ("identifier", "property_identifier"),
        "formal_parameters",
        "function _f({}) {{}}",
    ),
    "go": (
        ("function_declaration", "method_declaration"),
        ("identifier", "field_identifier"),
        "parameter_list",
        "func _f({}) {{}}",
    ),
    "rust": (("function_item",), ("identifier",), "parameters", "fn _f({}) {{}}"),
}
# `recv.NAME($$$V)` in a pattern or fix: the receiver (any text), the name, the list var.
_CALL = re.compile(r"(?P<recv>(?:[\w$]+(?:\.|::|->))*)(?P<name>[A-Za-z_]\w*)\(\$\$\$(?P<v>[A-Z]+)")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
# Rule keys a plain candidate has (a rule narrowed by anything else is left alone).
_PLAIN = frozenset({"pattern", "not", "regex"})


def _call(text: str) -> tuple[str, str, str, int, int] | None:
    """The one ``NAME($$$V`` in ``text``: (receiver, name, var, start, end of the match)."""
    found = list(_CALL.finditer(text))
    if len(found) != 1:
        return None
    m = found[0]
    return m["recv"], m["name"], m["v"], m.start(), m.end()


def _def_name(lang: str, name: str) -> dict[str, Any]:
    defs, names, _, _ = _DEFS[lang]
    inside: dict[str, Any] = {"field": "name", "stopBy": "neighbor"}
    if len(defs) == 1:
        inside["kind"] = defs[0]
    else:
        inside["any"] = [{"kind": k} for k in defs]
    rule: dict[str, Any] = {"regex": f"^{re.escape(name)}$", "inside": inside}
    if len(names) == 1:
        rule["kind"] = names[0]
    else:
        rule["any"] = [{"kind": k} for k in names]
    return rule


def companion(rule: SynthRule) -> tuple[dict[str, Any], str, str] | None:
    """(rule, fix, what) of the definition follow-up of ``rule``, or None (module doc)."""
    if rule.language not in _DEFS or rule.follow_up or rule.companion:
        return None
    if rule.constraints or rule.transform or rule.expand_start or rule.expand_end:
        return None
    if not set(rule.rule) <= _PLAIN or not isinstance(rule.rule.get("pattern"), str):
        return None
    pattern, fix = rule.rule["pattern"], rule.fix
    before, after = _call(pattern), _call(fix)
    if before is None or after is None:
        return None
    recv, name, var, s0, e0 = before
    recv2, name2, var2, s1, e1 = after
    if recv != recv2 or var != var2 or pattern[:s0] != fix[:s1]:
        return None
    rest, rest2 = pattern[e0:], fix[e1:]
    if name != name2 and rest == rest2 and _NAME.match(name2):
        return _def_name(rule.language, name), name2, f"the definition of {name} renamed"
    return None


def _defined_names(rule: SynthRule, befores: list[str]) -> set[str] | None:
    """The names of the definitions whose parameter lists ``rule`` matches in ``befores``
    (None where a match is no parameter list of a named definition)."""
    defs, _, _, _ = _DEFS[rule.language]
    names: set[str] = set()
    config = Rule(
        id="c", language=rule.language, rule=rule.rule, fix=rule.fix, constraints=rule.constraints
    ).config()
    for text in befores:
        try:
            found = SgRoot(text, rule.language).root().find_all(config)
        except Exception:  # a rule ast-grep-py refuses: no follow-up
            return None
        for node in found:
            parent = node.parent()
            name = parent.field("name") if parent is not None else None
            if parent is None or parent.kind() not in defs or name is None:
                return None
            names.add(name.text())
    return names


def calls_companion(
    rule: SynthRule, befores: list[str]
) -> tuple[dict[str, Any], str, dict[str, Any], str] | None:
    """The other way round: a parameter appended to the definitions of some names
    (`function enhanceError(error, config, code)` -> `…, response)`) appends the same name
    to their calls: (rule, fix, constraints, what), or None."""
    if rule.language not in _DEFS or rule.follow_up or rule.companion or rule.transform:
        return None
    pattern = rule.rule.get("pattern")
    _, _, params, _ = _DEFS[rule.language]
    if not isinstance(pattern, dict) or pattern.get("selector") != params:
        return None
    added = re.match(r"^\(\$\$\$(?P<v>[A-Z]+),\s*(?P<x>[A-Za-z_]\w*)\)$", rule.fix)
    if added is None:
        return None
    names = _defined_names(rule, befores)
    if not names:
        return None
    x = added["x"]
    alts = "|".join(re.escape(n) for n in sorted(names))
    new = {
        "pattern": "$F($$$A)",
        "not": {
            "any": [
                {"regex": r"\(\s*\)$"},
                {
                    "has": {
                        "field": "arguments",
                        "stopBy": "neighbor",
                        "has": {"regex": f"^{re.escape(x)}$", "stopBy": "neighbor"},
                    }
                },
            ]
        },
    }
    cons = {"F": {"regex": rf"(?:^|\.)(?:{alts})$"}}
    return new, f"$F($$$A, {x})", cons, f"the calls of {', '.join(sorted(names))} get {x}"


def add_definition_rules(
    result: SynthResult, reproduces: Callable[[SynthResult], bool], befores: list[str]
) -> list[str]:
    """Append the definition follow-up of each rule that has one (or the calls' follow-up
    of a definition's new parameter), when the rule set still reproduces the examples with
    it; the notes say which."""
    notes: list[str] = []
    rules = list(result.rules)
    for rule in list(rules):
        calls = calls_companion(rule, befores)
        if calls is not None:
            new_rule, new_fix, cons, what = calls
            extra = replace(
                rule,
                id=f"synth-{len(rules) + 1}",
                rule=new_rule,
                fix=new_fix,
                constraints=cons,
                sites=0,
                follow_up="definition",
            )
            if reproduces(replace(result, rules=[*rules, extra])):
                rules.append(extra)
                notes.append(f"{extra.id}: {what} too (follows {rule.id})")
            continue
        found = companion(rule)
        if found is None:
            continue
        new, fix, what = found
        extra = replace(
            rule,
            id=f"synth-{len(rules) + 1}",
            rule=new,
            fix=fix,
            sites=0,
            follow_up="definition",
        )
        trial = replace(result, rules=[*rules, extra])
        if reproduces(trial):
            rules.append(extra)
            notes.append(f"{extra.id}: {what} too (follows {rule.id})")
    result.rules = rules
    return notes
