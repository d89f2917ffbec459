"""Symbol spans: the lines of each function and class of a source file, from the same tree-sitter
tags queries as the repo map (``context/tags.py``), and the choice of which spans to show the
actor of a file too long to show whole (``handlers/actor.py``): whole definitions that name or
contain what the task is about, instead of fixed windows cut mid-function."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from oopav.context.tags import QUERY_FOR_LANGUAGE, tags_language

# Definition categories that are spans worth showing whole (constants are one line).
SPAN_CATEGORIES = ("function", "method", "class", "interface", "module", "type")


class Span(msgspec.Struct, frozen=True):
    """A definition's lines, 0-based, ``end`` exclusive (decorators and doc comments that the
    grammar attaches to the definition included)."""

    name: str
    category: str
    start: int
    end: int


def symbol_spans(path: str, source: bytes) -> list[Span]:
    """The function and class spans of ``source`` (by ``path``'s language), in file order;
    empty when oopav has no tags query for the language or the file does not parse."""
    lang = tags_language(path)
    if lang is None or lang not in QUERY_FOR_LANGUAGE:
        return []
    from tree_sitter import QueryCursor

    from oopav.context.parsing import parse
    from oopav.context.tags import _query

    try:
        tree = parse(source, lang)
        captures: dict[str, list[Any]] = QueryCursor(_query(lang)).captures(tree.root_node)
    except Exception:  # an aid: a file that cannot be read this way is shown by windows
        return []
    out: dict[tuple[int, int], Span] = {}
    for cap in sorted(captures):
        parts = cap.split(".")
        if len(parts) != 3 or parts[:2] != ["name", "definition"]:
            continue
        if parts[2] not in SPAN_CATEGORIES:
            continue
        for node in captures[cap]:
            owner = node.parent
            if owner is None:
                continue
            # `@decorator\ndef f()` is one unit: the decorated definition holds the decorators.
            if owner.parent is not None and owner.parent.type == "decorated_definition":
                owner = owner.parent
            start, end = owner.start_point[0], owner.end_point[0] + 1
            name = source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
            out.setdefault((start, end), Span(name, parts[2], start, end))
    return sorted(out.values(), key=lambda s: (s.start, -s.end))


def spans_to_show(
    spans: list[Span], rows: list[str], idents: tuple[str, ...], budget: int
) -> list[tuple[int, int]]:
    """0-based [start, end) line ranges to show, at most ``budget`` lines in all: the
    innermost definitions named by one of ``idents`` or containing a line that mentions one,
    named ones first, each whole or not at all; merged and in file order. Empty when no
    definition qualifies (the caller falls back to windows around the mentions)."""
    names = [i.split(".")[-1] for i in idents if i]
    if not names or not spans:
        return []
    pats = [re.compile(r"\b" + re.escape(n) + r"\b") for n in names]
    hits = [n for n, line in enumerate(rows) if any(p.search(line) for p in pats)]

    def innermost(line: int) -> Span | None:
        inside = [s for s in spans if s.start <= line < s.end]
        return min(inside, key=lambda s: s.end - s.start) if inside else None

    chosen: list[Span] = [s for s in spans if s.name in names]
    for h in hits:
        s = innermost(h)
        if s is not None and s not in chosen:
            chosen.append(s)
    picked: list[tuple[int, int]] = []
    used = 0
    for s in chosen:
        if any(a <= s.start and s.end <= b for a, b in picked):
            continue  # already inside a picked span
        size = s.end - s.start
        if used + size > budget:
            continue
        picked = [(a, b) for a, b in picked if not (s.start <= a and b <= s.end)]
        picked.append((s.start, s.end))
        used = sum(b - a for a, b in picked)
    picked.sort()
    merged: list[tuple[int, int]] = []
    for a, b in picked:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
