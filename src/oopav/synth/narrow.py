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
- **An imported name used only as a type** (:func:`usage_fragments`). ky's `import
  {HttpMethod}` -> `import {type HttpMethod}` on the names a file uses only in type
  positions, with `Ky`, `stop`, `validateAndMerge` imported as values and kept: what tells
  them apart is not the import but the rest of the file, which ast-grep can ask with the
  metavariable shared into a relational rule: `not: {inside: {kind: program, stopBy: end,
  has: {kind: identifier, pattern: $A, stopBy: end, not: {inside: {kind:
  import_statement, stopBy: end}}}}}` — no identifier of the same text outside the imports.
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.discriminate import bound

# Call nodes per grammar whose callee is their ``function`` field.
CALL_KINDS = frozenset({"call_expression", "call"})
_LAST_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)$")
_WORD = re.compile(r"^[A-Za-z_]\w*$")


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
        got = bound(name, pos, neg)
        if got is None:
            continue
        pv, nv = got
        kinds = {v.kind() for v in pv}
        called = {_callee(v) for v in pv}
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


# Statements that import names, per grammar.
IMPORT_KINDS = frozenset(
    {"import_statement", "import_from_statement", "import_declaration", "use_declaration"}
)


def _import_of(node: SgNode) -> str | None:
    """The kind of the import statement ``node`` sits in, or None."""
    for anc in node.ancestors():
        if anc.kind() in IMPORT_KINDS:
            return anc.kind()
    return None


# Where an ``identifier`` names a type all the same (TypeScript's `typeof x` in a type).
_TYPE_USES = frozenset({"type_query"})


def _value_used(node: SgNode, imports: str) -> bool:
    """An ``identifier`` of ``node``'s text occurs in its file outside ``imports`` nodes
    (and outside a type query)."""
    root = node.get_root().root()
    rx = "^" + re.escape(node.text()) + "$"
    return any(
        not any(a.kind() == imports or a.kind() in _TYPE_USES for a in n.ancestors())
        for n in root.find_all(kind="identifier", regex=rx)
    )


def usage_fragments(
    names: list[str], pos: list[SgNode], neg: list[SgNode], fix: str = ""
) -> list[dict[str, Any]]:
    """Rule fragments that keep a metavariable binding an imported name to the names its
    file never uses as a value (an ``identifier`` outside the imports), where every positive
    is such a name and every negative is used as a value (see the module doc) — or sits in
    an import that already has the word the fix writes before the name (`import type
    {Options}`: the rule's own output, one level up)."""
    out: list[dict[str, Any]] = []
    for name in names:
        pv = [n.get_match(name) for n in pos]
        nv = [n.get_match(name) for n in neg]
        if not pv or not nv or any(v is None for v in pv + nv):
            continue
        kinds = {_import_of(v) for v in pv if v is not None}
        if len(kinds) != 1 or None in kinds:
            continue
        imports = next(iter(kinds))
        assert imports is not None
        if any(v is not None and (v.children() or _value_used(v, imports)) for v in pv):
            continue
        word = fix.replace("$" + name, "").strip()
        done = re.compile(r"^\w+\s+" + re.escape(word) + r"\b") if _WORD.match(word) else None
        marked = []  # the kept names already in such an import
        for v in nv:
            if v is None or _value_used(v, imports):
                continue
            top = next((a for a in v.ancestors() if a.kind() == imports), None)
            if done is None or top is None or not done.match(top.text()):
                break
            marked.append(v)
        else:
            outside = [{"kind": k} for k in (imports, *sorted(_TYPE_USES))]
            use = {
                "kind": "identifier",
                "pattern": "$" + name,
                "stopBy": "end",
                "not": {"inside": {"any": outside, "stopBy": "end"}},
            }
            root = pv[0].get_root().root().kind() if pv[0] is not None else None
            if root is None:
                continue
            frag: dict[str, Any] = {"not": {"inside": {"kind": root, "stopBy": "end", "has": use}}}
            if marked and done is not None:
                own = {"kind": imports, "regex": done.pattern, "stopBy": "end"}
                frag = {"all": [frag, {"not": {"inside": own}}]}
            if all(p.range() == v.range() for p, v in zip(pos, pv, strict=True) if v):
                # The match is the name itself (`pattern: $A`): the ast-grep CLI wants a
                # kind it can tell from the rule.
                frag = {"kind": "identifier", **frag}
            out.append(frag)
    return out
