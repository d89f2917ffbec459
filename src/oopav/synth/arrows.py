"""An anonymous function expression made an arrow function (wave 3s; ESLint's
prefer-arrow-callback): `.then(function(res) {…})` -> `.then(res => {…})`.

node-fetch 83807124 rewrote 93 callbacks so; the site is the whole function, and its body
(different at every site) became the rule's literal text, which reached no other callback.
The change is in the header only: the rule keeps the body as ``$BODY`` and writes the
parameters as the examples do (`res =>` for one name, `(a, b) =>` otherwise):

```yaml
rule:
  pattern: function($P) $BODY
  kind: function_expression
  regex: ^function\\s*\\(            # not `async function`, `function*`, a named one
  not: {has: {stopBy: end, any: [{kind: this}, {kind: super}, {kind: identifier, regex: ^arguments$}, …]}}
constraints: {P: {kind: identifier}}
fix: $P => $BODY
```

An arrow function has no `this`, `arguments`, `super` or `new.target` of its own, so a function
that uses one (anywhere inside, nested functions too: kept on the safe side) is left alone;
an `async` function (ast-grep's pattern would match it without its `async`), a generator and a
named function expression (its name is in scope in its body) too; and one holding a template
literal over lines (``$BODY`` is re-indented to the match's column: the literal's text would
change).
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

LANGS = frozenset({"javascript", "typescript", "tsx"})
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
# What an arrow function would read from its enclosing scope instead of its own.
_OWN = ({"kind": "this"}, {"kind": "super"}, {"kind": "identifier", "regex": "^arguments$"})
_META = {"kind": "meta_property"}  # `new.target`, where the grammar has it
# A template literal whose text spans lines: ast-grep re-indents `$BODY` to the match's
# column, which inside the literal changes the string (docs/synth.md § Limits).
_TEMPLATE = {"kind": "template_string", "has": {"kind": "string_fragment", "regex": "\n"}}


def _has_kind(lang: str, kind: str) -> bool:
    from ast_grep_py import SgRoot

    try:
        SgRoot("", lang).root().find(kind=kind)
    except Exception:  # an unknown kind is a rule error
        return False
    return True


def arrow_callback(
    node: SgNode, after: str, lang: str
) -> tuple[dict[str, Any], str, dict[str, Any] | None, None] | None:
    """(rule, fix, constraints, transform) when the site ``node`` (an anonymous function
    expression) becomes ``after``, the same parameters and body as an arrow function; None
    otherwise."""
    if lang not in LANGS or node.kind() != "function_expression":
        return None
    if not re.match(r"function\s*\(", node.text()):
        return None
    params, body = node.field("parameters"), node.field("body")
    if params is None or body is None or node.field("return_type") is not None:
        return None
    inner = params.text()[1:-1].strip()
    own = [*_OWN, *([_META] if _has_kind(lang, "meta_property") else []), _TEMPLATE]
    rule: dict[str, Any] = {
        "kind": "function_expression",
        "regex": r"^function\s*\(",
        "not": {"has": {"stopBy": "end", "any": own}},
    }
    if _IDENT.fullmatch(inner) and after == f"{inner} => {body.text()}":
        return (
            {"pattern": "function($P) $BODY", **rule},
            "$P => $BODY",
            {"P": {"kind": "identifier"}},
            None,
        )
    if after == f"({inner}) => {body.text()}":
        return {"pattern": "function($$$P) $BODY", **rule}, "($$$P) => $BODY", None, None
    return None
