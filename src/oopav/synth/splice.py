"""An item inserted into a list, written at its neighbour (issue 26, wave 3t).

A rule that inserts an item into an argument or parameter list is learned at the node around
the list (``$A.join($B, $C)`` -> ``$A.join($B, 'fixtures', $C)``), and its fix writes that
whole node anew: whatever the original had between the items (winston's ``path.join(__dirname,
'filelog.log' )``, a space before the bracket; a comment; a line break) is lost, so a site the
rule matched rightly comes out wrong. The change is the new item; its place is next to the
item the pattern binds to ``$C``. So where the fix is the pattern with text inserted right
before (after) a one-node metavariable that is an item of a list, the rule is re-rooted at
that item — the old rule becomes its context — and its fix writes the item with the new one
beside it:

```yaml
rule:
  all:
  - pattern: $C
  - nthChild: {position: 1, reverse: true, ofRule: {not: {kind: comment}}}  # where they sit
  - inside:
      kind: arguments
      stopBy: neighbor
      inside: {pattern: $A.join($B, $C), stopBy: neighbor}
  - any: [{kind: string}, {kind: identifier}, …] # the kinds a list of that kind holds in the examples
fix: "'fixtures', $C"
```

ast-grep binds ``$C`` in the context to the same text as the item (a metavariable used
twice must match alike), and the position pins the item. The kinds are those the examples'
lists of that kind hold (the CLI needs a kind at the top of a rule). Kept only where the
rule set still reproduces every example.
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

_SINGLE = re.compile(r"\$([A-Z_][A-Z0-9_]*)")


def _split(pattern: str, fix: str) -> tuple[str, str, str] | None:
    """(prefix, inserted, suffix) where ``fix`` is ``pattern`` with text inserted."""
    if len(fix) <= len(pattern):
        return None
    i = 0
    while i < len(pattern) and pattern[i] == fix[i]:
        i += 1
    suffix = pattern[i:]
    if not fix.endswith(suffix):
        return None
    return pattern[:i], fix[i : len(fix) - len(suffix)], suffix


def insertion(pattern: str, fix: str) -> tuple[str, str, bool, bool] | None:
    """(metavariable, inserted text, before, multi) where the fix inserts an item right
    before (``before``) or after a metavariable of the pattern: ``, 'x'`` after ``$C`` or
    ``'x', `` before it (the split slid over the text the two share); ``multi``: a list
    metavariable (``zip($$$A)`` -> ``zip($$$A, strict=False)``) at the list's end (start),
    whose last (first) item is the neighbour."""
    parts = _split(pattern, fix)
    if parts is None:
        return None
    prefix, inserted, suffix = parts
    # Slide the inserted text left over what it shares with the prefix: both placements
    # are the same edit (`$B, 'x', $C` vs `$B, ` + `'x', ` + `$C`).
    options = []
    p, t, s = prefix, inserted, suffix
    while True:
        options.append((p, t, s))
        if not p or p[-1] != t[-1]:
            break
        p, t, s = p[:-1], p[-1] + t[:-1], t[-1] + s
    for p, t, s in options:
        if re.match(r"\s*,", t) and (m := re.search(r"\$([A-Z_][A-Z0-9_]*)$", p)):
            multi = p.endswith("$$$" + m.group(1))
            if not multi or re.match(r"\s*[)\]}>]", s):
                return m.group(1), t, False, multi
        if re.search(r",\s*$", t) and (m := re.match(r"\$\$\$([A-Z_][A-Z0-9_]*)(?![\w$])", s)):
            if re.search(r"[(\[{<]\s*$", p):
                return m.group(1), t, True, True
        if re.search(r",\s*$", t) and (m := re.match(r"\$([A-Z_][A-Z0-9_]*)(?![\w$])", s)):
            if not re.search(r"\$\$$", p):
                return m.group(1), t, True, False
    return None


_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})


def _comments(language: str) -> dict[str, Any]:
    """A rule for the comment kinds of ``language``'s grammar."""
    kinds = ["line_comment", "block_comment"] if language == "rust" else ["comment"]
    return {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}


def _position(node: SgNode) -> tuple[int, int]:
    """(1-based position from the start, from the end) among the named siblings that are no
    comments (a comment between two arguments is a named node: `nthChild` counts it unless
    its ``ofRule`` leaves it out)."""
    parent = node.parent()
    kids = (
        [c for c in parent.children() if c.is_named() and c.kind() not in _COMMENTS]
        if parent is not None
        else [node]
    )
    r = node.range()
    at = next(i for i, c in enumerate(kids) if c.range() == r)
    return at + 1, len(kids) - at


# An argument list holding every common kind of argument, per language (with the list's
# kind): the kinds a re-rooted rule names at its top (the CLI needs a kind there), whatever
# the examples' own arguments happened to be (`headers=h`, where they showed none).
_ARGUMENTS = {
    "python": (
        "argument_list",
        "f(a, 'b', 1, 1.0, True, False, None, x.y, g(), [1], {1: 2}, {1}, (1, 2), k=v, *a, **k,"
        " a + b, -a, not a, a and b, a < b, lambda: 1, a if b else c, x[1], (y for y in z),"
        " [y for y in z], {y for y in z}, {y: 1 for y in z}, await q, 'a' 'b', f'x', ..., (a),"
        " (x := 1))\n",
    ),
    "javascript": (
        "arguments",
        "f(a, 'b', `c${d}`, 1, x.y, g(), [1], {a: 1}, () => 1, function () {}, new X(), this,"
        " null, undefined, true, false, !a, a + b, a ? b : c, ...r, x[1], await q, /re/, (a),"
        " a = 1, class {}, import.meta, a?.b)\n",
    ),
    "typescript": (
        "arguments",
        "f(a, 'b', `c${d}`, 1, x.y, g(), [1], {a: 1}, () => 1, function () {}, new X(), this,"
        " null, undefined, true, false, !a, a + b, a ? b : c, ...r, x[1], await q, /re/, (a),"
        " a = 1, class {}, a as T, a!, a satisfies T, <T>(x: T) => x)\n",
    ),
    "go": (
        "argument_list",
        "package p\nfunc m() { f(a, \"b\", `c`, 1, 1.5, 'r', x.y, g(), []int{1}, T{}, &a, *p, -a,"
        " !a, a + b, a[1], a[1:2], func() {}, x.(T), nil, true, false, a...) }\n",
    ),
    "rust": (
        "arguments",
        "fn m() { f(a, \"b\", 'c', 1, 1.5, true, x.y, g(), &a, &mut a, *a, -a, !a, a + b, a[1],"
        " [1], (1, 2), |x| x, S { a: 1 }, m!(x), a as u8, a?, x::y, Some(1), if a { 1 } else"
        ' { 2 }, match a { _ => 1 }, async { 1 }, a.await, r"x", 1..2, unsafe { 1 }, { 1 },'
        " self, x.0, return); }\n",
    ),
}
_ARGUMENTS["tsx"] = _ARGUMENTS["typescript"]
_KINDS: dict[str, frozenset[str]] = {}


def argument_kinds(language: str, lists: str) -> frozenset[str]:
    """The kinds :data:`_ARGUMENTS` holds for ``language`` where its list is of kind
    ``lists``; empty otherwise."""
    sample = _ARGUMENTS.get(language)
    if sample is None or sample[0] != lists:
        return frozenset()
    if language not in _KINDS:
        from ast_grep_py import SgRoot

        found = SgRoot(sample[1], language).root().find(kind=lists)
        kids = found.children() if found is not None else []
        _KINDS[language] = frozenset(c.kind() for c in kids if c.is_named())
    return _KINDS[language]


# The metavariable a list metavariable's neighbouring item is bound to.
NEIGHBOUR = "SPLICED"


def _edge_item(match: SgNode, var: str, last: bool) -> SgNode | None:
    """The last (first) item a list metavariable binds, where it is the list's last
    (first) named child: a comment after it would take the position."""
    nodes = [n for n in match.get_multiple_matches(var) if n.is_named()]
    if not nodes:
        return None
    item = nodes[-1] if last else nodes[0]
    parent = item.parent()
    kids = [c for c in parent.children() if c.is_named()] if parent is not None else []
    kids = [c for c in kids if c.kind() not in _COMMENTS]
    edge = kids[-1] if last else kids[0]
    return item if kids and edge.range() == item.range() else None


def respliced(
    rule: dict[str, Any],
    var: str,
    matches: list[SgNode],
    roots: list[SgNode],
    multi: bool = False,
    before: bool = False,
    language: str = "",
) -> dict[str, Any] | None:
    """``rule`` re-rooted at the item its matches bind to ``var`` (for a list metavariable,
    its last item, or its first where the new item goes ``before``, bound to
    :data:`NEIGHBOUR`): positioned as they sit (from the start, or the end), inside the list
    kind they share, with the kinds such lists hold in ``roots``. None where the matches
    disagree or bind no item."""
    if multi:
        items = [_edge_item(m, var, not before) for m in matches]
        var = NEIGHBOUR
    else:
        items = [m.get_match(var) for m in matches]
    if not items or any(i is None for i in items):
        return None
    parents = {p.kind() for i in items if i is not None and (p := i.parent()) is not None}
    if len(parents) != 1:
        return None
    lists = parents.pop()
    positions = [_position(i) for i in items if i is not None]
    starts, ends = {p[0] for p in positions}, {p[1] for p in positions}
    if len(starts) == 1:
        nth: Any = starts.pop()
    elif len(ends) == 1:
        nth = {"position": ends.pop(), "reverse": True}
    else:
        return None
    if multi:
        nth = {"position": 1, "reverse": True} if not before else 1
    if not isinstance(nth, dict):
        nth = {"position": nth}
    nth["ofRule"] = {"not": _comments(language)}
    kinds: set[str] = set()
    for root in roots:
        for lst in root.find_all(kind=lists):
            kinds.update(c.kind() for c in lst.children() if c.is_named())
    kinds |= argument_kinds(language, lists)
    kinds -= _COMMENTS
    if not kinds:
        return None
    return {
        "all": [
            {"pattern": "$" + var},
            {"any": [{"kind": k} for k in sorted(kinds)]},
            {"nthChild": nth},
            {
                "inside": {
                    "kind": lists,
                    "stopBy": "neighbor",
                    "inside": {**rule, "stopBy": "neighbor"},
                }
            },
        ]
    }


def literal_splice(
    matches: list[SgNode], fix: str, language: str
) -> tuple[dict[str, Any], str] | None:
    """Wave 3t: a whole list rewritten as one literal text (tomlkit b29cdf0c's `(dict)` ->
    `(MutableMapping, dict)`, every class's bases) whose change is an item inserted beside one
    item the sites share: (rule, fix) for that item, in lists of that kind where the sites'
    lists sit, at the position it has there (from the end, or the start), not where the new
    item is beside it already — whatever else the list holds (a held-out `(Item, dict)`)."""
    if "$" in fix or not matches:
        return None
    if any("parameter" in m.kind() for m in matches):
        # A parameter list written out is one function's signature (testify 0a813b58's
        # `body io.Reader` added to two helpers: every other function with a `str
        # interface{}` second from the end got it too)
        return None
    shapes = set()
    for m in matches:
        parts = _split(m.text(), fix)
        if parts is None:
            return None
        prefix, inserted, _suffix = parts
        at = m.range().start.index + len(prefix)
        kids = [c for c in m.children() if c.is_named() and c.kind() not in _COMMENTS]
        before = next((c for c in kids if c.range().start.index == at), None)
        after = next((c for c in kids if c.range().end.index == at), None)
        if before is not None and re.search(r",\s*$", inserted):
            item, side = before, "before"
        elif after is not None and re.match(r"\s*,", inserted):
            item, side = after, "after"
        else:
            return None
        up = m.parent()
        field = None
        if up is not None:
            for name in ("superclasses", "arguments", "parameters", "bases"):
                f = up.field(name)
                if f is not None and f.range() == m.range():
                    field = name
        pos = _position(item)
        shapes.add(
            (
                item.text(),
                item.kind(),
                side,
                inserted,
                m.kind(),
                up.kind() if up else None,
                field,
                pos,
            )
        )
    if len({s[:7] for s in shapes}) != 1:
        return None
    text, kind, side, inserted, lists, parent, field, _ = next(iter(shapes))
    starts = {s[7][0] for s in shapes}
    ends = {s[7][1] for s in shapes}
    if len(ends) == 1:
        nth: dict[str, Any] = {"position": ends.pop(), "reverse": True}
    elif len(starts) == 1:
        nth = {"position": starts.pop()}
    else:
        return None
    nth["ofRule"] = {"not": _comments(language)}
    word = re.sub(r"^[\s,]+|[\s,]+$", "", inserted)
    # (anywhere in the list: its neighbour is the unnamed `,` between them)
    neighbour = {"regex": "^" + re.escape(word) + "$", "stopBy": "end"}
    owner: dict[str, Any] = {"kind": lists, "stopBy": "neighbor"}
    if parent is not None:
        # (`field` names where the list sits in its parent: the list is that field)
        context: dict[str, Any] = {"kind": parent, "stopBy": "neighbor"}
        if field is not None:
            context["field"] = field
        owner["inside"] = context
    rule = {
        "kind": kind,
        "regex": "^" + re.escape(text) + "$",
        "nthChild": nth,
        "inside": owner,
        # once: not where the new item is beside it already
        "not": {"follows": neighbour} if side == "before" else {"precedes": neighbour},
    }
    new_fix = inserted + text if side == "before" else text + inserted
    return rule, new_fix
