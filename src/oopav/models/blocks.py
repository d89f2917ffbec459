"""SEARCH/REPLACE text blocks: the edit format most code models already write, accepted inside
``<action>`` instead of a JSON document and parsed into a ``search_replace`` action.

One or more blocks, each::

    src/pkg/mod.py@1a2b3c4d
    <<<<<<< SEARCH
    the lines to find (whole lines, indentation exact)
    =======
    the lines to put there
    >>>>>>> REPLACE

The path line names a workspace file; ``@`` and 8 hex digits (optional) are the file's context
hash as the actor's context shows it (``### File src/pkg/mod.py (context 1a2b3c4d)``). A block
whose hash is not the file's current one was written against text that has changed since: it
is refused as ``stale_context`` with the nearest match quoted (``sandbox.apply``). The SEARCH
part ends at the first line that is exactly ``=======``, the REPLACE part at the first line
that starts with ``>>>>>>> REPLACE``; blocks are separated by whitespace. The format is parsed
line by line, so code containing ``</action>`` is fine inside a block.

:func:`edit_blocks_grammar` is the same language as a grammar (``schema_grammar`` adds it to
the actor's answer grammar, ``grammar`` to the xgrammar one): sound for :func:`parse_blocks`.
"""

from __future__ import annotations

import re

from oopav.events.actions import SearchReplaceAction, SearchReplaceEdit
from oopav.models.cfg import EMPTY, Chars, Grammar, Lit, Node, Ref, Rep, alt, rep, seq

SEARCH_MARK = "<<<<<<< SEARCH"
DIVIDER = "======="
REPLACE_MARK = ">>>>>>> REPLACE"
HASH_CHARS = 8
_HASH = re.compile(rf"[0-9a-f]{{{HASH_CHARS}}}")


# What the static prefix tells the actor about the format (models/prompt.py).
PROMPT_HELP = f"""\
Instead of a JSON search_replace action, <action> may hold SEARCH/REPLACE blocks:
path/of/file.py@CONTEXT
{SEARCH_MARK}
the exact lines to replace (whole lines, indentation exact; matched exactly once)
{DIVIDER}
the new lines
{REPLACE_MARK}
CONTEXT is the 8-hex-digit context hash shown with the file (optional); a block whose file
changed since is refused with the current text quoted. Several blocks may follow each other."""


class BlockError(ValueError):
    """A malformed block: ``message`` says what and where; ``truncated`` when the text ends
    inside a block (the answer was probably cut off)."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.truncated = truncated


def _line(text: str, pos: int) -> tuple[str, int] | None:
    """The line at ``pos`` (without its newline) and the position after it; None at the end
    of the text or when the line has no newline."""
    end = text.find("\n", pos)
    if end < 0:
        return None
    return text[pos:end], end + 1


def parse_blocks(text: str, pos: int, close: str) -> tuple[SearchReplaceAction, int]:
    """Blocks from ``text[pos:]`` up to ``close`` (``</action>``, not consumed): the action
    and the position of ``close``. Raises :class:`BlockError`."""
    edits: list[SearchReplaceEdit] = []
    n = 0
    while True:
        n += 1
        where = f"block {n}"
        got = _line(text, pos)
        if got is None:
            raise BlockError(f"{where}: the text ends after its path line", truncated=True)
        head, pos = got
        path, at, digest = head.strip().partition("@")
        if not path or any(c.isspace() for c in path):
            raise BlockError(
                f"{where}: the line before {SEARCH_MARK!r} must be the file's path (no spaces), "
                f"optionally @ and its context hash; got {head[:60]!r}"
            )
        if at and not _HASH.fullmatch(digest):
            raise BlockError(
                f"{where}: {digest[:20]!r} after @ is not a context hash ({HASH_CHARS} hex "
                "digits, as the context shows it)"
            )
        got = _line(text, pos)
        if got is None or got[0].rstrip() != SEARCH_MARK:
            if got is None:
                raise BlockError(f"{where}: the text ends before {SEARCH_MARK!r}", truncated=True)
            raise BlockError(
                f"{where}: expected {SEARCH_MARK!r} on the line after the path, found "
                f"{got[0][:40]!r}"
            )
        pos = got[1]
        search: list[str] = []
        while True:
            got = _line(text, pos)
            if got is None:
                raise BlockError(
                    f"{where}: no {DIVIDER!r} line ends the SEARCH part", truncated=True
                )
            line, pos = got
            if line == DIVIDER:
                break
            search.append(line + "\n")
        replace: list[str] = []
        while True:
            if text.startswith(REPLACE_MARK, pos):
                pos += len(REPLACE_MARK)
                break
            got = _line(text, pos)
            if got is None:
                raise BlockError(
                    f"{where}: no {REPLACE_MARK!r} line ends the REPLACE part", truncated=True
                )
            line, pos = got
            replace.append(line + "\n")
        edits.append(
            SearchReplaceEdit(
                path=path,
                search="".join(search),
                replace="".join(replace),
                context_hash=digest if at else None,
            )
        )
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith(close, pos):
            return SearchReplaceAction(edits=edits), pos
        if pos >= len(text):
            raise BlockError(f"the text ends after block {n} without {close}", truncated=True)


def render_blocks(action: SearchReplaceAction) -> str:
    """The text form of ``action`` (each SEARCH and REPLACE ends with a newline)."""
    out = []
    for e in action.edits:
        head = e.path + (f"@{e.context_hash}" if e.context_hash else "")
        search = e.search if not e.search or e.search.endswith("\n") else e.search + "\n"
        replace = e.replace if not e.replace or e.replace.endswith("\n") else e.replace + "\n"
        out.append(f"{head}\n{SEARCH_MARK}\n{search}{DIVIDER}\n{replace}{REPLACE_MARK}")
    return "\n".join(out)


# --- the grammar ---------------------------------------------------------------------------

_NOT_NL = Chars(((10, 10),), negate=True)
# Path characters: no whitespace, and none of @ (the hash), { (a JSON document starts with it)
# or < (a tag).
_PATH = Chars(((0, 32), (64, 64), (123, 123), (60, 60), (127, 127)), negate=True)
_HEXCH = Chars(((48, 57), (97, 102)))


def _tail(cap: int | None, used: int) -> Node | None:
    """Any rest of a line after ``used`` characters; None when the cap leaves no room."""
    if cap is None:
        return Rep(_NOT_NL, 0, None)
    return None if used > cap else rep(_NOT_NL, 0, cap - used)


def _line_not(mark: str, *, prefix: bool, cap: int | None) -> Node:
    """A line (with its newline) that is not ``mark`` (``prefix``: does not start with it),
    of at most ``cap`` characters."""
    alts: list[Node] = []
    for k in range(len(mark)):
        # exactly a proper prefix of the mark (k = 0: the empty line)
        if cap is None or k <= cap:
            alts.append(Lit(mark[:k] + "\n"))
        diverge = Chars(((ord(mark[k]), ord(mark[k])), (10, 10)), negate=True)
        tail = _tail(cap, k + 1)
        if tail is not None:
            alts.append(seq(Lit(mark[:k]), diverge, tail, Lit("\n")))
    if not prefix:
        tail = _tail(cap, len(mark) + 1)
        if tail is not None:
            alts.append(seq(Lit(mark), _NOT_NL, tail, Lit("\n")))
    return alt(*alts)


def edit_blocks_grammar(
    g: Grammar,
    *,
    between: Node,
    max_line: int | None = None,
    max_lines: int | None = None,
    max_blocks: int | None = None,
) -> Ref:
    """Add the blocks' rules to ``g`` and return a reference to them. ``between`` separates
    blocks (at least whitespace the parser skips); the caps bound a decoder's answer."""
    s_line = "edit-search-line"
    r_line = "edit-replace-line"
    g.rules[s_line] = _line_not(DIVIDER, prefix=False, cap=max_line)
    g.rules[r_line] = _line_not(REPLACE_MARK, prefix=True, cap=max_line)
    path = Rep(_PATH, 1, None if max_line is None else max(1, max_line))
    g.rules["edit-path"] = seq(path, alt(seq(Lit("@"), Rep(_HEXCH, HASH_CHARS, HASH_CHARS)), EMPTY))
    g.comments["edit-path"] = "a workspace path, optionally @ and its 8-hex-digit context hash"
    g.rules["edit-block"] = seq(
        Ref("edit-path"),
        Lit(f"\n{SEARCH_MARK}\n"),
        rep(Ref(s_line), 0, max_lines),
        Lit(f"{DIVIDER}\n"),
        rep(Ref(r_line), 0, max_lines),
        Lit(REPLACE_MARK),
    )
    g.comments["edit-block"] = "a SEARCH/REPLACE text block (models/blocks.py)"
    more = None if max_blocks is None else max(0, max_blocks - 1)
    g.rules["edit-blocks"] = seq(Ref("edit-block"), rep(seq(between, Ref("edit-block")), 0, more))
    return Ref("edit-blocks")


def blocks_gbnf(**caps: int | None) -> str:
    """The blocks alone as a GBNF grammar (root = the blocks), for xgrammar's union with the
    JSON payload (``models.grammar``)."""
    g = Grammar(rules={"root": EMPTY})
    g.rules["root"] = edit_blocks_grammar(g, between=Rep(Chars(((10, 10),)), 1, 2), **caps)
    return g.gbnf()
