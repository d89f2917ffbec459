"""SEARCH/REPLACE edits: a SEARCH block must match exactly once, starting at a line start,
with indentation exact. Pure functions over strings.

When nothing matches, the hints name the three most similar places. To stay fast on large
files the candidates are first filtered cheaply (shared tokens, similar indentation) and only
the survivors get an edit-distance score.
"""

from __future__ import annotations

import difflib
import re

import msgspec

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]{1,3}")
_MAX_SCORED = 24


class Hint(msgspec.Struct, frozen=True):
    line: int
    text: str
    similarity: float
    note: str = ""


class SearchFailure(Exception):
    """``code`` is ``no_match`` (with ``hints``), ``multiple_matches`` (with ``lines``) or
    ``empty_search``."""

    def __init__(
        self,
        code: str,
        message: str,
        hints: list[Hint] | None = None,
        lines: list[int] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hints = hints or []
        self.lines = lines or []

    def details(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.hints:
            out["similar"] = [msgspec.to_builtins(h) for h in self.hints]
        if self.lines:
            out["lines"] = self.lines
        return out


def normalize(text: str) -> str:
    return text.replace("\r\n", "\n")


def context_hash(text: str) -> str:
    """The short hash of a file's text as the actor's context shows it (line ends normalised):
    a SEARCH/REPLACE block carrying it is refused when the file has changed since."""
    import hashlib

    return hashlib.sha256(normalize(text).encode()).hexdigest()[:8]


def stale_message(path: str, seen: str, now: str, text: str, search: str) -> str:
    """Why a block written against an older text of ``path`` is refused, with what its SEARCH
    looks like in the current text: the unique match quoted, or the nearest candidates."""
    head = (
        f"{path} changed since the text your block was written against (context {seen}; it "
        f"is {now} now); nothing was written."
    )
    text, search = normalize(text), normalize(search)
    matches = find_matches(text, search) if search.strip() else []
    if len(matches) == 1:
        start = text.count("\n", 0, matches[0]) + 1
        lines = search.rstrip("\n").split("\n")
        return (
            f"{head}\nYour SEARCH still matches lines {start}-{start + len(lines) - 1} of the "
            f"current text:\n{_numbered(start, lines)}\nIf that is the place, send the block "
            f"again with @{now}; otherwise read the file first."
        )
    return f"{head}\n{no_match_message(search, similar_lines(text, search))}\nUse @{now}."


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def find_matches(text: str, search: str) -> list[int]:
    """Offsets where ``search`` matches at a line start and ends at a line end."""
    out: list[int] = []
    start = 0
    ends_line = search.endswith("\n")
    while True:
        idx = text.find(search, start)
        if idx < 0:
            return out
        end = idx + len(search)
        if (idx == 0 or text[idx - 1] == "\n") and (
            ends_line or end == len(text) or text[end] == "\n"
        ):
            out.append(idx)
        start = idx + 1


def similar_lines(text: str, search: str, limit: int = 3) -> list[Hint]:
    """The ``limit`` places in ``text`` that look most like the SEARCH block."""
    lines = text.split("\n")
    want = [ln for ln in search.split("\n")]
    while want and not want[-1].strip():
        want.pop()
    first_i = next((i for i, ln in enumerate(want) if ln.strip()), None)
    if first_i is None:
        return []
    first = want[first_i]
    block = "\n".join(want[first_i:])
    n = len(want) - first_i
    tokens = set(_TOKEN.findall(first))
    indent = _indent(first)
    stripped_first = first.strip()
    # Cheap filter: lines sharing tokens with the first SEARCH line, or the same content at
    # another indentation. Score = shared tokens, with a bonus for close indentation.
    ranked: list[tuple[float, int]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        shared = sum(1 for t in tokens if t in line)
        if shared == 0:
            continue
        bonus = 1.0 if abs(_indent(line) - indent) <= 4 else 0.0
        ranked.append((shared + bonus, i))
    ranked.sort(key=lambda p: (-p[0], p[1]))
    # Edit distance only for the best candidates, and a cheap upper bound first.
    scored: list[Hint] = []
    want_tokens = set(_TOKEN.findall(block)) or {""}
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(block)
    for _, i in ranked[:_MAX_SCORED]:
        window = "\n".join(lines[i : i + n])
        matcher.set_seq1(window)
        bound = (matcher.real_quick_ratio() + 1.0) / 2
        if len(scored) >= limit and bound < min(h.similarity for h in scored):
            continue
        # Characters and words together: a short unrelated line can share many characters
        # with a SEARCH line, but rarely its words (`def name(` should find `def other(`).
        have = set(_TOKEN.findall(window))
        recall = sum(1 for t in want_tokens if t in have) / len(want_tokens)
        ratio = (matcher.ratio() + recall) / 2
        note = ""
        if lines[i].strip() == stripped_first and lines[i] != first:
            note = f"same text, indentation {_indent(lines[i])} instead of {indent}"
        scored.append(Hint(line=i + 1, text=window, similarity=round(ratio, 3), note=note))
    scored.sort(key=lambda h: (-h.similarity, h.line))
    return scored[:limit]


MAX_QUOTED_LINES = 12
MAX_LINE_CHARS = 200


def _numbered(start: int, lines: list[str]) -> str:
    width = len(str(start + len(lines) - 1))
    out = []
    for i, line in enumerate(lines[:MAX_QUOTED_LINES]):
        clipped = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [...]"
        out.append(f"{start + i:>{width}} | {clipped}")
    if len(lines) > MAX_QUOTED_LINES:
        out.append(f"[... {len(lines) - MAX_QUOTED_LINES} more line(s) not shown ...]")
    return "\n".join(out)


def no_match_message(search: str, hints: list[Hint]) -> str:
    """What a model needs to fix a missed SEARCH block: the nearest candidate lines quoted
    verbatim with their numbers, and a diff from the SEARCH text to them."""
    msg = "SEARCH block matches nothing (it must match whole lines, indentation exact)."
    if not hints:
        return msg + " No line of the file resembles its first line; read the file again."
    best = hints[0]
    cand = best.text.split("\n")
    end = best.line + len(cand) - 1
    msg += f"\nNearest candidate, lines {best.line}-{end} (similarity {best.similarity:.2f})"
    msg += f", verbatim:\n{_numbered(best.line, cand)}"
    if best.note:
        msg += f"\nNote: {best.note}."
    want = search.rstrip("\n").split("\n")
    diff = list(
        difflib.unified_diff(
            want, cand, "your SEARCH", f"file lines {best.line}-{end}", n=1, lineterm=""
        )
    )
    if diff:
        shown = diff[: MAX_QUOTED_LINES * 2]
        msg += "\nDiff from your SEARCH to those lines:\n" + "\n".join(shown)
        if len(diff) > len(shown):
            msg += f"\n[... {len(diff) - len(shown)} more diff line(s) not shown ...]"
    others = [f"lines {h.line}-{h.line + h.text.count(chr(10))}" for h in hints[1:]]
    if others:
        msg += "\nOther similar places: " + ", ".join(others)
    return msg + "\nCopy the lines exactly as quoted (without the `N | ` prefix)."


def apply_edit(text: str, search: str, replace: str) -> str:
    """``text`` with the single match of ``search`` replaced; raises SearchFailure."""
    text, search, replace = normalize(text), normalize(search), normalize(replace)
    if not search.strip():
        raise SearchFailure(
            "empty_search",
            "SEARCH is empty; use write_file to create a file or give lines to replace",
        )
    matches = find_matches(text, search)
    if not matches:
        hints = similar_lines(text, search)
        raise SearchFailure("no_match", no_match_message(search, hints), hints=hints)
    if len(matches) > 1:
        lines = [text.count("\n", 0, m) + 1 for m in matches]
        raise SearchFailure(
            "multiple_matches",
            f"SEARCH block matches {len(matches)} times (lines {', '.join(map(str, lines))}); "
            "add surrounding lines so it matches exactly once",
            lines=lines,
        )
    idx = matches[0]
    if search.endswith("\n") and replace and not replace.endswith("\n"):
        replace += "\n"
    return text[:idx] + replace + text[idx + len(search) :]


def uses_crlf(text: str) -> bool:
    """Most line ends are CRLF (mixed files keep the majority style)."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 >= text.count("\n")


def restore_newlines(original: str, result: str) -> str:
    """Write CRLF back when the original file used it."""
    return result.replace("\n", "\r\n") if uses_crlf(original) else result
