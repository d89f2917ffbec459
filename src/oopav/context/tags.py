"""Definitions and references of a source file, from tree-sitter tags queries.

The queries ship with oopav under ``queries/<language>-tags.scm`` (tree-sitter-language-pack
0.13 bundles grammars but no tags queries). They follow the tree-sitter tags convention: a
capture named ``name.definition.<category>`` or ``name.reference.<category>`` on the node that
holds the identifier.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import msgspec

from oopav.context.parsing import language_for_path, parse

# Parser language -> query file stem. tsx shares TypeScript's node types, so its query too.
QUERY_FOR_LANGUAGE: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "typescript",
    "tsx": "typescript",
    "java": "java",
    "go": "go",
    "rust": "rust",
}

# Signatures longer than this are cut: minified or generated code must not eat the budget.
MAX_CODE_CHARS = 100

TagKind = Literal["def", "ref"]


class Tag(msgspec.Struct, frozen=True, array_like=True):
    """One definition or reference. ``line`` is 0-based; ``code`` is the definition's source
    line (right-stripped, cut to ``MAX_CODE_CHARS``) and empty for references."""

    name: str
    kind: TagKind
    category: str
    line: int
    code: str = ""


def tags_language(path: str) -> str | None:
    """The parser language of ``path`` when oopav has a tags query for it, else None."""
    lang = language_for_path(path)
    return lang if lang in QUERY_FOR_LANGUAGE else None


def _query_text(language: str) -> str:
    stem = QUERY_FOR_LANGUAGE[language]
    return (
        resources.files("oopav.context")
        .joinpath("queries", f"{stem}-tags.scm")
        .read_text(encoding="utf-8")
    )


@lru_cache(maxsize=1)
def queries_fingerprint() -> str:
    """A hash of every shipped query: a cache of extracted tags is only valid for these."""
    h = hashlib.sha256()
    for lang in sorted(set(QUERY_FOR_LANGUAGE.values())):
        h.update(lang.encode())
        h.update(_query_text(lang).encode())
    return h.hexdigest()[:16]


@lru_cache(maxsize=16)
def _query(language: str) -> Any:
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language(language), _query_text(language))  # type: ignore[arg-type]  # the pack types names as a Literal; callers check them


def extract_tags(source: bytes, language: str) -> list[Tag]:
    """Definitions and references in ``source``, sorted by (line, kind, name, category).

    A reference captured at the very node of a definition is dropped: the generic
    ``(type_identifier) @name.reference.type`` patterns also match the name of the type being
    defined, and a file referencing its own definition would only add a self-loop to the graph.
    """
    if language not in QUERY_FOR_LANGUAGE:
        return []
    from tree_sitter import QueryCursor

    tree = parse(source, language)
    captures: dict[str, list[Any]] = QueryCursor(_query(language)).captures(tree.root_node)
    lines = source.split(b"\n")
    defs: dict[int, Tag] = {}
    refs: dict[int, Tag] = {}
    # Capture names are iterated sorted so that a node caught by two patterns keeps the same
    # category on every run.
    for cap in sorted(captures):
        parts = cap.split(".")
        if len(parts) != 3 or parts[0] != "name" or parts[1] not in ("definition", "reference"):
            continue
        kind: TagKind = "def" if parts[1] == "definition" else "ref"
        target = defs if kind == "def" else refs
        for node in captures[cap]:
            if node.start_byte in target:
                continue
            name = source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
            row = node.start_point[0]
            code = ""
            if kind == "def":
                code = lines[row].decode("utf-8", errors="replace").rstrip()[:MAX_CODE_CHARS]
            target[node.start_byte] = Tag(name, kind, parts[2], row, code)
    out = list(defs.values()) + [t for b, t in refs.items() if b not in defs]
    out.sort(key=lambda t: (t.line, t.kind, t.name, t.category))
    return out


def extract_file_tags(path: str, source: bytes) -> list[Tag]:
    """Tags of a file by its extension; empty when oopav has no tags query for it."""
    lang = tags_language(path)
    return extract_tags(source, lang) if lang else []
