"""tree-sitter parsing shared by the observer (parse health), the sandbox (pre-emit
validation: no new error nodes) and the verifier (changed files parse)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import PurePath
from typing import Any

from oopav.events.catalog import Finding

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".rb": "ruby",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
}


def language_for_path(path: str | PurePath) -> str | None:
    """The tree-sitter language of a file by its extension, or None when oopav does not parse it."""
    return EXTENSIONS.get(PurePath(path).suffix.lower())


@lru_cache(maxsize=64)
def parser_for(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]  # the pack types names as a Literal; callers check them


def parse(source: bytes, language: str) -> Any:
    return parser_for(language).parse(source)


def error_nodes(source: bytes, language: str, limit: int = 50) -> list[tuple[int, int, str]]:
    """(line, column, kind) of ERROR and MISSING nodes, 1-based lines, document order."""
    tree = parse(source, language)
    root = tree.root_node
    if not root.has_error:
        return []
    out: list[tuple[int, int, str]] = []
    stack = [root]
    while stack and len(out) < limit:
        node = stack.pop()
        if not node.has_error and not node.is_missing:
            continue
        if node.type == "ERROR" or node.is_missing:
            kind = "missing " + node.type if node.is_missing else "syntax error"
            out.append((node.start_point[0] + 1, node.start_point[1], kind))
            continue
        stack.extend(reversed(node.children))
    return sorted(out)


def parse_findings(path: str, source: bytes, language: str | None = None) -> list[Finding]:
    """Parse errors of one file as findings; empty when the file parses or is not parsed."""
    lang = language or language_for_path(path)
    if lang is None:
        return []
    return [
        Finding(path=path, line=line, kind="parse_error", message=f"{kind} at column {col}")
        for line, col, kind in error_nodes(source, lang)
    ]
