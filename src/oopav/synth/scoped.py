"""A parameter renamed in its scope (wave 3j, synth14): issue 26 class 1, "too narrow".

A commit that renames a callback's or a function's parameter (`(err) => { log(err) }` ->
`(error) => { log(error) }`, `def has(cl)` -> `def has(cls)`, a lint fix's `catch (e)` ->
`catch (_e)`) changes one name at the binder and at its uses, all inside one function. The
smallest node holding every change is the whole function literal, so the rule learned was
that literal (header and body), which reproduces its own example and no held-out callback,
whose body is different at every site.

The change is a *scoped rename*: the examples differ only in identifiers, each `X` renamed to
one `Y`. Two rules, one per evidence:

- **Renamed with its uses** (some renamed identifier is a use of the parameter): every
  identifier `X` inside a scope that binds `X` (a function, method, arrow function or lambda
  whose parameters hold `X`; a `catch (X)`; a Python comprehension `for X in …`) becomes
  `Y`; an `X` outside such a scope (a module variable of the same name), an attribute name
  (`obj.X`) or a keyword argument's name (`f(X=…)`) stays:

  ```yaml
  rule:
    kind: identifier
    regex: ^err$
    inside:
      stopBy: end
      any:
      - kind: arrow_function
        has: {field: parameters, has: {kind: identifier, regex: ^err$, stopBy: end}}
      - kind: catch_clause
        has: {field: parameter, kind: identifier, regex: ^err$}
      # … function_expression, function_declaration, method_definition
  fix: error
  ```
- **The binder alone, where it is unused** (every renamed identifier is a parameter and
  none of its uses changed: what a lint's `no-unused-vars` fix does, `catch (e)` ->
  `catch (_e)` where the examples keep `catch (e) { console.error(e) }`): only a parameter
  `X` whose scope's body does not mention `X`.

- **Locals too** (tried last): a block that declares `X` as a local (`const err = …` in
  JavaScript and TypeScript, an assignment in a Python function) is a scope like a function
  that binds it: a lint rename (`err` -> `error` of the locals and the callbacks alike).

The rule is kept only where it reproduces every example (an example that keeps a parameter
of that name in some function, or renames an `X` outside any binding scope, refuses it; the
search goes on as before). A held-out callback with any body, any number of uses, in any
call, is then renamed, and nothing else of that name."""

from __future__ import annotations

import functools
import re
from typing import Any

from oopav.synth.sites import node_at, parse

_NAME = re.compile(r"^[A-Za-z_$][\w$]*$")
_JS_FUNCS = (
    "function_declaration",
    "function_expression",
    "function",
    "arrow_function",
    "method_definition",
    "generator_function",
    "generator_function_declaration",
)
# Per language: the kinds of a name's use, the scope kinds that bind a name in their
# ``parameters`` field, those that bind one in a single-node field (field, kind), the
# Python comprehensions, and the positions of an identifier that are no use of a variable.
_LANG: dict[str, dict[str, Any]] = {
    "python": {
        "uses": ("identifier",),
        "params": ("function_definition", "lambda"),
        "single": (),
        "comprehensions": (
            "list_comprehension",
            "set_comprehension",
            "dictionary_comprehension",
            "generator_expression",
        ),
        "not_uses": (("attribute", "attribute"), ("keyword_argument", "name")),
    },
    "javascript": {
        "uses": ("identifier", "shorthand_property_identifier"),
        "params": _JS_FUNCS,
        "single": (("arrow_function", "parameter"), ("catch_clause", "parameter")),
        "comprehensions": (),
        "not_uses": (),
        # A shorthand property `{ err }` (a use) and a destructuring binder `({ err }) =>`:
        # renamed, each becomes `err: error` (wave 3j, synth18).
        "shorthands": ("shorthand_property_identifier", "shorthand_property_identifier_pattern"),
    },
    "go": {
        "uses": ("identifier",),
        "params": ("function_declaration", "method_declaration", "func_literal"),
        "single": (),
        "comprehensions": (),
        "not_uses": (),
    },
    "rust": {
        "uses": ("identifier",),
        "params": ("function_item", "closure_expression"),
        "single": (),
        "comprehensions": (),
        "not_uses": (),
    },
}
_LANG["typescript"] = _LANG["tsx"] = _LANG["javascript"]


_TOKEN = re.compile(r"[A-Za-z_$][\w$]*|\d+|\S")


def _leaf_at(root: Any, start: int, end: int) -> Any:
    """The innermost node of ``root`` spanning exactly [start, end), or None."""
    node = node_at(root, start, end)
    while node is not None:
        kids = [k for k in node.children() if k.range().start.index == start]
        if len(kids) != 1 or kids[0].range().end.index != end:
            return node
        node = kids[0]
    return None


def _changed(before: str, after: str) -> list[tuple[int, int, str]] | None:
    """The words ``after`` renames in ``before`` ((start, end, new word)), when the two
    differ only in words (the same tokens otherwise, the same layout); else None. A word
    ``X`` that ``after`` writes ``X: Y`` (a shorthand property expanded by the rename)
    comes with that text as its new word. Text only: the cheap test that keeps a parse
    from every example that is no rename."""
    bt, at = list(_TOKEN.finditer(before)), list(_TOKEN.finditer(after))
    out: list[tuple[int, int, str]] = []
    i = j = 0
    while i < len(bt) and j < len(at):
        b, a = bt[i], at[j]
        if (
            b.group() == a.group()
            and _NAME.match(b.group())
            and j + 2 < len(at)
            and at[j + 1].group() == ":"
            and _NAME.match(at[j + 2].group())
            and (i + 1 >= len(bt) or bt[i + 1].group() != ":")
            and len(at) - j > len(bt) - i
        ):
            out.append((b.start(), b.end(), after[a.start() : at[j + 2].end()]))
            i, j = i + 1, j + 3
            continue
        if b.group() != a.group():
            if not (_NAME.match(b.group()) and _NAME.match(a.group())):
                return None
            out.append((b.start(), b.end(), a.group()))
        i, j = i + 1, j + 1
    if i != len(bt) or j != len(at):
        return None
    pos, parts = 0, []
    for start, end, word in out:
        parts += [before[pos:start], word]
        pos = end
    if "".join(parts) + before[pos:] != after:
        return None
    return out


def renames(
    pairs: list[tuple[str, str]], lang: str, roots: list[Any] | None = None
) -> tuple[dict[str, str], list[Any]] | None:
    """``({X: Y}, the renamed identifier nodes)`` when every changed pair differs only in
    identifiers, each ``X`` always renamed to one ``Y``; else None. ``roots``: the pairs'
    before trees, where the caller has them."""
    spec = _LANG.get(lang)
    if spec is None:
        return None
    found: dict[str, str] = {}
    nodes: list[Any] = []
    for i, (before, after) in enumerate(pairs):
        if before == after:
            continue
        changed = _changed(before, after)
        if changed is None:
            return None
        root = roots[i] if roots is not None else parse(before, lang)
        for start, end, word in changed:
            node = _leaf_at(root, start, end)
            if node is None:
                return None
            shorthand = node.kind() in spec.get("shorthands", ())
            if ":" in word:
                # `X` -> `X: Y`: only a shorthand expanded; `{ X }` -> `{ Y }` would
                # rename the property too, which is no rename of a variable.
                head, _, word = word.partition(":")
                word = word.strip()
                if not shorthand or head != node.text():
                    return None
            elif shorthand or node.kind() not in spec["uses"]:
                return None
            if found.setdefault(node.text(), word) != word:
                return None
            nodes.append(node)
    if not found or set(found) & set(found.values()):
        return None
    return found, nodes


@functools.lru_cache(maxsize=256)
def _valid(kind: str, lang: str) -> bool:
    """``kind`` is a node kind of ``lang``'s grammar (ast-grep refuses a rule with another)."""
    try:
        parse("", lang).find(kind=kind)
    except Exception:
        return False
    return True


def _named(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "regex": f"^{re.escape(name)}$"}


def _binders(name: str, lang: str) -> list[dict[str, Any]]:
    """Rules for the scopes that bind ``name`` as a parameter."""
    spec = _LANG[lang]
    ident = _named("identifier", name)
    binder: dict[str, Any] = ident
    if "shorthand_property_identifier_pattern" in spec.get("shorthands", ()):
        # `({ err }) =>`: a destructured parameter binds the name too.
        pattern = _named("shorthand_property_identifier_pattern", name)
        binder = {"any": [ident, pattern]}
    out: list[dict[str, Any]] = [
        {"kind": k, "has": {"field": "parameters", "has": {**binder, "stopBy": "end"}}}
        for k in spec["params"]
        if _valid(k, lang)
    ]
    out += [{"kind": k, "has": {"field": f, **ident}} for k, f in spec["single"] if _valid(k, lang)]
    out += [
        {
            "kind": k,
            "has": {
                "kind": "for_in_clause",
                "has": {"field": "left", "any": [ident, {"has": {**ident, "stopBy": "end"}}]},
            },
        }
        for k in spec["comprehensions"]
        if _valid(k, lang)
    ]
    return out


def _local_binders(name: str, lang: str) -> list[dict[str, Any]]:
    """Rules for the blocks that declare ``name`` as a local variable (JavaScript and
    TypeScript: a `const`/`let`/`var` statement of the block; Python: an assignment to the
    bare name in a function's body)."""
    ident = _named("identifier", name)
    if lang in ("javascript", "typescript", "tsx"):
        declarator = {"kind": "variable_declarator", "has": {"field": "name", **ident}}
        return [
            {
                "kind": "statement_block",
                "has": {
                    "any": [{"kind": "lexical_declaration"}, {"kind": "variable_declaration"}],
                    "has": declarator,
                },
            }
        ]
    if lang == "python":
        return [
            {
                "kind": "function_definition",
                "has": {
                    "field": "body",
                    "has": {
                        "kind": "assignment",
                        "stopBy": "end",
                        "has": {"field": "left", **ident},
                    },
                },
            }
        ]
    return []


def _no_use(rule: dict[str, Any], name: str, lang: str) -> dict[str, Any]:
    """``rule`` (an identifier) less the positions that are no variable's use."""
    not_uses = _LANG[lang]["not_uses"]
    if not not_uses:
        return rule
    return {
        **rule,
        "not": {"any": [{"inside": {"kind": k, "field": f}} for k, f in not_uses]},
    }


def renamed_with_uses(name: str, lang: str, locals_too: bool = False) -> dict[str, Any]:
    """Every use of ``name`` inside a scope that binds it (the binder included); with
    ``locals_too``, a block that declares it as a local variable is such a scope too."""
    scopes = _binders(name, lang) + (_local_binders(name, lang) if locals_too else [])
    return _no_use(
        {**_named("identifier", name), "inside": {"stopBy": "end", "any": scopes}},
        name,
        lang,
    )


def shorthands_renamed(name: str, lang: str, locals_too: bool = False) -> list[dict[str, Any]]:
    """The shorthand properties ``{ name }`` and destructuring binders ``({ name }) =>``
    inside a scope that binds ``name`` (as :func:`renamed_with_uses`); each is fixed to
    ``name: new`` (the property keeps its name). Empty where the language has none."""
    scopes = _binders(name, lang) + (_local_binders(name, lang) if locals_too else [])
    return [
        {**_named(k, name), "inside": {"stopBy": "end", "any": scopes}}
        for k in _LANG[lang].get("shorthands", ())
        if _valid(k, lang)
    ]


def renamed_unused(name: str, lang: str) -> dict[str, Any]:
    """A parameter ``name`` whose scope's body does not use it."""
    spec = _LANG[lang]
    uses = [_named(k, name) for k in spec["uses"] if _valid(k, lang)]
    unused = {
        "not": {
            "has": {
                "field": "body",
                "any": [*uses, {"has": {"stopBy": "end", "any": uses}}],
            }
        }
    }
    scopes = [{**b, **unused} for b in _binders(name, lang) if "for_in_clause" not in str(b)]
    # The identifier is the binder: in the scope's parameters (at any depth of a typed or
    # defaulted parameter) or its single parameter field.
    params = [
        {"inside": {"stopBy": "end", "field": "parameters", "any": scopes}},
        *(
            {"inside": {"field": f, "kind": k, **unused}}
            for k, f in spec["single"]
            if _valid(k, lang)
        ),
    ]
    return {
        **_named("identifier", name),
        # A default value (`def f(a, b=a)`) is a use, not the binder.
        "not": {
            "any": [
                {"inside": {"kind": k, "field": f}}
                for k, f in (
                    ("default_parameter", "value"),
                    ("typed_default_parameter", "value"),
                    ("assignment_pattern", "right"),
                )
                if _valid(k, lang)
            ]
        },
        "any": params,
    }


# The parents of an identifier that binds a name: a parameter (and the nodes a typed,
# defaulted or rest parameter wraps it in), a `catch`, a comprehension's `for`; and a
# local's declaration (``_LOCAL_PARENTS``).
_PARAM_PARENTS = frozenset(
    {
        "parameters",
        "typed_parameter",
        "default_parameter",
        "typed_default_parameter",
        "lambda_parameters",
        "list_splat_pattern",
        "dictionary_splat_pattern",
        "for_in_clause",
        "formal_parameters",
        "required_parameter",
        "optional_parameter",
        "assignment_pattern",
        "rest_pattern",
        "object_pattern",
        "object_assignment_pattern",
        "arrow_function",
        "catch_clause",
    }
)
_LOCAL_PARENTS = frozenset({"variable_declarator", "assignment"})


def _binds(node: Any, parents: frozenset[str]) -> bool:
    parent = node.parent()
    return parent is not None and parent.kind() in parents


def scoped_rename_rules(
    pairs: list[tuple[str, str]], lang: str, roots: list[Any] | None = None
) -> list[tuple[list[tuple[dict[str, Any], str]], int]]:
    """The candidate rule sets for a scoped rename, most specific first: each a list of
    (rule, fix) and the example sites it should make; ``synth.core`` keeps the first that
    reproduces every example. Empty when the examples are no plain rename, or rename no
    binder (a parameter, a `catch`, a local's declaration: then the name is no variable of
    a scope, and the ordinary search decides)."""
    found = renames(pairs, lang, roots)
    if found is None:
        return []
    names, nodes = found
    sites = len(nodes)
    binders = sum(_binds(n, _PARAM_PARENTS) for n in nodes)
    locals_ = sum(_binds(n, _LOCAL_PARENTS) for n in nodes)
    out: list[tuple[list[tuple[dict[str, Any], str]], int]] = []
    if binders == sites and not any(n.kind() in _LANG[lang].get("shorthands", ()) for n in nodes):
        out.append(([(renamed_unused(x, lang), y) for x, y in names.items()], sites))
    for locals_too in (False, True):
        if not (
            binders if not locals_too else locals_ and any(_local_binders(x, lang) for x in names)
        ):
            continue
        plain = [(renamed_with_uses(x, lang, locals_too), y) for x, y in names.items()]
        # With the shorthands of the scopes first (`{ err }` -> `{ err: error }`); without,
        # where an example keeps one (wave 3j, synth18).
        shorthands = [
            (rule, f"{x}: {y}")
            for x, y in names.items()
            for rule in shorthands_renamed(x, lang, locals_too)
        ]
        if shorthands:
            # The rules apply in turn: the shorthand uses before the binder is renamed (their
            # scope is found by it), the destructuring binders after the uses they bind.
            uses = [s for s in shorthands if s[0]["kind"] == "shorthand_property_identifier"]
            binders_ = [s for s in shorthands if s not in uses]
            out.append((uses + plain + binders_, sites))
        out.append((plain, sites))
    return out


def _go_rust_locals(name: str, lang: str) -> list[dict[str, Any]]:
    """Go and Rust: the blocks that declare ``name`` as a local (``name := …``, ``var name
    …``, ``let name = …``) and the loops that bind it (``for name in …``, ``for name :=
    range …``)."""
    ident = _named("identifier", name)
    deep = {**ident, "stopBy": "end"}
    if lang == "go":
        declares = {
            "any": [
                {"kind": "short_var_declaration", "has": {"field": "left", "has": ident}},
                {
                    "kind": "var_declaration",
                    "has": {"kind": "var_spec", "has": {"field": "name", **ident}},
                },
            ]
        }
        return [
            # the statements directly, or in the `statement_list` newer grammars put there
            {
                "kind": "block",
                "has": {"any": [declares, {"kind": "statement_list", "has": declares}]},
            },
            {
                "kind": "for_statement",
                "has": {"kind": "range_clause", "has": {"field": "left", "has": ident}},
            },
        ]
    if lang == "rust":
        return [
            {
                "kind": "block",
                "has": {
                    "kind": "let_declaration",
                    "has": {"field": "pattern", "any": [ident, {"has": deep}]},
                },
            },
            {"kind": "for_expression", "has": {"field": "pattern", "any": [ident, {"has": deep}]}},
        ]
    if lang == "python":
        return [{"kind": "for_statement", "has": {"field": "left", "any": [ident, {"has": deep}]}}]
    return []


def _unannotated(rule: Any) -> Any:
    """``rule`` with each deep search for the binder's identifier (``stopBy: end``) kept out
    of type annotations."""
    if isinstance(rule, list):
        return [_unannotated(x) for x in rule]
    if not isinstance(rule, dict):
        return rule
    out = {k: _unannotated(v) for k, v in rule.items()}
    if out.get("kind") == "identifier" and out.get("stopBy") == "end":
        out["not"] = {"inside": {"kind": "type", "stopBy": "end"}}
    return out


# Where an identifier declares a variable (its parent, or the parent's parent): a parameter,
# a named result, a declarator, a `let`, a loop's variable, an assignment's target.
_DECLARING = frozenset(
    {
        "parameter_declaration",
        "variadic_parameter_declaration",
        "parameters",
        "typed_parameter",
        "default_parameter",
        "typed_default_parameter",
        "lambda_parameters",
        "formal_parameters",
        "required_parameter",
        "optional_parameter",
        "closure_parameters",
        "parameter",
        "variable_declarator",
        "var_spec",
        "const_spec",
        "short_var_declaration",
        "range_clause",
        "let_declaration",
        "for_expression",
        "for_statement",
        "for_in_clause",
        "catch_clause",
        "assignment",
    }
)


def declared_in(name: str, roots: list[Any]) -> bool:
    """``name`` is declared as a variable somewhere in ``roots`` (a parameter, a named result,
    a local, a loop variable, an assignment's target): renamed there, the rename is of a
    variable, which :func:`shadowed` must not keep it from (gin's named result `isSetted`
    -> `isSet`, its `isSetted, err := …` of another file renamed too)."""
    for root in roots:
        for n in root.find_all(kind="identifier", regex="^" + re.escape(name) + "$"):
            up = n.parent()
            if up is not None and up.kind() in _BINDING_WRAPPERS:
                up = up.parent()  # `a, err := …`, `for (a, b) in …`
            if up is not None and up.kind() in _DECLARING:
                return True
    return False


# A list of names declared together, between the names and their declaration (not a type,
# a path or an annotation: `err: glob::Error` declares `err`, not `glob`).
_BINDING_WRAPPERS = frozenset(
    {"expression_list", "pattern_list", "tuple_pattern", "list_pattern", "identifier_list"}
)


def shadowed(name: str, lang: str) -> dict[str, Any] | None:
    """Wave 3t: a fragment for a rename of ``name``: not inside a scope that binds ``name``
    itself — a function's or closure's parameter, a loop variable, a local — where the name
    is another variable (ripgrep's crate `glob` renamed, `for glob in globs` kept; warp's
    `body::concat`, a `let concat = …` kept; httprouter's `package router`, a test's `router
    := New()` kept). None for a language without scopes here."""
    if lang not in _LANG:
        return None
    scopes = _binders(name, lang) + _local_binders(name, lang) + _go_rust_locals(name, lang)
    scopes = [sc for sc in scopes if _valid(str(sc["kind"]), lang)]
    if not scopes:
        return None
    if lang == "python":
        # A parameter's annotation (`opts: _HookSpecOpts`) binds nothing: pluggy's type
        # `_HookSpecOpts` renamed there too.
        scopes = [_unannotated(sc) for sc in scopes]
    # Only a bare identifier can be the variable (a field's or a type's name cannot).
    inside: dict[str, Any] = {"kind": "identifier", "inside": {"stopBy": "end", "any": scopes}}
    if lang == "python":
        # An attribute's name (`o.calls`) and a keyword's (`f(calls=…)`) are no variable.
        names = [("attribute", "attribute"), ("keyword_argument", "name")]
        member = {
            "any": [{"inside": {"kind": k, "field": f, "stopBy": "neighbor"}} for k, f in names]
        }
        inside = {"all": [inside, {"not": member}]}
    if lang == "rust":
        # A path's segment (`glob::Error`, `body::concat`) names a module or an item,
        # never a local.
        paths = ("scoped_identifier", "scoped_type_identifier")
        segment = {"inside": {"any": [{"kind": k} for k in paths], "stopBy": "neighbor"}}
        inside = {"all": [inside, {"not": segment}]}
    return {"not": inside}
