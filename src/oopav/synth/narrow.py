"""Recall: rules that reach the held-out sites their examples stand for (issue 26, wave 3e).

The *too narrow* class of misses on real edits: a rule that rewrites nothing wrong but
misses sites the commit changed, because it kept literal what only the examples happened
to have. Here, what the other modules lack for it:

- **What a metavariable binds, by the name it calls** (:func:`callee_constraints`). A
  keyword or wrapper added or removed around an expression (`await x.parse(…)` ->
  `x.parse(…)`) is learned as `await $A` -> `$A`, too general where the examples keep
  other `await`s; a list of the changed texts reaches no other call, and a call head kept
  literal (`await $A.parse($$$B)`) no other method. Where every site binds a call and the
  kept code binds calls of other names (or no call), the rule keeps to the names the sites
  call: `A: {kind: call_expression, has: {field: function, regex: \\b(?:parse|safeParse)$}}`
  (zod's `await schema.safeParse(…)` follows once an example shows one).
- **A deleted call statement keeps its callee only** (:func:`deleted_call`). Deleted
  statements are anti-unified token by token with each metavariable kept to the texts
  seen (`var $A = require($B);`: which imports went is what the change is about); debug
  prints deleted with different messages (`console.log(`SUM: ${v}`);`,
  `console.log(`caught …`);`) differ in their token shapes and were deleted one literal
  rule each, reaching no other message. Where two or more deleted expression statements
  call the same callee, `console.log($$$ARGS);` is a candidate too (the examples' kept code
  still narrows it: a kept `console.log` makes it too general).
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

# Call nodes per grammar whose callee is their ``function`` field.
CALL_KINDS = frozenset({"call_expression", "call"})
_LAST_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)$")


def _callee(node: SgNode) -> str | None:
    """The name ``node`` (a call) calls: the last name of its callee (`parse` of
    `z.object(…).parse`), or None when it is no call or its callee ends otherwise."""
    if node.kind() not in CALL_KINDS:
        return None
    fn = node.field("function")
    if fn is None:
        return None
    m = _LAST_NAME.search(fn.text())
    return m.group(1) if m else None


def callee_constraints(
    names: list[str], pos: list[SgNode], neg: list[SgNode]
) -> list[dict[str, Any]]:
    """Constraints that keep a metavariable to calls of the names every positive calls,
    where no negative binds a call of one of those names (see the module doc). ``pos`` and
    ``neg`` are matches of a rule that binds ``names``."""
    out: list[dict[str, Any]] = []
    for name in names:
        pv = [n.get_match(name) for n in pos]
        nv = [n.get_match(name) for n in neg]
        if not pv or not nv or any(v is None for v in pv + nv):
            continue
        kinds = {v.kind() for v in pv if v is not None}
        called = {_callee(v) for v in pv if v is not None}
        if len(kinds) != 1 or None in called:
            continue
        kept = {_callee(v) for v in nv if v is not None and v.kind() in kinds}
        if kept & called:
            continue
        words = "|".join(re.escape(c) for c in sorted(c for c in called if c))
        out.append(
            {
                name: {
                    "kind": next(iter(kinds)),
                    "has": {"field": "function", "regex": f"\\b(?:{words})$"},
                }
            }
        )
    return out


def deleted_call(node: SgNode, peers: list[SgNode]) -> str | None:
    """``callee($$$ARGS)`` (with the statement's own ``;``) when ``node``, a deleted
    expression statement, is a call and some peer (another deleted statement of the same
    kind, of another text) calls the same callee; else None."""
    callee = _statement_callee(node)
    if callee is None or not any(_statement_callee(p) == callee for p in peers):
        return None
    return callee + "($$$ARGS)" + (";" if node.text().rstrip().endswith(";") else "")


def _statement_callee(node: SgNode) -> str | None:
    if node.kind() != "expression_statement":
        return None
    named = [c for c in node.children() if c.is_named()]
    if len(named) != 1 or named[0].kind() not in CALL_KINDS:
        return None
    fn = named[0].field("function")
    if fn is None or "\n" in fn.text() or "(" in fn.text():
        return None  # a callee that is itself a call or spans lines: no name to keep
    return fn.text()
