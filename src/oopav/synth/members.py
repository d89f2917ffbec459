"""A renamed member reaches its other spellings (wave 3u).

A commit that renames a member (a method, a field) renames it where it is declared and
everywhere it is used, and a language spells those places with different kinds of node:
Rust declares a method as a plain ``identifier`` (``fn port(&self)``) and calls it through a
``field_identifier`` (``a.port()``), and inside a macro's arguments (a token tree) a call is
an ``identifier`` after a ``.`` token (``assert_eq!(buf.bytes(), …)``); Go keys a composite
literal by the field's name as an ``identifier`` (``Request{pathParams: m}``) where the
declaration and the selectors have ``field_identifier``; a Python method's definition and its
uses (``self.format(v)``) are both ``identifier``, of which a local variable is one too. A
rename learned on one spelling reached that spelling alone: hyperium/http 0072b9d2 (`fn
port` -> `fn port_part`, the held-out `a.port()`), go-resty/resty d837dfc6 (`pathParams` ->
`PathParams`, the held-out keys), tokio-rs/bytes 06907f3e (`.bytes()` -> `.chunk()`, the
held-out `assert_eq!(buf.bytes(), …)`), marshmallow 8e0d9498 (`def format` -> `def
_format`, the held-out `self.format(value)`).

:func:`role` says what member a rename site is (``method``: a method's definition or a call
through a member access; ``field``: a field's declaration, a literal's key, an access that is
not called); :func:`spellings` the rule alternatives of those roles in a language. The rename
candidates (``core._rename_candidates``) use them only where every site of the rename is a
member, and the examples decide as for any candidate: a candidate that rewrites a kept use
(a string's ``"…".format(x)``, a slice's ``.to_vec()`` where a field ``to_vec`` is renamed)
is refused and a narrower one is tried — in Rust a method's spellings apart from a field's
(a getter ``fn port(&self)`` beside a field ``port`` is common), in Python the uses through
the instance itself (``self.format``, ``cls.format``, ``super().format``).
"""

from __future__ import annotations

from typing import Any

from ast_grep_py import SgNode

from oopav.synth.precision import method_name

# Where a Rust member access is called: `a.f()`, `a.f::<T>()`.
_CALLED = {
    "inside": {
        "kind": "field_expression",
        "field": "field",
        "stopBy": "neighbor",
        "inside": {
            "any": [{"kind": "call_expression"}, {"kind": "generic_function"}],
            "field": "function",
            "stopBy": "neighbor",
        },
    }
}
# A Rust method's definition: a function in an `impl` or `trait` body.
_RUST_METHOD_DEF = {
    "kind": "identifier",
    "inside": {
        "any": [{"kind": "function_item"}, {"kind": "function_signature_item"}],
        "field": "name",
        "stopBy": "neighbor",
        "inside": {"kind": "declaration_list", "stopBy": "neighbor"},
    },
}
# In a token tree (a macro's arguments or body): a name after a `.`, called or not, and a
# name after `fn` (a method defined in a macro's body).
_IN_TREE = {"kind": "token_tree", "stopBy": "neighbor"}
_AFTER_DOT = {"regex": r"^\.$", "stopBy": "neighbor"}
_CALL_TREE = {"kind": "token_tree", "regex": r"^\(", "stopBy": "neighbor"}
_TREE_CALL = {
    "kind": "identifier",
    "inside": _IN_TREE,
    "follows": _AFTER_DOT,
    "precedes": _CALL_TREE,
}
_TREE_FN = {
    "kind": "identifier",
    "inside": _IN_TREE,
    "follows": {"regex": "^fn$", "stopBy": "neighbor"},
}
_TREE_FIELD = {
    "kind": "identifier",
    "inside": _IN_TREE,
    "follows": _AFTER_DOT,
    "not": {"precedes": _CALL_TREE},
}
# A Go composite literal's key (`R{pathParams: m}`), not a map literal's (a value there).
_GO_KEY = {
    "kind": "identifier",
    "inside": {
        "kind": "literal_element",
        "stopBy": "neighbor",
        "precedes": {"regex": "^:$", "stopBy": "neighbor"},
        "inside": {
            "kind": "keyed_element",
            "stopBy": "neighbor",
            "inside": {
                "kind": "literal_value",
                "stopBy": "neighbor",
                "not": {
                    "inside": {
                        "kind": "composite_literal",
                        "stopBy": "neighbor",
                        "has": {"field": "type", "kind": "map_type"},
                    }
                },
            },
        },
    },
}
# Python: the instance itself as a receiver (`self`, `cls`, `super()`, `super(C, self)`).
_OWN = r"^(?:self|cls|super\(.*\))$"


def _is_field(node: SgNode, name: str) -> bool:
    parent = node.parent()
    f = parent.field(name) if parent is not None else None
    return f is not None and f.range() == node.range()


def _rust_called(node: SgNode) -> bool:
    access = node.parent()
    if access is None or access.kind() != "field_expression" or not _is_field(node, "field"):
        return False
    up = access.parent()
    return (
        up is not None
        and up.kind() in ("call_expression", "generic_function")
        and _is_field(access, "function")
    )


def _rust_role(node: SgNode) -> str | None:
    parent = node.parent()
    if parent is None:
        return None
    kind, up = node.kind(), parent.kind()
    if kind == "identifier" and up in ("function_item", "function_signature_item"):
        holder = parent.parent()
        if _is_field(node, "name") and holder is not None and holder.kind() == "declaration_list":
            return "method"
        return None
    if kind == "field_identifier":
        if _rust_called(node):
            return "method"
        if up in ("field_expression", "field_declaration", "field_initializer", "field_pattern"):
            return "field"
        return None
    if kind == "identifier" and up == "token_tree":
        before, after = node.prev(), node.next()
        if before is not None and before.text() == "fn":
            return "method"
        if before is not None and before.text() == ".":
            called = after is not None and after.kind() == "token_tree" and after.text()[:1] == "("
            return "method" if called else "field"
    return None


def _python_role(node: SgNode) -> str | None:
    parent = node.parent()
    if node.kind() != "identifier" or parent is None:
        return None
    if parent.kind() == "attribute" and _is_field(node, "attribute"):
        return "field"
    if parent.kind() == "function_definition" and _is_field(node, "name"):
        holder = parent.parent()
        if holder is not None and holder.kind() == "decorated_definition":
            holder = holder.parent()
        cls = holder.parent() if holder is not None else None
        if holder is not None and holder.kind() == "block" and cls is not None:
            return "method" if cls.kind() == "class_definition" else None
    return None


def _go_role(node: SgNode) -> str | None:
    parent = node.parent()
    if parent is None:
        return None
    if node.kind() == "field_identifier":
        if parent.kind() in ("method_declaration", "method_elem", "method_spec"):
            return "method"
        if parent.kind() == "selector_expression":
            up = parent.parent()
            called = up is not None and up.kind() == "call_expression"
            return "method" if called and _is_field(parent, "function") else "field"
        if parent.kind() == "field_declaration":
            return "field"
        return None
    if node.kind() == "identifier" and parent.kind() == "literal_element":
        keyed = parent.parent()
        if keyed is not None and keyed.kind() == "keyed_element" and keyed.child(0) == parent:
            return "field"
    return None


_ROLES = {"rust": _rust_role, "python": _python_role, "go": _go_role}


def role(node: SgNode, language: str) -> str | None:
    """``method`` or ``field`` where ``node`` names a member (module doc), else None."""
    fn = _ROLES.get(language)
    return fn(node) if fn is not None else None


def roles(nodes: list[SgNode], language: str) -> set[str] | None:
    """The roles of ``nodes``, or None where one of them is no member."""
    found = {role(n, language) for n in nodes}
    if not nodes or None in found:
        return None
    return {r for r in found if r is not None}


def spellings(roles_: set[str], language: str, own: bool = False) -> list[dict[str, Any]]:
    """The alternatives that spell a member of ``roles_`` in ``language`` (``own``: in
    Python, only the uses through the instance itself)."""
    out: list[dict[str, Any]] = []
    if language == "rust":
        if "method" in roles_:
            out += [_RUST_METHOD_DEF, {"kind": "field_identifier", **_CALLED}]
            out += [_TREE_CALL, _TREE_FN]
        if "field" in roles_:
            out += [{"kind": "field_identifier", "not": _CALLED}, _TREE_FIELD]
    elif language == "go":
        out.append({"kind": "field_identifier"})
        if "field" in roles_:
            out.append(_GO_KEY)
    elif language == "python":
        access: dict[str, Any] = {"kind": "attribute", "field": "attribute", "stopBy": "neighbor"}
        if own:
            access["has"] = {"field": "object", "regex": _OWN, "stopBy": "neighbor"}
        out += [
            {"kind": "identifier", "inside": access},
            {"kind": "identifier", **method_name()},
            {"kind": "identifier", **method_name("decorated_definition")},
        ]
    return out


def member_candidates(
    seed: SgNode, nodes: list[SgNode], language: str, status_quo: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rename alternatives for a member renamed at ``nodes`` (every site of the rename,
    ``seed`` among them): (tried before the namespace candidate whose alternatives are
    ``status_quo``, tried after the plain kind). Before: that namespace and the member's
    other spellings. After: the member's spellings alone (a kept local or a kept member of
    the other role refused the namespace), then in Python the instance's own uses."""
    found = roles(nodes, language)
    if not found or role(seed, language) is None:
        return [], []
    if language == "python" and "method" not in found:
        # Attribute names alone: a member rename already (precision.member_rename), and a
        # lifted `$A.fetch` where the examples keep the bare name.
        return [], []
    own = spellings(found, language)
    before: list[dict[str, Any]] = []
    extra = [a for a in own if a not in status_quo]
    if status_quo and extra and language != "python":
        before.append({"any": [*status_quo, *extra]})
    after: list[dict[str, Any]] = [{"any": own}]
    if language == "python":
        after.append({"any": spellings(found, language, own=True)})
    return before, after
