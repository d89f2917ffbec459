"""Where an added line goes, by structure (wave 3l, synth26; issue 26 class 3, "too narrow").

A commit adds the same statement at several sites (a guard ``if config.Skipper(c) { return
next(c) }`` at the top of each middleware's handler, ``color = resolve_color_default(color)``
at the top of each function that takes a ``color``). The place of such a line is structural:
the first (last) statement of a body, in the definitions whose parameters bind the names the
new line uses. Learned from the anchor's text (the statement that happened to follow), the rule
reproduced its example only; learned as the whole definition rewritten (``def $A($$$B):`` +
the new first line), it went into every function, or into every one but the kept ones listed by
name.

Two pieces, both tried only where the plain rules rewrite the examples' unchanged code:

- :func:`bound_names`: rule fragments saying that the definition the site is (or sits in) binds,
  as a parameter, a name the fix introduces — the definitions of the same shape that the commit
  left alone are the negatives, and a name the new line uses is what tells them apart;
- :func:`edge_candidates`: the insertion next to the first (last) statement of its body
  whatever that statement is (the anchors' kinds differ from site to site), inside the kind of
  body every anchor sits in.
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

# The fields that bind names for a body (parameters; Go's receiver; a JS arrow's single one).
BINDER_FIELDS = ("parameters", "parameter", "receiver")
# How far up a site's enclosing definitions are searched.
MAX_UP = 12
_IDENT = re.compile(r"(?<![\w$.])([A-Za-z_][\w]*)")
_STRING = re.compile(r"""(?:"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`[^`]*`)""")
_METAVAR = re.compile(r"\$+[A-Z][A-Z0-9_]*")


def fix_names(pattern: str, fix: str) -> list[str]:
    """The names the fix writes that its pattern does not hold (the new line's names), in
    the order the fix first writes them (strings and metavariables aside)."""
    text = _METAVAR.sub(" ", _STRING.sub(" ", fix))
    kept = set(_IDENT.findall(_METAVAR.sub(" ", _STRING.sub(" ", pattern))))
    out: list[str] = []
    for name in _IDENT.findall(text):
        if name not in kept and name not in out:
            out.append(name)
    return out


def _binder(node: SgNode, name: str) -> str | None:
    """The field of ``node`` (a definition) that binds ``name`` as a parameter, or None."""
    for f in BINDER_FIELDS:
        params = node.field(f)
        if params is None:
            continue
        if params.kind() == "identifier" and params.text() == name:
            return f
        if params.find(kind="identifier", regex=f"^{re.escape(name)}$") is not None:
            return f
    return None


def _binds(field: str, name: str) -> dict[str, Any]:
    leaf = {"kind": "identifier", "regex": f"^{re.escape(name)}$"}
    return {"has": {"field": field, "any": [leaf, {"has": {**leaf, "stopBy": "end"}}]}}


def _where(node: SgNode, name: str) -> tuple[str, str, str, tuple[str, ...]] | None:
    """("self" | "inside", definition kind, field, the kinds between ``node`` and the
    definition) for the nearest definition at or above ``node`` binding ``name``."""
    n: SgNode | None = node
    path: list[str] = []
    for depth in range(MAX_UP):
        if n is None:
            return None
        f = _binder(n, name)
        if f is not None:
            return ("self" if depth == 0 else "inside", n.kind(), f, tuple(path[1:]))
        path.append(n.kind())
        n = n.parent()
    return None


def _chain(path: tuple[str, ...], inner: dict[str, Any]) -> dict[str, Any]:
    """``inside`` the kinds of ``path`` (innermost first), each the parent of the one
    before, then ``inner`` as the parent of the last."""
    rule = {**inner, "stopBy": "neighbor"}
    for kind in reversed(path):
        rule = {"kind": kind, "stopBy": "neighbor", "inside": rule}
    return {"inside": rule}


def bound_names(
    seed: SgNode, positives: list[SgNode], pattern: str, fix: str
) -> list[dict[str, Any]]:
    """Fragments saying that the definitions around every site (the site itself, or the
    nearest definition around it) bind, as parameters, the names the fix introduces that
    every site's definition binds: the new line's names must be in scope where it goes (an
    extractor's ``func(c echo.Context)`` binds ``c`` but not the middleware's ``next``). Per
    name: ``has`` that binder (the site is the definition); else ``inside`` the definition
    that binds it, through the same kinds of node at every site (the definition's own body)
    — then at any depth. All the names together (the chains, then at any depth), then each
    name alone. The caller keeps only a fragment that rewrites no unchanged code."""
    chains: list[dict[str, Any]] = []
    anywhere: list[dict[str, Any]] = []
    nodes = [seed, *[p for p in positives if p.range() != seed.range()]]
    if len({(n.range().start.index, n.range().end.index, n.text()) for n in nodes}) < 2:
        return []  # one site says nothing of where else its line goes (precision first)
    for name in fix_names(pattern, fix):
        where = [_where(n, name) for n in nodes]
        found = [w for w in where if w is not None]
        if len(found) != len(where):
            continue
        modes = {w[0] for w in found}
        fields = {w[2] for w in found}
        kinds = sorted({w[1] for w in found})
        paths = {w[3] for w in found}
        if len(modes) != 1 or len(fields) != 1:
            continue
        field = fields.pop()
        binds = _binds(field, name)
        if modes.pop() == "self":
            chains.append(binds)
            anywhere.append(binds)
            continue
        kind: dict[str, Any] = (
            {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}
        )
        end = {"inside": {**kind, "stopBy": "end", **binds}}
        chains.append(_chain(paths.pop(), {**kind, **binds}) if len(paths) == 1 else end)
        anywhere.append(end)
    out: list[dict[str, Any]] = []
    for group in (chains, anywhere):
        whole = group[0] if len(group) == 1 else {"all": group}
        if group and whole not in out:
            out.append(whole)
    for one in chains + anywhere:
        if one not in out:
            out.append(one)
    return out


def at_edge(anchors: list[SgNode], after: bool) -> bool:
    """Every anchor is the first (``after``: last) named child of its parent."""
    for a in anchors:
        parent = a.parent()
        if parent is None:
            return False
        named = [c for c in parent.children() if c.is_named()]
        if not named or named[-1 if after else 0].range() != a.range():
            return False
    return True


# The statements a body holds, per language (the CLI wants the kinds a rule matches, and
# the anchors' own kinds are only those the examples happened to show).
STATEMENTS = {
    "go": (
        "assignment_statement defer_statement expression_statement for_statement go_statement "
        "if_statement return_statement short_var_declaration var_declaration const_declaration "
        "expression_switch_statement type_switch_statement select_statement inc_statement "
        "dec_statement send_statement labeled_statement"
    ),
    "python": (
        "expression_statement if_statement for_statement while_statement try_statement "
        "with_statement return_statement raise_statement assert_statement pass_statement "
        "function_definition class_definition decorated_definition delete_statement"
    ),
    "javascript": (
        "expression_statement lexical_declaration variable_declaration if_statement "
        "for_statement for_in_statement while_statement do_statement try_statement "
        "return_statement throw_statement switch_statement function_declaration "
        "class_declaration"
    ),
    "rust": "expression_statement let_declaration",
}
STATEMENTS["typescript"] = STATEMENTS["tsx"] = STATEMENTS["javascript"]


def statement_kinds(roots: list[SgNode], container: str, lang: str = "") -> list[str]:
    """The kinds of statement a rule next to "the first statement of a body" may anchor on:
    those the examples' bodies of kind ``container`` hold (comments aside), and the
    language's usual statements."""
    from oopav.synth.sites import COMMENT_KINDS

    kinds: set[str] = set(STATEMENTS.get(lang, "").split())
    for root in roots:
        for body in root.find_all(kind=container):
            kinds.update(c.kind() for c in body.children() if c.is_named())
    return sorted(kinds - COMMENT_KINDS)


def edge_candidates(
    after: bool,
    held: dict[str, Any],
    guard: dict[str, Any],
    fix: str,
    roots: list[SgNode],
    lang: str = "",
) -> list[tuple[dict[str, Any], str]]:
    """The insertion next to the first (``after``: last) statement of its body, whatever its
    kind, inside the kind of body every anchor sits in (``held``; none when they differ)."""
    if not held:
        return []
    kinds = statement_kinds(roots, held["inside"]["kind"], lang)
    if not kinds:
        return []
    edge: dict[str, Any] = (
        {"nthChild": {"position": 1, "reverse": True}} if after else {"nthChild": 1}
    )
    rule = {
        "any": [{"kind": k} for k in kinds],
        "pattern": "$ANCHOR",
        **edge,
        "all": [held, guard],
    }
    return [(rule, fix)]
