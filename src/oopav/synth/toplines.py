"""A directive added at the top of a file (wave 3u): pure, no I/O.

JavaScript's `'use strict';` (`'use client';`, …) and Rust's inner attributes (`#![deny(warnings)]`)
belong to a file, not to a statement: a commit adds one at the top of each file, or right below
the file's header comment (its licence). Such a line is no rewrite of one syntax node, and the
file's first node is often a comment, which no insertion site anchors to, so these examples
failed ("the change at line 1 is not a rewrite of one syntax node": supertest 64c8e797,
express e71014f5).

:func:`top_rules` reads every changed example as the same directive added among the file's
leading comments (and nothing else changed), and tries, in order, the places a commit puts it:

1. **at the top of the file**: before the file's first node, comment or code (a file that
   opens with `#!` gets nothing);
2. **below the header comment**: after the file's first comment, of the opener every example's
   header has (`/*!`, `/**`, `/*`, `//`), the header's range grown over (``expandStart``) so
   that the lines between are rewritten to the examples' layout; a file that opens with code
   gets it at the top.

Each with the blank-line layout around the directive (one blank line, or none) that every
example shows; a file that already holds the directive among its top-level nodes is left alone.
The first alternative that reproduces every example is the rule.

A file's leading blank lines lie before its first token, where no rule can write: an example
that starts with them is reproduced up to them (a note says so), provided another example
shows the layout exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from oopav.synth.sites import COMMENT_KINDS, has_error, parse

ROOT = {"javascript": "program", "typescript": "program", "tsx": "program", "rust": "source_file"}

_JS_KINDS = [
    "comment",
    "expression_statement",
    "import_statement",
    "export_statement",
    "lexical_declaration",
    "variable_declaration",
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "if_statement",
    "for_statement",
    "for_in_statement",
    "while_statement",
    "do_statement",
    "try_statement",
    "switch_statement",
    "throw_statement",
    "labeled_statement",
    "statement_block",
    "empty_statement",
]
_TS_KINDS = [
    *_JS_KINDS,
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "abstract_class_declaration",
    "ambient_declaration",
    "module",
    "internal_module",
    "function_signature",
    "import_alias",
]
# What a file may open with: its first node is one of these (a kind for the CLI).
TOP_KINDS: dict[str, list[str]] = {
    "javascript": _JS_KINDS,
    "typescript": _TS_KINDS,
    "tsx": _TS_KINDS,
    "rust": [
        "line_comment",
        "block_comment",
        "inner_attribute_item",
        "attribute_item",
        "use_declaration",
        "extern_crate_declaration",
        "mod_item",
        "function_item",
        "struct_item",
        "enum_item",
        "union_item",
        "impl_item",
        "trait_item",
        "const_item",
        "static_item",
        "type_item",
        "macro_definition",
        "macro_invocation",
        "foreign_mod_item",
    ],
}

_OPENERS = ("/*!", "/**", "/*", "//!", "//")


def _directive(node: Any, lang: str) -> bool:
    """``node`` is a file-level directive: a string statement (JS/TS), an inner attribute
    (Rust)."""
    if lang == "rust":
        return bool(node.kind() == "inner_attribute_item")
    if node.kind() != "expression_statement":
        return False
    return re.fullmatch(r"""(['"])[^'"\n\\]*\1\s*;?""", node.text()) is not None


def _added(before: str, after: str, lang: str) -> str | None:
    """The directive ``after`` adds to ``before`` among its leading comments, when that is
    all it changes (modulo blank lines around it); else None."""
    root = parse(after, lang)
    if has_error(root) or has_error(parse(before, lang)):
        return None
    for child in root.children():
        if not child.is_named():
            continue
        if child.kind() in COMMENT_KINDS:
            continue
        if not _directive(child, lang):
            return None
        r = child.range()
        rest = after[: r.start.index] + after[r.end.index :]
        squash = re.compile(r"\s+")
        if squash.sub("", rest) != squash.sub("", before):
            return None
        # The lines themselves, not only their tokens: only blank lines may differ.
        if [ln for ln in rest.split("\n") if ln.strip()] != [
            ln for ln in before.split("\n") if ln.strip()
        ]:
            return None
        return child.text().strip()
    return None


def _rx(text: str) -> str:
    """``text`` as a literal in ast-grep's (Rust) regex syntax."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)


def _opener(text: str) -> str | None:
    return next((o for o in _OPENERS if text.startswith(o)), None)


def headers(befores: Sequence[str], lang: str) -> str | None:
    """The opener every example's first comment has (None: they differ, or one has none)."""
    openers = set()
    for before in befores:
        first = next((c for c in parse(before, lang).children() if c.is_named()), None)
        if first is None or first.kind() not in COMMENT_KINDS:
            continue
        openers.add(_opener(first.text()))
    return openers.pop() if len(openers) == 1 and None not in openers else None


def _already(directive: str, lang: str) -> dict[str, Any]:
    """A file that holds ``directive`` among its top-level nodes (either quote in JS)."""
    if lang == "rust":
        regex = "^" + r"\s*".join(_rx(p) for p in re.split(r"\s+", directive)) + "$"
        has = {"kind": "inner_attribute_item", "regex": regex}
    else:
        body = _rx(directive.strip(";").strip()[1:-1])
        has = {"kind": "expression_statement", "regex": f"^['\"]{body}['\"]"}
    return {"not": {"inside": {"kind": ROOT[lang], "stopBy": "neighbor", "has": has}}}


Step = tuple[dict[str, Any], str, dict[str, Any] | None]


def candidates(directive: str, lang: str, header: str | None) -> list[tuple[str, list[Step]]]:
    """(description, rules) each, in the order tried; a rule is (rule, fix, expand_start)."""
    root = {"kind": ROOT[lang], "stopBy": "neighbor"}
    kinds = [{"kind": k} for k in TOP_KINDS[lang]]
    guard = _already(directive, lang)
    comments = ("line_comment", "block_comment") if lang == "rust" else ("comment",)
    no_comment = [{"not": {"kind": k}} for k in comments]
    out: list[tuple[str, list[Step]]] = []
    first = {"any": kinds, "pattern": "$ANCHOR", "nthChild": 1, "inside": root, "all": [guard]}
    for below in ("\n\n", "\n"):
        out.append(("at the top of the file", [(first, directive + below + "$ANCHOR", None)]))
    if header is None:
        return out
    regex = "^" + _rx(header)
    if header == "/*":
        regex += r"[^*!]"
    elif header == "//":
        regex += r"[^/!]"
    if lang == "rust":
        head = {"kind": "block_comment" if header[1] == "*" else "line_comment", "regex": regex}
    else:
        head = {"kind": "comment", "regex": regex}
    second: dict[str, Any] = {
        "any": kinds,
        "pattern": "$ANCHOR",
        "nthChild": 2,
        "inside": root,
        "follows": {**head, "pattern": "$HEAD", "nthChild": 1, "stopBy": "neighbor"},
        "all": [guard],
    }
    if header.startswith("//"):
        # A header of line comments is one node a line: below its first line only where
        # the next node is no comment (a longer header is left alone).
        second["all"] = [guard, *no_comment]
    # A Rust line comment's node holds its line's newline.
    trail = 1 if lang == "rust" and header.startswith("//") else 0
    # A file that opens with code gets it at the top.
    opens_code = {**first, "all": [guard, *no_comment]}
    for above, below in (("\n\n", "\n\n"), ("\n", "\n\n"), ("\n", "\n"), ("\n\n", "\n")):
        fix = "$HEAD" + above[trail:] + directive + below + "$ANCHOR"
        out.append(
            (
                "below the file's header comment",
                [(second, fix, head), (opens_code, directive + below + "$ANCHOR", None)],
            )
        )
    return out


def top_directive(pairs: Sequence[tuple[str, str]], lang: str) -> str | None:
    """The one directive every changed example adds at its top, or None."""
    if lang not in ROOT:
        return None
    found = set()
    for before, after in pairs:
        if before == after:
            continue
        d = _added(before, after, lang)
        if d is None:
            return None
        found.add(d)
    return found.pop() if len(found) == 1 else None


def reproduced(before: str, after: str, got: str) -> tuple[bool, bool]:
    """(right, exactly): ``got`` is ``after``, or is it up to the leading blank lines of
    ``before`` that no rule can edit (right, not exactly)."""
    if got == after:
        return True, True
    lead = before[: len(before) - len(before.lstrip())]
    return bool(lead) and got == lead + after.lstrip(), False
