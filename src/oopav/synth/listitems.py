"""Helpers shared by the list-item mechanisms (synth/appends.py, synth/neighbours.py): a
list's items, the comment kinds a rule must not take for an item, and how a separator's
layout is written in a rule."""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.commas import COMMENTS

COMMENT_KINDS = frozenset({"comment", "line_comment", "block_comment"})


def list_items(node: SgNode) -> list[SgNode]:
    return [c for c in node.children() if c.is_named() and c.kind() not in COMMENT_KINDS]


def comment_rule(lang: str) -> dict[str, Any]:
    # A fresh dict each time: a shared one is written as a YAML anchor.
    kinds = COMMENTS.get(lang, ("comment",))
    return {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}


def ws_regex(text: str) -> str:
    """Indentation as a regex (Rust's: a tab as ``\\t``)."""
    return text.replace("\t", r"\t")


def relative_sep(sep: str) -> str:
    """A multi-line separator without its indentation (ast-grep indents the fix's further
    lines to the anchor's)."""
    return re.sub(r"\n[ \t]*$", "\n", sep)
