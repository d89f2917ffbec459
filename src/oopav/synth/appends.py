"""An item appended to a list, as its own rewrite (wave 3k, synth21; issue 26 class 1).

Real commits add one item to the end of many lists of one kind: a name to every import
list from one module (`} = require('./symbols.js')`, `} from '../../fastify'`), an argument
to every call of one function, a parameter to the definitions of some names. Learned as
whole nodes, the rule keeps what the example's list happened to hold (27 literal items of
a destructuring, the example's two arguments), so no other list follows. Here the item is
its own rewrite, anchored on the list's *last item* and narrowed by the list's owner only:

```yaml
rule:
  pattern: $A
  nthChild: {position: 1, reverse: true, ofRule: {not: {kind: comment}}}
  not: {kind: comment}
  inside:
    kind: object_pattern
    stopBy: neighbor
    regex: \\n                                   # the layout the examples show
    not: {has: {regex: ^kLogController$}}        # not twice
    inside:
      kind: variable_declarator
      stopBy: neighbor
      has: {field: value, regex: "^require\\\\(\\\\s*['\\"](?:[^'\\"]*/)?(?:symbols)(?:\\\\.\\\\w+)?['\\"]\\\\s*\\\\)$"}
fix: "$A,\\nkLogController"
```

The owner is the nearest enclosing node (up to three levels) with a field that is not the
list itself: an import's ``source`` (the module's base name: `./lib/symbols.js` and
`../../lib/symbols` are one module), a ``require(...)`` value, a Python ``module_name``, a
call's ``function`` (its last name: `c.AddCommand` and `cmdEcho.AddCommand` are one
callee), a definition's ``name``, a composite literal's ``type``; the examples' names are an
alternation. Single-line and multi-line lists are separate rules, each with the separator
its examples show (a multi-line one re-indented to the last item's column). The examples'
unchanged lists of the same owner are negatives: ``synth.core`` keeps the set only when it
reproduces every example (a kept `cmdEcho.AddCommand(cmdTimes)` next to a changed
`c.AddCommand(...)` refuses it)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.commas import COMMENTS

# Fields that name what a list belongs to, in the order they are tried.
OWNER_FIELDS = ("source", "module_name", "function", "name", "type", "value", "path")
STRING_KINDS = frozenset(
    {"string", "string_literal", "interpreted_string_literal", "raw_string_literal"}
)
COMMENT_KINDS = frozenset({"comment", "line_comment", "block_comment"})
_REQUIRE = re.compile(r"""^require\(\s*(['"])([^'"\n]*)\1\s*\)$""")
_QUOTED = re.compile(r"""^(['"`])([^'"`\n]*)\1$""")


def _items(node: SgNode) -> list[SgNode]:
    return [c for c in node.children() if c.is_named() and c.kind() not in COMMENT_KINDS]


def _module_base(path: str) -> str:
    base = path.rstrip("/").rsplit("/", 1)[-1]
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", base)
    return stem or base


def _feature(field: SgNode, name: str) -> tuple[str, str] | None:
    """(mode, value): a module's base name, a dotted module's full name or a last name."""
    text = field.text()
    if name == "source" or field.kind() in STRING_KINDS:
        m = _QUOTED.match(text)
        return ("module", _module_base(m.group(2))) if m else None
    if (m := _REQUIRE.match(text)) is not None:
        return ("require", _module_base(m.group(2)))
    if name == "module_name":
        return ("exact", text) if re.fullmatch(r"[\w.]+", text) else None
    m = re.search(r"(\w+)\s*$", text)
    if m is None or "\n" in text:
        return None
    return ("name", m.group(1))


def _owner_regex(mode: str, values: set[str]) -> str:
    alt = "(?:" + "|".join(re.escape(v) for v in sorted(values)) + ")"
    if mode == "module":
        return rf"""^['"`](?:[^'"`]*/)?{alt}(?:\.\w+)?['"`]$"""
    if mode == "require":
        return rf"""^require\(\s*['"](?:[^'"]*/)?{alt}(?:\.\w+)?['"]\s*\)$"""
    if mode == "exact":
        return rf"^{alt}$"
    return rf"(?:^|\W){alt}$"


class _Site:
    """One append: the list's kind, the chain of kinds from the list up to its owner, the
    owner's field and feature, the layout and the separator before the new item."""

    def __init__(self, chain: tuple[str, ...], fld: str, mode: str, value: str, sep: str):
        self.chain, self.field, self.mode, self.value, self.sep = chain, fld, mode, value, sep

    @property
    def multi(self) -> bool:
        return "\n" in self.sep


def _append_at(root_after: SgNode, after: str, at: int, item: str) -> _Site | None:
    """The append whose new item starts at offset ``at`` of ``after``, or None."""
    node = _node_at(root_after, at, at + len(item))
    if node is None:
        return None
    parent = node.parent()
    if parent is None:
        return None
    items = _items(parent)
    if len(items) < 2 or items[-1].range().start.index != at:
        return None
    prev = items[-2]
    sep = after[prev.range().end.index : at]
    if "," not in sep or sep.strip() != ",":
        return None
    chain = [parent.kind()]
    owner: SgNode | None = parent
    for _ in range(3):
        owner = owner.parent() if owner is not None else None
        if owner is None:
            return None
        chain.append(owner.kind())
        prange = parent.range()
        for fld in OWNER_FIELDS:
            f = owner.field(fld)
            if f is None:
                continue
            r = f.range()
            if r.start.index <= prange.start.index and prange.end.index <= r.end.index:
                continue  # the list itself (a destructuring's `name`)
            feat = _feature(f, fld)
            if feat is None:
                return None
            return _Site(tuple(chain), fld, feat[0], feat[1], sep)
    return None


def _node_at(root: SgNode, start: int, end: int) -> SgNode | None:
    """The highest node spanning exactly [start, end) (None when none does)."""
    node: SgNode | None = root
    while node is not None:
        r = node.range()
        if r.start.index == start and r.end.index == end:
            return node
        node = next(
            (
                c
                for c in node.children()
                if c.range().start.index <= start and end <= c.range().end.index
            ),
            None,
        )
    return None


def _insertion(before: str, after: str) -> tuple[int, str] | None:
    """(offset in ``after``, text) of the one insertion that turns ``before`` into
    ``after`` (prefix taken first), or None when something is also removed."""
    n = min(len(before), len(after))
    p = 0
    while p < n and before[p] == after[p]:
        p += 1
    q = 0
    while q < n - p and before[-1 - q] == after[-1 - q]:
        q += 1
    if len(before) - p - q != 0:
        return None
    return p, after[p : len(after) - q]


def append_rules(
    examples: Sequence[tuple[str, SgNode, list[Any]]], lang: str
) -> list[list[tuple[dict[str, Any], str]]]:
    """Candidate rule sets (each a list of (rule, fix)) for examples (after text, after
    root, sites) whose every site appends one same item to a list; [] when they do not.
    The callers verify them."""
    found: list[_Site] = []
    items: set[str] = set()
    for after, root_after, sites in examples:
        for s in sites:
            if s.insert is not None or s.delete is not None:
                return []
            ins = _insertion(s.before_text, s.after_text)
            if ins is None:
                return []
            p, text = ins
            item = text.strip(" \t\r\n,")
            if not item or "\n" in item:
                return []
            at = s.after_text.find(item, p)
            if at < 0:
                return []
            site = _append_at(root_after, after, s.after_start + at, item)
            if site is None:
                return []
            found.append(site)
            items.add(item)
    if len(items) != 1 or not found:
        return []
    item = items.pop()
    groups: dict[tuple[Any, ...], list[_Site]] = {}
    for site in found:
        groups.setdefault((site.chain, site.field, site.mode, site.multi), []).append(site)
    out = []
    for relative in (True, False):
        rules: list[tuple[dict[str, Any], str]] = []
        for (chain, fld, mode, multi), sites in groups.items():
            seps = {s.sep if not relative else _relative(s.sep) for s in sites}
            if len(seps) != 1:
                break
            values = {s.value for s in sites}
            owner: dict[str, Any] = {
                "kind": chain[-1],
                "stopBy": "neighbor",
                "has": {"field": fld, "regex": _owner_regex(mode, values)},
            }
            for kind in reversed(chain[1:-1]):
                owner = {"kind": kind, "stopBy": "neighbor", "inside": owner}
            layout: dict[str, Any] = {"regex": "\n"} if multi else {}
            guard: dict[str, Any] = {"has": {"regex": f"^{re.escape(item)}$"}}
            lst: dict[str, Any] = {
                "kind": chain[0],
                "stopBy": "neighbor",
                **layout,
                "not": guard if multi else {"any": [guard, {"regex": "\n"}]},
                "inside": owner,
            }
            rule = {
                "pattern": "$A",
                "nthChild": {"position": 1, "reverse": True, "ofRule": {"not": _comment(lang)}},
                "not": _comment(lang),
                "inside": lst,
            }
            rules.append((rule, "$A" + seps.pop() + item))
        else:
            if rules:
                out.append(rules)
    return out


def _comment(lang: str) -> dict[str, Any]:
    # A fresh dict each time: a shared one is written as a YAML anchor.
    kinds = COMMENTS.get(lang, ("comment",))
    return {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}


def _relative(sep: str) -> str:
    """A multi-line separator without its indentation (ast-grep indents the fix's further
    lines to the anchor's)."""
    return re.sub(r"\n[ \t]*$", "\n", sep)
