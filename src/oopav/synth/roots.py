"""The smallest root (wave 3l, issue 26 class 1, "too narrow"): a rule rooted at the node
that holds the change, where that node does not parse on its own.

A change inside a larger node (a parameter annotated, a name added to a nested `use` list, a
keyword argument of one kind of node) lifts to the smallest node that is one node on both
sides: ``x=False`` -> ``x: bool = False`` is a ``default_parameter``, ``{Context, Poll}`` ->
``{ready, Context, Poll}`` a ``use_list``. Its pattern alone parses as something else (an
assignment, a block), so no candidate rooted there matched the site, and the search climbed
until a pattern parsed: the whole enclosing function, ``use`` declaration or statement list,
literal, which reproduces the example and nothing held out. The per-kind wrappers
(``sites.KIND_WRAPPERS``, ``_PARAM_WRAPPERS``) cover a few kinds by hand; this covers every
kind: the pattern is parsed in the site's *own* surroundings — the smallest enclosing node
whose text, with the site replaced by the pattern, parses without error and puts a node of
the site's kind exactly where the pattern stands — and ``selector`` picks that node, so the
surroundings only say how to parse the pattern and match nothing themselves."""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode, SgRoot

from oopav.synth.sites import has_error

# Enclosing nodes tried for the surroundings, and their largest size (characters).
MAX_UP = 6
MAX_CONTEXT = 2000
# Bodies that hold no part of the site are written as an empty body in the surroundings (a
# parameter's function is its header, not its 200 lines).
_BODIES = {
    "block",
    "statement_block",
    "class_body",
    "declaration_list",
    "field_declaration_list",
    "compound_statement",
}

# The surroundings made here (a rule rooted at its site is told by them, see own_rooted).
_MADE: dict[str, None] = {}
_MADE_MAX = 4096

# Statement lists are no small root (a block is what the rule is rooted too high at).
_LISTS = {"statement_list", "module", "program", "source_file", "ERROR"}


def _pruned(anc: SgNode, start: int, end: int, lang: str, kind: str = "") -> tuple[str, int, int]:
    """``anc``'s text with the outermost bodies that lie outside [start, end) emptied, the
    nodes of ``kind`` before the site left out with their comma (``selector`` picks the
    first node of its kind), and the site's offsets in that text."""
    a_start = anc.range().start.index
    text = anc.text()
    cuts: list[tuple[int, int, str]] = []
    stack = list(anc.children())
    while stack:
        n = stack.pop()
        r = n.range()
        s, e = r.start.index, r.end.index
        if e <= start and n.kind() == kind:
            nxt = n.next()
            if nxt is not None and nxt.text() == "," and nxt.range().end.index <= start:
                e = nxt.range().end.index
            while e - a_start < len(text) and text[e - a_start] in " \t" and e < start:
                e += 1
            cuts.append((s - a_start, e - a_start, ""))
            continue
        if e <= start or s >= end:
            if n.kind() in _BODIES and e - s > 8:
                cuts.append((s - a_start, e - a_start, "pass" if lang == "python" else "{}"))
                continue
            stack.extend(n.children())
        elif s <= start and end <= e and (s, e) != (start, end):
            stack.extend(n.children())
    lo, hi = start - a_start, end - a_start
    for s, e, repl in sorted(cuts, reverse=True):
        text = text[:s] + repl + text[e:]
        if e <= lo:
            lo -= (e - s) - len(repl)
            hi -= (e - s) - len(repl)
    return text, lo, hi


def _plain(pattern: str) -> str:
    """The pattern with its metavariables written as names (the way it parses)."""
    return re.sub(r"\$+([A-Z][A-Z0-9_]*)", r"\1", pattern)


def _dedent(text: str, column: int) -> str:
    """``text`` (starting at ``column`` of its line) with its further lines moved left by
    ``column``, where they are indented that far (so a nested block parses at the top)."""
    if column <= 0 or "\n" not in text:
        return text
    first, *rest = text.split("\n")
    pad = " " * column
    return "\n".join([first, *(line[column:] if line.startswith(pad) else line for line in rest)])


def _selects(context: str, start: int, length: int, kind: str, lang: str) -> bool:
    """Whether ``context`` parses without error and its first node of ``kind`` (the one
    ``selector`` picks) spans [start, start + length) exactly."""
    plain = _plain(context)
    # The offsets move by what the metavariables lose before and inside the pattern.
    p_start = len(_plain(context[:start]))
    p_len = len(_plain(context[start : start + length]))
    try:
        root = SgRoot(plain, lang).root()
    except Exception:  # a language ast-grep-py cannot parse
        return False
    if has_error(root):
        return False
    found = root.find(kind=kind)
    if found is None:
        return False
    r = found.range()
    return r.start.index == p_start and r.end.index == p_start + p_len


def parses_alone(pattern: str, kind: str, lang: str) -> bool:
    """Whether ``pattern`` alone parses to a node of ``kind`` that is the whole pattern."""
    text = pattern.strip()
    lead = len(pattern) - len(pattern.lstrip())
    return _selects(pattern, lead, len(text), kind, lang)


def own_context(node: SgNode, pattern: str, kind: str, lang: str) -> dict[str, Any] | None:
    """``pattern`` (standing for ``node``, of ``kind``) as a rule in ``node``'s own
    surroundings: ``{pattern: {context: …, selector: kind}}``, or None where the pattern
    parses alone or no enclosing node of at most ``MAX_CONTEXT`` characters gives it a
    parse."""
    if kind in _BODIES or kind in _LISTS or parses_alone(pattern, kind, lang):
        return None
    r = node.range()
    start, end = r.start.index, r.end.index
    up = 0
    for anc in node.ancestors():
        if anc.parent() is None or up >= MAX_UP:
            break
        if not anc.is_named():
            continue
        up += 1
        ar = anc.range()
        text, lo, hi = _pruned(anc, start, end, lang, kind)
        if len(text) - (hi - lo) + len(pattern) > MAX_CONTEXT:
            break
        if "$" in text[:lo] + text[hi:]:
            continue  # surroundings with `$` of their own would read as metavariables
        column = ar.start.column
        context = _dedent(text[:lo] + pattern + text[hi:], column)
        offset = len(_dedent(text[:lo], column))
        length = len(_dedent(text[:lo] + pattern, column)) - offset
        if _selects(context, offset, length, kind, lang):
            if len(_MADE) >= _MADE_MAX:
                _MADE.clear()
            _MADE[context] = None
            return {"pattern": {"context": context, "selector": kind}}
    return None


def own_rooted(rule: dict[str, Any]) -> bool:
    """Whether ``rule`` is rooted at its site in the site's own surroundings."""
    pattern = rule.get("pattern")
    return isinstance(pattern, dict) and pattern.get("context") in _MADE


def local_context(fragment: Any) -> bool:
    """Whether a context says only what the node's parent or children are (``inside`` /
    ``has`` / sibling relations to the neighbour, kinds, fields, texts): the context a rule
    rooted at its site may take. A relation to any ancestor (``stopBy: end``: the one
    enclosing decorated function among the examples' kept ones) or a position in a list
    (``nthChild``) says where the few example sites happen to be, and reaches code the
    commit kept (click's `flag=False` -> `flag: bool = False` made on some parameters)."""
    if isinstance(fragment, dict):
        if "nthChild" in fragment:
            return False
        if fragment.get("stopBy", "neighbor") != "neighbor":
            return False
        return all(local_context(v) for v in fragment.values())
    if isinstance(fragment, list):
        return all(local_context(v) for v in fragment)
    return True


def closed_values(constraints: dict[str, Any] | None) -> bool:
    """Whether every metavariable constraint that excludes texts (the kept values listed,
    ``not: {regex: …}``) also closes its metavariable by a kind: a rule rooted at its site
    may exclude kept values only among values of the kinds its sites show (go's `$A := 0;
    $A < $B` with ``B`` an `int_literal` other than the kept `4`), not every other name (click's
    `$A=True` with ``A`` any parameter name but the two kept ones wrote 11 wrong hunks)."""
    for c in (constraints or {}).values():
        if isinstance(c, dict) and "regex" in repr(c.get("not", "")) and "kind" not in c:
            return False
    return True
