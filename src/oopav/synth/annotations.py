"""What a definition itself is, as a discriminating context (wave 3k, synth20).

A commit that annotates definitions at many sites — a Rust attribute line inserted above
items (`#[inline]`, `#[derive(Clone)]`), a Python return annotation (`-> None`) — changes
some definitions of a kind and keeps others. The contexts of synth/discriminate.py look
*around* a site (its parents, the enclosing definitions' names, what they hold); for a
definition the difference is mostly in the definition itself: public or not, a method (a
`self` parameter) or a constructor, in a trait's impl or the type's own, generic, already
carrying an attribute, returning a value or nothing. Without such a context the search
fell back to a list of the definitions' names (one rule per name), which reaches no
held-out definition.

:func:`own_features` returns the fragments (to conjoin with the rule, checked on the nodes
here with ast-grep itself) that hold at every positive and at no negative — the examples'
unchanged definitions of the kind — one property first, then two together where one does
not separate them; only where the examples change two definitions or more (one site says
too little about which definitions: precision first).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from ast_grep_py import SgNode

# Rust: a run of attributes and comments above an item (the attributes an item carries).
ATTR_RUN = _ATTR_RUN = {
    "not": {
        "any": [{"kind": "attribute_item"}, {"kind": "line_comment"}, {"kind": "block_comment"}]
    }
}
RUST_ITEMS = frozenset(
    {
        "function_item",
        "function_signature_item",
        "struct_item",
        "enum_item",
        "union_item",
        "impl_item",
        "trait_item",
        "const_item",
        "static_item",
        "type_item",
        "mod_item",
    }
)
PYTHON_DEFS = frozenset({"function_definition", "class_definition"})
# A nested definition's body is its own: a `return` there says nothing about this one.
_PY_SCOPES = {
    "any": [{"kind": "function_definition"}, {"kind": "lambda"}, {"kind": "class_definition"}]
}
# A `return` with a value (`return None` is none), or a `yield`: the function returns
# something.
_PY_RETURNS = {
    "has": {
        "stopBy": _PY_SCOPES,
        "any": [
            {
                "kind": "return_statement",
                "regex": r"^return\s+\S",
                "not": {"regex": r"^return\s+None\s*$"},
            },
            {"kind": "yield"},
        ],
    }
}
MAX_FEATURES = 2  # fragments returned, the first separating ones
# The fragments this module made (the caller ranks them with the contexts, not the names).
_MADE: set[str] = set()
# The fragments that list the annotated items by name or first line (ranked with the names).
_NAMED: set[str] = set()
_HEAD = re.compile(r"^#!?\[\s*([A-Za-z_][\w:]*)")
_DECORATOR = re.compile(r"^@\s*([A-Za-z_][\w.]*)")


def _key(fragment: dict[str, Any]) -> str:
    return json.dumps(fragment, sort_keys=True)


def made_here(fragment: dict[str, Any]) -> bool:
    """``fragment`` came from :func:`own_features` (a property of the definition, not a
    list of names)."""
    return _key(fragment) in _MADE


def names_items(fragment: dict[str, Any]) -> bool:
    """``fragment`` lists the items attributes annotate (:func:`item_contexts`' last)."""
    return _key(fragment) in _NAMED


def _rust_attributes(node: SgNode) -> list[str]:
    """The heads of the attributes above ``node`` (`derive`, `inline`, `cfg`)."""
    parent = node.parent()
    if parent is None:
        return []
    kids = parent.children()
    r = node.range()
    at = next((i for i, k in enumerate(kids) if k.range() == r), None)
    heads: list[str] = []
    for k in reversed(kids[: at or 0]):
        if k.kind() == "attribute_item":
            m = _HEAD.match(k.text())
            if m:
                heads.append(m.group(1))
        elif k.kind() not in ("line_comment", "block_comment"):
            break
    return heads


def _rust(node: SgNode, heads: set[str]) -> list[dict[str, Any]]:
    impl = {"kind": "declaration_list", "stopBy": "neighbor"}
    trait = {"has": {"field": "trait", "regex": r"\S"}}
    out: list[dict[str, Any]] = [
        {"has": {"kind": "visibility_modifier"}},
        {"inside": {**impl, "inside": {"kind": "impl_item", "stopBy": "neighbor", **trait}}},
        {
            "inside": {
                **impl,
                "inside": {"kind": "impl_item", "stopBy": "neighbor", "not": trait},
            }
        },
        {"follows": {"kind": "attribute_item", "stopBy": _ATTR_RUN}},
    ]
    for head in sorted(heads):
        rx = r"^#!?\[\s*" + re.escape(head) + r"\b"
        out.append({"follows": {"kind": "attribute_item", "regex": rx, "stopBy": _ATTR_RUN}})
    if node.kind() in ("function_item", "function_signature_item"):
        out += [
            {"has": {"field": "parameters", "has": {"kind": "self_parameter"}}},
            {"has": {"field": "return_type", "regex": r"\S"}},
            {"has": {"kind": "function_modifiers", "regex": r"\bunsafe\b"}},
        ]
    out.append({"has": {"field": "type_parameters", "regex": r"\S"}})
    return out


def _python(node: SgNode, heads: set[str]) -> list[dict[str, Any]]:
    decorated = {"kind": "decorated_definition", "stopBy": "neighbor"}
    out: list[dict[str, Any]] = []
    if node.kind() == "function_definition":
        out += [
            _PY_RETURNS,
            # a method's receiver (`self`, `cls`) first among the parameters
            {"has": {"field": "parameters", "regex": r"^\(\s*(?:self|cls)\b"}},
            {"regex": r"^async\b"},
        ]
    out.append({"inside": decorated})
    for head in sorted(heads):
        rx = r"^@\s*" + re.escape(head) + r"\b"
        out.append({"inside": {**decorated, "has": {"kind": "decorator", "regex": rx}}})
    return out


def _python_decorators(node: SgNode) -> list[str]:
    parent = node.parent()
    if parent is None or parent.kind() != "decorated_definition":
        return []
    return [
        m.group(1)
        for k in parent.children()
        if k.kind() == "decorator" and (m := _DECORATOR.match(k.text()))
    ]


def _features(nodes: list[SgNode]) -> list[dict[str, Any]]:
    kind = nodes[0].kind()
    if kind in RUST_ITEMS:
        heads = {h for n in nodes for h in _rust_attributes(n)}
        return _rust(nodes[0], heads)
    if kind in PYTHON_DEFS:
        heads = {h for n in nodes for h in _python_decorators(n)}
        return _python(nodes[0], heads)
    return []


def _holds(node: SgNode, fragment: dict[str, Any]) -> bool:
    try:
        return bool(node.matches(**fragment))
    except Exception:
        return False


def own_features(
    seed: SgNode, positives: list[SgNode], negatives: list[SgNode]
) -> list[dict[str, Any]]:
    """Fragments saying what ``seed`` (a definition) is, that hold for it and every
    positive and for no negative (see the module doc); empty for other kinds."""
    pos = [seed, *positives]
    if not negatives or seed.kind() not in RUST_ITEMS | PYTHON_DEFS:
        return []
    if any(p.kind() != seed.kind() for p in pos):
        return []
    distinct = {(p.range().start.index, p.range().end.index) for p in pos}
    if len(distinct) < 2:
        return []  # one definition says too little about which (bytes' lone `unsafe fn`)
    literals: list[dict[str, Any]] = []
    for f in _features(pos + negatives):
        at_pos = [_holds(p, f) for p in pos]
        if all(at_pos):
            literals.append(f)
        elif not any(at_pos):
            literals.append({"not": f})
    out: list[dict[str, Any]] = []
    for f in literals:
        if not any(_holds(n, f) for n in negatives):
            out.append(f)
    if not out:
        for f, g in itertools.combinations(literals, 2):
            both = {"all": [f, g]}
            if not any(_holds(n, both) for n in negatives):
                out.append(both)
                if len(out) >= MAX_FEATURES:
                    break
    out = out[:MAX_FEATURES]
    _MADE.update(_key(f) for f in out)
    return out


# Wave 3u: an attribute inserted beside another (`#[test]` -> `#[cfg(unix)]\n#[test]`) or
# removed from a run (`#[derive(Debug)]` deleted): the attribute's context is the item it
# annotates — its next sibling past the run of attributes and comments — not its parent
# (every attribute of a file sits in the `source_file`, every `#[test]` is alike).


def annotated(node: SgNode) -> SgNode | None:
    """The item a Rust attribute annotates: the first sibling after ``node`` that is no
    attribute or comment (None for any other node, or an attribute ending its block)."""
    if node.kind() != "attribute_item":
        return None
    sib = node.next()
    while sib is not None and sib.kind() in ("attribute_item", "line_comment", "block_comment"):
        sib = sib.next()
    if sib is None or not sib.is_named():
        return None
    return sib


def on_item(fragment: dict[str, Any]) -> dict[str, Any]:
    """``fragment`` said of the item an attribute annotates (see :func:`annotated`): the
    attribute ``precedes`` it, past the attributes and comments between."""
    return {"precedes": {"stopBy": _ATTR_RUN, "all": [_ATTR_RUN, fragment]}}


def _item_name(item: SgNode) -> str | None:
    if item.kind() == "impl_item":
        return None
    name = item.field("name")
    if name is None or not re.match(r"^[A-Za-z_]\w*$", name.text()):
        return None
    return name.text()


def item_contexts(
    seed: SgNode, positives: list[SgNode], negatives: list[SgNode]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Fragments (on an attribute, see :func:`on_item`) saying what the items the changed
    attributes annotate are, holding for every positive and no negative: the items' kind,
    then (two items or more) what the item itself is (:func:`own_features`' properties, of
    any item kind the sites show); and apart, the items' names (a list: one site says
    nothing more; None where the names do not separate). Nothing unless ``seed`` is a Rust
    attribute annotating an item."""
    pos = [seed, *positives]
    items = [annotated(p) for p in pos]
    if not negatives or any(i is None for i in items):
        return [], None
    nodes = [i for i in items if i is not None]
    out: list[dict[str, Any]] = []

    def separates(fragment: dict[str, Any]) -> bool:
        wrapped = on_item(fragment)
        return all(_holds(p, wrapped) for p in pos) and not any(
            _holds(n, wrapped) for n in negatives
        )

    kinds = sorted({i.kind() for i in nodes})
    kind: dict[str, Any] = (
        {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}
    )
    if separates(kind):
        out.append(on_item(kind))
    distinct = {(i.range().start.index, i.range().end.index) for i in nodes}
    if len(distinct) >= 2 and all(k in RUST_ITEMS for k in kinds):
        heads = {h for i in nodes for h in _rust_attributes(i)}
        literals: list[dict[str, Any]] = []
        for f in _rust(nodes[0], heads):
            at_pos = [_holds(i, f) for i in nodes]
            if all(at_pos):
                literals.append(f)
            elif not any(at_pos):
                literals.append({"not": f})
        found = [f for f in literals if separates({**kind, "all": [f]})]
        if not found:
            for f, g in itertools.combinations(literals, 2):
                if separates({**kind, "all": [f, g]}):
                    found.append({"all": [f, g]})
                    if len(found) >= MAX_FEATURES:
                        break
        for f in found[:MAX_FEATURES]:
            out.append(on_item({**kind, "all": f["all"] if "all" in f else [f]}))
    _MADE.update(_key(f) for f in out)
    names = {_item_name(i) for i in nodes}
    named: dict[str, Any]
    if None not in names:
        listed = sorted(n for n in names if n)
        regex = "^(?:" + "|".join(re.escape(n) for n in listed) + ")$"
        named = {**kind, "has": {"field": "name", "regex": regex}}
    else:
        # An item without a name (`pub use self::filters::{…}`; an impl, whose type names
        # many: `impl Deref for Error`, `impl AsRef<…> for Error`): by its first line, the
        # literal anchor an insertion above it would have.
        lines = sorted({i.text().split("\n", 1)[0].rstrip() for i in nodes})
        regex = "^(?:" + "|".join(re.escape(h) for h in lines) + ")"
        named = {**kind, "regex": regex}
    by_name = on_item(named) if separates(named) else None
    if by_name is not None:
        _NAMED.add(_key(by_name))
    return out, by_name
