"""Targeted evidence for a red session (issue 17 §1): what the instruction names, looked up.

Round 1 looks for the files the instruction names (exact paths, else the same file name
anywhere in the tree) and the identifiers it mentions (whole words, in text files). Round 2
widens the search — file stems and identifiers case-insensitively, as substrings — so that a
second round is new evidence, not the same scan again. Reads files only; deterministic
(sorted traversal, bounded sizes)."""

from __future__ import annotations

import re
from pathlib import Path

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


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    while stack and len(out) < MAX_FILES:
        d = stack.pop()
        try:
            entries = sorted(d.iterdir(), key=lambda p: p.name, reverse=True)
        except OSError:
            continue
        for p in entries:
            if p.is_symlink():
                continue
            if p.is_dir():
                if p.name not in SKIP_DIRS:
                    stack.append(p)
            elif p.is_file():
                out.append(p)
    return sorted(out)


def _text(p: Path) -> str | None:
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            return None
        data = p.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", "replace")


def _file_item(root: Path, files: list[Path], path: str, fuzzy: bool) -> EvidenceItem:
    target = root / path
    if target.is_file():
        text = _text(target) or ""
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
    if target.is_dir():
        return EvidenceItem(kind="file", target=path, found=True, summary=f"{path}/ is a directory")
    name = Path(path).name
    stem = Path(path).stem.lower()
    hits = [
        str(f.relative_to(root))
        for f in files
        if f.name == name or (fuzzy and stem and stem in f.stem.lower())
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


def _symbol_item(root: Path, texts: list[tuple[str, str]], name: str, fuzzy: bool) -> EvidenceItem:
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


def gather(root: Path, instruction: str, round_: int) -> list[EvidenceItem]:
    """The targeted evidence of one round (1: exact, 2 and later: widened)."""
    fuzzy = round_ >= 2
    files = _files(root)
    items = [_file_item(root, files, p, fuzzy) for p in mentioned_paths(instruction)]
    symbols = mentioned_symbols(instruction)
    if symbols:
        texts = []
        for f in files:
            text = _text(f)
            if text is not None:
                texts.append((str(f.relative_to(root)), text))
        items += [_symbol_item(root, texts, s, fuzzy) for s in symbols]
    return items
