"""Anti-unification: from sites (a before node and the text that replaces it) to a pattern
with metavariables and a fix template that reuses them.

A subtree becomes a metavariable when its text is carried into the after side (found there on
token boundaries), or when the sites disagree on it. What stays literal is what the change is
about: the callee of a call, the names that are renamed, constants such as ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ast_grep_py import SgNode

from oopav.synth.sites import LIST_KINDS, Site, leaves

CONSTANTS = frozenset(
    {"None", "True", "False", "null", "undefined", "true", "false", "nil", "self", "this", "Self"}
)
# Fields whose child is the "head" of a call: kept literal, only its receiver may vary.
HEAD_FIELDS = ("function", "constructor")
PROPERTY_FIELDS = ("attribute", "property", "field", "name")
SPREAD_KINDS = LIST_KINDS | {
    "variable_declaration",
    "lexical_declaration",
    "array",
    "list",
    "tuple",
    "block",
    "statement_block",
}
# Definitions whose ``name`` is what the rule is about (kept literal, like a call's head).
DEFINITION_KINDS = (
    "function_definition",
    "function_declaration",
    "method_definition",
    "method_declaration",
    "function_item",
    "class_definition",
    "class_declaration",
)
DEFINITIONS = frozenset(DEFINITION_KINDS)


@dataclass(frozen=True)
class Options:
    spread: bool = True  # abstract carried runs of list items as $$$
    constants: bool = False  # abstract constants too (None, true, ...)
    heads: bool = False  # abstract call heads too
    literal: bool = False  # abstract nothing
    deep: bool = False  # look inside carried compound nodes instead of abstracting them whole


@dataclass
class Template:
    pattern: str
    fix: str
    variables: dict[str, str]  # name -> the text it stood for (in the seed site)


class _Carried:
    """Token-aligned occurrences of texts in one site's after text."""

    def __init__(self, site: Site) -> None:
        base = site.after_start
        toks = leaves(site.after_node) if site.after_node is not None else []
        self.text = site.after_text
        self.starts = {t.start - base for t in toks}
        self.ends = {t.end - base for t in toks}
        if not toks:
            self.starts, self.ends = {0}, {len(self.text)}

    def positions(self, needle: str) -> list[int]:
        out, i = [], self.text.find(needle)
        while i >= 0 and needle:
            if i in self.starts and i + len(needle) in self.ends:
                out.append(i)
            i = self.text.find(needle, i + 1)
        return out

    def has(self, needle: str) -> bool:
        return bool(needle) and bool(self.positions(needle))


def _carried_of(site: Site) -> _Carried:
    """``site``'s carried tokens, computed once per site (each candidate abstraction asks)."""
    cached = site.__dict__.get("_carried")
    if cached is None:
        cached = site.__dict__["_carried"] = _Carried(site)
    return cached


def _field_of(node: SgNode) -> str | None:
    parent = node.parent()
    if parent is None:
        return None
    r = node.range()
    for name in (*HEAD_FIELDS, *PROPERTY_FIELDS, "object", "operand", "value"):
        f = parent.field(name)
        if f is not None and f.range() == r and f.kind() == node.kind():
            return name
    return None


def _var_names() -> list[str]:
    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    return letters + [a + b for a in letters for b in letters]


def abstract_sites(sites: list[Site], opts: Options) -> Template | None:
    """One pattern and fix that every site instantiates, or None when they disagree."""
    carried = [_carried_of(s) for s in sites]
    roots = [s.node for s in sites]
    # spans[i]: (start, end, var key) in site i's before text, relative to its node.
    spans: list[list[tuple[int, int, str]]] = [[] for _ in sites]
    keys: dict[tuple[tuple[str, ...], bool], str] = {}  # (texts across sites, multi) -> var
    multi: set[str] = set()
    names = iter(_var_names())
    empty: dict[int, set[str]] = {}  # site -> its `$$$` lists that bind nothing (wave 3h)

    def key_for(texts: tuple[str, ...], is_multi: bool) -> str:
        k = keys.get((texts, is_multi))
        if k is None:
            k = next(names, None)
            if k is None:
                raise _TooManyVariables
            keys[(texts, is_multi)] = k
        if is_multi:
            multi.add(k)
        return k

    def offs(i: int, n: SgNode) -> tuple[int, int]:
        r, base = n.range(), sites[i].start
        return r.start.index - base, r.end.index - base

    def mark(nodes: list[SgNode], is_multi: bool = False, last: list[SgNode] | None = None) -> None:
        texts = []
        for i, n in enumerate(nodes):
            s, e = offs(i, n)
            if last is not None:
                e = offs(i, last[i])[1]
            texts.append(sites[i].before_text[s:e])
        k = key_for(tuple(texts), is_multi)
        for i, n in enumerate(nodes):
            s, e = offs(i, n)
            if last is not None:
                e = offs(i, last[i])[1]
            spans[i].append((s, e, k))

    def text_of(i: int, first: SgNode, last: SgNode) -> str:
        return sites[i].before_text[offs(i, first)[0] : offs(i, last)[1]]

    def walk(nodes: list[SgNode], head: bool) -> bool:
        kinds = {n.kind() for n in nodes}
        kids = [n.children() for n in nodes]
        if len(kinds) > 1:
            return False
        # Spread: the run of named items of a list node, carried as a whole.
        if opts.spread and not opts.literal and nodes[0].kind() in SPREAD_KINDS:
            named = [[c for c in k if c.is_named()] for k in kids]
            if all(named) and all(
                _spreadable(
                    carried[i],
                    text_of(i, named[i][0], named[i][-1]),
                    len(named[i]),
                    nodes[i].kind() not in LIST_KINDS,
                )
                for i in range(len(nodes))
            ):
                mark([n[0] for n in named], True, [n[-1] for n in named])
                return True
            if nodes[0].kind() in LIST_KINDS and any(named) and not all(named):
                # Wave 3h (synth7): some sites' lists are empty (koa's `inspect: function(){`
                # beside `onerror: function(err){`, all made methods): the run of items is
                # one `$$$` that binds nothing there, checked against those sites' fixes.
                opened = [bool(k) and not k[0].is_named() for k in kids]
                if all(opened) and all(
                    _spreadable(carried[i], text_of(i, named[i][0], named[i][-1]), len(named[i]))
                    for i in range(len(nodes))
                    if named[i]
                ):
                    k = key_for(
                        tuple(text_of(i, n[0], n[-1]) if n else "" for i, n in enumerate(named)),
                        True,
                    )
                    for i, n in enumerate(named):
                        if n:
                            spans[i].append((offs(i, n[0])[0], offs(i, n[-1])[1], k))
                        else:
                            at = offs(i, kids[i][0])[1]
                            spans[i].append((at, at, k))
                            empty.setdefault(i, set()).add(k)
                    return True
            # A carried prefix (e.g. the arguments kept when a keyword argument goes).
            if len({len(n) for n in named}) == 1 and named[0] and len(named[0]) > 1:
                for cut in range(len(named[0]) - 1, 0, -1):
                    if all(
                        carried[i].has(text_of(i, named[i][0], named[i][cut - 1]))
                        for i in range(len(nodes))
                    ) and not any(
                        carried[i].has(text_of(i, named[i][cut], named[i][-1]))
                        for i in range(len(nodes))
                    ):
                        if len({len(k) for k in kids}) > 1:
                            return False
                        mark([n[0] for n in named], True, [n[cut - 1] for n in named])
                        rest = [k[k.index(named[i][cut]) :] for i, k in enumerate(kids)]
                        return all(_child(list(col), head) for col in zip(*rest, strict=True))
        if len({len(k) for k in kids}) > 1:
            return False
        return all(_child(list(col), head) for col in zip(*kids, strict=True))

    def _child(col: list[SgNode], head: bool) -> bool:
        if not col[0].is_named():
            return len({c.text() for c in col}) == 1
        texts = {c.text() for c in col}
        field = _field_of(col[0])
        is_head = field in HEAD_FIELDS
        parent = col[0].parent()
        is_prop = (head and field in PROPERTY_FIELDS) or (
            field == "name" and parent is not None and parent.kind() in DEFINITIONS
        )
        same = len(texts) == 1
        all_carried = all(carried[i].has(c.text()) for i, c in enumerate(col))
        if opts.literal:
            return same
        leafish = not col[0].children()
        if col[0].kind() in SPREAD_KINDS and not leafish:
            return walk(col, head=False)
        if same:
            text = col[0].text()
            keep = (
                (text in CONSTANTS and not opts.constants)
                or ((is_head and leafish) and not opts.heads)
                or (is_prop and not opts.heads)
            )
            if opts.deep and not leafish and col[0].kind() not in ("identifier",):
                return walk(col, head=is_head or (head and field not in PROPERTY_FIELDS))
            if all_carried and not keep and not (is_head and not opts.heads):
                mark(col)
                return True
            if leafish:
                return True
            return walk(col, head=is_head or (head and field not in PROPERTY_FIELDS))
        # The sites disagree here: a variable if every side carries it, else look inside; a
        # part that differs and is dropped (``timeout=5`` / ``timeout=30`` removed) is a
        # variable the fix does not use.
        if all_carried or leafish:
            mark(col)
            return True
        saved = [len(x) for x in spans]
        if walk(col, head=is_head):
            return True
        for x, n in zip(spans, saved, strict=True):
            del x[n:]
        mark(col)
        return True

    leaves_differ = (
        len(sites) > 1
        and not opts.literal
        and all(not r.children() for r in roots)
        and len({r.text() for r in roots}) > 1
    )
    try:
        if leaves_differ and all(carried[i].has(r.text()) for i, r in enumerate(roots)):
            mark(roots)  # leaf sites that differ and are carried (`a` -> `f(a)`, `b` -> `f(b)`)
        elif not walk(roots, head=False):
            return None
    except _TooManyVariables:
        return None  # a site so large it needs more than 702 metavariables: no pattern
    # Patterns and fixes, per site; they must agree.
    results: set[tuple[str, str]] = set()
    first_vars: dict[str, str] = {}
    # A site whose list binds nothing cannot place that `$$$` in its fix (no text to find):
    # its fix must be the others' with the list left empty.
    checks: list[tuple[str, str, set[str]]] = []
    for i, site in enumerate(sites):
        text = site.before_text
        pattern, pos = [], 0
        for s, e, k in sorted(spans[i]):
            pattern.append(text[pos:s])
            pattern.append(("$$$" if k in multi else "$") + k)
            pos = e
        pattern.append(text[pos:])
        variables = {k: text[s:e] for s, e, k in spans[i]}
        fix = _fix(carried[i], variables, multi)
        if fix is None:
            return None
        fix = _dedent(fix, site)
        if i in empty:
            checks.append(("".join(pattern), fix, empty[i]))
            if i == 0:
                first_vars = variables
            continue
        results.add(("".join(pattern), fix))
        if i == 0:
            first_vars = variables
    if len(results) != 1:
        return None
    pattern_text, fix = results.pop()
    for other_pattern, other_fix, bare in checks:
        emptied = fix
        for k in bare:
            emptied = re.sub(r"\$\$\$" + k + r"(?![A-Z])", "", emptied)
        if other_pattern != pattern_text or other_fix != emptied:
            return None
    return Template(pattern_text, fix, first_vars)


class _TooManyVariables(Exception):
    pass


def _spreadable(carried: _Carried, text: str, items: int, declaration: bool = False) -> bool:
    """A run of list items carried into the after side; a single item only when it stays in
    a list there (``f(a)`` → ``f(a, b)``, but not ``d.has_key(k)`` → ``k in d``)."""
    positions = carried.positions(text)
    if not positions:
        return False
    if items > 1 or declaration:
        return True
    before = carried.text[: positions[0]].rstrip()
    return before.endswith(("(", "[", "{", "<", ","))


def _fix(carried: _Carried, variables: dict[str, str], multi: set[str]) -> str | None:
    text = carried.text
    taken: list[tuple[int, int, str]] = []
    for k, value in sorted(variables.items(), key=lambda kv: -len(kv[1])):
        for p in carried.positions(value):
            if any(p < e and s < p + len(value) for s, e, _ in taken):
                continue
            taken.append((p, p + len(value), ("$$$" if k in multi else "$") + k))
    out, pos = [], 0
    for s, e, name in sorted(taken):
        out.append(text[pos:s])
        out.append(name)
        pos = e
    out.append(text[pos:])
    return "".join(out)


def _dedent(fix: str, site: Site) -> str:
    """The CLI indents a multi-line fix to the match's column: store it relative to it."""
    if "\n" not in fix:
        return fix
    whole = site.after_node.get_root().root().text()  # type: ignore[union-attr]  # a site with a multi-line fix has its after_node
    line_start = whole.rfind("\n", 0, site.after_start) + 1
    prefix = whole[line_start : site.after_start]
    indent = len(prefix) - len(prefix.lstrip(" "))
    if not indent:
        return fix
    lines = fix.split("\n")
    cut = " " * indent
    return "\n".join([lines[0]] + [ln[indent:] if ln.startswith(cut) else ln for ln in lines[1:]])
