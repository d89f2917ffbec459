"""Where one before/after pair differs, as syntax: the *sites* of an example.

The two sides are tokenised into tree-sitter leaves (through ast-grep-py) and diffed as token
sequences. Each edit is then lifted to the smallest named node of ``before`` that contains it
and whose counterpart in ``after`` is also exactly one syntax node, so a site is always a
balanced rewrite (``foo(a)`` → ``list(foo(a))``, never ``foo`` → ``list(foo``).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from ast_grep_py import SgNode, SgRoot

# Nodes that hold a list of items: a site is lifted past them (a bare ``(a, b)`` is no pattern).
LIST_KINDS = frozenset(
    {
        "argument_list",
        "arguments",
        "parameters",
        "formal_parameters",
        "parameter_list",
        "type_arguments",
        "type_parameters",
        "expression_list",
        "literal_value",
        "import_list",
        "dotted_name",
    }
)
COMMENT_KINDS = frozenset({"comment", "line_comment", "block_comment"})


class SiteError(ValueError):
    """An example whose change cannot be expressed as syntax rewrites (the reason says why)."""


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    text: str
    node: SgNode


@dataclass
class Site:
    """One rewrite: the ``before`` node and the text that replaces it."""

    example: int
    node: SgNode  # in the before tree
    start: int
    end: int
    after_start: int
    after_end: int
    after_text: str
    after_node: SgNode | None = None
    edits: list[int] = field(default_factory=list)
    # A statement insertion: "after" / "before" the anchor ``node`` (its neighbouring
    # statement), ``inserted`` the new statement(s), dedented to the anchor's column.
    insert: str | None = None
    inserted: str = ""
    # A statement deletion: ``node`` (a whole statement, attribute or import) goes with the
    # layout between it and its "prev" sibling (the span [prev end, node end)), or, first in
    # its block, up to its "next" sibling (the span [node start, next start)).
    delete: str | None = None

    @property
    def before_text(self) -> str:
        return self.node.text()


@dataclass(frozen=True)
class Edit:
    start: int  # before offsets (start == end: an insertion point)
    end: int
    text: str  # what replaces before[start:end]
    # The same insertion or deletion before its newline was moved (see token_edits): tried
    # when the moved one is no rewrite of one node (``@final`` added above a ``class``).
    alt: tuple[int, int, str] | None = None


# Nodes read as one token: string literals, and line comments — a Rust `// comment`'s only
# leaf is its `//`, so its words belonged to no token, and a change right below a comment
# started inside the comment's words: the site became the whole block around both (wave
# 3q: reqwest 4eb98685's `futures_core::ready!(…)` -> `ready!(…)` under `// check if the
# callback is canceled` was learned as that literal block, 0 of 5 held-out sites). A block
# comment keeps its inside: commented-out code edited with the code is left out by its
# edits (tests/synth/test_removals3k.py).
ATOMIC_KINDS = frozenset({"string", "string_literal", "interpreted_string_literal", "line_comment"})


def leaves(node: SgNode) -> list[Token]:
    out: list[Token] = []
    stack = [node]
    while stack:
        n = stack.pop()
        kids = n.children()
        if not kids or n.kind() in ATOMIC_KINDS:
            r = n.range()
            if r.end.index > r.start.index:
                out.append(Token(r.start.index, r.end.index, n.text(), n))
            continue
        stack.extend(reversed(kids))
    return out


def has_error(node: SgNode) -> bool:
    return node.kind() == "ERROR" or node.find(kind="ERROR") is not None


def token_edits(before: str, after: str, btoks: list[Token], atoks: list[Token]) -> list[Edit]:
    """Token-level edits, each trimmed to the exact characters that change."""
    edits: list[Edit] = []
    for i1, i2, j1, j2 in _token_opcodes(before, after, btoks, atoks):
        # The region between the neighbouring unchanged tokens on both sides.
        bs = btoks[i1 - 1].end if i1 > 0 else 0
        be = btoks[i2].start if i2 < len(btoks) else len(before)
        as_ = atoks[j1 - 1].end if j1 > 0 else 0
        ae = atoks[j2].start if j2 < len(atoks) else len(after)
        b, a = before[bs:be], after[as_:ae]
        pre = 0
        while pre < min(len(b), len(a)) and b[pre] == a[pre] and b[pre].isspace():
            pre += 1
        suf = 0
        while (
            suf < min(len(b), len(a)) - pre
            and b[len(b) - 1 - suf] == a[len(a) - 1 - suf]
            and b[len(b) - 1 - suf].isspace()
        ):
            suf += 1
        start, end, text = bs + pre, be - suf, a[pre : len(a) - suf]
        # Whole lines inserted after text that is no token of its own (the words of a Rust
        # `// comment`, whose only leaf is `//`): the gap's words come out as "replaced" by
        # themselves plus the new lines; they are an insertion after those words (wave 3h
        # synth9: serde's `#[cfg(feature = "std")]` added under a `////` rule line).
        old = before[start:end]
        after_words = None
        if old and end > start and text.startswith(old) and text[len(old) :].startswith("\n"):
            start, text = end, text[len(old) :]
            if before[end : end + 1] == "\n":
                # The same lines before the next line's statement (``_insertion``'s "before"
                # anchor: the comment is no statement to insert after).
                after_words = (end + 1, end + 1, text[1:] + "\n")
        # A deleted or inserted line is ambiguous about which newline goes with it; take the
        # one before it, so the edit stays inside the enclosing block ("\n    b()", not
        # "    b()\n").
        cut = before[start:end] if not text else text
        alt = None
        if not (text and end > start):
            tail = len(cut) - len(cut.rstrip())
            moved = cut[len(cut) - tail :]
            if "\n" in moved and before[start - tail : start] == moved:
                alt = (start, end, text)
                if text:
                    text = cut[len(cut) - tail :] + cut[: len(cut) - tail]
                start, end = start - tail, end - tail
        edits.append(Edit(start, end, text, alt or after_words))
    return edits


def _token_opcodes(
    before: str, after: str, btoks: list[Token], atoks: list[Token]
) -> list[tuple[int, int, int, int]]:
    """Changed token ranges ``(i1, i2, j1, j2)``. Lines are diffed first and tokens only inside
    changed lines: a token diff of a whole file is quadratic on repetitive code."""
    lb, la = before.splitlines(keepends=True), after.splitlines(keepends=True)
    ob, oa = _offsets(lb), _offsets(la)
    out: list[tuple[int, int, int, int]] = []
    lines = difflib.SequenceMatcher(None, lb, la, autojunk=False)
    blocks: list[tuple[int, int, int, int]] = []
    for tag, l1, l2, k1, k2 in lines.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and l2 - l1 == k2 - k1:
            # Line for line (the usual shape of a codemod): diff each pair on its own.
            blocks += [(l1 + n, l1 + n + 1, k1 + n, k1 + n + 1) for n in range(l2 - l1)]
        else:
            blocks.append((l1, l2, k1, k2))
    for l1, l2, k1, k2 in blocks:
        i1, i2 = _overlapping(btoks, ob[l1], ob[l2])
        j1, j2 = _overlapping(atoks, oa[k1], oa[k2])
        if out and i1 < out[-1][1]:  # a token spanning both chunks: diff them together
            i1, j1 = out[-1][0], out[-1][2]
            out.pop()
        bt, at = [t.text for t in btoks[i1:i2]], [t.text for t in atoks[j1:j2]]
        sm = difflib.SequenceMatcher(None, bt, at, False)
        ops: list[tuple[int, int, int, int]] = []
        for op, a1, a2, b1, b2 in sm.get_opcodes():
            if op == "equal":
                continue
            if not ops:
                ops.append((a1, a2, b1, b2))
                continue
            # Two changes as close as their tokens allow (see _slid): one where they meet.
            last, joined = _slid_right(ops[-1], (a1, a2, b1, b2), bt, at)
            if joined:
                ops[-1] = last
                continue
            ops[-1] = last
            slid, joined = _slid(ops[-1], (a1, a2, b1, b2), bt, at)
            if joined:
                ops[-1] = slid  # one change, not two
            else:
                ops.append(slid)
        out += [(i1 + a1, i1 + a2, j1 + b1, j1 + b2) for a1, a2, b1, b2 in ops]
    return out


def _slid(
    prev: tuple[int, int, int, int], op: tuple[int, int, int, int], bt: list[str], at: list[str]
) -> tuple[tuple[int, int, int, int], bool]:
    """``op``, a pure deletion (insertion), slid left towards ``prev`` over the tokens that
    repeat it (the same result: which of two equal tokens a diff keeps is its arbitrary
    choice), and whether it now joins ``prev``. `log("{}".format(a))` -> `log(f"{a}")` was
    diffed as `"{}".format(a` changed and the *outer* `)` deleted, so the site was the whole
    `log(…)` call; slid, the change is the format call alone (wave 3r)."""
    p1, p2, q1, q2 = prev
    a1, a2, b1, b2 = op
    if b1 == b2 and a2 > a1:
        while a1 > p2 and bt[a1 - 1] == bt[a2 - 1]:
            a1, a2, b1, b2 = a1 - 1, a2 - 1, b1 - 1, b2 - 1
        return ((p1, a2, q1, q2), True) if a1 == p2 else ((a1, a2, b1, b2), False)
    if a1 == a2 and b2 > b1:
        while b1 > q2 and at[b1 - 1] == at[b2 - 1]:
            a1, a2, b1, b2 = a1 - 1, a2 - 1, b1 - 1, b2 - 1
        return ((p1, p2, q1, b2), True) if b1 == q2 else ((a1, a2, b1, b2), False)
    return op, False


def _slid_right(
    op: tuple[int, int, int, int], nxt: tuple[int, int, int, int], bt: list[str], at: list[str]
) -> tuple[tuple[int, int, int, int], bool]:
    """:func:`_slid` the other way: ``op`` slid right towards ``nxt`` (`log(g(a))` ->
    `log(a)` diffed as the outer `(` and `g` deleted: slid, `g(` and the inner `)` are
    deleted, both inside `g(a)`); the joined change when they meet."""
    a1, a2, b1, b2 = op
    n1, n2, m1, m2 = nxt
    if b1 == b2 and a2 > a1:
        while a2 < n1 and bt[a1] == bt[a2]:
            a1, a2, b1, b2 = a1 + 1, a2 + 1, b1 + 1, b2 + 1
        return ((a1, n2, b1, m2), True) if a2 == n1 else ((a1, a2, b1, b2), False)
    if a1 == a2 and b2 > b1:
        while b2 < m1 and at[b1] == at[b2]:
            a1, a2, b1, b2 = a1 + 1, a2 + 1, b1 + 1, b2 + 1
        return ((a1, n2, b1, m2), True) if b2 == m1 else ((a1, a2, b1, b2), False)
    return op, False


def _offsets(lines: list[str]) -> list[int]:
    out = [0]
    for ln in lines:
        out.append(out[-1] + len(ln))
    return out


def _overlapping(toks: list[Token], start: int, end: int) -> tuple[int, int]:
    """The index range of the tokens that overlap [start, end) (or the insertion index)."""
    import bisect

    starts = [t.start for t in toks]
    lo = bisect.bisect_left([t.end for t in toks], start + 1)
    hi = bisect.bisect_left(starts, end)
    return lo, max(lo, hi)


def _named_ancestors(node: SgNode) -> list[SgNode]:
    chain = [node, *node.ancestors()]
    return [n for n in chain if n.is_named() and n.kind() not in LIST_KINDS]


def node_at(root: SgNode, start: int, end: int) -> SgNode | None:
    """A node of ``root`` spanning exactly [start, end) (the outermost such node)."""
    node = root
    while True:
        r = node.range()
        if r.start.index == start and r.end.index == end and node.is_named():
            return node
        nxt = None
        for ch in node.children():
            cr = ch.range()
            if cr.start.index <= start and end <= cr.end.index:
                nxt = ch
                break
        if nxt is None:
            return None
        node = nxt


def find_sites(
    index: int, before: str, after: str, broot: SgNode, aroot: SgNode, where: str
) -> list[Site]:
    btoks, atoks = leaves(broot), leaves(aroot)
    edits = token_edits(before, after, btoks, atoks)
    if not edits:
        raise SiteError(
            f"{where} differs only in whitespace or formatting; formatting is not rewritable"
        )
    by_start = sorted(btoks, key=lambda t: t.start)

    def touching(e: Edit) -> list[SgNode]:
        """Leaves at or next to the edit (an insertion point touches both neighbours)."""
        hits = [t.node for t in by_start if t.start < e.end and e.start < t.end]
        if hits:
            return hits
        return [t.node for t in by_start if t.end == e.start or t.start == e.end] or [broot]

    def delta(e: Edit) -> int:
        return len(e.text) - (e.end - e.start)

    def inside(e: Edit, s: int, t: int) -> bool:
        return s <= e.start and e.end <= t

    def accept(node: SgNode, owned: list[int]) -> Site | None:
        r = node.range()
        s, t = r.start.index, r.end.index
        mine = [i for i in range(len(edits)) if inside(edits[i], s, t)]
        if not set(owned) <= set(mine):
            return None
        for i, e in enumerate(edits):
            if i not in mine and (s < e.start < t or s < e.end < t):
                return None  # the node cuts through an edit
        shift = sum(delta(e) for i, e in enumerate(edits) if i not in mine and e.end <= s)
        a_s = s + shift
        a_e = a_s + (t - s) + sum(delta(edits[i]) for i in mine)
        anode = node_at(aroot, a_s, a_e)
        if anode is None:
            return None
        return Site(index, node, s, t, a_s, a_e, after[a_s:a_e], anode, mine)

    sites: list[Site] = []
    for i, e in enumerate(edits):
        if any(i in s.edits for s in sites):
            continue
        candidates: dict[tuple[int, int], SgNode] = {}
        for leaf in touching(e):
            for anc in _named_ancestors(leaf):
                r = anc.range()
                if r.start.index <= e.start and e.end <= r.end.index:
                    candidates.setdefault((r.start.index, r.end.index), anc)
        found = _smallest(candidates, accept, i)
        # Wave 3k (synth20): a decorator line added above a method is a rewrite of that
        # method (`def f` -> `@staticmethod\ndef f`), not of the class around it.
        decorator = e.alt is not None and e.alt[0] == e.alt[1] and e.alt[2].startswith("@")
        if (found is None or found.node.parent() is None or decorator) and e.alt is not None:
            edits[i] = Edit(*e.alt)
            alt_candidates: dict[tuple[int, int], SgNode] = {}
            for leaf in touching(edits[i]):
                for anc in _named_ancestors(leaf):
                    r = anc.range()
                    if r.start.index <= edits[i].start and edits[i].end <= r.end.index:
                        alt_candidates.setdefault((r.start.index, r.end.index), anc)
            found = _smallest(alt_candidates, accept, i)
            if found is None or found.node.parent() is None:
                edits[i] = e
                found = _smallest(candidates, accept, i)
        line = before.count("\n", 0, e.start) + 1
        if e.start == e.end and e.text.strip() and (found is None or _is_container(found.node)):
            # Whole statements added: a rule inserts them next to a neighbouring statement
            # (rather than rewriting the block, or failing at the top of a file).
            ins = _insertion(index, before, broot, aroot, e, i, edits)
            if ins is not None:
                found = ins
        if not e.text and (found is None or found.node.parent() is None or e.end > e.start):
            # Whole statements (attributes, imports) removed: a deletion rule, rather than a
            # rewrite of the block around them.
            deleted = _deletions(index, before, broot, e, i)
            if deleted:
                sites = [s for s in sites if not any(d.start <= s.start < d.end for d in deleted)]
                sites.extend(deleted)
                continue
        if found is None or found.node.parent() is None:
            raise SiteError(
                f"{where}: the change at line {line} is not a rewrite of one syntax node (it "
                "adds or removes whole statements, which a rule cannot do in place)"
            )
        # A changed comment is a site too (a substitution rule rewrites comments, see
        # synth.core); the synthesiser refuses examples that change nothing but comments.
        # A larger site swallows the smaller ones it contains.
        sites = [s for s in sites if not (found.start <= s.start and s.end <= found.end)]
        sites.append(found)
    sites.sort(key=lambda s: s.start)
    # The sites together must account for the whole difference.
    out, pos = [], 0
    for s in sites:
        out.append(before[pos : s.start])
        out.append(s.after_text)
        pos = s.end
    out.append(before[pos:])
    if "".join(out) != after:
        raise SiteError(
            f"{where} also changes whitespace or comments outside the rewritten code; "
            "formatting is not rewritable"
        )
    return sites


_CONTAINERS = frozenset(
    {
        "module",
        "program",
        "source_file",
        "block",
        "statement_block",
        "declaration_list",
        "class_body",
        "function_definition",
        "function_declaration",
        "function_item",
        "class_definition",
        "method_declaration",
        # Go's block holds its statements in a `statement_list` (wave 3f): a statement
        # inserted in a function body is an insertion there too, not a rewrite of the body.
        "statement_list",
    }
)


# Go's list of a block's statements starts where its first statement does: no statement
# itself (wave 3l: a line added first in a Go body is inserted before that statement).
_LISTS = frozenset({"statement_list"})


def _in_go_body(node: SgNode | None) -> bool:
    """``node`` is the first statement of a Go body."""
    parent = node.parent() if node is not None else None
    if node is None or parent is None or parent.kind() not in _LISTS:
        return False
    first = next((c for c in parent.children() if c.is_named()), None)
    return first is not None and first.range() == node.range()


def _after_preamble(node: SgNode | None) -> bool:
    """``node`` is the file's first statement after its preamble: a direct child of the root
    with only comments and a docstring before it (wave 3p: uvicorn 32fa92fb put
    `from __future__ import annotations` and a blank line right after each module's
    docstring — the top of the file's code, as line 1 is the top of a file without one)."""
    parent = node.parent() if node is not None else None
    if node is None or parent is None or parent.parent() is not None:
        return False
    r = node.range()
    for child in parent.children():
        if child.range() == r:
            return True
        if not child.is_named():
            continue
        docstring = child.kind() == "expression_statement" and re.match(
            r"[rRuUbBfF]*[\"']", child.text()
        )
        if child.kind() not in COMMENT_KINDS and not docstring:
            return False
    return False


def _is_container(node: SgNode) -> bool:
    return node.kind() in _CONTAINERS


def _indent_of(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    prefix = text[line_start:offset]
    return prefix if not prefix.strip() else prefix[: len(prefix) - len(prefix.lstrip())]


def _dedent_by(text: str, indent: str) -> str:
    return "\n".join(ln[len(indent) :] if ln.startswith(indent) else ln for ln in text.split("\n"))


def _insertion(
    index: int, before: str, broot: SgNode, aroot: SgNode, e: Edit, i: int, edits: list[Edit]
) -> Site | None:
    """A site for whole new lines: after the statement that ends where they start, else
    before the one that starts where they end (the edit's unmoved form)."""
    shift = sum(len(x.text) - (x.end - x.start) for x in edits if x.end <= e.start and x is not e)
    forms = ("after", "before")
    lines = [x.strip() for x in e.text.splitlines() if x.strip()]
    if broot.kind() == "source_file" and lines and all(x.startswith("#[") for x in lines):
        # Wave 3u: Rust attribute lines annotate the item below them: inserted after the
        # attribute above them in the item's run (`#[cfg(feature = "std")]` ->
        # `#[cfg(feature = "std")]\n#[cfg_attr(doc_cfg, …)]`), else before what follows
        # (`#[cfg(feature = "cookies")]` above `pub mod cookie;`), never after the item
        # above (`mod connect;`, which says nothing of which item gains the attribute).
        above = _statement_at(broot, end=e.start)
        if above is None or above.kind() != "attribute_item":
            forms = ("before", "after")
    for form in forms:
        lists = False
        if form == "after":
            start, text = e.start, e.text
            if not text.startswith("\n"):
                continue
            anchor = _statement_at(broot, end=start)
        else:
            if e.alt is None:
                # At the top of the file, or (wave 3l) at the start of the first statement
                # of a Go body (lines added first in it, a blank line after them: the newline
                # before them is the block's own). Elsewhere such a site stays the block
                # rewritten (precision first: one such site says nothing general).
                line = before[before.rfind("\n", 0, e.start) + 1 : e.start]
                if e.start != 0 and (line.strip() or not e.text.rstrip(" \t").endswith("\n")):
                    continue
                start, text = e.start, e.text
            else:
                start, _, text = e.alt
            if not text.endswith(("\n", " ", "\t")) or "\n" not in text:
                continue
            # Wave 3l: a Go body's first statement is the anchor, not the `statement_list`
            # that starts with it — for lines free of string literals (a line holding a
            # message is the one site's own; precision first, it stays the block rewritten).
            lists = not re.search(r"[\"'`]", text)
            anchor = _statement_at(broot, start=start, lists=lists)
            if (
                e.alt is None
                and e.start != 0
                and not _in_go_body(anchor)
                and not _after_preamble(anchor)
            ):
                continue
        if anchor is None:
            continue
        r = anchor.range()
        s, t = r.start.index, r.end.index
        indent = _indent_of(before, s)
        if form == "after":
            after_text = before[s:t] + text
            inserted = _dedent_by(text[1:], indent)
        else:
            after_text = text + before[s:t]
            inserted = _dedent_by(text.rstrip(" \t"), indent).rstrip("\n")
            if text.rstrip(" \t")[-2:] == "\n\n":
                inserted += "\n"  # a blank line between the new statement and the anchor
        a_s = s + shift
        # The new lines must be statements of their own in the after tree (not a decorator
        # that becomes part of the definition below it).
        lead = len(after_text) - len(after_text.lstrip()) if form == "before" else 0
        if form == "after":
            lead = (t - s) + len(text) - len(text.lstrip())
        limit = a_s + len(text) if form == "before" else a_s + len(after_text)
        if not _starts_statement(aroot, a_s + lead, limit, form == "before" and lists):
            continue
        site = Site(index, anchor, s, t, a_s, a_s + len(after_text), after_text, None, [i])
        site.insert, site.inserted = form, inserted
        return site
    return None


# Lists of imported names whose items a deletion removes one by one (with a comma).
IMPORT_LISTS = frozenset({"import_from_statement", "import_statement", "named_imports", "use_list"})


def _deletions(index: int, before: str, broot: SgNode, e: Edit, i: int) -> list[Site]:
    """Whole sibling nodes (statements, attributes, imports) that a pure deletion removes,
    one site each, when deleting them with the layout before each (or, for the first of a
    block, after each) gives exactly the edit's result; else nothing."""
    want = before[: e.start] + before[e.end :]
    spans = [(e.start, e.end)] + ([(e.alt[0], e.alt[1])] if e.alt and not e.alt[2] else [])
    for lo, hi in spans:
        text = before[lo:hi]
        s0 = lo + len(text) - len(text.lstrip())
        s1 = hi - (len(text) - len(text.rstrip()))
        if s1 <= s0:
            continue
        parent = _deepest_cover(broot, s0, s1)
        if parent is None:
            continue
        nodes = [
            c
            for c in parent.children()
            if s0 <= c.range().start.index and c.range().end.index <= s1
        ]
        # A comment deleted with the statement below it (its documentation) goes with it;
        # comments alone are not deletions.
        # Names removed from an import list (`from m import (a, b, c)`, `{a, b}`): the
        # commas between them are separators, not deleted nodes.
        items = parent.kind() in IMPORT_LISTS
        if items:
            nodes = [c for c in nodes if c.is_named() or c.text() != ","]
        if not nodes or any(not c.is_named() for c in nodes):
            continue
        if all(c.kind() in COMMENT_KINDS for c in nodes):
            continue
        if not items and (nodes[0].range().start.index != s0 or nodes[-1].range().end.index != s1):
            continue
        for form in ("prev", "next"):
            out: list[Site] = []
            for n in nodes:
                r = n.range()
                sib = n.prev() if form == "prev" else n.next()
                while items and sib is not None and sib.text() == ",":
                    # The item's neighbour across its comma: the deletion takes the comma
                    # and the layout between them (one line of a one-per-line list).
                    sib = sib.prev() if form == "prev" else sib.next()
                if sib is None or not sib.is_named():
                    break
                a, b = (
                    (sib.range().end.index, r.end.index)
                    if form == "prev"
                    else (r.start.index, sib.range().start.index)
                )
                site = Site(index, n, a, b, 0, 0, "", None, [i])
                site.delete = form
                out.append(site)
            else:
                text_out, pos = [], 0
                for d in sorted(out, key=lambda d: d.start):
                    if d.start < pos:
                        break
                    text_out.append(before[pos : d.start])
                    pos = d.end
                else:
                    if "".join(text_out) + before[pos:] == want:
                        return out
    return []


def _deepest_cover(root: SgNode, start: int, end: int) -> SgNode | None:
    """The deepest node whose children include nodes starting at ``start`` and ending at
    ``end`` (the parent of the deleted run)."""
    node = root
    while True:
        nxt = None
        for ch in node.children():
            r = ch.range()
            if (
                r.start.index <= start
                and end <= r.end.index
                and (r.start.index, r.end.index)
                != (
                    start,
                    end,
                )
            ):
                nxt = ch
                break
        if nxt is None:
            return node
        node = nxt


def _starts_statement(root: SgNode, offset: int, limit: int, lists: bool = False) -> bool:
    """A direct child of a block-like node starts at ``offset`` and ends by ``limit``."""
    node = root
    while True:
        nxt = None
        for ch in node.children():
            r = ch.range()
            if r.start.index == offset and ch.is_named() and not (lists and ch.kind() in _LISTS):
                return node.kind() in _CONTAINERS and r.end.index <= limit
            if r.start.index <= offset < r.end.index:
                nxt = ch
                break
        if nxt is None:
            return False
        node = nxt


def _statement_at(
    root: SgNode, start: int | None = None, end: int | None = None, lists: bool = False
) -> SgNode | None:
    """The outermost named non-root node that ends at ``end`` (or starts at ``start``) and is
    a direct child of a node with several named children (a statement of a block)."""
    best = None
    stack = [root]
    while stack:
        n = stack.pop()
        r = n.range()
        if (
            n is not root
            and n.is_named()
            and n.kind() not in (COMMENT_KINDS | _LISTS if lists else COMMENT_KINDS)
        ):
            hit = (end is not None and r.end.index == end) or (
                start is not None and r.start.index == start
            )
            parent = n.parent()
            if hit and parent is not None and parent.kind() in _CONTAINERS | {"block"}:
                if best is None or (r.end.index - r.start.index) > (
                    best.range().end.index - best.range().start.index
                ):
                    best = n
        lo = start if start is not None else end
        for ch in n.children():
            cr = ch.range()
            if cr.start.index <= lo <= cr.end.index:  # type: ignore[operator]
                stack.append(ch)
    return best


def _smallest(candidates: dict[tuple[int, int], SgNode], accept: Any, i: int) -> Site | None:
    for _, node in sorted(candidates.items(), key=lambda kv: (kv[0][1] - kv[0][0], kv[0])):
        found = accept(node, [i])
        if found is not None:
            return found
    return None


def relayout(before: str, after: str, broot: SgNode, aroot: SgNode) -> str | None:
    """``after`` in ``before``'s layout: the token edits applied to ``before``, with the line
    breaks inside each edit's text folded to one space (a formatter's reflow undone), or None
    when that changes nothing or no longer differs from ``before`` modulo whitespace as
    ``after`` does."""
    edits = token_edits(before, after, leaves(broot), leaves(aroot))
    out, pos = [], 0
    for e in edits:
        text = re.sub(r"[ \t]*\n\s*", " ", e.text)
        if text != e.text:
            text = text.strip() if not e.text[:1].isspace() else " " + text.strip()
            if before[e.start - 1 : e.start] in "([{" or text.startswith((",", ")", "]", "}")):
                text = text.lstrip()
        out += [before[pos : e.start], text]
        pos = e.end
    relaid = "".join(out) + before[pos:]
    squash = re.compile(r"\s+")
    if relaid == after or squash.sub("", relaid) != squash.sub("", after):
        return None
    return relaid


@functools.lru_cache(maxsize=64)
def parse(source: str, language: str) -> SgNode:
    # Memoised: one synthesis parses the same example files hundreds of times (each candidate
    # rule, each follow-up, each import check); ast-grep trees are immutable, so a shared root
    # is safe, and 64 entries bound what a long-running handler keeps.
    return SgRoot(source, language).root()


# Where a pattern snippet that does not parse on its own is put, per language; the last ones
# are type positions, so that a changed type stays a literal candidate (`fmt::Formatter`
# -> `fmt::Formatter<'_>`) instead of only a far too general `$A: $B` one level up.
WRAPPERS: dict[str, tuple[str, ...]] = {
    "python": ("_ = {}", "_f({})"),
    "javascript": ("_ = {}", "_f({})"),
    "typescript": ("_ = {}", "_f({})", "let _: {};"),
    "tsx": ("_ = {}", "_f({})", "let _: {};"),
    "go": (
        "func _() {{ {} }}",
        "func _() {{ _ = {} }}",
        "func _() {{ _f({}) }}",
        "var _ {}",
        "import {}",
    ),
    "rust": (
        "fn _f() {{ {} }}",
        "fn _f() {{ let _ = {}; }}",
        "fn _f() {{ _g({}); }}",
        "type _T = {};",
        # A type name alone: `type _T = …` would select the alias's own name first.
        "fn _f(_: {}) {{}}",
    ),
}


# Wave 3i (synth11): type-level and clause nodes that parse only where they stand. A small
# insertion inside one (zustand's `CustomSetState extends SetState<S>` gaining
# ` = SetState<S>`, serde's `where Iter: …` gaining a trailing comma) is a site of that
# kind, but its pattern alone parses as something else or not at all, so no candidate at
# the site matched and the rule was the whole enclosing function, struct or impl, literal,
# reaching no other file. The node is put back where it stands, selected by its kind, at
# every level of the search (the site, and the nodes above it of these kinds).
KIND_WRAPPERS: dict[tuple[str, str], tuple[str, ...]] = {
    **{
        (lang, kind): wrappers
        for lang in ("typescript", "tsx")
        for kind, wrappers in (
            ("type_parameter", ("function _f<{}>() {{}}",)),
            ("property_signature", ("interface _I {{ {} }}",)),
            ("method_signature", ("interface _I {{ {} }}",)),
            ("index_signature", ("interface _I {{ {} }}",)),
            ("enum_assignment", ("enum _E {{ {} }}",)),
        )
    },
    ("rust", "where_clause"): ("fn _f() {} {{}}",),
    ("rust", "where_predicate"): ("fn _f() where {} {{}}",),
    ("rust", "constrained_type_parameter"): ("fn _f<{}>() {{}}",),
    ("rust", "field_declaration"): ("struct _S {{ {} }}",),
    ("rust", "field_initializer"): ("fn _f() {{ _S {{ {} }}; }}",),
    ("rust", "shorthand_field_initializer"): ("fn _f() {{ _S {{ {} }}; }}",),
    ("rust", "match_arm"): ("fn _f() {{ match _x {{ {} }} }}",),
    ("rust", "enum_variant"): ("enum _E {{ {} }}",),
    ("go", "field_declaration"): ("type _ struct {{ {} }}",),
    ("go", "method_spec"): ("type _ interface {{ {} }}",),
    ("go", "keyed_element"): ("var _ = _T{{ {} }}",),
}
