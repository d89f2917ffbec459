"""Precision first for rules that name nothing (issue 26, wave 3d).

A pattern made of metavariables, punctuation and keywords only — ``&$A`` -> ``$A``,
``() => $A`` -> ``$A``, ``$A = $B`` — or a single token rewritten into something else
(``error`` -> ``crate::error``, ``200`` -> ``http.StatusOK``) matches wherever the shape
occurs: the examples' sites say nothing about where it applies beyond the shape, and their
unchanged code often holds no such shape to object. Real commits make such a change in one
kind of place (chi's ``cW(&buf, …)`` -> ``cW(buf, …)`` in arguments, never ``return &bw``;
serde's ``use error::Error`` -> ``use crate::error::Error`` on the path of a ``use``, never
``fn error(…)`` or ``self.error``).

So such a rule is closed by what every example site shares: the parent's kind (and field,
when every site sits in the same one); with two sites or more, each metavariable's kind
where every site binds the same kind (``() => $A`` with ``A: {kind: call_expression}``), or
where they bind different kinds and the rule has that one metavariable, the heads of what
they bind (serde's ``use $A;`` on ``lib::*`` and ``io``: ``A: ^(?:io|lib)\b``). Whole texts
are pinned only where two or more distinct sites bind one and the same *name* (wave 3g,
:func:`shared_names`: koa's ``function(next)`` -> ``function *(next)``; a constant's name to
the constants' family, wave 3t: ripgrep's ``&*SHERLOCK``, ``&*CODE``); values never, and
one site never (every text is shared by one site: the rule would be literal). An
operator or keyword replaced in place (``$A == $B`` -> ``$A === $B``) is what the rule is
about and is not narrowed. The closed rule must rewrite exactly the sites the open one did,
else the open one stays. A rule that names something (a call head, a property, a constant)
is left as it is: the name is the evidence of where it applies.

Also here: a Python rename whose every site is an attribute's name stays in the member
namespace (:func:`member_rename`), a layout-pinned rule leaves an outer node it cannot finish
(:func:`nested_guard`), and the field where a wrapping rule would match its own output
(:func:`rewrapped`, for ``core._idempotent``).
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.discriminate import FIELDS, ROOTS, conjoin
from oopav.synth.removals import removal

_METAVAR = re.compile(r"\$\$?\$?([A-Z][A-Z0-9_]*)")
_SINGLE = re.compile(r"(?<!\$)\$([A-Z][A-Z0-9_]*)")
_TOKEN = re.compile(r"^[A-Za-z_]\w*$")
# A name spelled as a constant: two characters or more, capitals, digits and underscores.
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
CONSTANT_NAME = "^[A-Z][A-Z0-9_]*[A-Z0-9]$"


def _distinct(nodes: list[SgNode]) -> list[SgNode]:
    seen: set[tuple[int, int]] = set()
    out = []
    for n in nodes:
        r = n.range()
        key = (r.start.index, r.end.index)
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out


def _pattern_text(rule: dict[str, Any]) -> str | None:
    pattern = rule.get("pattern")
    if isinstance(pattern, str):
        return pattern
    if isinstance(pattern, dict):
        context = pattern.get("context")
        return context if isinstance(context, str) else None
    return None


def _bound(node: SgNode, names: set[str]) -> list[tuple[int, int]]:
    """The ranges the metavariables ``names`` bind in the match ``node``."""
    out = []
    for name in names:
        single = node.get_match(name)
        nodes = [single] if single is not None else node.get_multiple_matches(name)
        for n in nodes:
            r = n.range()
            out.append((r.start.index, r.end.index))
    return out


def _names_something(node: SgNode, bound: list[tuple[int, int]]) -> bool:
    """A named leaf (an identifier, a literal) of ``node`` outside every bound range: the
    rule holds a name of its own."""
    stack = [node]
    while stack:
        n = stack.pop()
        r = n.range()
        if any(s <= r.start.index and r.end.index <= e for s, e in bound):
            continue
        kids = n.children()
        if not kids and n.is_named():
            return True
        stack.extend(kids)
    return False


def weak(
    rule: dict[str, Any],
    fix: str,
    positives: list[SgNode],
    constraints: dict[str, Any] | None = None,
) -> bool:
    """The rule names nothing: no named leaf outside its metavariables at any site, or a
    single token rewritten into more than a token (not a rename) — and nothing else says
    where it applies (a metavariable's constraint, a positive context)."""
    text = _pattern_text(rule)
    if text is None or not positives or constraints:
        return False
    if any(k in rule for k in ("kind", "regex", "inside", "has", "follows", "precedes", "all")):
        return False
    names = set(_METAVAR.findall(text))
    node = positives[0]
    if not names:
        # One token rewritten into something else (a rename keeps to a token).
        return not node.children() and not _TOKEN.match(fix.strip())
    if _substitution(text, fix):
        return False
    return not any(_names_something(p, _bound(p, names)) for p in positives)


_SPLIT = re.compile(r"\$\$?\$?[A-Z][A-Z0-9_]*")
_TOKENS = re.compile(r"\w+|[^\w\s]+")


def _substitution(pattern: str, fix: str) -> bool:
    """The fix replaces the pattern's literal tokens one for one, metavariables in place
    (`$A == $B` -> `$A === $B`, `var $$$A;` -> `let $$$A;`): the changed token is what the
    rule is about, as a name would be."""
    if _SPLIT.findall(pattern) != _SPLIT.findall(fix):
        return False
    for a, b in zip(_SPLIT.split(pattern), _SPLIT.split(fix), strict=True):
        ta, tb = _TOKENS.findall(a), _TOKENS.findall(b)
        if ta != tb and (len(ta) != len(tb) or not ta):
            return False
    return True


# The fields a site may sit in: discriminate's, and a path's head (Rust `error` in
# `error::Error`, which is the `path` of a scoped name; `super::error` has it as `name`).
_FIELDS = (*FIELDS, "path", "scope")


def _field(node: SgNode) -> str | None:
    parent = node.parent()
    if parent is None:
        return None
    r = node.range()
    for name in _FIELDS:
        f = parent.field(name)
        if f is not None and f.range() == r:
            return name
    return None


def _parent_kind(node: SgNode) -> str | None:
    parent = node.parent()
    return parent.kind() if parent is not None else None


def _head(node: SgNode) -> str | None:
    """The first token of ``node`` when it is a name (``lib`` of ``lib::*``), else None."""
    n = node
    while n.children():
        n = n.children()[0]
    text = n.text()
    return text if _TOKEN.match(text) else None


def closures(
    rule: dict[str, Any],
    fix: str,
    constraints: dict[str, Any] | None,
    positives: list[SgNode],
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Narrower forms of a weak rule (see the module doc), most closed first: (rule,
    constraints) pairs for the caller to verify; empty when the rule names something."""
    ps = _distinct(positives)
    if set(rule) == {"kind", "regex"} and rule["kind"] == "identifier":
        member = member_rename(rule["regex"], ps)
        if member is None:
            return []
        # Wave 3h (synth7): a member's own definition is in the member namespace too (jinja's
        # `parser.ignore_colon()` -> `parser.skip_colon()`: the held-out `def
        # ignore_colon(self):` of the class is the same name). Tried first; where the
        # examples keep such a method, the member uses alone.
        return [(method_rename(member), constraints), (member, constraints)]
    if not weak(rule, fix, ps, constraints):
        return []
    where: dict[str, Any] | None = None
    parents = {_parent_kind(p) for p in ps}
    parent = next(iter(parents))
    text = _pattern_text(rule) or ""
    # Wave 3k (synth23): a removal at two sites or more is closed by the shapes the sites
    # bind, not by where they happen to sit (see synth/removals.py).
    if (
        len(parents) == 1
        and parent is not None
        and "inside" not in rule
        and not (len(ps) >= 2 and removal(text, fix))
    ):
        fields = {_field(p) for p in ps}
        field = next(iter(fields))
        inner: dict[str, Any] = {"kind": parent, "stopBy": "neighbor"}
        if len(fields) == 1 and field is not None:
            inner["field"] = field
        where = {"inside": inner}
    kinds: dict[str, Any] = {}
    module = import_module(text, ps)
    if module:
        # Wave 3e: what an import is about is the module it names (structlog's `from
        # collections.abc import Sequence` gaining `Callable` is no reason to put
        # `Callable` into `from structlog.typing import …`), at one site as at many.
        pinned = {**(constraints or {}), **module}
        out0 = [(conjoin(rule, where), pinned)] if where is not None else []
        return [*out0, (rule, pinned)]
    if len(ps) < 2:
        # One site: every kind is shared; only where it sits is kept.
        return [(conjoin(rule, where), constraints)] if where is not None else []
    for name in sorted(set(_SINGLE.findall(text))):
        if constraints and name in constraints:
            continue
        bound = [p.get_match(name) for p in ps]
        if any(b is None for b in bound):
            continue
        found = {b.kind() for b in bound if b is not None}
        if len(found) == 1:
            kinds[name] = {"kind": found.pop()}
            continue
        # Kinds differ (serde's `use $A;` on `lib::*` and `io`): the heads of what the
        # sites bind are all the evidence there is (`A: ^(?:io|lib)\b`).
        heads = {_head(b) for b in bound if b is not None}
        if None not in heads and len(set(_SINGLE.findall(text))) == 1:
            words = "|".join(sorted(h for h in heads if h))
            kinds[name] = {"regex": f"^(?:{words})\\b"}
    merged = {**(constraints or {}), **kinds} if kinds else constraints
    out: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    shared, holds = shared_names(text, ps, constraints)
    if shared or holds:
        # Wave 3g: every site binds the same name — that name is what the sites have in
        # common beyond the shape (koa's `function(next){` -> `function *(next){`, two
        # middleware functions: `($A)` -> ` *($A)` made every `function(done){` of the
        # tests a generator, 35 wrong hunks). Tried first, with where the sites sit.
        named_cons: dict[str, Any] | None = {**(merged or {}), **shared} or None
        named = conjoin(rule, holds) if holds is not None else rule
        if where is not None:
            out.append((conjoin(named, where), named_cons))
        out.append((named, named_cons))
    if where is not None and kinds:
        out.append((conjoin(rule, where), merged))
    if where is not None:
        out.append((conjoin(rule, where), constraints))
    if kinds:
        out.append((rule, merged))
    return out


def member_rename(regex: str, nodes: list[SgNode]) -> dict[str, Any] | None:
    """A rename whose every site is a member name (the ``attribute`` of a Python
    ``x.attr``: an ``identifier`` like any variable there) stays in the member namespace:
    structlog's ``o.calls`` -> ``o.call_args_list`` renamed a local ``calls = …`` too."""
    if not nodes:
        return None
    for node in nodes:
        parent = node.parent()
        if node.kind() != "identifier" or parent is None or parent.kind() != "attribute":
            return None
        attr = parent.field("attribute")
        if attr is None or attr.range() != node.range():
            return None
    return {
        "kind": "identifier",
        "regex": regex,
        "inside": {"kind": "attribute", "field": "attribute", "stopBy": "neighbor"},
    }


def method_name(*around: str) -> dict[str, Any]:
    """``inside`` the name of a function defined directly in a class body (through
    ``around``: a decorator's definition)."""
    inner: dict[str, Any] = {"kind": "class_definition", "stopBy": "neighbor"}
    for kind in ("block", *around):
        inner = {"kind": kind, "stopBy": "neighbor", "inside": inner}
    return {
        "inside": {
            "kind": "function_definition",
            "field": "name",
            "stopBy": "neighbor",
            "inside": inner,
        }
    }


def method_rename(member: dict[str, Any]) -> dict[str, Any]:
    """``member`` (see :func:`member_rename`) that also renames the methods of that name
    defined in a class (decorated or not): the definition of the member the sites use."""
    rule = {k: v for k, v in member.items() if k != "inside"}
    rule["any"] = [
        {"inside": member["inside"]},
        method_name(),
        method_name("decorated_definition"),
    ]
    return rule


def nested_guard(rule: dict[str, Any], fix: str, positives: list[SgNode]) -> dict[str, Any] | None:
    """A rule kept to its sites' layout (a ``regex`` with a line break, see
    ``core._same_layout``) whose fix writes line breaks rewrites an outer multi-line node but
    not one nested in it (one pass; the nested one sits at another depth, which the pinned
    layout excludes): ky's trailing commas gave `},` on the outer object and left the inner
    `rainbow: 'rainbow'` without its comma — half an edit. The guard: not a node that holds
    a multi-line node of the same kind (its sites hold none)."""
    layout = str(rule.get("regex", ""))
    if "\n" not in fix or not positives or ("\n" not in layout and "\\n" not in layout):
        return None
    kinds = {p.kind() for p in positives}
    if len(kinds) != 1:
        return None
    guard = {"not": {"has": {"kind": kinds.pop(), "regex": "\\n", "stopBy": "end"}}}
    return conjoin(rule, guard)


def rewrapped(after: SgNode, before_text: str) -> tuple[str, str] | None:
    """The node of ``after`` (what a site became; it or one a few levels down) that holds
    the site's old text whole in a field, as (kind, field): where the rule would match its
    own output again (the ``value`` of the ``subscript`` ``t.Iterable[t.Any]``, inside an
    annotation's ``type``)."""
    level = [after]
    for _ in range(3):
        below: list[SgNode] = []
        for node in level:
            for child in node.children():
                if child.text() == before_text:
                    r = child.range()
                    for name in _FIELDS:
                        f = node.field(name)
                        if f is not None and f.range() == r:
                            return node.kind(), name
                below.append(child)
        level = below
    return None


def anchor_container(anchors: list[SgNode]) -> dict[str, Any]:
    """Where an inserted statement may go (wave 3e): ``inside`` the kind of node every
    anchor sits in (a function's ``statement_block``, a ``module``), as a fragment for the
    insertion rules; empty when the anchors sit in different kinds. A rule that inserts
    next to "the first ``const`` of its container" also matched the ``const`` of an
    ``export const`` (its container is the ``export_statement``) and wrote
    ``export console.log(…);`` — code that no longer parses (zod's debug statements)."""
    parents = {_parent_kind(a) for a in anchors}
    if len(parents) != 1:
        return {}
    parent = parents.pop()
    if parent is None:
        return {}
    return {"inside": {"kind": parent, "stopBy": "neighbor"}}


_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}
# `$$$X` closing the pattern (`f($$$X)`, `f($A, $$$X)`), and what comes before it.
_TAIL_LIST = re.compile(r"([(\[{<,])\s*\$\$\$([A-Z][A-Z0-9_]*)\s*([)\]}>])$")
_KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)")


def append_guard(rule: dict[str, Any], fix: str) -> dict[str, Any] | None:
    """A rule that appends an item to the list that ends its pattern (rich's
    ``Console($$$A)`` -> ``Console($$$A, legacy_windows=False)``, issue 26's
    ``pager($$$A)`` -> ``pager($$$A, color)``) writes broken code where that list is empty
    (``Console(, legacy_windows=False)``) or ends with a comma (``_environ={},\\n)`` ->
    ``_environ={},, legacy_windows=False``: ``$$$A`` takes the trailing comma along), and a
    keyword argument twice where the call already passes it (``Console(legacy_windows=True,
    legacy_windows=False)``). Wave 3e: such a rule leaves those calls alone — the
    matched text must not end with an empty list or a comma before the closing bracket,
    nor pass the keyword already. None when the rule does not append."""
    text = _pattern_text(rule)
    if text is None or not isinstance(rule.get("pattern"), str):
        return None
    m = _TAIL_LIST.search(text.rstrip())
    if m is None:
        return None
    before, name, close = m.group(1), m.group(2), m.group(3)
    if before != "," and _CLOSE.get(before) != close:
        return None
    # The fix keeps the list and appends after it: `$$$X, item)`.
    tail = re.search(r"\$\$\$" + name + r"\s*,([^$]*?)\s*" + re.escape(close) + r"\s*$", fix)
    if tail is None or not tail.group(1).strip():
        return None
    opener = "(" if before == "," else before
    chars = "".join(sorted({"\\" + opener, ","}))
    guards: list[dict[str, Any]] = [{"regex": f"[{chars}]\\s*\\{close}$"}]
    kw = _KEYWORD.match(tail.group(1))
    if kw is not None:
        guards.append({"regex": f"[{chars}]\\s*{kw.group(1)}\\s*=[^=]"})
    guard: dict[str, Any] = guards[0] if len(guards) == 1 else {"any": guards}
    return conjoin(rule, {"not": guard})


# Imports whose module is a field of their own (Python `from M import …`, JS/TS `import … from
# 'm'`): the field that names the module.
_IMPORT_MODULE = {"import_from_statement": "module_name", "import_statement": "source"}


def import_module(text: str, sites: list[SgNode]) -> dict[str, Any]:
    """Constraints that keep the metavariables of an import's module to the one text every
    site binds there (``{A: {regex: ^collections$}, B: {regex: ^abc$}}`` for ``from $A.$B
    import …``); empty when the sites are no such imports or name different modules."""
    modules = []
    for site in sites:
        field = _IMPORT_MODULE.get(site.kind())
        mod = site.field(field) if field is not None else None
        if mod is None:
            return {}
        modules.append(mod.range())
    out: dict[str, Any] = {}
    for name in sorted(set(_SINGLE.findall(text))):
        texts: set[str] = set()
        for site, m in zip(sites, modules, strict=True):
            bound = site.get_match(name)
            if bound is None:
                break
            b = bound.range()
            if not (m.start.index <= b.start.index and b.end.index <= m.end.index):
                break
            texts.add(bound.text())
        else:
            if len(texts) != 1:
                return {}  # the sites name different modules: the module is what varies
            out[name] = {"regex": "^" + _rx_literal(texts.pop()) + "$"}
    return out


def _rx_literal(text: str) -> str:
    """``text`` as a literal in ast-grep's (Rust) regex syntax."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)


def statement_guard(rule: dict[str, Any], fix: str, sites: list[SgNode]) -> dict[str, Any] | None:
    """A fix that ends its match with a `;` (log's `b.iter(…)` -> `b.iter(…);`, the last
    expression of a block made a statement) turns an expression into a statement, which only
    stands where a statement may: ``inside`` the kinds of node its sites sit in (a
    ``block``). Without it, `LOG_LEVEL_NAMES.iter()` in the middle of a method chain became
    `LOG_LEVEL_NAMES.iter();` followed by `.position(…)` (wave 3e). None otherwise."""
    text = _pattern_text(rule)
    if text is None or not sites or "inside" in rule:
        return None
    if not fix.rstrip().endswith(";") or text.rstrip().endswith(";"):
        return None
    parents = sorted({k for s in sites if (k := _parent_kind(s)) is not None})
    if not parents or len(parents) > 3:
        return None
    inner = {"kind": parents[0]} if len(parents) == 1 else {"any": [{"kind": k} for k in parents]}
    return conjoin(rule, {"inside": {**inner, "stopBy": "neighbor"}})


def lone_insertion(anchor: SgNode, peers: list[Any]) -> bool:
    """One inserted statement inside a function (not at a file's top level): "next to the
    first (last, every) statement of the anchor's kind" would put it into every block of
    every file (zod's debug `console.log('ASYNCPARSE');`, inserted once, went into 14
    function bodies of another file). Wave 3e: one such site is learned by its own anchor
    (its name or its text) first, the general rules only when those fail; two sites or more,
    or imports at the top, generalise as before."""
    if len(peers) > 1:
        return False
    parent = _parent_kind(anchor)
    return parent is not None and parent not in ROOTS


def names_nothing(key: str) -> bool:
    """A candidate's pattern (``key``: pattern NUL fix) holds no name outside its
    metavariables (``$A.$B``, ``$A == $B``): only punctuation and operators say what it is."""
    pattern = key.split("\0")[0]
    return "$" in pattern and not re.search(r"[A-Za-z_]", _METAVAR.sub("", pattern))


_NAME = re.compile(r"^[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)*$")


def binds_names(names: list[str], nodes: list[SgNode]) -> bool:
    """Every one of ``nodes`` binds a name (``Any``, ``t``, ``self.x``) to each of the
    metavariables ``names``: kept code told apart by which names it uses, not by values
    (gin's kept strings, `"/v1/login/"`, are values: no wider closure from them)."""
    for node in nodes:
        for name in names:
            bound = node.get_match(name)
            if bound is None or not _NAME.match(bound.text()):
                return False
    return True


def _depth_below(node: SgNode, top: SgNode) -> int | None:
    """How many levels ``node`` sits below ``top`` (None when it is not inside it)."""
    want = (top.range().start.index, top.range().end.index, top.kind())
    n: SgNode | None = node
    for depth in range(0, 8):
        if n is None:
            return None
        r = n.range()
        if (r.start.index, r.end.index, n.kind()) == want:
            return depth
        n = n.parent()
    return None


def shared_names(
    text: str, sites: list[SgNode], constraints: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Wave 3g: each metavariable of a rule that names nothing which binds one and the same
    *name* (an identifier's text) at every one of two or more distinct sites, pinned to it:
    as a constraint (``{A: {regex: ^next$}}``) for ``$A``; for ``$$$A`` (whose constraints
    ast-grep ignores) as a ``has`` of that name at the depth it sits below the match, the
    same at every site. Values (literals, calls, paths) are not names and stay open; a
    single site pins nothing (every text is shared by one site). Returns (constraints,
    rule fragment or None)."""
    if len(sites) < 2:
        return {}, None
    out: dict[str, Any] = {}
    has: list[dict[str, Any]] = []
    for name in sorted(set(_METAVAR.findall(text))):
        if constraints and name in constraints:
            continue
        multi = ("$$$" + name) in text
        texts: set[str] = set()
        shapes: set[tuple[str, int | None]] = set()
        for site in sites:
            if multi:
                nodes = [n for n in site.get_multiple_matches(name) if n.is_named()]
                bound = nodes[0] if len(nodes) == 1 else None
            else:
                bound = site.get_match(name)
            if bound is None or bound.children() or not _TOKEN.match(bound.text()):
                texts = set()
                break
            texts.add(bound.text())
            shapes.add((bound.kind(), _depth_below(bound, site)))
        if len(texts) != 1:
            continue
        shared = texts.pop()
        # Wave 3t: a constant's name (`SHERLOCK`) stands for its family, the names spelled
        # as constants: ripgrep's `&*SHERLOCK` -> `SHERLOCK` in 31 example sites was made for
        # every lazy static (`&*CODE` held out), not for one. A variable's name (`next`)
        # stays pinned: its role is what the sites share.
        regex = CONSTANT_NAME if _CONSTANT.match(shared) else "^" + _rx_literal(shared) + "$"
        if not multi:
            out[name] = {"regex": regex}
            continue
        if len(shapes) != 1:
            continue
        kind, depth = shapes.pop()
        if not depth:
            continue
        frag: dict[str, Any] = {"kind": kind, "regex": regex, "stopBy": "neighbor"}
        for _ in range(depth - 1):
            frag = {"stopBy": "neighbor", "has": frag}
        has.append({"has": frag})
    fragment: dict[str, Any] | None = None
    if has:
        fragment = has[0] if len(has) == 1 else {"all": has}
    return out, fragment


def _escaped_strings(node: SgNode) -> list[SgNode]:
    """The outermost string literals under ``node`` (itself included) that hold a backslash:
    ast-grep compares such a literal by its child nodes (the escapes) only, not by the text
    between them."""
    out: list[SgNode] = []
    for n in [node, *node.find_all(regex=r"\\")]:
        if "string" not in n.kind() or "$" in n.text() or "\\" not in n.text():
            continue
        r = n.range()
        if any(
            o.range().start.index <= r.start.index and r.end.index <= o.range().end.index
            for o in out
        ):
            continue
        out.append(n)
    return out


def literal_strings(rule: dict[str, Any], lang: str) -> dict[str, Any] | None:
    """Wave 3k (synth22): ``rule`` with each string literal of its pattern that holds an
    escape sequence pinned to its text, or None when it has none.

    ast-grep matches a string literal with child nodes (``\\*``, ``\\n``) by those children
    alone: requests' docstring ``\"\"\"Returns the json-encoded content … :param \\*\\*kwargs:
    …\"\"\"`` -> ``r\"\"\"…\"\"\"`` matched every docstring with the same two escapes and wrote
    the example's docstring over them (14 wrong hunks in one commit). A literal in a pattern
    means that text: the whole match is pinned by ``regex`` where the pattern is the
    literal, else the rule ``has`` it."""
    from ast_grep_py import SgRoot

    pattern = rule.get("pattern")
    if not isinstance(pattern, str) or "\\" not in pattern:
        return None
    try:
        root = SgRoot(pattern, lang).root()
    except Exception:
        return None
    strings = _escaped_strings(root)
    if not strings:
        return None
    out = rule
    for s in strings:
        rx = "^" + _rx_literal(s.text()) + "$"
        if s.text() == pattern.strip():
            out = conjoin(out, {"regex": rx})
        else:
            out = conjoin(out, {"has": {"kind": s.kind(), "regex": rx, "stopBy": "end"}})
    return out
