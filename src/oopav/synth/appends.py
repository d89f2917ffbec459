"""An item inserted into a list, as its own rewrite (wave 3k, synth21; issue 26 class 1).

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
callee), a definition's ``name``, a composite literal's ``type``; names the examples differ
in by their longer common end, else their alternation. An item inserted in the middle is
anchored on the item it follows: by that item's key (`Usage: …` -> `ArgsUsage: …`), or, a
name after a name in an import/destructuring list, by that name in any list of the kind.
A last item that had no comma gets it with the new one. Single-line and multi-line lists
are separate rules, each with the separator its examples show (a multi-line one relative to
the anchor's column, or written out with tabs and kept to the examples' depth). Negatives:
``synth.core`` keeps a set only when it reproduces every example and its *probes* (the same
rules without the layout) match no list the examples keep. Needs two sites at least; an
argument appended to one-line calls is left to the call-head rule (`$A($$$B)`).

Wave 3u: a list is named as its owner's field (`field: parameters`: a Go method's receiver
and result lists are parameter lists too); the parameters of functions, methods and
interface or trait methods are one class by the owner's name (:data:`SIGNATURES`); a name
shape keeps both common ends, and the names themselves follow where the shape reaches a
definition the examples keep; several items inserted together are one run; a Go parameter
is keyed by its name.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.listitems import comment_rule, list_items, relative_sep, ws_regex
from oopav.synth.neighbours import CONSTRUCTORS, _run, neighbour_rules

# Fields that name what a list belongs to, in the order they are tried.
OWNER_FIELDS = ("source", "module_name", "function", "name", "type", "value", "path")
# Lists of names where a name inserted after another is placed by that name (imports,
# exports, destructurings; never arguments, where a name says nothing of the call).
NAME_LISTS = frozenset(
    {"use_list", "named_imports", "export_clause", "import_from_statement", "object_pattern"}
)
STRING_KINDS = frozenset(
    {"string", "string_literal", "interpreted_string_literal", "raw_string_literal"}
)
# The fields of an owner a list may be (wave 3u: a rule names it, so a Go method's
# receiver and result lists are not its parameters).
LIST_FIELDS = ("parameters", "receiver", "result", "return_type", "arguments", "type_parameters")
# Definitions one name may own a parameter list in, one class by that name (wave 3u): a
# function, a method, an interface's or trait's method (`BeforeTest` declared in an
# interface and defined on a type). Filtered to the kinds the language's grammar has.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "go": ("function_declaration", "method_declaration", "method_elem", "method_spec"),
    "javascript": ("function_declaration", "generator_function_declaration", "method_definition"),
    "typescript": (
        "function_declaration",
        "generator_function_declaration",
        "method_definition",
        "function_signature",
        "method_signature",
        "abstract_method_signature",
    ),
    "rust": ("function_item", "function_signature_item"),
    "php": ("function_definition", "method_declaration"),
    "ruby": ("method", "singleton_method"),
}
SIGNATURES["tsx"] = SIGNATURES["typescript"]
_GO_DECLS = frozenset({"parameter_declaration", "field_declaration"})
_REQUIRE = re.compile(r"""^require\(\s*(['"])([^'"\n]*)\1\s*\)$""")
# A keyed item: `key: value`, `key=value`, `"key": value` (the key).
_KEY = re.compile(r"""^([\w$]+|"[^"\n]*"|'[^'\n]*')\s*[:=](?!=)""")
_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*$")
_QUOTED = re.compile(r"""^(['"`])([^'"`\n]*)\1$""")


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


def _owner_regex(mode: str, values: set[str], exact: bool = False) -> str:
    alt = "(?:" + "|".join(re.escape(v) for v in sorted(values)) + ")"
    if mode == "module":
        return rf"""^['"`](?:[^'"`]*/)?{alt}(?:\.\w+)?['"`]$"""
    if mode == "require":
        return rf"""^require\(\s*['"](?:[^'"]*/)?{alt}(?:\.\w+)?['"]\s*\)$"""
    if mode == "exact":
        return rf"^{alt}$"
    if len(values) > 1 and not exact:
        alt = _shape(values)
    return rf"(?:^|\W){alt}$"


def _shape(names: set[str]) -> str:
    """Names the examples differ in, by their common ends: `pager`, `_pipepager` ->
    `_?\\w*pager`; `get_user`, `get_users` -> `get_user\\w*`; `HTTPErrorf`,
    `HTTPRedirectf` -> `HTTP\\w*f` (wave 3u: the shorter end narrows too, as the ordinary
    search's name constraints do); else their alternation (when neither end reaches 3
    characters, a shared part says nothing)."""
    bare = sorted(n.lstrip("_") for n in names)
    under = "_?" if any(n.startswith("_") for n in names) else ""
    prefix = bare[0]
    for b in bare[1:]:
        while not b.startswith(prefix):
            prefix = prefix[:-1]
    suffix = bare[0]
    for b in bare[1:]:
        while not b.endswith(suffix):
            suffix = suffix[1:]
    if max(len(prefix), len(suffix)) < 3:
        return "(?:" + "|".join(re.escape(v) for v in sorted(names)) + ")"
    # The ends may not overlap in the shortest name (`pager`, `pipepager`: `\w*pager`, not
    # `p\w*pager`); the longer end is kept whole.
    room = min(len(b) for b in bare)
    if len(suffix) >= len(prefix):
        prefix = prefix[: room - len(suffix)]
    else:
        suffix = suffix[max(0, len(suffix) - (room - len(prefix))) :] if room > len(prefix) else ""
    return rf"(?:{under}{re.escape(prefix)}\w*{re.escape(suffix)})"


class _Site:
    """One append: the list's kind, the chain of kinds from the list up to its owner, the
    owner's field and feature, the layout and the separator before the new item."""

    def __init__(
        self, chain: tuple[str, ...], fld: str, mode: str, value: str, sep: str, after: str
    ):
        self.chain, self.field, self.mode, self.value, self.sep = chain, fld, mode, value, sep
        # "" : appended after the last item; else the key of the item it follows.
        self.after = after
        # The indentation of the list's closing bracket when it starts its line.
        self.close: str | None = None
        self.trail = ""
        # Appended after the last item: that item's key, when it has one, and its kind
        # (wave 3p).
        self.last = ""
        self.last_kind = ""
        # Wave 3u: the key the item follows is a Go parameter's or field's name; the regexes
        # of a list that holds the new item(s) already; the owner's field that is the list
        # (`parameters`, not a Go method's `receiver` or `result`).
        self.go_key = False
        self.guards: list[str] = []
        self.slot = ""

    @property
    def multi(self) -> bool:
        return "\n" in self.sep


def _append_at(root_after: SgNode, after: str, at: int, item: str, lang: str = "") -> _Site | None:
    """The append whose new item (or run of items, wave 3u) starts at offset ``at`` of
    ``after``, or None."""
    node = _node_at(root_after, at, at + len(item))
    parent = node.parent() if node is not None else None
    if parent is not None:
        items = list_items(parent)
        idx = next((i for i, n in enumerate(items) if n.range().start.index == at), 0)
        end = idx
    else:
        # Several items inserted together (`, msg string, args ...interface{}`): one run.
        found = _run(root_after, at, at + len(item))
        if found is None:
            return None
        parent, items, idx, end = found
    if idx < 1:
        return None
    prev = items[idx - 1]
    new = items[idx : end + 1]
    # In the middle of a list: after the item of one key (`Usage: …` -> `ArgsUsage: …`).
    key = ""
    sibling = False
    go_key = False
    if end < len(items) - 1:
        m = _KEY.match(prev.text())
        if m is not None and _KEY.match(item) is not None:
            key = m.group(1)
        elif parent.kind() in NAME_LISTS and _NAME.match(prev.text()) and _NAME.match(item):
            # A name inserted after a name (`MutBuf, MutBufExt`): the name it follows is
            # the context, in any list of the kind (an import list with or without a path).
            key, sibling = prev.text(), True
        elif (k := _go_key(prev, lang)) is not None and _go_key(new[0], lang) is not None:
            # A Go parameter or field after the one of that name (`values url.Values` ->
            # `values url.Values, body io.Reader`, wave 3u).
            key, go_key = k, True
        else:
            return None
    sep = after[prev.range().end.index : at]
    if "," not in sep or sep.strip() != ",":
        return None
    if sibling:
        site = _Site((parent.kind(),), "", "sibling", "", sep, key)
        return site
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
            site = _Site(tuple(chain), fld, feat[0], feat[1], sep, key)
            site.go_key = go_key
            site.guards = [_guard(n, lang) for n in new]
            if len(chain) == 2:
                site.slot = next(
                    (
                        name
                        for name in LIST_FIELDS
                        if (g := owner.field(name)) is not None and g.range() == prange
                    ),
                    "",
                )
            closing = re.search(r"\n([ \t]*)\S+$", parent.text())
            site.close = closing.group(1) if closing else None
            if idx == len(items) - 1 and (last := _KEY.match(prev.text())) is not None:
                site.last, site.last_kind = last.group(1), prev.kind()
            return site
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


def _insertions(before: str, after: str) -> list[tuple[int, str]] | None:
    """(offset in ``after``, text) of each insertion that turns ``before`` into ``after``,
    or None when something is also removed or replaced."""
    if len(after) <= len(before):
        return None
    # The common ends first: a site may be a whole definition, and the diff is quadratic.
    n = len(before)
    p = 0
    while p < n and before[p] == after[p]:
        p += 1
    q = 0
    while q < n - p and before[-1 - q] == after[-1 - q]:
        q += 1
    mid_b, mid_a = before[p : n - q], after[p : len(after) - q]
    if not mid_b:
        return [(p, mid_a)]
    if len(mid_a) > 2000:
        return None
    out = []
    ops = difflib.SequenceMatcher(None, mid_b, mid_a, autojunk=False).get_opcodes()
    for op, _i1, _i2, j1, j2 in ops:
        if op == "insert":
            out.append((p + j1, mid_a[j1:j2]))
        elif op != "equal":
            return None
    return out


Candidate = tuple[list[tuple[dict[str, Any], str]], list[dict[str, Any]]]


def append_rules(
    examples: Sequence[tuple[SgNode, str, SgNode, list[Any]]], lang: str
) -> list[Candidate]:
    """Candidate rule sets for examples (before root, after text, after root, sites) whose
    every site (two at least: a recurring change) inserts one same item into a list; []
    when they do not. Each candidate: the (rule, fix) pairs and their *probes*, the same
    rules in any layout, whose every match in an example must be an edited site (the
    examples' kept lists of the owner, in whatever layout, are negatives). The callers
    verify them.

    Wave 3u: an item inserted between two items is also placed by its neighbours, in any
    list (``synth.neighbours``): those candidates come first unless every site's list has
    one owner, of one name that is no constructor's."""
    between = neighbour_rules(examples, lang, _insertions)
    owned, found = _owner_rules(examples, lang)
    values = {s.value for s in found}
    if (
        len(values) == 1
        and not values & CONSTRUCTORS
        and all(s.mode not in ("sibling", "") for s in found)
    ):
        return owned + between
    return between + owned


def _owner_rules(
    examples: Sequence[tuple[SgNode, str, SgNode, list[Any]]], lang: str
) -> tuple[list[Candidate], list[_Site]]:
    """The candidates of wave 3k (lists of one owner) and the sites they were learned on
    (none where a site is no append)."""
    found: list[_Site] = []
    items: set[str] = set()
    for _before, after, root_after, sites in examples:
        for s in sites:
            if s.insert is not None or s.delete is not None:
                return [], []
            inserted = _insertions(s.before_text, s.after_text)
            if not inserted or len(inserted) > 8:
                return [], []
            for p, text in inserted:
                site, item = None, ""
                for item, at, window in _placed(s.after_text, p, len(text)):
                    site = _append_at(root_after, after, s.after_start + at, item, lang)
                    if site is not None:
                        # `len: 0` -> `len: 0,\n mark: None,`: the new last item brings the
                        # trailing comma the list lacked (two commas inserted).
                        site.trail = "," if window.replace(item, "", 1).count(",") == 2 else ""
                        break
                if site is None:
                    return [], []
                found.append(site)
                items.add(item)
    if len(items) != 1 or len(found) < 2:
        return [], []
    if all(f.field == "function" and not f.multi and not f.after for f in found):
        # An argument appended to calls on one line: the call-head rule (`$A($$$B)` ->
        # `$A($$$B, x)`, its names abstracted by a regex as far as the examples vary them)
        # already reaches any call; left to it.
        return [], []
    item = items.pop()
    roots = [r for before, _a, root_after, _s in examples for r in (before, root_after)]
    signatures = _signatures(lang)
    groups: dict[tuple[Any, ...], list[_Site]] = {}
    for site in found:
        chain = site.chain
        if (
            len(chain) == 2
            and chain[1] in signatures
            and site.field == "name"
            and site.slot == "parameters"
        ):
            # A function's, a method's or an interface method's parameters: one class by
            # the owner's name (wave 3u).
            chain = (chain[0], _SIGNATURE)
        groups.setdefault(
            (
                chain,
                site.field,
                site.mode,
                site.multi,
                site.after,
                site.trail,
                site.go_key,
                site.slot,
                tuple(site.guards),
            ),
            [],
        ).append(site)
    exacts = [False]
    if any(
        _owner_regex(g[0][2], {s.value for s in g[1]})
        != _owner_regex(g[0][2], {s.value for s in g[1]}, exact=True)
        for g in groups.items()
        if g[0][2] != "sibling"
    ):
        # Wave 3u: the names themselves where their shape reaches a definition the
        # examples keep (`\w*Regexp`, and `matchRegexp` kept beside `Regexp`, `NotRegexp`).
        exacts.append(True)
    out: list[Candidate] = []
    for exact, relative in [(e, r) for e in exacts for r in (True, False)]:
        rules: list[tuple[dict[str, Any], str]] = []
        probes: list[dict[str, Any]] = []
        for (chain, fld, mode, multi, key, trail, go_key, slot, guards), sites in groups.items():
            if trail and key:
                break
            seps = {s.sep if not relative else relative_sep(s.sep) for s in sites}
            if len(seps) != 1:
                break
            # The item the new one follows: by its key, or (a name after a name) whole.
            if mode == "sibling":
                after_rx = rf"{re.escape(key)}\s*,"
            elif go_key:
                after_rx = _go_key_regex(key)[1:]
            else:
                after_rx = rf"{re.escape(key)}\s*(?::|=[^=])"
            depth: dict[str, Any] = {}
            if multi and not relative:
                # Written out (tabs: ast-grep re-indents a fix by spaces only): the depth
                # the examples show, stated on the list (the anchor's line, or the line of
                # its closing bracket).
                ind = re.sub(r"^[^\n]*\n", "", next(iter(seps)))
                closes = {s.close for s in sites}
                if key:
                    depth = {"regex": rf"\n{ws_regex(ind)}{after_rx}"}
                elif len(closes) == 1 and None not in closes:
                    depth = {"regex": rf"\n{ws_regex(str(next(iter(closes))))}\S+$"}
                else:
                    break
            values = {s.value for s in sites}
            owner: dict[str, Any] | None = None
            if mode != "sibling":
                kinds_of: dict[str, Any] = (
                    {"any": [{"kind": k} for k in signatures]}
                    if chain[-1] == _SIGNATURE
                    else {"kind": chain[-1]}
                )
                owner = {
                    **kinds_of,
                    "stopBy": "neighbor",
                    # The list is this field of its owner (wave 3u: a Go method's
                    # parameters, not its receiver or its result).
                    **({"field": slot} if slot else {}),
                    "has": {"field": fld, "regex": _owner_regex(mode, values, exact)},
                }
                for kind in reversed(chain[1:-1]):
                    owner = {"kind": kind, "stopBy": "neighbor", "inside": owner}
            layout: dict[str, Any] = {"regex": "\n"} if multi else {}
            guard: dict[str, Any] = (
                _not_twice(item)
                if not guards
                else {"has": {"regex": guards[0]}}
                if len(guards) == 1
                else {"any": [{"has": {"regex": g}} for g in guards]}
            )
            lst: dict[str, Any] = {
                "kind": chain[0],
                "stopBy": "neighbor",
                **layout,
                **({"all": [depth]} if depth else {}),
                "not": guard if multi else {"any": [guard, {"regex": "\n"}]},
                **({"inside": owner} if owner is not None else {}),
            }
            anchor: dict[str, Any] = (
                {"regex": f"^{re.escape(key)}$" if mode == "sibling" else f"^{after_rx}"}
                if key
                else {
                    "nthChild": {
                        "position": 1,
                        "reverse": True,
                        "ofRule": {"not": comment_rule(lang)},
                    }
                }
            )
            # The kinds an item of such a list has in the examples (the CLI wants a kind;
            # the sites' own would keep the anchor to the example's: a string argument).
            kinds = sorted(
                {
                    c.kind()
                    for root in roots
                    for lst_node in root.find_all(kind=chain[0])
                    for c in list_items(lst_node)
                }
            )
            of_kind: dict[str, Any] = (
                {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}
            )
            no_comma = {"precedes": {"pattern": ",", "stopBy": "neighbor"}}
            top = {
                "pattern": "$A",
                **of_kind,
                **anchor,
                "not": {"any": [comment_rule(lang), no_comma]} if trail else comment_rule(lang),
            }
            rules.append(({**top, "inside": lst}, "$A" + seps.pop() + item + trail))
            probe_list = {k: v for k, v in lst.items() if k not in ("regex", "all")}
            probe_list["not"] = guard
            probes.append({**top, "inside": probe_list})
        else:
            if rules:
                out.append((rules, probes))
    return out + _after_last(found, item, lang), found


_SIGNATURE = "<signature>"
_GO_NAMED = re.compile(r"^([A-Za-z_]\w*)\s+[^\s=:,(]")
_SIGNATURE_KINDS: dict[str, tuple[str, ...]] = {}


def _signatures(lang: str) -> tuple[str, ...]:
    """:data:`SIGNATURES` of ``lang`` that its grammar has (an unknown kind is a rule
    error)."""
    if lang not in _SIGNATURE_KINDS:
        from ast_grep_py import SgRoot

        root = SgRoot("", lang).root() if lang in SIGNATURES else None
        known = []
        for k in SIGNATURES.get(lang, ()):
            try:
                root.find_all(kind=k)  # type: ignore[union-attr]
            except (RuntimeError, ValueError):
                continue
            known.append(k)
        _SIGNATURE_KINDS[lang] = tuple(known)
    return _SIGNATURE_KINDS[lang]


def _go_key(node: SgNode, lang: str) -> str | None:
    """A Go parameter's or field's name (`values url.Values`: `values`; None for a group
    `method, url string` or anything else)."""
    if lang != "go" or node.kind() not in _GO_DECLS:
        return None
    m = _GO_NAMED.match(node.text())
    return m.group(1) if m else None


def _go_key_regex(key: str) -> str:
    return rf"^{re.escape(key)}\s+[^\s=:,(]"


def _guard(node: SgNode, lang: str) -> str:
    """A list item that is ``node`` already (a Go parameter or field by its name, a keyed
    item by its key, else its text)."""
    if (name := _go_key(node, lang)) is not None:
        return _go_key_regex(name)
    key = _KEY.match(node.text())
    return rf"^{re.escape(key.group(1))}\s*(?::|=[^=])" if key else f"^{re.escape(node.text())}$"


def _not_twice(item: str) -> dict[str, Any]:
    """A list that already holds ``item`` (by its key, when it has one) is left alone."""
    key = _KEY.match(item)
    regex = rf"^{re.escape(key.group(1))}\s*(?::|=[^=])" if key else f"^{re.escape(item)}$"
    return {"has": {"regex": regex}}


def _after_last(found: list[_Site], item: str, lang: str) -> list[Candidate]:
    """Wave 3p: a keyed item appended after the same last item in every list, whatever owns
    the list (uvicorn 2cfbf003: `timeout_response=60,` after `timeout_keep_alive=5,` in
    `def run(…)` and in an `__init__(…)`; the owners' names are no class — `__init__` is
    every class's — the item it follows is). Tried after the owner's rules: the last item by
    its key and kind (a default `timeout_keep_alive=5`, not the `timeout_keep_alive: int` of
    the CLI's `main` the commit kept), in a list of the examples' kind and layout, not
    holding the new item yet."""
    lasts = {(s.last, s.last_kind) for s in found}
    kinds = {s.chain[0] for s in found}
    seps = {relative_sep(s.sep) for s in found}
    if len(lasts) != 1 or len(kinds) != 1 or len(seps) != 1 or not _KEY.match(item):
        return []
    if any(s.trail or s.after or not s.last for s in found):
        return []
    (last, last_kind), kind, sep = lasts.pop(), kinds.pop(), seps.pop()
    guard = _not_twice(item)
    lst: dict[str, Any] = {
        "kind": kind,
        "stopBy": "neighbor",
        **({"regex": "\n"} if "\n" in sep else {}),
        "not": guard if "\n" in sep else {"any": [guard, {"regex": "\n"}]},
    }
    top = {
        "pattern": "$A",
        "kind": last_kind,
        "regex": rf"^{re.escape(last)}\s*(?::|=[^=])",
        "nthChild": {"position": 1, "reverse": True, "ofRule": {"not": comment_rule(lang)}},
        "not": comment_rule(lang),
    }
    probe = {**top, "inside": {"kind": kind, "stopBy": "neighbor", "not": guard}}
    return [([({**top, "inside": lst}, "$A" + sep + item)], [probe])]


def _placed(text: str, p: int, n: int) -> list[tuple[str, int, str]]:
    """The (item, offset) an insertion of ``n`` characters at ``p`` of ``text`` may be: the
    diff may place it anywhere it could slide (`A` + `rgsUsage: …,\\n\\t\\tA` for a field
    inserted before `Action`), so every placement, the diff's first, with its separators
    stripped (the caller keeps the first that is a list's item)."""
    lo = p
    while lo > 0 and text[lo - 1] == text[lo - 1 + n]:
        lo -= 1
    hi = p
    while hi + n < len(text) and text[hi] == text[hi + n]:
        hi += 1
    out = []
    for k in [p, *range(lo, hi + 1)]:
        window = text[k : k + n]
        item = window.strip(" \t\r\n,")
        if item and "\n" not in item:
            out.append((item, k + window.index(item), window))
    return out
