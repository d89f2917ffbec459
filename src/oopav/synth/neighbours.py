"""Items inserted between two neighbours, placed by them (wave 3u; issue 26 class 1).

A commit adds a field to some struct types, a member to some object literals, a parameter
to some signatures, names to some constant lists — one line (or a run of lines) inserted
between two items of a one-item-per-line list. ``synth.appends`` places such an item after
the item of the key it follows, within lists of one owner; where the owners differ between
the examples (`Builder { … }`, `State { … }`, `ParseContext { … }` in hyper), where no owner
is near (an object literal returned from a callback) or where the owner is a constructor
(`__init__`: every class has one), the neighbours are the context, not the owner. Each site
names two anchors: *after* the key the new item follows and *before* the key it precedes
(each only where the layout between the neighbours allows it). The rule set is a decision
list of such anchors, in an order consistent with every example: an anchor is taken when,
at every example list that holds its key and is not placed yet, it is the right place; a
later anchor skips lists that hold an earlier one (and every rule skips a list that already
holds the new item). hyper's `h1_max_headers: None` after `h1_preserve_header_case` (a list
that also holds `h1_parser_config`) and after `h1_parser_config` elsewhere:

```yaml
rule:
  pattern: $A
  any: [{kind: field_initializer}, {kind: shorthand_field_initializer}, …]
  regex: ^h1_parser_config(?:\\s*(?::[^:]|=[^=>]|\\()|$)
  inside:
    kind: field_initializer_list
    stopBy: neighbor
    regex: \\n
    not:
      any:
        - has: {regex: ^h1_max_headers(?:…)}            # not twice
        - has: {regex: ^h1_preserve_header_case(?:…)}   # an earlier anchor's list
fix: "$A,\\nh1_max_headers: None"
```

A key is what names an item: `key: value`, `key = value`, a shorthand or a bare name (the
same key: `h1_parser_config,` is `h1_parser_config: …`), a method's name (`async
hasItem(key) {` is `hasItem`), a Go field's or parameter's name (`notParseResponse bool`). A
Go field inserted into an aligned block gets its padding from its neighbour (gofmt's type
column), not the example's. Several items inserted together are one insertion (`CACHE_STATUS,
CDN_CACHE_CONTROL`). The candidates are verified by ``synth.core`` as the appends' are (every
example reproduced; no example list the rules leave alone matched in any layout).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.listitems import COMMENT_KINDS, comment_rule, list_items, relative_sep, ws_regex

# Modifiers in front of a member's name (`async hasItem(…)`, `pub fn`, `static get x()`).
_MODS = (
    r"(?:(?:async|static|get|set|readonly|public|private|protected|override|"
    r"pub(?:\([^)\n]*\))?)\s+|\*\s*)*"
)
_KEYED = re.compile(r"""^([\w$]+|"[^"\n]*"|'[^'\n]*')\s*(?::(?!:)|=(?![=>]))""")
_BARE = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*$")
_METHOD = re.compile(rf"^{_MODS}([A-Za-z_$][\w$]*)\s*(?:<[^>\n]*>\s*)?\(")
_GO_DECL = re.compile(r"^([A-Za-z_]\w*)\s+[^\s=:,(]")
# Kinds whose items a Go key reads as `name type` (fields and parameters).
_GO_DECLS = frozenset({"field_declaration", "parameter_declaration"})
# Argument lists: only a keyword argument (`proxy=None`) has a key.
_ARGUMENTS = frozenset({"arguments", "argument_list", "call_arguments", "value_arguments"})
# Constructors: a name every class has, so no owner (wave 3p said it of `__init__`).
CONSTRUCTORS = frozenset({"__init__", "__new__", "constructor", "new", "init"})

Candidate = tuple[list[tuple[dict[str, Any], str]], list[dict[str, Any]]]


def key_of(node: SgNode, lang: str) -> str | None:
    """The key that names a list item (None: an item no key names)."""
    if node.kind() in COMMENT_KINDS:
        return None
    text = node.text()
    if (m := _KEYED.match(text)) is not None:
        return m.group(1)
    parent = node.parent()
    if parent is not None and parent.kind() in _ARGUMENTS:
        return None  # a positional argument: its text says nothing of its place
    if _BARE.match(text):
        return text
    if (m := _METHOD.match(text)) is not None and "\n" in text:
        return m.group(1)  # a method (a body: not a call's argument `f(x)`)
    if lang == "go" and node.kind() in _GO_DECLS and (m := _GO_DECL.match(text)) is not None:
        return m.group(1)
    return None


def key_regex(key: str, lang: str) -> str:
    """An item whose key is ``key``, in any of the forms :func:`key_of` reads."""
    tail = r"\s*(?::[^:]|=[^=>]|\()|\s*<[^>\n]*>\s*\(|$"
    if lang == "go":
        tail += r"|\s+[^\s=:,(]"
    return rf"^{_MODS}{re.escape(key)}(?:{tail})"


class _Slot:
    """One insertion site: the list, its kept items' keys, and the anchors it allows."""

    def __init__(self, kind: str, multi: bool, keys: set[str], item: str, first_key: str):
        self.kind, self.multi, self.keys = kind, multi, keys
        self.item, self.first_key = item, first_key
        # (side, key) -> (separator, indentation of the anchor's line, the anchor node).
        self.anchors: dict[tuple[str, str], tuple[str, str, SgNode]] = {}
        self.start = -1  # the list's offset in the after text


def _run(root: SgNode, a: int, b: int) -> tuple[SgNode, list[SgNode], int, int] | None:
    """The list whose items i..j span exactly [a, b) (the highest such node)."""
    node: SgNode | None = root
    while node is not None:
        items = list_items(node)
        starts = [k for k, c in enumerate(items) if c.range().start.index == a]
        ends = [k for k, c in enumerate(items) if c.range().end.index == b]
        if starts and ends and starts[0] <= ends[-1] and len(items) > ends[-1] - starts[0] + 1:
            return node, items, starts[0], ends[-1]
        node = next(
            (c for c in node.children() if c.range().start.index <= a and b <= c.range().end.index),
            None,
        )
    return None


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    m = re.match(r"[ \t]*", text[start:at])
    return m.group(0) if m else ""


def _slot(root_after: SgNode, after: str, w0: int, w1: int, lang: str) -> _Slot | None:
    """The slot of an insertion of after[w0:w1] (the diff's window), or None."""
    window = after[w0:w1]
    item = window.strip(" \t\r\n,")
    if not item:
        return None
    a = w0 + window.index(item)
    b = a + len(item)
    found = _run(root_after, a, b)
    if found is None:
        return None
    lst, items, i, j = found
    first_key = key_of(items[i], lang)
    if first_key is None:
        return None
    kept = items[:i] + items[j + 1 :]
    keys = {k for c in kept if (k := key_of(c, lang)) is not None}
    multi = "\n" in lst.text()
    slot = _Slot(lst.kind(), multi, keys, item, first_key)
    slot.start = lst.range().start.index
    prev = items[i - 1] if i > 0 else None
    nxt = items[j + 1] if j + 1 < len(items) else None
    if prev is not None and nxt is not None and w0 == prev.range().end.index and w1 == b:
        # After `prev`: the window is the separator and the item; what followed `prev`
        # still follows the item.
        sep = after[prev.range().end.index : a]
        pkey = key_of(prev, lang)
        if pkey is not None and sep.strip() in (",", "") and (sep.strip() or "\n" in sep):
            at = prev.range().start.index
            slot.anchors[("after", pkey)] = (sep, _line_indent(after, at), prev)
    if nxt is not None and w0 == a and w1 == nxt.range().start.index:
        # Before `nxt`: the window is the item and the separator.
        sep = after[b:w1]
        nkey = key_of(nxt, lang)
        if nkey is not None and sep.strip() in (",", "") and (sep.strip() or "\n" in sep):
            at = nxt.range().start.index
            slot.anchors[("before", nkey)] = (sep, _line_indent(after, at), nxt)
    return slot if slot.anchors else None


def _placements(text: str, p: int, n: int) -> list[int]:
    """Every offset the diff could have placed an insertion of ``n`` characters at."""
    lo = p
    while lo > 0 and text[lo - 1] == text[lo - 1 + n]:
        lo -= 1
    hi = p
    while hi + n < len(text) and text[hi] == text[hi + n]:
        hi += 1
    return [p, *(k for k in range(lo, hi + 1) if k != p)]


def _go_padded(item: str) -> re.Match[str] | None:
    """A Go field or parameter written aligned (`name<spaces>type`)."""
    return re.match(r"^([A-Za-z_]\w*)( {2,})(\S[^\n]*)$", item)


def neighbour_rules(
    examples: Sequence[tuple[SgNode, str, SgNode, list[Any]]],
    lang: str,
    insertions: Any,
) -> list[Candidate]:
    """Candidate decision lists for examples (before root, after text, after root, sites)
    whose every site (two at least) inserts one same item (or run of items) between two
    items of a list; [] when they do not. ``insertions`` is ``appends._insertions``."""
    slots: list[_Slot] = []
    # The lists the examples keep, per example: (kind, the kinds of each key's items).
    kept: list[tuple[str, dict[str, set[str]]]] = []
    for _before, after, root_after, sites in examples:
        mine = len(slots)
        for s in sites:
            if s.insert is not None or s.delete is not None:
                return []
            inserted = insertions(s.before_text, s.after_text)
            if not inserted or len(inserted) > 8:
                return []
            for p, text in inserted:
                merged: _Slot | None = None
                for k in _placements(s.after_text, p, len(text)):
                    w0 = s.after_start + k
                    slot = _slot(root_after, after, w0, w0 + len(text), lang)
                    if slot is None:
                        continue
                    if merged is None:
                        merged = slot
                    elif slot.kind == merged.kind and slot.item == merged.item:
                        for anchor, value in slot.anchors.items():
                            merged.anchors.setdefault(anchor, value)
                if merged is None:
                    return []
                slots.append(merged)
        edited = {s.start for s in slots[mine:]}
        for kind in {s.kind for s in slots[mine:]}:
            for lst in root_after.find_all(kind=kind):
                if lst.range().start.index in edited:
                    continue
                keys: dict[str, set[str]] = {}
                for c in list_items(lst):
                    if (name := key_of(c, lang)) is not None:
                        keys.setdefault(name, set()).add(c.kind())
                kept.append((kind, keys))
    if len(slots) < 2:
        return []
    if len({re.sub(r"\s+", " ", s.item) for s in slots}) != 1:
        return []
    if len({s.first_key for s in slots}) != 1:
        return []
    out: list[Candidate] = []
    for relative in (True, False):
        found = _decision_list(slots, kept, lang, relative)
        if found is not None:
            out.append(found)
    return out


def _decision_list(
    slots: list[_Slot], kept: list[tuple[str, dict[str, set[str]]]], lang: str, relative: bool
) -> Candidate | None:
    # The anchors in the order the sites show them (after first, then before).
    order: list[tuple[str, bool, str, str]] = []
    for s in slots:
        for side, key in s.anchors:
            anchor = (s.kind, s.multi, side, key)
            if anchor not in order:
                order.append(anchor)

    def right(anchor: tuple[str, bool, str, str], s: _Slot) -> bool:
        return (anchor[2], anchor[3]) in s.anchors

    def holds(anchor: tuple[str, bool, str, str], s: _Slot) -> bool:
        return s.kind == anchor[0] and s.multi == anchor[1] and anchor[3] in s.keys

    chosen: list[tuple[str, bool, str, str]] = []
    placed: set[int] = set()
    grew = True
    while grew:
        grew = False
        for anchor in order:
            if anchor in chosen:
                continue
            # Right at every list not placed yet that holds its key, and right somewhere
            # (an anchor every site also shows is a fallback: a list without the first).
            open_ = [n for n, s in enumerate(slots) if n not in placed and holds(anchor, s)]
            some = [s for s in slots if holds(anchor, s) and right(anchor, s)]
            forms = {k for s in some for k in _forms(s.anchors[anchor[2:]][2].kind())}
            # No list the examples keep holds it (in any layout; one that holds the new
            # item already is left alone anyway).
            clean = not any(
                kind == anchor[0]
                and keys.get(anchor[3], set()) & forms
                and slots[0].first_key not in keys
                for kind, keys in kept
            )
            if some and clean and all(right(anchor, slots[n]) for n in open_):
                chosen.append(anchor)
                placed.update(n for n, s in enumerate(slots) if holds(anchor, s))
                grew = True
    if len(placed) != len(slots):
        return None
    rules: list[tuple[dict[str, Any], str]] = []
    probes: list[dict[str, Any]] = []
    guard = {"has": {"regex": key_regex(slots[0].first_key, lang)}}
    for n, anchor in enumerate(chosen):
        kind, multi, side, key = anchor
        at = [s for s in slots if holds(anchor, s) and right(anchor, s)]
        sep, indent, node = at[0].anchors[(side, key)]
        item = at[0].item
        seps = {s.anchors[(side, key)][0] for s in at}
        indents = {s.anchors[(side, key)][1] for s in at}
        depth: dict[str, Any] = {}
        if relative:
            seps = {relative_sep(x) for x in seps}
            if multi and any(
                re.search(rf"\n(?!{re.escape(s.anchors[(side, key)][1])}\S)", s.item) for s in at
            ):
                return None  # a run of items not at the anchor's column
            item = item.replace("\n" + indent, "\n")
        elif multi:
            if len(indents) != 1:
                return None
            depth = {"regex": rf"\n{ws_regex(indent)}{key_regex(key, lang)[1:]}"}
        if len(seps) != 1:
            return None
        sep = seps.pop()
        earlier = [{"has": {"regex": key_regex(e[3], lang)}} for e in chosen[:n] if e[0] == kind]
        skip: dict[str, Any] = {"any": [guard, *earlier]} if earlier else guard
        lst: dict[str, Any] = {
            "kind": kind,
            "stopBy": "neighbor",
            **({"regex": "\n"} if multi else {}),
            **({"all": [depth]} if depth else {}),
            "not": skip if multi else {"any": [*skip.get("any", [skip]), {"regex": "\n"}]},
        }
        # The anchor in the kinds the examples show it in, a keyed member's shorthand and
        # method forms counted as one (`h1_parser_config,` is `h1_parser_config: …`).
        kinds = sorted({k for s in at for k in _forms(s.anchors[(side, key)][2].kind())})
        of_kind: dict[str, Any] = (
            {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}
        )
        top: dict[str, Any] = {
            "pattern": "$A",
            **of_kind,
            "regex": key_regex(key, lang),
            "not": comment_rule(lang),
        }
        fix = "$A" + sep + item if side == "after" else item + sep + "$A"
        rule = {**top, "inside": lst}
        aligned = _go_align(lang, item, node, key)
        if aligned is not None:
            # The transform travels in the rule (``synth.core`` takes it out).
            fix = fix.replace(item, aligned[1])
            rule["transform"], rule["all"] = aligned[0], [{"regex": aligned[2]}]
        rules.append((rule, fix))
        probe_list = {k: v for k, v in lst.items() if k not in ("regex", "all")}
        probe_list["not"] = skip
        probes.append({**top, "inside": probe_list})
    return (rules, probes)


# Members named by one key in several forms (a field, its shorthand, a method).
_FORMS = (
    frozenset({"field_initializer", "shorthand_field_initializer"}),
    frozenset({"pair", "shorthand_property_identifier", "method_definition"}),
)


def _forms(kind: str) -> frozenset[str]:
    return next((f for f in _FORMS if kind in f), frozenset({kind}))


def _go_align(
    lang: str, item: str, anchor: SgNode, key: str
) -> tuple[dict[str, Any], str, str] | None:
    """gofmt's alignment: a Go field written `name<spaces>type` beside an aligned neighbour
    takes its padding from the neighbour's type column (the neighbour's text up to its
    type, less the new name's length), not the example's count of spaces."""
    if lang != "go" or "\n" in item:
        return None
    m = _go_padded(item)
    ours = re.match(r"^([A-Za-z_]\w*)(\s+)\S", anchor.text())
    if m is None or ours is None:
        return None
    if ours.group(1) != key or len(ours.group(1)) + len(ours.group(2)) != len(m.group(1)) + len(
        m.group(2)
    ):
        return None  # the example was not aligned on this neighbour
    width = len(m.group(1))
    transform = {
        "HEAD": {"replace": {"source": "$A", "replace": r"^(\S+\s+)[\s\S]*$", "by": "$1"}},
        "TAIL": {"replace": {"source": "$HEAD", "replace": rf"^[\s\S]{{{width}}}", "by": ""}},
        "PAD": {"replace": {"source": "$TAIL", "replace": r"\S", "by": " "}},
    }
    # Only beside a neighbour whose type column leaves the new name room (else gofmt
    # realigns the block, which no rule of one line does).
    room = rf"^{re.escape(key)}\s{{{max(1, width + 1 - len(key))},}}\S"
    return transform, m.group(1) + "$PAD" + m.group(3), room
