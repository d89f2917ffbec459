"""Residuals of a rename: after a change that renames an identifier, the places the old name
still appears that the change did not cover — another language (a C extension exporting the
old name), docs, strings, docstrings, comments.

Pure: a unified diff in, the (old, new) pairs out; file texts in, the occurrences out. The
verifier's residuals gate (``handlers/support/gates.py``) reads the files and reports (or,
with ``policy.residuals: fail``, fails on) what these find."""

from __future__ import annotations

import keyword
import re
from collections import Counter
from dataclasses import dataclass

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINES = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|fn|func|function|struct|enum)\s+([A-Za-z_]\w*)"
)
MIN_NAME = 4  # shorter names (x, id, url) are too common to chase
MAX_SHOWN = 30


@dataclass(frozen=True)
class Residual:
    path: str
    line: int
    text: str
    old: str
    new: str

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _substitution(removed: str, added: str) -> tuple[str, str] | None:
    """(old, new) when ``added`` is ``removed`` with one identifier replaced (every occurrence
    of it on the line), else None."""
    a, b = _IDENT.findall(removed), _IDENT.findall(added)
    if len(a) != len(b) or a == b:
        return None
    pairs = {(x, y) for x, y in zip(a, b, strict=True) if x != y}
    if len(pairs) != 1:
        return None
    old, new = next(iter(pairs))
    if old in b or len(old) < MIN_NAME or keyword.iskeyword(old) or keyword.iskeyword(new):
        return None
    # The rest of the line must be the same text, not just the same identifiers.
    if re.sub(rf"\b{re.escape(old)}\b", new, removed) != added:
        return None
    return old, new


def rename_pairs(diff: str) -> list[tuple[str, str]]:
    """The renames a unified diff makes: an identifier replaced by another on removed/added
    line pairs of a hunk, kept when a definition line renames it or two lines agree."""
    votes: Counter[tuple[str, str]] = Counter()
    defined: set[tuple[str, str]] = set()
    removed: list[str] = []
    added: list[str] = []

    def flush() -> None:
        for r, a in zip(removed, added, strict=False):
            pair = _substitution(r, a)
            if pair is None:
                continue
            votes[pair] += 1
            m = _DEFINES.match(r)
            if m and m.group(1) == pair[0]:
                defined.add(pair)
        removed.clear()
        added.clear()

    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            if added:
                flush()
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
        else:
            flush()
    flush()
    olds = Counter(old for old, _ in votes)
    out = [
        p for p, n in votes.items() if (p in defined or n >= 2) and olds[p[0]] == 1
    ]  # an old name replaced by two different names is not one rename
    return sorted(out)


def find_residuals(
    texts: dict[str, str], pairs: list[tuple[str, str]], limit: int = 200
) -> list[Residual]:
    """Every line of ``texts`` (path → content) that still names an old identifier."""
    out: list[Residual] = []
    for old, new in pairs:
        pat = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(old)}(?![A-Za-z0-9_])")
        for path in sorted(texts):
            for no, line in enumerate(texts[path].splitlines(), 1):
                if pat.search(line):
                    out.append(Residual(path, no, line.strip()[:160], old, new))
                    if len(out) >= limit:
                        return out
    return out


def describe(found: list[Residual]) -> str:
    """The residuals for the timeline: per old name, where it remains."""
    by_old: dict[tuple[str, str], list[Residual]] = {}
    for r in found:
        by_old.setdefault((r.old, r.new), []).append(r)
    lines = []
    for (old, new), rs in by_old.items():
        files = sorted({r.path for r in rs})
        lines.append(
            f"`{old}` (renamed to `{new}`) still appears {len(rs)} time(s) in "
            f"{len(files)} file(s): {', '.join(files[:8])}{', …' if len(files) > 8 else ''}"
        )
        lines += [f"- {r.where()}: {r.text}" for r in rs[:MAX_SHOWN]]
    return "\n".join(lines)
