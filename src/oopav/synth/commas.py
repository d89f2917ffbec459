"""Trailing commas (wave 3f, synth-oneshot4): a formatter's "trailing comma after the last
item of every multi-line list" (prettier's `trailingComma: all`, black's magic comma) is one
change made at every nesting depth of a file — ky's 147 sites over 13 files, zod's nested
objects in arrays in calls. The sites the examples show are whole lists (an object, a
parameter list) whose text gains commas at several depths, so no pattern of one list
reaches another; the change is about *where* the comma goes, not which list.

The rule: the last item (not a comment) of a multi-line list whose closing bracket stands
on its own line, with no comma after it, gains one:

```yaml
rule:
  pattern: $A
  nthChild: {position: 1, reverse: true, ofRule: {not: {kind: comment}}}
  not: {any: [{kind: comment}, {precedes: {pattern: ',', stopBy: neighbor}}, …rest items]}
  inside: {any: [{kind: object}, {kind: array}, …], regex: '\\n[ \\t]*[\\)\\]\\}>]$',
           stopBy: neighbor}
fix: $A,
```

over the comma-separated list kinds of the language, less those the examples keep: a kind
with a multi-line list that still lacks the comma in an example's *after* text is left out
(the examples' unchanged code is negative, as everywhere). A list nested in the last item
of another overlaps it, and ast-grep rewrites the outer match only: the same rule follows as
``follow_up: nested`` copies (optional: they may match nothing), each reaching one depth
further. The rule set is kept only when it reproduces every example."""

from __future__ import annotations

import re
from typing import Any

# Comma-separated lists per language (trailing comma allowed after the last item).
LISTS: dict[str, tuple[str, ...]] = {
    "typescript": (
        "object",
        "array",
        "arguments",
        "formal_parameters",
        "type_arguments",
        "type_parameters",
        "named_imports",
        "export_clause",
        "object_pattern",
        "array_pattern",
        "enum_body",
        "tuple_type",
    ),
    "javascript": (
        "object",
        "array",
        "arguments",
        "formal_parameters",
        "named_imports",
        "export_clause",
        "object_pattern",
        "array_pattern",
    ),
    "python": ("argument_list", "parameters", "list", "dictionary", "tuple", "set"),
    "rust": (
        "arguments",
        "parameters",
        "field_initializer_list",
        "field_declaration_list",
        "enum_variant_list",
        "array_expression",
        "tuple_expression",
        "type_arguments",
        "type_parameters",
        "use_list",
    ),
}
LISTS["tsx"] = LISTS["typescript"]
COMMENTS: dict[str, tuple[str, ...]] = {"rust": ("line_comment", "block_comment")}
# Items after which a comma is a syntax error (`...rest,`, `..base,`).
REST: dict[str, tuple[str, ...]] = {
    "typescript": ("rest_pattern",),
    "tsx": ("rest_pattern",),
    "javascript": ("rest_pattern",),
    "python": (),
    "rust": ("base_field_initializer", "remaining_field_pattern"),
}
# What a list's last item may be (the ast-grep CLI needs the kinds a rule matches; the item's
# kind is not what the change is about, so every kind of value, parameter, type and name):
# filtered to the kinds the language's grammar has.
_JS_ITEMS = (
    "identifier shorthand_property_identifier shorthand_property_identifier_pattern "
    "property_identifier private_property_identifier string template_string number true false "
    "null undefined regex this super object array pair pair_pattern spread_element "
    "method_definition call_expression member_expression subscript_expression new_expression "
    "arrow_function function_expression function generator_function class await_expression "
    "binary_expression unary_expression update_expression ternary_expression "
    "parenthesized_expression assignment_expression augmented_assignment_expression "
    "sequence_expression yield_expression as_expression satisfies_expression "
    "non_null_expression type_assertion assignment_pattern object_assignment_pattern "
    "object_pattern array_pattern required_parameter optional_parameter type_identifier "
    "generic_type predefined_type array_type tuple_type union_type intersection_type "
    "object_type function_type constructor_type literal_type nested_type_identifier "
    "type_query index_type_query lookup_type conditional_type template_literal_type "
    "readonly_type optional_type parenthesized_type infer_type type_predicate type_parameter "
    "import_specifier export_specifier enum_assignment jsx_element jsx_self_closing_element "
    "instantiation_expression nested_identifier"
)
ITEMS: dict[str, str] = {
    "typescript": _JS_ITEMS,
    "tsx": _JS_ITEMS,
    "javascript": _JS_ITEMS,
    "python": (
        "identifier string concatenated_string integer float true false none list dictionary "
        "tuple set pair call attribute subscript binary_operator boolean_operator "
        "comparison_operator unary_operator not_operator conditional_expression lambda "
        "keyword_argument list_splat dictionary_splat typed_parameter default_parameter "
        "typed_default_parameter list_splat_pattern dictionary_splat_pattern "
        "parenthesized_expression list_comprehension dictionary_comprehension "
        "set_comprehension await keyword_separator named_expression ellipsis"
    ),
    "rust": (
        "identifier field_identifier scoped_identifier string_literal raw_string_literal "
        "char_literal integer_literal float_literal boolean_literal call_expression "
        "field_expression macro_invocation reference_expression unary_expression "
        "binary_expression closure_expression struct_expression array_expression "
        "tuple_expression index_expression try_expression await_expression block "
        "if_expression match_expression range_expression type_cast_expression parameter "
        "self_parameter field_initializer shorthand_field_initializer field_declaration "
        "enum_variant type_identifier generic_type reference_type scoped_type_identifier "
        "primitive_type tuple_type array_type function_type lifetime "
        "constrained_type_parameter optional_type_parameter use_as_clause scoped_use_list "
        "use_wildcard self unit_expression parenthesized_expression dynamic_type "
        "abstract_type bounded_type negative_literal"
    ),
}
_KNOWN: dict[str, list[str]] = {}


def item_kinds(lang: str) -> list[str]:
    """:data:`ITEMS` of ``lang`` that its grammar has (an unknown kind is a rule error)."""
    if lang not in _KNOWN:
        from ast_grep_py import SgRoot

        root = SgRoot("", lang).root()
        known = []
        for k in ITEMS.get(lang, "").split():
            try:
                root.find_all(kind=k)
            except (RuntimeError, ValueError):
                continue
            known.append(k)
        _KNOWN[lang] = known
    return _KNOWN[lang]


# Where ES5 allowed a trailing comma (prettier's `trailingComma: es5`).
ES5 = frozenset({"object", "array"})
ES5_LANGS = frozenset({"javascript", "typescript", "tsx"})
# Copies of the rule, one nesting depth each.
DEPTH = 8
_CLOSING = r"\n[ \t]*[\)\]\}>]$"
_LINE_END = re.compile(r"^[ \t]*(?://.*|#.*)?$")
_CLOSING_LINE = re.compile(r"^[ \t]*[\)\]\}>]")


def only_trailing_commas(before: str, after: str) -> bool:
    """``after`` is ``before`` with commas inserted, each at the end of a line (a trailing
    comment aside) whose next line starts with a closing bracket. Line by line: linear in
    the file's size."""
    bl, al = before.split("\n"), after.split("\n")
    if len(bl) != len(al):
        return False
    inserted = False
    for i, (b, a) in enumerate(zip(bl, al, strict=True)):
        if a == b:
            continue
        k = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(b))
        if a[k : k + 1] != "," or a[k + 1 :] != b[k:] or not _LINE_END.match(b[k:]):
            return False
        if i + 1 >= len(bl) or not _CLOSING_LINE.match(bl[i + 1]):
            return False
        inserted = True
    return inserted


def comma_rule(lang: str, kinds: list[str]) -> dict[str, Any]:
    comments = COMMENTS.get(lang, ("comment",))

    def comment() -> dict[str, Any]:
        # A fresh dict each time: a shared one is written as a YAML anchor.
        if len(comments) == 1:
            return {"kind": comments[0]}
        return {"any": [{"kind": k} for k in comments]}

    excluded: list[dict[str, Any]] = [
        comment(),
        {"precedes": {"pattern": ",", "stopBy": "neighbor"}},
    ]
    for k in REST.get(lang, ()):
        excluded += [{"kind": k}, {"has": {"kind": k, "stopBy": "neighbor"}}]
    return {
        "pattern": "$A",
        "nthChild": {"position": 1, "reverse": True, "ofRule": {"not": comment()}},
        "not": {"any": excluded},
        "inside": {
            **({"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}),
            "regex": _CLOSING,
            "stopBy": "neighbor",
        },
    }


def trailing_comma_rule(
    pairs: list[tuple[str, str]], lang: str, free: tuple[bool, ...] = ()
) -> tuple[dict[str, Any], int] | None:
    """The trailing-comma rule (ast-grep's rule object) and the example sites it makes, when
    every changed example only gains trailing commas; else None. ``synth.core`` builds the
    rule set from it (the rule and ``DEPTH - 1`` nested copies) and keeps it only when the
    set reproduces every example (built there: this module is below ``core``). ``free[i]``:
    pair ``i`` is a partial example (wave 3h synth9): the lists its after text leaves without
    a comma are the ones left for the rule, not kept ones."""
    from oopav.sandbox.astgrep import Rule, rewrite_source
    from oopav.synth.sites import parse

    kinds = list(LISTS.get(lang, ()))
    changed = [(b, a) for b, a in pairs if b != a]
    if not kinds or not changed or not all(only_trailing_commas(b, a) for b, a in changed):
        return None
    # The examples' kept lists: a kind still without its comma after the change is not one
    # the change is about.
    probe = comma_rule(lang, kinds)
    kept = {
        p.kind()
        for n, (_, a) in enumerate(pairs)
        if not (n < len(free) and free[n])
        for m in parse(a, lang).find_all(**probe)
        if (p := m.parent()) is not None
    }
    kinds = [k for k in kinds if k not in kept]
    items = item_kinds(lang)
    if not kinds or not items:
        return None
    # Which lists: a formatter's setting is one of two families, and the kinds the examples
    # gave a comma say which. JavaScript's ES5 allowed a trailing comma in object and array
    # literals only (prettier's `es5`: zod wrote them there, not in a call's arguments nor
    # an import list); a parameter list or any other list gaining one means every list
    # (`all`: ky's `options: TimeoutOptions,`). Elsewhere every list.
    shown: set[str] = set()
    probe = {"any": [{"kind": k} for k in items], **comma_rule(lang, kinds)}
    for b, _a in changed:
        text = b
        for _ in range(DEPTH):
            found = parse(text, lang).find_all(**probe)
            shown |= {p.kind() for m in found if (p := m.parent()) is not None}
            if not found:
                break
            text = rewrite_source(text, Rule(id="c", language=lang, rule=probe, fix="$A,"))[0]
    if not shown:
        return None
    if lang in ES5_LANGS and shown <= ES5:
        kinds = [k for k in kinds if k in ES5]
    rule = {"any": [{"kind": k} for k in items], **comma_rule(lang, kinds)}
    return rule, sum(a.count(",") - b.count(",") for b, a in changed)
