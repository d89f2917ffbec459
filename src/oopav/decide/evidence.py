"""Targeted evidence for a red session (issue 17 §1): what the instruction names, looked up.

Round 1 looks for the files the instruction names (exact paths, else the same file name
anywhere in the tree) and the identifiers it mentions (whole words, in text files). Round 2
widens the search — file stems and identifiers case-insensitively, as substrings — so that a
second round is new evidence, not the same scan again. Reads files only, through the
workspace interface it is given (``RepoFiles``); deterministic
(sorted traversal, bounded sizes)."""

from __future__ import annotations

import re
from pathlib import Path

from oopav.decide.files import RepoFiles
from oopav.decide.orient import mentioned_paths
from oopav.events.catalog import EvidenceItem

SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", "target", "dist", "build", ".tox"}
)
MAX_FILES = 5000
MAX_FILE_BYTES = 512 * 1024
MAX_LOCATIONS = 10
_IDENT = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`|\b([a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w+)\b")
_COMMON = frozenset({"snake_case", "camel_case"})


def mentioned_symbols(instruction: str) -> list[str]:
    """Identifiers an instruction names: backticked names, snake_case and camelCase words, in
    order, without duplicates and without the file names among them."""
    paths = set(mentioned_paths(instruction))
    seen: dict[str, None] = {}
    for m in _IDENT.finditer(instruction):
        name = m.group(1) or m.group(2)
        if name and name not in _COMMON and not any(name in p for p in paths):
            seen.setdefault(name, None)
    return list(seen)


def _files(root: RepoFiles, rel: str = ".") -> list[str]:
    return root.files(rel, skip=SKIP_DIRS, limit=MAX_FILES)


def _text(root: RepoFiles, rel: str) -> str | None:
    data = root.read_bytes(rel, MAX_FILE_BYTES)
    if data is None or b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", "replace")


def _file_item(root: RepoFiles, files: list[str], path: str, fuzzy: bool) -> EvidenceItem:
    if root.is_file(path):
        text = _text(root, path) or ""
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        defs = [
            f"{path}:{i}"
            for i, line in enumerate(text.splitlines(), 1)
            if re.match(r"\s*(def|class|function|fn|func|export)\b", line)
        ]
        return EvidenceItem(
            kind="file",
            target=path,
            found=True,
            summary=f"{path}: {lines} lines, {len(defs)} definitions",
            locations=defs[:MAX_LOCATIONS],
        )
    if root.is_dir(path):
        return EvidenceItem(kind="file", target=path, found=True, summary=f"{path}/ is a directory")
    name = Path(path).name
    stem = Path(path).stem.lower()
    hits = [
        f
        for f in files
        if Path(f).name == name or (fuzzy and stem and stem in Path(f).stem.lower())
    ]
    if hits:
        return EvidenceItem(
            kind="file",
            target=path,
            found=True,
            summary=f"{path} does not exist; {'similar' if fuzzy else 'same'} name at "
            + ", ".join(hits[:3]),
            locations=hits[:MAX_LOCATIONS],
        )
    return EvidenceItem(
        kind="file", target=path, found=False, summary=f"{path} exists nowhere in the tree"
    )


def _symbol_item(
    root: RepoFiles, texts: list[tuple[str, str]], name: str, fuzzy: bool
) -> EvidenceItem:
    pattern = (
        re.compile(re.escape(name), re.IGNORECASE)
        if fuzzy
        else re.compile(rf"\b{re.escape(name)}\b")
    )
    locations: list[str] = []
    files = 0
    for rel, text in texts:
        found_here = False
        for i, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found_here = True
                if len(locations) < MAX_LOCATIONS:
                    locations.append(f"{rel}:{i}")
        files += found_here
    if locations:
        return EvidenceItem(
            kind="symbol",
            target=name,
            found=True,
            summary=f"`{name}` {'(case-insensitive) ' if fuzzy else ''}in {files} file(s)",
            locations=locations,
        )
    return EvidenceItem(
        kind="symbol", target=name, found=False, summary=f"`{name}` occurs nowhere in the tree"
    )


def gather(root: RepoFiles, instruction: str, round_: int) -> list[EvidenceItem]:
    """The targeted evidence of one round (1: exact, 2 and later: widened)."""
    fuzzy = round_ >= 2
    files = _files(root)
    items = [_file_item(root, files, p, fuzzy) for p in mentioned_paths(instruction)]
    symbols = mentioned_symbols(instruction)
    if symbols:
        texts = []
        for f in files:
            text = _text(root, f)
            if text is not None:
                texts.append((f, text))
        items += [_symbol_item(root, texts, s, fuzzy) for s in symbols]
    return items
