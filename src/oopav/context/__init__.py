"""oopav.context: the repo map (tree-sitter tags ranked by PageRank) and the retrieval memory
of finished sessions (FAISS).

Names are resolved on first use (PEP 562), so ``import oopav.context`` loads neither
tree-sitter, numpy nor faiss; handlers that never build a map or query the memory pay nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "RepoMap": "oopav.context.repomap",
    "Mentions": "oopav.context.repomap",
    "build_repo_map": "oopav.context.repomap",
    "repo_map_for_instruction": "oopav.context.repomap",
    "mentions_from_instruction": "oopav.context.repomap",
    "estimate_tokens": "oopav.context.repomap",
    "list_files": "oopav.context.repomap",
    "tree_key": "oopav.context.repomap",
    "pagerank": "oopav.context.repomap",
    "Tag": "oopav.context.tags",
    "extract_tags": "oopav.context.tags",
    "extract_file_tags": "oopav.context.tags",
    "SessionMemory": "oopav.context.memory",
    "SessionRecord": "oopav.context.memory",
    "Hit": "oopav.context.memory",
    "Embedder": "oopav.context.embedders",
    "HashingEmbedder": "oopav.context.embedders",
    "SentenceTransformerEmbedder": "oopav.context.embedders",
}

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "Hit",
    "Mentions",
    "RepoMap",
    "SentenceTransformerEmbedder",
    "SessionMemory",
    "SessionRecord",
    "Tag",
    "build_repo_map",
    "estimate_tokens",
    "extract_file_tags",
    "extract_tags",
    "list_files",
    "mentions_from_instruction",
    "pagerank",
    "repo_map_for_instruction",
    "tree_key",
]

if TYPE_CHECKING:
    from oopav.context.embedders import Embedder, HashingEmbedder, SentenceTransformerEmbedder
    from oopav.context.memory import Hit, SessionMemory, SessionRecord
    from oopav.context.repomap import (
        Mentions,
        RepoMap,
        build_repo_map,
        estimate_tokens,
        list_files,
        mentions_from_instruction,
        pagerank,
        repo_map_for_instruction,
        tree_key,
    )
    from oopav.context.tags import Tag, extract_file_tags, extract_tags


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oopav.context' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
