"""A learned pattern matches only nodes with no more in them than it says (issue 26, wave 3u).

ast-grep matches a pattern with ``smart`` strictness by default: every node of the pattern
must be in the code, but the code may hold more — unnamed tokens (a trailing comma, the
``async`` of ``async def``) and, at the end of a node, named ones: ``raise $A`` matches
``raise X from e``, ``assert $A`` matches ``assert x, "message"``, ``$A: $T`` matches
``x: int = 5``. A rule whose fix writes the match anew then drops that part — ``from e``, the
message, the default — and the examples cannot show it unless one of their sites has one.

``ast`` strictness compares the named nodes only (both sides): it refuses those matches, but
alone it would let ``$A + $B`` match ``x - y`` (an operator is an unnamed node). Both together
— the pattern as learned, and the same pattern with ``strictness: ast`` — match what the
pattern says, tolerating extra punctuation only (``f(a, b,)`` still matches ``f($A, $B)``,
which ``cst`` strictness would refuse). So a learned rule's pattern is conjoined with its
``ast`` twin, where the rule set still reproduces every example.

A pattern with no named node below its root (a name, a literal) cannot hold more, nor can
a node of fixed shape (an operator's operands, a member access, a call in the languages where
type arguments belong to the callee, an argument or parameter list — whose items a pattern
lists one by one: ``_FIXED``), nor a node whose only part is a ``$$$A``, which takes whatever
the node holds: left as they are, readable. A trailing ``$$$B`` takes the extra clauses with it (``for … in …:`` with ``$$$B`` as its
body binds an ``else:`` clause too), so nothing is dropped there.
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgRoot

from oopav.synth.clishape import _EXPANDO, bare_metavariable
from oopav.synth.discriminate import conjoin

# Kinds whose nodes hold exactly the parts a pattern of them shows (an operator's two operands,
# a member access, a call that is a callee and its argument list in languages where type
# arguments belong to the callee): no guard, which would only make the rule harder to read.
_FIXED = {
    "python": {
        "binary_operator",
        "comparison_operator",
        "boolean_operator",
        "not_operator",
        "unary_operator",
        "attribute",
        "call",
        "parenthesized_expression",
        "await",
        "argument_list",
        "parameters",
    },
    "javascript": {
        "binary_expression",
        "unary_expression",
        "member_expression",
        "parenthesized_expression",
        "await_expression",
        "arguments",
        "formal_parameters",
    },
    "go": {
        "binary_expression",
        "unary_expression",
        "selector_expression",
        "call_expression",
        "parenthesized_expression",
        "argument_list",
        "parameter_list",
    },
    "rust": {
        "binary_expression",
        "unary_expression",
        "field_expression",
        "call_expression",
        "reference_expression",
        "parenthesized_expression",
        "await_expression",
        "try_expression",
        "scoped_identifier",
        "arguments",
        "parameters",
    },
}
_FIXED["typescript"] = _FIXED["tsx"] = _FIXED["javascript"]


_MULTI = re.compile(r"^[$µ]{3}[A-Z_][A-Z0-9_]*$")


def _root(pattern: str, language: str) -> Any:
    """The node a pattern stands for (as ``clishape.pattern_root_kind`` finds it)."""
    node = SgRoot(pattern.replace("$", _EXPANDO.get(language, "$")), language).root()
    while True:
        children = [c for c in node.children() if c.text()]
        if len(children) != 1:
            return node
        node = children[0]


def strict_guard(rule: dict[str, Any], language: str) -> dict[str, Any] | None:
    """``rule`` conjoined with its pattern's ``ast``-strictness twin; None where the rule has
    no pattern at its top, the pattern already names a strictness, or cannot hold more."""
    shown = rule.get("pattern")
    if isinstance(shown, str):
        twin: dict[str, Any] = {"context": shown}
    elif isinstance(shown, dict) and isinstance(shown.get("context"), str):
        if "strictness" in shown:
            return None
        twin = {k: v for k, v in shown.items() if k in ("context", "selector")}
    else:
        return None
    context = twin["context"]
    if bare_metavariable(context) is not None:
        return None
    try:
        root = _root(context, language)
        if "selector" in twin:  # the node matched is the selector's, inside the context
            root = root.find(kind=twin["selector"]) if root.kind() != twin["selector"] else root
    except Exception:  # ast-grep-py raises a bare Exception for an unknown language
        return None
    if root is None:
        return None
    if root.kind() == "ERROR" or root.kind() in _FIXED.get(language, ()):
        return None
    named = [c for c in root.children() if c.is_named()]
    if all(_MULTI.match(c.text()) for c in named):
        return None  # nothing, or `$$$A` alone, which takes whatever the node holds
    return conjoin(rule, {"pattern": {**twin, "strictness": "ast"}})
