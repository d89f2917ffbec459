"""The smallest discriminating constraint: from the nodes a too general rule rewrites
correctly (positives) and wrongly (negatives: code the examples keep unchanged), the
contexts that tell them apart, as ast-grep rule fragments to conjoin with the rule.

The examples' unchanged code of the same shape is what makes a rule too general; instead of
lifting the pattern to an enclosing node (dragging that node's code into the rule) or giving
up, ask where the positives sit that the negatives do not, or the other way round:

- the parent's kind and field (``inside: {kind: call_expression, field: arguments}``), the
  grandparent's kind, in that order: local context first;
- ``not`` a parent / grandparent kind every negative has and no positive (a Rust
  ``#[...]`` kept on a decorated class: ``not: {inside: {inside: {kind:
  decorated_definition}}}``);
- the position among the items of a list (``nthChild: 2``, ``nthChild: {position: 1,
  reverse: true}``: the last type argument), only where the parent is a list;
- an enclosing kind every positive has (``inside: {kind: K, stopBy: end}``), then ``not`` an
  enclosing kind only negatives have (``_Result`` kept in the import only: ``not: {inside:
  {kind: import_from_statement, stopBy: end}}``);
- the names of the enclosing definitions (``inside: {kind: class_declaration, stopBy: end,
  has: {field: name, regex: ^(?:ZodString|ZodNumber)$}}``): the most specific, when the
  commit changed some functions or classes and kept the others;
- what the enclosing definition holds (``inside: {kind: decorated_definition, has: {kind:
  yield}}``: a decorator changed on generators only; for an inserted statement also a name
  it uses), wave 3d: only kinds that say what a definition does, never a name list.

Positive contexts (where every positive sits) come before negative ones (where no negative
sits), at any distance: where the examples cannot decide, a rule that rewrites less is
preferred over one that rewrites code the examples never showed (precision over recall).
Every fragment is checked here on the nodes (it keeps the seed and excludes every
negative); the caller still verifies the conjoined rule on the examples.
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.abstract import DEFINITION_KINDS
from oopav.synth.annotations import item_contexts, own_features
from oopav.synth.sites import LIST_KINDS

# Fields worth naming in a parent context (the first that holds the node exactly).
FIELDS = (
    "function",
    "arguments",
    "argument",
    "object",
    "property",
    "attribute",
    "field",
    "left",
    "right",
    "value",
    "condition",
    "type",
    "return_type",
    "name",
    "key",
    "body",
    "operand",
    "subject",
    "superclass",
    "superclasses",
    "trait",
    "index",
    "alternative",
    "consequence",
)
# Roots: every node is inside them, so they discriminate nothing.
ROOTS = frozenset({"module", "program", "source_file", "translation_unit"})
# Definitions that have a name: the enclosing ones of a site say which function or class the
# commit changed.
NAMED_DEFINITIONS = (
    *DEFINITION_KINDS,
    "impl_item",
    "struct_item",
    "trait_item",
    "type_declaration",
)
MAX_CONSTRAINTS = 5
# A rule narrowed by kept code is closed by the parent kinds its sites sit in: at most so many.
MAX_CLOSURE_KINDS = 3
# How far up (levels, characters) an enclosing node is searched for what it holds.
HOLDING_LEVELS = 6
HOLDING_CHARS = 4000
NAME_RANK = 1000  # a name used there ranks after every kind
# What a definition holds says what it does (a generator has a `yield`); what a smaller node
# holds (a parameter list's `attribute`) is mostly chance.
HOLDERS = frozenset(
    {
        *DEFINITION_KINDS,
        "decorated_definition",
        "function_expression",
        "arrow_function",
        "generator_function",
        "generator_function_declaration",
        "method_declaration",
        "func_literal",
        "closure_expression",
        "impl_item",
        "lambda",
    }
)
# What a definition holds that says what it does: a generator yields, an async function
# awaits, a function raises, guards, defers. Other kinds a definition happens to hold (a
# subscript, a parameter's attribute) are chance: never a context.
MARKERS = frozenset(
    {
        "yield",
        "yield_expression",
        "yield_statement",
        "await",
        "await_expression",
        "raise_statement",
        "throw_statement",
        "try_statement",
        "try_expression",
        "with_statement",
        "defer_statement",
        "go_statement",
        "unsafe_block",
        "assert_statement",
        "global_statement",
        "nonlocal_statement",
    }
)


def _field(node: SgNode) -> str | None:
    parent = node.parent()
    if parent is None:
        return None
    r = node.range()
    for name in FIELDS:
        f = parent.field(name)
        if f is not None and f.range() == r:
            return name
    return None


def _up(node: SgNode, depth: int) -> SgNode | None:
    n: SgNode | None = node
    for _ in range(depth):
        n = n.parent() if n is not None else None
    return n


def _kind_at(node: SgNode, depth: int) -> str | None:
    n = _up(node, depth)
    return n.kind() if n is not None else None


def _enclosing(node: SgNode) -> set[str]:
    return {a.kind() for a in node.ancestors() if a.kind() not in ROOTS}


def _def_name(node: SgNode, kind: str, field: str | None = None) -> str | None:
    """The name of the innermost enclosing ``kind`` (a definition), or None; ``field``: the
    field that names it (an `impl`'s ``trait``)."""
    for a in node.ancestors():
        if a.kind() == kind:
            name = a.field(field) if field else a.field("name")
            if name is None and kind == "impl_item" and not field:
                name = a.field("type")
            return name.text() if name is not None else None
    return None


def _at_depth(depth: int, inner: dict[str, Any]) -> dict[str, Any]:
    """``inside`` the ancestor ``depth`` levels up (``stopBy: neighbor`` at each level)."""
    rule = {**inner, "stopBy": "neighbor"}
    for _ in range(depth - 1):
        rule = {"stopBy": "neighbor", "inside": rule}
    return {"inside": rule}


def _kinds(kinds: list[str]) -> dict[str, Any]:
    return {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}


def _cover(negs: list[set[str]], banned: set[str]) -> list[str] | None:
    """A few kinds, none in ``banned``, such that every negative's set holds one (greedy)."""
    left = list(range(len(negs)))
    chosen: list[str] = []
    while left:
        counts: dict[str, int] = {}
        for i in left:
            for k in negs[i] - banned:
                counts[k] = counts.get(k, 0) + 1
        if not counts or len(chosen) >= 3:
            return None
        best = max(sorted(counts), key=lambda k: counts[k])
        chosen.append(best)
        left = [i for i in left if best not in negs[i]]
    return chosen


# JS/TS declarations and how a name is assigned again (the assigned node's field).
_DECLARATIONS = frozenset({"lexical_declaration", "variable_declaration"})
_REASSIGNED = (
    ("assignment_expression", "left"),
    ("augmented_assignment_expression", "left"),
    ("update_expression", "argument"),
)


def _declared(node: SgNode) -> list[str] | None:
    """The plain names a JS/TS declaration declares (None: not one, or a destructuring)."""
    if node.kind() not in _DECLARATIONS:
        return None
    names = []
    for d in node.children():
        if d.kind() != "variable_declarator":
            continue
        name = d.field("name")
        if name is None or name.kind() != "identifier":
            return None
        names.append(name.text())
    return names or None


def _reassigned(node: SgNode, names: list[str]) -> bool:
    """One of ``names`` is assigned again somewhere in ``node``'s file."""
    root = node.get_root().root()
    for kind, field in _REASSIGNED:
        for hit in root.find_all(kind=kind):
            target = hit.field(field)
            if target is not None and target.text() in names:
                return True
    return False


# The metavariable the "never assigned again" fragment binds the declared name to.
DECLARED = "$DECLARED"


# The metavariable the "imports types only" fragment binds each imported name to.
IMPORTED = "$IMPORTED"


def never_reassigned_fragment(fragment: dict[str, Any]) -> bool:
    """``fragment`` is :func:`_never_reassigned`'s: a property of the declaration itself (it
    names nothing, and its `not` excludes no kept value)."""
    return DECLARED in repr(fragment)


# Where an ``identifier`` is no value: in an import, or a type query (`typeof x` in a type).
_NOT_VALUE = ("import_statement", "type_query")


_TYPED = re.compile(r"^import\s+type\b")


def type_import(before: str, after: str, lang: str) -> dict[str, Any] | None:
    """The rule for ``import {…} from …`` -> ``import type {…} from …`` (``before`` and
    ``after``: the site's texts) in TypeScript: any import whose names its file uses as types
    only — the reason for the change, which the compiler checks (a name imported with `import
    type` cannot be used as a value), so it holds without a kept import to tell it from."""
    if lang not in ("typescript", "tsx") or _TYPED.match(before):
        return None
    if not before.startswith("import ") or after != "import type " + before[len("import ") :]:
        return None
    return {"pattern": "import $A from $B", "kind": "import_statement", **types_only_fragment()}


def types_only_fragment() -> dict[str, Any]:
    """No name the import binds (an identifier of its import clause) is used as a value in
    its file (an identifier outside imports and type queries), and it is no `import type`
    already."""
    use = {
        "kind": "identifier",
        "pattern": IMPORTED,
        "stopBy": "end",
        "not": {"inside": {"any": [{"kind": k} for k in _NOT_VALUE], "stopBy": "end"}},
    }
    return {
        "not": {
            "any": [
                # already `import type` (the rule's own output)
                {"regex": _TYPED.pattern},
                {
                    "has": {
                        "kind": "identifier",
                        "pattern": IMPORTED,
                        "stopBy": "end",
                        "all": [
                            {"inside": {"kind": "import_clause", "stopBy": "end"}},
                            {"inside": {"kind": "program", "stopBy": "end", "has": use}},
                        ],
                    }
                },
            ]
        }
    }


def _never_reassigned(positives: list[SgNode], negatives: list[SgNode]) -> dict[str, Any] | None:
    """A fragment: the declaration's name is never assigned again in its file — when that
    holds for every positive and for no negative (a declaration of one name each)."""
    if not negatives:
        return None
    for group, want in ((positives, False), (negatives, True)):
        for n in group:
            names = _declared(n)
            if names is None or len(names) != 1 or _reassigned(n, names) != want:
                return None
    again = [
        {"kind": kind, "has": {"field": field, "pattern": DECLARED}} for kind, field in _REASSIGNED
    ]
    return {
        "all": [
            {
                "has": {
                    "kind": "variable_declarator",
                    "stopBy": "neighbor",
                    "all": [
                        {"has": {"field": "name", "kind": "identifier", "pattern": DECLARED}},
                        # with a value: `let x;` made `const x;` would not parse
                        {"has": {"field": "value", "pattern": "$DECLVALUE"}},
                    ],
                }
            },
            # one name declared (`let keys = […], i = 0` keeps its `let` for the `i`)
            {"not": {"has": {"kind": "variable_declarator", "nthChild": 2}}},
            {
                "not": {
                    "inside": {
                        "kind": "program",
                        "stopBy": "end",
                        "has": {"stopBy": "end", "any": again},
                    }
                }
            },
        ]
    }


# Leaf kinds that name something (a rename's sites), and the import statements per grammar.
_NAMES = frozenset({"identifier", "type_identifier", "property_identifier", "field_identifier"})
_IMPORT_KINDS = frozenset(
    {
        "import_statement",
        "import_from_statement",
        "import_declaration",
        "import_spec",
        "use_declaration",
        "future_import_statement",
    }
)


def _in_import(node: SgNode) -> bool:
    return any(a.kind() in _IMPORT_KINDS for a in node.ancestors())


def _import_kinds(node: SgNode) -> list[str]:
    """The import kinds of ``node``'s grammar (those its file could hold)."""
    root = node.get_root().root()
    kinds = []
    for k in sorted(_IMPORT_KINDS):
        try:
            root.find(kind=k)
        except Exception:
            continue
        kinds.append(k)
    return kinds


def constraints(
    seed: SgNode, positives: list[SgNode], negatives: list[SgNode], hint: str = ""
) -> list[dict[str, Any]]:
    """Rule fragments (to conjoin with the rule) that hold for ``seed`` and every positive and
    for no negative, most local and most specific first (see the module doc)."""
    if not negatives:
        return []
    pos = [seed, *positives]  # the seed twice is harmless
    out: list[dict[str, Any]] = []

    def add(fragment: dict[str, Any]) -> None:
        if fragment not in out:
            out.append(fragment)

    # The name a literal value is bound to (wave 3i): cobra's `var EnablePrefixMatching =
    # false` -> `= defaultPrefixMatching`, the `false`s of `return`s kept: the value is that
    # variable's, wherever it is assigned (`EnablePrefixMatching = false` in a test), not
    # every `var X = false` a grandparent kind would reach. First in the list; it names
    # something (`has … regex`), so the caller ranks it with the names, after the kinds
    # (`core._contexts` offers it before the parent's kind, where the site is lifted).
    bound = _bound_name(seed, pos, negatives)
    if bound is not None:
        add(bound)
    # Wave 3r: a declaration whose name is never assigned again, where the kept ones are
    # (`let` -> `const`, ESLint's prefer-const: yargs 996329ba kept `let callCount = 0`,
    # incremented below).
    never = _never_reassigned(pos, negatives)
    if never is not None:
        add(never)
    # Wave 3t: every kept one is in an import, no site is (h3 632952b4 renames `WebEvent` in
    # code and keeps its import, changed otherwise): "not in an import" says why, where the
    # parent kinds below say only where the few sites happen to sit (`new WebEvent(…)` and
    # `x as WebEvent`, each in a `const`: the held-out `return new WebEvent(…)` got nothing).
    if seed.kind() in _NAMES and all(_in_import(n) for n in negatives):
        if not any(_in_import(p) for p in pos):
            add(
                {
                    "not": {
                        "inside": {
                            "any": [{"kind": k} for k in _import_kinds(seed)],
                            "stopBy": "end",
                        }
                    }
                }
            )
    # Wave 3u: an attribute's context is the item it annotates (its kind, what it is), not
    # the parent every attribute of the file shares; its name with the other names below.
    items, item_names = item_contexts(seed, positives, negatives)
    for fragment in items:
        add(fragment)
    negative: list[dict[str, Any]] = []
    for depth in (1, 2):
        kind = _kind_at(seed, depth)
        if kind is None:
            continue
        # Positive: every positive sits there (in that field, at depth 1), no negative does.
        if depth == 1:
            field = _field(seed)
            if (
                field is not None
                and all(_kind_at(p, 1) == kind and _field(p) == field for p in pos)
                and not any(_kind_at(n, 1) == kind and _field(n) == field for n in negatives)
            ):
                add(_at_depth(1, {"kind": kind, "field": field}))
        pos_kinds = {_kind_at(p, depth) for p in pos}
        if (
            kind not in ROOTS
            and pos_kinds == {kind}
            and not any(_kind_at(n, depth) == kind for n in negatives)
        ):
            add(_at_depth(depth, {"kind": kind}))
        # Negative: kinds at that depth that only negatives have.
        neg_sets = [{k} if (k := _kind_at(n, depth)) is not None else set() for n in negatives]
        cover = _cover(neg_sets, {k for k in pos_kinds if k is not None} | ROOTS)
        if cover:
            negative.append({"not": _at_depth(depth, _kinds(cover))})
    # The position in a list (the Nth argument, the last type argument): only where the
    # parent is a list, where a position means something.
    parent = seed.parent()
    if parent is not None and parent.kind() in LIST_KINDS:
        for reverse in (False, True):
            at = _position(seed, reverse)
            if all(_position(p, reverse) == at for p in pos) and not any(
                _position(n, reverse) == at for n in negatives
            ):
                add({"nthChild": {"position": at, "reverse": True} if reverse else at})
                break
    # Anywhere above: the innermost kind every positive sits in and no negative does.
    pos_sets = [_enclosing(p) for p in pos]
    common = set.intersection(*pos_sets)
    for anc in seed.ancestors():
        kind = anc.kind()
        if kind in common and not any(kind in _enclosing(n) for n in negatives):
            add({"inside": {"kind": kind, "stopBy": "end"}})
            break
    # Where the examples do not go: after every context they do (precision first).
    neg_sets = [_enclosing(n) for n in negatives]
    cover = _cover(neg_sets, set.union(*pos_sets))
    if cover:
        negative.append({"not": {"inside": {**_kinds(cover), "stopBy": "end"}}})
    # What the definition itself is (wave 3k, synth20): public, a method, in a trait's
    # impl, carrying an attribute, returning nothing — after the positive contexts, before
    # the negative ones and the names (an attribute or annotation added to some
    # definitions of a kind, see synth/annotations.py).
    for fragment in own_features(seed, positives, negatives):
        add(fragment)
    for fragment in negative:
        add(fragment)
    # The enclosing definitions' names (innermost kinds first): where the positives are, or
    # where the negatives are — whichever the examples show fewer of (a commit that changed
    # a few classes, or one that changed all but a few places).
    # Precision first: the kept side is named only when the examples changed clearly more
    # than they kept (at least twice as many sites; the seed is among the positives once).
    # Wave 3k (synth22): and only when the changed sites read as a sweep — in two example
    # files or more, or in three definitions or more. attrs' `attr.ib` -> `attr.field` made
    # in two test functions of one file and kept in a third was "every function but the
    # kept one", which rewrote 97 `attr.ib`s of another test file; two changed functions
    # against one kept do not say which side is the exception.
    named = [_def_names(pos, negatives, False), _def_names(negatives, pos, True)]
    if len(_distinct(negatives)) * 2 <= len(_distinct(pos)) and _sweep(pos, named[1]):
        named.reverse()
    for by_name in named:
        if by_name is not None:
            add(by_name)
    if item_names is not None:
        add(item_names)
    kept = out[:MAX_CONSTRAINTS]
    # What an enclosing node holds (wave 3d), last: pluggy's `@hookimpl` gained
    # `(wrapper=True)` on the generator functions only — the decorated definition `has` a
    # `yield`, which no name of a definition says.
    holds = _holding(seed, pos, negatives, hint)
    if holds is not None and holds not in kept:
        kept.append(holds)
    # A sibling (wave 3d, synth-exact), last: werkzeug's strings made `b'…'` only where
    # they are compared with `response.data` — the node every positive sits in also holds
    # a child of that exact text, no negative's does.
    beside = _sibling(seed, pos, negatives)
    if beside is None:
        # Wave 3j (synth15): the sibling's shape where its text differs among the sites or
        # is no bare name (`req.form['test']`, `data.form['foo']`: ``$X.form[<str>]``).
        beside = _shaped_sibling(seed, pos, negatives)
    if beside is not None and beside not in kept:
        kept.append(beside)
    # What the enclosing definition's signature lacks or has (wave 3f): Rust's
    # `self.map.clear()` -> `self.map.clear();` made at the end of every function that
    # returns nothing, kept where a `-> T` is declared — the return type, which no kind or
    # name says.
    sig = signature(pos, negatives)
    if sig is not None and sig not in kept:
        kept.append(sig)
    return kept


# Definitions whose signature may declare what they return, and the field that holds it.
RETURNS = {
    "function_item": "return_type",
    "function_definition": "return_type",
    "function_declaration": "return_type",  # Go's is `result` (see _return_field)
    "method_definition": "return_type",
    "method_declaration": "result",
    "arrow_function": "return_type",
    "function_signature_item": "return_type",
}


def not_called(positives: list[SgNode], negatives: list[SgNode]) -> dict[str, Any] | None:
    """Wave 3h (synth7): ``not`` being the head of a call, where every negative is one and
    no positive is — the kept code is the same shape *called* (gin's `c.Error(err)` kept,
    `c.Errors[n].Error` -> `.Err`, a field). Not being called is what tells them apart,
    before where the few sites happen to sit (`inside: expression_list` of a `return`,
    which no held-out `assert.Equal(t, x.Error, …)` has)."""
    if not negatives or not positives:
        return None
    heads = {(_kind_at(n, 1), _field(n)) for n in negatives}
    if len(heads) != 1:
        return None
    kind, field = next(iter(heads))
    if kind is None or field != "function":
        return None
    if any((_kind_at(p, 1), _field(p)) == (kind, field) for p in positives):
        return None
    return {"not": {"inside": {"kind": kind, "field": "function", "stopBy": "neighbor"}}}


def _return_field(node: SgNode) -> str:
    kind = node.kind()
    if kind == "function_declaration" and node.text().startswith("func"):
        return "result"  # Go
    return RETURNS[kind]


# Functions without a name, per grammar: a tail expression there is the closure's value,
# whatever the definition around it declares.
RUST_CLOSURES = ("closure_expression",)
JS_CLOSURES = ("arrow_function", "function_expression")


def _stops(kind: str, field: str) -> list[str]:
    if kind == "function_item" or kind == "function_signature_item":
        closures: tuple[str, ...] = RUST_CLOSURES
    elif kind == "function_definition":
        closures = ("lambda",)
    elif field == "result":
        closures = ("func_literal",)
    else:
        closures = JS_CLOSURES
    return [kind, *(k for k in closures if k != kind)]


def _returns(node: SgNode, kind: str, field: str) -> bool | None:
    """Whether the innermost function around ``node`` (a ``kind``) declares ``field``; None
    when the innermost function is another kind (a closure). What the rule ``inside: {kind,
    stopBy: {any: [kind, closures]}, [not:] has: {field}}`` sees."""
    stops = _stops(kind, field)
    for a in node.ancestors():
        if a.kind() in stops:
            return a.field(field) is not None if a.kind() == kind else None
    return None


def signature(
    pos: list[SgNode], negatives: list[SgNode], closing: bool = False
) -> dict[str, Any] | None:
    """``inside`` the enclosing definition that declares no return type (or one), when that
    holds at every positive and at no negative: the innermost definition kind that returns
    around the first positive decides the kind and field. ``closing``: what every positive
    shares, with or without negatives (a closure, precision first)."""
    if not pos or not (negatives or closing):
        return None
    anc = next((a for a in pos[0].ancestors() if a.kind() in RETURNS), None)
    if anc is None:
        return None
    kind, field = anc.kind(), _return_field(anc)
    declared = anc.field(field) is not None
    if not all(_returns(p, kind, field) is declared for p in pos):
        return None
    if any(_returns(n, kind, field) is declared for n in negatives):
        return None
    has = {"has": {"field": field, "regex": "\\S"}}
    # The innermost function only (ast-grep's `stopBy` rule is inclusive): a tail of a
    # nested `fn visit_pair(…) -> Result<…>` inside a test function is that function's.
    stop = _stops(kind, field)
    return {
        "inside": {
            "kind": kind,
            "stopBy": {"kind": kind} if len(stop) == 1 else {"any": [{"kind": k} for k in stop]},
            **(has if declared else {"not": has}),
        }
    }


def _sibling(seed: SgNode, pos: list[SgNode], negatives: list[SgNode]) -> dict[str, Any] | None:
    """``inside`` the parent, which ``has`` a named child of the same kind and exact text at
    every positive and at no negative (the first such sibling of the seed's that is a name
    or a dotted name)."""

    def siblings(node: SgNode) -> set[tuple[str, str]]:
        parent = node.parent()
        if parent is None or parent.kind() in ROOTS:
            return set()
        r = node.range()
        return {
            (c.kind(), c.text())
            for c in parent.children()
            if c.is_named()
            and c.range() != r
            and c.kind() not in _COMMENTS
            and len(c.text()) <= SIBLING_CHARS
        }

    common = siblings(seed)
    for p in pos:
        common &= siblings(p)
        if not common:
            return None
    for kind, text in sorted(common):
        if not _NAMED_REF.match(text) or any((kind, text) in siblings(n) for n in negatives):
            continue
        has = {"kind": kind, "regex": "^" + _escape(text) + "$"}
        return {"inside": {"has": has, "stopBy": "neighbor"}}
    return None


def _shape(text: str) -> str | None:
    """A regex for the shape of a member access ``text`` (``req.form['test']``): the
    receiver (the leading name before a ``.``) any name, string and number literals any
    literal, the member names kept — what the sibling names, not which local variable or
    key. None unless ``text`` is such an access on one line that names a member."""
    if "\n" in text or len(text) > SIBLING_CHARS:
        return None
    m = _RECEIVER.match(text)
    if m is None:
        return None
    out = [r"[A-Za-z_]\w*"]
    members = 0
    for tok in _SHAPE_TOKENS.finditer(text, m.end(1)):
        t = tok.group(0)
        if tok.lastgroup == "str":
            out.append(_ANY_STRING)
        elif tok.lastgroup == "num":
            out.append(r"\d[\w.]*")
        elif tok.lastgroup == "ws":
            out.append(r"\s*")
        else:
            if tok.lastgroup == "name":
                members += 1
            out.append(re.escape(t))
    if not members:
        return None
    return "^" + "".join(out) + "$"


_RECEIVER = re.compile(r"([A-Za-z_]\w*)\s*(?:\.|->)")
_SHAPE_TOKENS = re.compile(
    r"""(?P<str>[bBrRuUfF]{0,2}(?:"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))"""
    r"|(?P<num>\d[\w.]*)|(?P<name>[A-Za-z_]\w*)|(?P<ws>\s+)|(?P<punct>.)"
)
_ANY_STRING = r"""[bBrRuUfF]{0,2}(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')"""


def _shaped_sibling(
    seed: SgNode, pos: list[SgNode], negatives: list[SgNode]
) -> dict[str, Any] | None:
    """As :func:`_sibling`, by the sibling's shape (see :func:`_shape`) and the parent's
    kind: werkzeug's strings made `u'…'` where they are compared with a form value
    (`assert_strict_equal(req.form['test'], …)`, `(data.form['foo'], …)`), kept beside
    `req.method` and in `b.form['test'] = '…'` — every positive's parent is of one kind and
    has a sibling of one kind and shape, no negative's parent of that kind has one."""

    def siblings(node: SgNode) -> list[SgNode]:
        parent = node.parent()
        if parent is None or parent.kind() in ROOTS:
            return []
        r = node.range()
        return [
            c
            for c in parent.children()
            if c.is_named() and c.range() != r and c.kind() not in _COMMENTS
        ]

    parent = seed.parent()
    if parent is None or any(_kind_at(p, 1) != parent.kind() for p in pos):
        return None
    shapes = {(c.kind(), x) for c in siblings(seed) if (x := _shape(c.text())) is not None}
    for p in pos:
        shapes &= {(c.kind(), x) for c in siblings(p) if (x := _shape(c.text())) is not None}
        if not shapes:
            return None
    # The parent's kind too: `b.form['test'] = 'normal value'` is an assignment beside it.
    others = [n for n in negatives if _kind_at(n, 1) == parent.kind()]
    for kind, regex in sorted(shapes):
        rx = re.compile(regex)
        if any(c.kind() == kind and rx.match(c.text()) for n in others for c in siblings(n)):
            continue
        has = {"kind": kind, "regex": regex}
        return {"inside": {"kind": parent.kind(), "has": has, "stopBy": "neighbor"}}
    return None


# A sibling that is a context names something (`response.data`, `self.x`); a literal
# value beside the site (`{retries: 2}`) is which value, not where.
_NAMED_REF = re.compile(r"^[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)*$")
# A sibling longer than this is code, not a context.
SIBLING_CHARS = 80
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})


def _descendant_kinds(node: SgNode, names: frozenset[str] = frozenset()) -> dict[str, int]:
    """The :data:`MARKERS` below ``node`` (not itself), each with the fewest named children
    a node of that kind has there (an atomic marker such as `yield` has none); and the
    names of ``names`` used there, as ``kind=name`` ranked after every kind."""
    out: dict[str, int] = {}
    stack = list(node.children())
    while stack:
        n = stack.pop()
        kids = n.children()
        if n.is_named() and n.kind() in MARKERS:
            k = n.kind()
            named = sum(1 for c in kids if c.is_named())
            out[k] = min(out.get(k, named), named)
        elif not kids and n.kind().endswith("identifier") and n.text() in names:
            out[f"{n.kind()}={n.text()}"] = NAME_RANK
        stack.extend(kids)
    return out


def _holding(
    seed: SgNode, pos: list[SgNode], negatives: list[SgNode], hint: str = ""
) -> dict[str, Any] | None:
    """``inside`` the enclosing node a few levels up (at most the definition the site is
    in), at the same depth for every positive, when at every positive it holds a kind that
    it never holds at a negative (a negative with another kind there is excluded anyway):
    ``inside: {kind: decorated_definition, has: {kind: yield, stopBy: end}}`` two levels
    up. Among several such kinds the most atomic (fewest named children: `yield`, not the
    parentheses around it), then by name. The exact depth, not ``stopBy: end``: a kept
    method's decorator sits inside a test function that holds a `yield` elsewhere. A name the
    rule's output uses (``hint``: the fix) counts too, after the kinds: ky's `await
    server.close();` added at the end of the tests that have a `server`."""
    names = frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", hint))
    for depth, anc in enumerate(seed.ancestors(), 1):
        if depth > HOLDING_LEVELS or anc.kind() in ROOTS:
            return None
        kind = anc.kind()
        if anc.range().end.index - anc.range().start.index > HOLDING_CHARS:
            return None
        if kind not in HOLDERS:
            continue  # what a parameter list or an expression holds is no reason
        encl = [_up(p, depth) for p in pos]
        common: dict[str, int] | None = None
        for e in encl:
            if e is None or e.kind() != kind:
                common = None
                break
            kinds = _descendant_kinds(e, names)
            common = (
                kinds
                if common is None
                else {k: min(v, kinds[k]) for k, v in common.items() if k in kinds}
            )
        for n in negatives:
            if not common:
                break
            e = _up(n, depth)
            if e is not None and e.kind() == kind:
                seen = _descendant_kinds(e, names)
                common = {k: v for k, v in common.items() if k not in seen}
        if common:
            fewest = common
            marker = min(sorted(fewest), key=lambda k: fewest[k])
            mkind, _, name = marker.partition("=")
            has: dict[str, Any] = {"kind": mkind, "stopBy": "end"}
            if name:
                has["regex"] = "^" + re.escape(name) + "$"
            return _at_depth(depth, {"kind": kind, "has": has})
        parent = anc.parent()
        if kind == "decorated_definition" or (
            kind in NAMED_DEFINITIONS
            and (parent is None or parent.kind() != "decorated_definition")
        ):
            return None  # no further than the definition the site is in
    return None


# Nodes that bind a value to a name (a declaration, an assignment, a keyword argument, a
# key), per grammar, with the field that holds the name; the value is a later child.
# Grouped by grammar: a variable declared in one and assigned in another (Go's `var X =
# false` and `X = false`) is the same name.
BINDER_GROUPS = (
    {
        "var_spec": "name",
        "const_spec": "name",
        "assignment_statement": "left",
        "short_var_declaration": "left",
        "keyed_element": "key",
    },
    {"assignment": "left", "keyword_argument": "name", "pair": "key"},
    {"variable_declarator": "name", "assignment_expression": "left", "pair": "key"},
    {"let_declaration": "pattern", "assignment_expression": "left", "field_initializer": "field"},
)
BINDERS = {k: v for group in BINDER_GROUPS for k, v in group.items()}
# A node with one named child that stands for it in a binder (Go's `expression_list` of one
# value, `literal_element`).
VALUE_WRAPPERS = frozenset({"expression_list", "literal_element"})
LITERALS = frozenset(
    {
        "true",
        "false",
        "nil",
        "none",
        "null",
        "undefined",
        "number",
        "integer",
        "float",
        "int_literal",
        "float_literal",
        "integer_literal",
        "boolean_literal",
        "string",
        "string_literal",
        "interpreted_string_literal",
        "raw_string_literal",
        "char_literal",
        "rune_literal",
    }
)


def _binding(node: SgNode) -> tuple[str | None, str, str] | None:
    """(the wrapper kind or None, the binder kind, the name) when ``node`` is the value a
    binder gives a name."""
    value, parent = node, node.parent()
    wrapper = None
    if (
        parent is not None
        and parent.kind() in VALUE_WRAPPERS
        and sum(1 for c in parent.children() if c.is_named()) == 1
    ):
        wrapper, value, parent = parent.kind(), parent, parent.parent()
    if parent is None or parent.kind() not in BINDERS:
        return None
    target = parent.field(BINDERS[parent.kind()])
    if target is None or target.range().end.index > value.range().start.index:
        return None  # the node is the name itself, or before it
    text = target.text()
    return (wrapper, parent.kind(), text) if _NAMED_REF.match(text) else None


def bound_context(node: SgNode) -> dict[str, Any] | None:
    """Wave 3i: where a literal is the value bound to a name, the ``inside`` rule (with
    its ``stopBy``) that keeps a rule to that name's values — in every binder of the
    grammar (cobra's `var EnablePrefixMatching = false` and, in a test,
    `EnablePrefixMatching = false`), not in every binder of that kind (`var X = false` is
    another variable's). Only for a literal (a number, a string, `false`): what a literal
    means is the name it is given to; a call or a name has its own. None elsewhere."""
    if node.kind() not in LITERALS:
        return None
    at = _binding(node)
    if at is None:
        return None
    wrapper, kind, name = at
    regex = "^" + _escape(name) + "$"
    binders = {k: f for group in BINDER_GROUPS if kind in group for k, f in sorted(group.items())}
    ctx: dict[str, Any] = {
        "any": [{"kind": k, "has": {"field": f, "regex": regex}} for k, f in binders.items()],
        "stopBy": "neighbor",
    }
    if wrapper is not None:
        ctx = {"kind": wrapper, "stopBy": "neighbor", "inside": ctx}
    return ctx


def _bound_name(seed: SgNode, pos: list[SgNode], negatives: list[SgNode]) -> dict[str, Any] | None:
    """``inside`` the binders of the name every positive literal is bound to (see
    :func:`bound_context`), when no negative is bound to that name."""
    ctx = bound_context(seed)
    if ctx is None:
        return None
    name = _binding(seed)[2]  # type: ignore[index]
    if any((b := _binding(p)) is None or b[2] != name for p in pos):
        return None
    if any((b := _binding(n)) is not None and b[2] == name for n in negatives):
        return None
    return {"inside": ctx}


def _sweep(pos: list[SgNode], kept: dict[str, Any] | None) -> bool:
    """The changed sites span two files or more, or three names or more of the definitions
    ``kept`` (a `not inside` of the kept definitions' names) keeps off."""
    if kept is None:
        return False
    if len({id(p.get_root()) for p in pos}) >= 2:
        return True
    kind = kept["not"]["inside"]["kind"]
    return len({_def_name(p, kind) for p in pos}) >= 3


def _distinct(nodes: list[SgNode]) -> list[SgNode]:
    seen: set[tuple[int, int]] = set()
    out = []
    for n in nodes:
        r = n.range()
        if (r.start.index, r.end.index) not in seen:
            seen.add((r.start.index, r.end.index))
            out.append(n)
    return out


def _position(node: SgNode, reverse: bool) -> int:
    """1-based position among the named siblings (from the end when ``reverse``)."""
    parent = node.parent()
    if parent is None:
        return 0
    named = [c.range() for c in parent.children() if c.is_named()]
    if reverse:
        named.reverse()
    r = node.range()
    return next((i for i, x in enumerate(named, 1) if x == r), 0)


# Members named by their ``name`` field, tried after the definitions (wave 3h synth9): ky's
# `get: (url…) => ResponsePromise` changed on every member of an interface but `head:` — the
# member's name is all that tells the kept copy apart.
NAMED_MEMBERS = ("property_signature", "method_signature", "public_field_definition")


def _def_names(these: list[SgNode], others: list[SgNode], negate: bool) -> dict[str, Any] | None:
    """``inside`` (``not inside``) the definitions that enclose every one of ``these`` and none
    of ``others``, by kind and name: the innermost kind that tells them apart."""
    # Members only by the names kept (``negate``): the changed members' names are a list of
    # instances (`get`, `post`, …) that stops short of the next one.
    for kind in (*NAMED_DEFINITIONS, *(NAMED_MEMBERS if negate else ())):
        field: str | None = None
        if kind == "impl_item" and not negate:
            # Wave 3j (synth14): the trait the changed methods implement, where they all
            # implement one (bytes' `MutBuf::advance` made `unsafe`, `Buf::advance` kept):
            # the trait is the class of the change, the implementing types its instances.
            traits = {_def_name(p, kind, "trait") for p in these}
            if len(traits) == 1 and None not in traits:
                if not any(_def_name(n, kind, "trait") in traits for n in others):
                    field = "trait"
        names = {_def_name(p, kind, field) for p in these}
        if None in names or not names:
            continue
        if any(_def_name(n, kind, field) in names for n in others):
            continue
        regex = "^(?:" + "|".join(_escape(x) for x in sorted(n for n in names if n)) + ")$"
        has: dict[str, Any] = {
            "field": field or ("type" if kind == "impl_item" else "name"),
            "regex": regex,
        }
        inside = {"inside": {"kind": kind, "stopBy": "end", "has": has}}
        return {"not": inside} if negate else inside
    return None


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def conjoin(rule: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``rule`` and ``extra`` both (merged when their keys differ, else under ``all``)."""
    if not set(extra) & set(rule):
        return {**rule, **extra}
    rest = {k: v for k, v in rule.items() if k != "all"}
    return {**rest, "all": [*rule.get("all", []), extra]}


def _a_type(kind: str) -> bool:
    """A node kind that is a type (``type_identifier``, ``scoped_type_identifier``,
    ``generic_type``, ``reference_type``...). Not a plain ``identifier``: "every function but
    the kept ``test_layout``" is what jinja's `(env)` dropped from thirteen `test_*`
    functions means (tests/synth/test_narrow.py)."""
    return re.search(r"(?:^|_)type(?:_|$)", kind) is not None


def own_first(names: list[str], pos: list[SgNode], neg: list[SgNode]) -> set[str]:
    """Wave 3j: the metavariables whose sites show at least two distinct types (two example
    sites or more), no kept value among them and no more of them than the kept code shows
    (one kept type among many changed is the exception to a sweep: zustand's trailing
    commas on every `=> StateCreator<…>` but one): their list of the sites' own
    values ranks above any list of kept values excluded ("any type but the ones kept"),
    closed or not, unless another metavariable binds one text at every site (the caller's). An exclusion list generalises to every name the examples never show,
    which a type or trait name almost never does (serde's trailing comma dropped on
    ``-> Result<Self::Ok>`` and ``-> Result<V::Value, Self::Error>``, kept on ``Result<()>``
    and ``Result<V::Value, Error>``: "any return type but the two kept" rewrote 98 other
    signatures; log's
    ``Log`` and ``Visitor`` -> ``dyn …``: "any type but the 16 kept" rewrote 66 other
    types)."""
    out: set[str] = set()
    for name in names:
        pv = [n.get_match(name) for n in _distinct(pos)]
        nv = [n.get_match(name) for n in neg]
        if not pv or not nv or any(v is None for v in pv + nv):
            continue
        pt = {v.text() for v in pv if v is not None}
        nt = {v.text() for v in nv if v is not None}
        kinds = {v.kind() for v in pv + nv if v is not None}
        if (
            2 <= len(pt) <= len(nt)
            and not pt & nt
            and all(_a_type(k) for k in kinds)
            and all("\n" not in t for t in pt | nt)
        ):
            out.add(name)
    return out


def bound(
    name: str, pos: list[SgNode], neg: list[SgNode]
) -> tuple[list[SgNode], list[SgNode]] | None:
    """What metavariable ``name`` binds at every positive and every negative; None when either
    side is empty or some match does not bind it."""
    pv = [n.get_match(name) for n in pos]
    nv = [n.get_match(name) for n in neg]
    if not pv or not nv:
        return None
    p = [v for v in pv if v is not None]
    q = [v for v in nv if v is not None]
    return (p, q) if len(p) == len(pv) and len(q) == len(nv) else None


# Wave 3o: the one value type a syntax tree tells by kind alone (Python): an expression that
# is a bool. A commit that annotates the bool attributes of a class (click's
# `self.is_bool_flag = is_flag and isinstance(…)`, `self.allow_interspersed_args = True`
# -> `…: bool = …`) shows a few of these kinds; its other sites hold the others
# (`self.autowidth = width == 0`, `self.is_hidden = not isatty(…)`).
BOOL_KINDS = frozenset({"true", "false", "comparison_operator", "not_operator", "boolean_operator"})


def family_constraints(
    names: list[str], pos: list[SgNode], neg: list[SgNode]
) -> list[dict[str, Any]]:
    """Wave 3o: a metavariable whose sites bind values of one type — two kinds or more of
    :data:`BOOL_KINDS` — where the kept code binds none: the whole family, not the kinds
    the few sites show (``B: {any: [{kind: true}, {kind: comparison_operator}, …]}``), nor
    a list of the sites' names, which reaches no other attribute. What the examples keep
    decides: one kept bool and the family says nothing."""
    out: list[dict[str, Any]] = []
    for name in names:
        got = bound(name, pos, neg)
        if got is None:
            continue
        pv, nv = got
        pk = {v.kind() for v in pv}
        nk = {v.kind() for v in nv}
        if len(pk) >= 2 and pk <= BOOL_KINDS and not nk & BOOL_KINDS:
            out.append({name: {"any": [{"kind": k} for k in sorted(BOOL_KINDS)]}})
    return out


def value_constraints(
    names: list[str], pos: list[SgNode], neg: list[SgNode], own: bool = False
) -> list[dict[str, Any]]:
    """Metavariable constraints that keep the positives' values and exclude every negative's:
    koa's `404 == err.status`, `'string' == typeof body` changed to `===` where
    `null == body` is kept gives ``$A == $B`` with ``A: {not: {kind: null}}`` — one rule for
    every operand the examples do not keep, not one per operand shape. By kind first (any
    other kind of value, the wider), then by text. Each constraint is checked here on the
    matches (``pos``/``neg`` must come from a rule that binds ``names``).

    Texts: a list of the kept ones says nothing about values the examples never show; where
    the sites show fewer values than the kept code, or the kept values are calls rather
    than names (zod's `core._parse(ZodRealError) as any` -> `core._parse(ZodRealError)`
    made on six calls and kept on six others; excluding the six kept ones removed every
    other `as any` of another file, wave 3e) (and ``own``: the caller ranks the lists,
    see :func:`closure`), the sites' own texts are offered too (precision first: ky's
    ``import {type HttpMethod}`` with nine values such as ``Ky`` kept is not ``type
    chromium`` elsewhere; koa's two changed call heads against two kept ones stay a list of
    the kept)."""
    out: list[dict[str, Any]] = []
    for name in names:
        got = bound(name, pos, neg)
        if got is None:
            continue
        pv, nv = got
        pk = {v.kind() for v in pv}
        nk = {v.kind() for v in nv}
        if not pk & nk:
            alts = [{"kind": k} for k in sorted(nk)]
            out.append({name: {"not": alts[0] if len(alts) == 1 else {"any": alts}}})
            continue
        pt = {v.text() for v in pv if v is not None}
        nt = {v.text() for v in nv if v is not None}
        if not pt & nt and all("\n" not in t for t in nt):
            words = "|".join(re.escape(t) for t in sorted(nt))
            # Wave 3e: so do kept values that are calls (`core._safeParse(E)`): a list of
            # kept calls with their arguments is instances, not an API the change keeps
            # off (a kept call head, `ctx.type.should.equal`, is one).
            instances = all("(" in t for t in nt)
            # Wave 3j: so do two or more types the sites show (see own_first).
            shown_names = name in own_first([name], pos, neg)
            if (
                own
                and (len(pt) < len(nt) or instances or shown_names)
                and all("\n" not in t for t in pt)
            ):
                shown = "|".join(re.escape(t) for t in sorted(pt))
                out.append({name: {"regex": f"^(?:{shown})$"}})
            out.append({name: {"not": {"regex": f"^(?:{words})$"}}})
    return out[:MAX_CONSTRAINTS]


def closure(names: list[str], pos: list[SgNode], neg: list[SgNode]) -> dict[str, Any]:
    """Constraints every positive meets and some negative does not, to conjoin with a rule
    that a *negative* fact narrowed (``not`` a context, ``not`` a list of texts): such a
    fact says where the rule must not apply among the code the examples show, and nothing
    about code they do not show. The positives' shared facts close it (precision first:
    pluggy's ``$A = $B`` -> ``$A: "Final" = $B`` made on ``self.x = …`` in ``__init__`` and
    kept on other assignments: ``A`` binds an ``attribute`` at every site, so a module-level
    ``_T = TypeVar("_T")`` of another file is not rewritten; serde's ``$A::$B`` ->
    ``$A::$B<'$A>`` made on ``de::Deserializer``: ``A`` is ``de`` at every site, so
    ``fmt::Display`` stays). Per metavariable: the one text all positives bind (at least two
    distinct positives, else every metavariable would be literal), else the one kind."""
    ps = _distinct(pos)
    if len(ps) < 2 or not neg:
        return {}
    out: dict[str, Any] = {}
    for name in names:
        pv = [n.get_match(name) for n in ps]
        nv = [n.get_match(name) for n in neg]
        if any(v is None for v in pv + nv):
            continue
        texts = {v.text() for v in pv if v is not None}
        if len(texts) == 1 and "\n" not in next(iter(texts)):
            text = next(iter(texts))
            if any(v is not None and v.text() != text for v in nv):
                out[name] = {"regex": "^" + _rx_literal(text) + "$"}
                continue
        kinds = {v.kind() for v in pv if v is not None}
        if len(kinds) == 1:
            kind = next(iter(kinds))
            if any(v is not None and v.kind() != kind for v in nv):
                out[name] = {"kind": kind}
    return out


def context_closure(
    pos: list[SgNode], neg: list[SgNode], several: bool = False
) -> dict[str, Any] | None:
    """The parent kind every positive sits in and some negative does not, as a fragment to
    conjoin with a rule a negative fact narrowed (see :func:`closure`): serde's
    ``de::Deserializer`` -> ``de::Deserializer<'de>`` made in ``where`` bounds, with
    ``de::Error`` kept there, is narrowed by ``not`` the kept names; every site sits in a
    ``trait_bounds``, so ``impl de::Deserializer for X`` (which the examples never show
    changed) is not rewritten. At least two distinct positives."""
    ps = _distinct(pos)
    if len(ps) < 2 or not neg:
        return None
    kinds = {_kind_at(p, 1) for p in ps}
    if None in kinds or len(kinds) > (MAX_CLOSURE_KINDS if several else 1):
        return None
    if not any(_kind_at(n, 1) not in kinds for n in neg):
        # Wave 3g: the parent says nothing (every assignment's parent is an
        # `expression_statement`), the statement's container may: pluggy's `_X = …` ->
        # `_X: TypeAlias = …` made at a module's top level and kept on other names there and
        # in function bodies, narrowed by the kept names only, rewrote 20 local assignments
        # (`plugin_name = name or …`) of another file. One kind two levels up, where a kept
        # one's differs.
        if several:
            return None
        grand = {_kind_at(p, 2) for p in ps}
        if None in grand or len(grand) != 1 or not any(_kind_at(n, 2) not in grand for n in neg):
            return None
        return _at_depth(2, _kinds(sorted(k for k in grand if k is not None)))
    # Wave 3e, ``several`` (a pattern that names nothing, `$A.$B`): the few kinds the sites
    # sit in (jinja's `t.Type` -> `t.Type[t.Any]` made in a `subscript` and in a parameter's
    # `type`, while `t.cast(…)` of another file is a call's function: `t.cast[t.Any](…)`
    # was written there). A name (a rename's) says where by itself.
    return _at_depth(1, _kinds(sorted(k for k in kinds if k is not None)))


def _rx_literal(text: str) -> str:
    """``text`` as a literal in ast-grep's (Rust) regex syntax."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)


def merge_constraints(base: dict[str, Any] | None, extra: dict[str, Any]) -> dict[str, Any] | None:
    """``base`` and ``extra`` both, per metavariable (keys merged, else under ``all``)."""
    if not extra:
        return base
    out = dict(base or {})
    for name, rule in extra.items():
        out[name] = conjoin(out[name], rule) if name in out else rule
    return out
