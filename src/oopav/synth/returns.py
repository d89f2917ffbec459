"""A "returns nothing" annotation only where nothing is returned (issue 26, wave 3t).

A rule that adds ``-> None`` to Python definitions (or ``: void`` to TypeScript ones) says
something the code must make true: a function annotated so returns no value and is no
generator (a type checker rejects ``-> None`` on ``return await q.get()``). The examples'
definitions all return nothing — that is why the commit annotated them — but a rule learned
from them matched by shape (``async def $A($$$B):``), and uvicorn's a9a46e87 wrote
``-> None`` on a held-out ``receive`` that returns the queue's next message.

So such a rule is conjoined with "no ``return`` with a value, no ``yield`` in the body"
(a ``return None`` is no value). A nested function's ``return x`` counts too: ast-grep
cannot say "the nearest enclosing function is this one", and precision comes first (such a
definition is left for review). The guarded rule must still reproduce every example, else
the rule stays as learned.
"""

from __future__ import annotations

import re
from typing import Any

# Per language: the annotation a fix adds, the definition kinds that carry it, and the
# body's statements that return a value.
_NONE = {
    "python": (
        re.compile(r"\)\s*->\s*None\s*:"),
        ("function_definition",),
        [
            {"kind": "return_statement", "not": {"regex": r"^return\s*(?:None\s*)?$"}},
            {"kind": "yield"},
        ],
    ),
    "typescript": (
        re.compile(r"\)\s*:\s*(?:void|Promise<void>)\s*(?:\{|=>)"),
        (
            "function_declaration",
            "method_definition",
            "arrow_function",
            "function_expression",
            "function_signature",
        ),
        [
            {"kind": "return_statement", "not": {"regex": r"^return\s*;?$"}},
            {"kind": "yield_expression"},
        ],
    ),
}
_NONE["tsx"] = _NONE["typescript"]


def adds_none_return(pattern: str, fix: str, language: str) -> bool:
    """The fix writes a "returns nothing" annotation the pattern does not have."""
    spec = _NONE.get(language)
    if spec is None:
        return False
    rx = spec[0]
    return len(rx.findall(fix)) > len(rx.findall(pattern))


def returns_nothing(language: str) -> dict[str, Any]:
    """The rule fragment: the matched definition's body returns no value and yields none."""
    values = _NONE[language][2]
    return {
        "not": {
            "has": {
                "field": "body",
                "stopBy": "neighbor",
                "has": {"stopBy": "end", "any": values},
            }
        }
    }


_DEF_HEAD = {
    "python": re.compile(r"^\s*(?:async\s+)?def\b"),
    "typescript": re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\b"),
}
_DEF_HEAD["tsx"] = _DEF_HEAD["typescript"]


def guard(rule: dict[str, Any], pattern: str, language: str) -> dict[str, Any]:
    """``rule`` (whose fix :func:`adds_none_return`) conjoined with :func:`returns_nothing`:
    on the match itself where the pattern is a definition, else on the definition the match
    sits in (a parameter list, a name)."""
    frag = returns_nothing(language)
    head = _DEF_HEAD.get(language)
    if head is None or not head.match(pattern):
        kinds = _NONE[language][1]
        alts = [{"kind": k} for k in kinds]
        frag = {"inside": {"any": alts, "stopBy": "neighbor", **frag}}
    out = dict(rule)
    if "not" in out:
        out = {"all": [out, frag]} if "all" not in out else {**out, "all": [*out["all"], frag]}
    else:
        out.update(frag)
    return out
