"""Missing semicolons (wave 3i, synth13): a style fix (eslint's `semi: always`, standard ->
semistandard, "fix style issues") that ends with `;` every statement automatic semicolon
insertion ended. Like trailing commas (``synth.commas``) it is one change made to statements
of several kinds and at every depth: koa's example ends a `return {…}` with `;`, the file held
out a `return function () {…}` and the `module.exports = class … {…}` around it. A pattern of
the one statement reaches neither (another statement kind, another text), and the change is
about *where* the semicolon goes, not which statement.

The rule: a statement of the kinds that take a terminating `;` whose text does not end with
one gains it:

```yaml
rule:
  any: [{kind: expression_statement}, {kind: return_statement}, {kind: lexical_declaration}, …]
  pattern: $A
  not: {regex: ';$'}
fix: $A;
```

over the language's terminated statements, less those the examples keep: a kind with a
statement that still lacks its `;` in an example's *after* text is left out (the examples'
unchanged code is negative, as everywhere). A statement nested in another that lacks its
`;` (the `return` inside the class of `module.exports = class …`) overlaps it, and ast-grep
rewrites the outer match only: the same rule follows as ``follow_up: nested`` copies, each
reaching one depth further. The rule set is kept only when it reproduces every example."""

from __future__ import annotations

import re
from typing import Any

# Statements whose grammar ends them with `;` or an automatic one (tree-sitter's
# `_semicolon`), which is then part of the node's text when written. Left out: a class
# field (the `;` is the class body's token, not the field's). `export` takes one in some
# forms only (wave 3s): `export * from 'x';`, `export { a };`, `export default x;`, but not
# `export function f() {}` or `export default class {}`; the declaration inside `export
# const x = 1` is a lexical_declaration of its own. See :data:`EXPORT`.
_JS = (
    "expression_statement",
    "return_statement",
    "lexical_declaration",
    "variable_declaration",
    "throw_statement",
    "break_statement",
    "continue_statement",
    "import_statement",
    "debugger_statement",
    "export_statement",
)
# The forms of `export` whose grammar ends them with `;` (jotai dfcf2c77's example gained
# `;` on `import` and `export * from` lines only, so the rule held no statement of the
# held-out files' `return (…)` and `export const X = () => {…}`): a re-export, an export
# list, or `export default` of a value that is not a function or class declaration.
EXPORT: dict[str, Any] = {
    "kind": "export_statement",
    "any": [
        {"has": {"field": "source", "kind": "string"}},
        {"has": {"kind": "export_clause"}},
        {
            "has": {
                "field": "value",
                "regex": r"[\s\S]",
                "not": {"regex": r"^(?:async\s+function|function|class|abstract\s+class)\b"},
            }
        },
    ],
}
STATEMENTS: dict[str, tuple[str, ...]] = {
    "javascript": _JS,
    "typescript": (*_JS, "type_alias_declaration"),
    "tsx": (*_JS, "type_alias_declaration"),
}
# Copies of the rule, one nesting depth each.
DEPTH = 8
# A changed line: the old line with `;` inserted where its code ends (before trailing blanks
# or a `//` comment).
_LINE_END = re.compile(r"^[ \t]*(?://.*)?$")


def only_semicolons(before: str, after: str) -> bool:
    """``after`` is ``before`` with `;` inserted, each at the end of a line's code (a
    trailing comment aside), the line's code not ending with `;` already. Line by line:
    linear in the file's size."""
    bl, al = before.split("\n"), after.split("\n")
    if len(bl) != len(al):
        return False
    inserted = False
    for b, a in zip(bl, al, strict=True):
        if a == b:
            continue
        k = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(b))
        if a[k : k + 1] != ";" or a[k + 1 :] != b[k:] or not _LINE_END.match(b[k:]):
            return False
        if not b[:k].strip() or b[:k].rstrip().endswith((";", "{", ",")):
            return False
        inserted = True
    return inserted


MULTILINE_TEMPLATE: dict[str, Any] = {
    "kind": "template_string",
    "has": {"kind": "string_fragment", "regex": "\n"},
    "stopBy": "end",
}


# A statement of the program itself, or the declaration of an `export` there: column 0.
TOP_LEVEL: dict[str, Any] = {
    "any": [
        {"inside": {"kind": "program"}},
        {"inside": {"kind": "export_statement", "inside": {"kind": "program"}}},
    ]
}


def semicolon_rule(kinds: list[str]) -> dict[str, Any]:
    def one(k: str) -> dict[str, Any]:
        return EXPORT if k == "export_statement" else {"kind": k}

    return {
        **(one(kinds[0]) if len(kinds) == 1 else {"any": [one(k) for k in kinds]}),
        "pattern": "$A",
        # A nested statement holding a template literal whose text spans lines is left
        # alone: `$A;` re-indents a multi-line `$A` to the statement's column (ast-grep's
        # fix), and inside the literal that changes the string (jotai's demo snippets, wave
        # 3s). A top-level statement stands at column 0, where nothing moves.
        "not": {
            "any": [
                {"regex": ";$"},
                {"has": MULTILINE_TEMPLATE, "not": TOP_LEVEL},
            ]
        },
    }


def missing_semicolon_rule(
    pairs: list[tuple[str, str]], lang: str, free: tuple[bool, ...] = ()
) -> tuple[dict[str, Any], int] | None:
    """The missing-semicolon rule (ast-grep's rule object) and the example sites it makes,
    when every changed example only gains semicolons at line ends; else None. ``synth.core``
    builds the rule set (the rule and ``DEPTH - 1`` nested copies) and keeps it only when the
    set reproduces every example. ``free[i]``: pair ``i`` is a partial example: the
    statements its after text leaves without `;` are the ones left for the rule, not kept
    ones."""
    from oopav.sandbox.astgrep import Rule, rewrite_source
    from oopav.synth.sites import parse

    kinds = list(STATEMENTS.get(lang, ()))
    changed = [(b, a) for b, a in pairs if b != a]
    if not kinds or not changed or not all(only_semicolons(b, a) for b, a in changed):
        return None
    # The examples' kept statements: a kind still without its `;` after the change is not
    # one the change is about.
    kept = {
        m.kind()
        for n, (_, a) in enumerate(pairs)
        if not (n < len(free) and free[n])
        for m in parse(a, lang).find_all(**semicolon_rule(kinds))
    }
    kinds = [k for k in kinds if k not in kept]
    if not kinds:
        return None
    # The kinds the examples show: the rule stays within the family, but a file that gained
    # no `;` from it at all says nothing for the change (then no rule).
    probe = semicolon_rule(kinds)
    shown = 0
    for b, _a in changed:
        text = b
        for _ in range(DEPTH):
            found = parse(text, lang).find_all(**probe)
            shown += len(found)
            if not found:
                break
            text = rewrite_source(text, Rule(id="c", language=lang, rule=probe, fix="$A;"))[0]
    if not shown:
        return None
    return probe, sum(a.count(";") - b.count(";") for b, a in changed)
