"""``oopav synth --from-git REPO REV`` by groups: a commit's changes grouped by the shape of
their change, one rule per group, learned from the group's files together (issue 26).

Learning each hunk on its own leaves the other sites of the same change in its file unchanged,
so they act as counter-examples and the rule comes out literal. Here every hunk of the commit
is split into token-level changes (changes a few tokens apart on one line are one change; an
insertion or deletion the matcher placed a few equal tokens late is slid back onto the change
before it); changes with the same tokens — string and number literals abstracted, unless only
literals change — form a group. For each group, each file's base is the commit's version but
for the group's changes (the parent with the commit's other changes applied) and the expected
file is the commit's version, so a site the commit rewrote within a larger change is no
counter-example; the rule is learned from the file with the fewest sites (two files when that
one has a single site), and while it gets another of the group's files wrong, that file is
added as a further example (at most :data:`MAX_EXAMPLES`). The report says, per group: sites,
files, the rule, the sites the rule reproduces and whether that is the whole group.

Groups whose rules come out identical are one group in the report (wave 3s): a format-args
commit's `, other` / `, err` / three-argument shapes all learn the one rule that inlines any
argument, and three copies of it read as three changes. The merged group lists its shapes
and is scored again over all its files (the base of each file then lacks every merged
group's changes).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.synth.core import Example, SynthesisError, synthesize
from oopav.synth.gitlearn import _git, _hunks, _lang, _show

MAX_EXAMPLES = 4
MAX_FILES = 60  # a commit touching more files is a mass edit: its first 60 are read
IN_TEXT = "(in a string)"  # marks the key of a change inside a multi-line string literal
MERGE_GAP = 3  # equal tokens between two changes of one line that still make them one change
_TOKEN = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
    r"|`(?:[^`\\]|\\.)*`|\d[\w.]*|\w+|\S"
)


@dataclass
class Change:
    key: tuple[tuple[str, ...], tuple[str, ...]]
    start: int  # offsets in the parent file
    end: int
    text: str  # what replaces parent[start:end]


@dataclass
class GroupResult:
    change: str  # the change, as tokens (`old tokens -> new tokens`)
    files: list[str]
    sites: int
    examples: list[str] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    reproduced: int = 0  # the group's sites the rule reproduces
    extra: int = 0  # rewrites it makes in the group's files that the commit does not make
    reason: str = ""
    # The commit's moves (see :func:`_moves`): reported, not learned, and no group of sites.
    reordering: bool = False
    # Every change shape whose group learned this same rule (merged: see the module's doc).
    shapes: list[str] = field(default_factory=list)
    # The learned rule set, to score a merged group again; not part of the report.
    _result: Any = field(default=None, repr=False, compare=False)

    @property
    def whole(self) -> bool:
        return bool(self.rules) and self.reproduced == self.sites and not self.extra

    def to_json(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "files": self.files,
            "sites": self.sites,
            "examples": self.examples,
            "rules": self.rules,
            "reproduced": self.reproduced,
            "extra": self.extra,
            "whole": self.whole,
            "reason": self.reason,
            "reordering": self.reordering,
            "shapes": self.shapes or [self.change],
        }


def _blank_comments(text: str, lang: str) -> str:
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    if lang == "python":
        return re.sub(r"(?m)(?<![\w\"'])#.*$", blank, text)
    text = re.sub(r"/\*[\s\S]*?\*/", blank, text)
    return re.sub(r"(?m)(?:^|(?<=[\s;{}(),]))//.*$", blank, text)


def _abstract(tok: str) -> str:
    if tok[0] in "\"'`":
        return "<str>"
    if tok[0].isdigit():
        return "<num>"
    return tok


def changes_of(old: str, new: str, lang: str) -> list[Change]:
    """The token-level changes that turn ``old`` into ``new`` (offsets in ``old``); comments
    are not tokens, so a change to a comment alone is none."""
    a = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(_blank_comments(old, lang))]
    b = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(_blank_comments(new, lang))]
    at, bt = [t for *_, t in a], [t for *_, t in b]
    sm = difflib.SequenceMatcher(None, at, bt, autojunk=False)
    ops: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1 > 1:
            # Token for token (two import paths on two lines): one change per token, merged
            # back below when they sit on one line.
            ops += [(i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1)]
        else:
            ops.append((i1, i2, j1, j2))
    ops = _slide(_line_split(ops, a, b, old, new), at, bt)
    merged: list[list[int]] = []
    # Per merged change, the token gaps merged for an open bracket (see below): their tokens
    # are no part of the change's key.
    skipped: list[list[tuple[int, int, int, int]]] = []
    for i1, i2, j1, j2 in ops:
        if merged:
            p = merged[-1]
            gap_start = a[p[1] - 1][1] if p[1] else 0
            # An insertion after the hunk's last token: the gap ends with that token, not with
            # the hunk's final newline (`resp.data)` -> `resp.get_data())` is one change).
            gap_end = a[i1][0] if i1 < len(a) else a[-1][1] if a else len(old)
            if i1 - p[1] <= MERGE_GAP and "\n" not in old[gap_start:gap_end]:
                p[1], p[3] = i2, j2
                continue
            if _open(at[p[0] : p[1]]) or _open(bt[p[2] : p[3]]):
                # Wave 3s: a change that opens a bracket it does not close is half of one
                # (werkzeug a0c1af35f7's `self.assert_equal(` -> `assert` … `, 42)` -> `== 42`,
                # the first argument between them longer than the gap): joined with the next
                # change of the hunk, what lies between (the kept argument) left out of the key.
                skipped[-1].append((p[1], i1, p[3], j1))
                p[1], p[3] = i2, j2
                continue
        merged.append([i1, i2, j1, j2])
        skipped.append([])
    out: list[Change] = []
    for (i1, i2, j1, j2), gaps in zip(merged, skipped, strict=True):
        olds, news = (
            _without_gaps(at, i1, i2, [(g[0], g[1]) for g in gaps]),
            _without_gaps(bt, j1, j2, [(g[2], g[3]) for g in gaps]),
        )
        key = (tuple(_abstract(t) for t in olds), tuple(_abstract(t) for t in news))
        if all(t in ("<str>", "<num>") for t in key[0] + key[1]):
            key = (tuple(olds), tuple(news))  # only literals change: the same literals
        start = a[i1 - 1][1] if i1 > 0 else 0
        end = a[i2][0] if i2 < len(a) else len(old)
        ns = b[j1 - 1][1] if j1 > 0 else 0
        ne = b[j2][0] if j2 < len(b) else len(new)
        following = next((m for m in merged if m[0] == i2 and m[2] == j2 and m[1] > i2), None)
        if following is not None and i2 > i1:
            # A change right before another (a replacement split at a line break): the
            # layout between them goes with the next one, so the two never overlap.
            end, ne = a[i2 - 1][1], b[j2 - 1][1] if j2 > j1 else ns
        out.append(Change(key, start, end, new[ns:ne]))
    return out


def _line_split(
    ops: list[tuple[int, int, int, int]],
    a: list[tuple[int, int, str]],
    b: list[tuple[int, int, str]],
    old: str,
    new: str,
) -> list[tuple[int, int, int, int]]:
    """Split a replacement whose old tokens run over a line break while its new ones start a
    line of their own: the matcher aligns line 1's last `)` with line 2's `self . assert_equal
    (` as one replacement by `assert`; that is the `)` deleted at the end of line 1 and line 2's
    call replaced, one change of each line."""
    out: list[tuple[int, int, int, int]] = []
    for i1, i2, j1, j2 in ops:
        breaks = [k for k in range(i1, i2 - 1) if "\n" in old[a[k][1] : a[k + 1][0]]]
        starts_line = j1 < j2 and (j1 == 0 or "\n" in new[b[j1 - 1][1] : b[j1][0]])
        one_line = j1 < j2 and "\n" not in new[b[j1][0] : b[j2 - 1][1]]
        if breaks and starts_line and one_line:
            k = breaks[-1] + 1
            out += [(i1, k, j1, j1), (k, i2, j1, j2)]
            continue
        out.append((i1, i2, j1, j2))
    return out


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def _open(tokens: list[str]) -> bool:
    """``tokens`` open a bracket they do not close (a closer comes after its opener, so
    only an opener left open asks for the change after it)."""
    depth = 0
    for t in tokens:
        if t in _OPENERS:
            depth += 1
        elif t in _OPENERS.values():
            depth -= 1
    return depth > 0


def _without_gaps(
    tokens: list[str], start: int, end: int, gaps: list[tuple[int, int]]
) -> list[str]:
    """``tokens[start:end]`` with each gap's tokens replaced by one ``…``."""
    out: list[str] = []
    pos = start
    for g0, g1 in gaps:
        out += [*tokens[pos:g0], *(["…"] if g1 > g0 else [])]
        pos = g1
    return out + tokens[pos:end]


def _slide(
    ops: list[tuple[int, int, int, int]], at: list[str], bt: list[str]
) -> list[tuple[int, int, int, int]]:
    """Slide a pure insertion or deletion left onto the change before it when the tokens it
    passes are the same ones: the matcher aligns `data )` with `get_data ( ) )` as `data` ->
    `get_data (` plus `)` inserted after the old `)`, which is one change, `data` ->
    `get_data ( )`, written one token later. Without the slide the `)` alone forms a group of
    its own (a fragment no rule states) and the real change is split over two keys."""
    out: list[tuple[int, int, int, int]] = []
    for i1, i2, j1, j2 in ops:
        if out and (i1 == i2) != (j1 == j2):
            p_i2, p_j2 = out[-1][1], out[-1][3]
            k = 0
            # Insertion: bt[j1:j2] at i1 may move left while the token before it (old side,
            # equal on both sides) equals its last token; deletion likewise on the old side.
            while i1 - k > p_i2 and j1 - k > p_j2:
                if i1 == i2 and bt[j2 - 1 - k] != bt[j1 - 1 - k]:
                    break
                if j1 == j2 and at[i2 - 1 - k] != at[i1 - 1 - k]:
                    break
                k += 1
            if i1 - k == p_i2 and j1 - k == p_j2:
                i1, i2, j1, j2 = i1 - k, i2 - k, j1 - k, j2 - k
                pi1, _, pj1, _ = out.pop()
                out.append((pi1, i2, pj1, j2))
                continue
        out.append((i1, i2, j1, j2))
    return out


def _apply(before: str, changes: list[Change]) -> str:
    out, pos = [], 0
    for c in sorted(changes, key=lambda c: (c.start, c.end)):
        out += [before[pos : c.start], c.text]
        pos = c.end
    return "".join(out) + before[pos:]


def _without(parent: str, every: list[Change], group: list[Change]) -> tuple[str, list[Change]]:
    """The file as the commit leaves it but for ``group``'s changes — the parent with the
    commit's other changes applied — and ``group``'s changes moved to its offsets.

    A group is learned and scored from this base, not from the parent: where another change of
    the commit rewrote the place of a site in a larger edit (a function deleted, a `(env)`
    dropped in a hunk that also inserts lines, so the matcher keys it otherwise), the parent
    still has the old shape there and, against a parent-only expectation, looks like a site the
    commit kept — a counter-example that narrows the group's rule to a list of names."""
    ids = {id(c) for c in group}
    others = [c for c in every if id(c) not in ids]
    moved = []
    for c in group:
        shift = sum(
            len(o.text) - (o.end - o.start) for o in others if (o.start, o.end) < (c.start, c.end)
        )
        moved.append(Change(c.key, c.start + shift, c.end + shift, c.text))
    return _apply(parent, others), moved


def _line_hunks(before: str, after: str) -> set[tuple[int, int, tuple[str, ...]]]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return {(i1, i2, tuple(b[j1:j2])) for i1, i2, j1, j2 in _hunks(a, b)}


def learn_groups(repo: Path, rev: str, min_sites: int = 1) -> list[GroupResult]:
    """One :class:`GroupResult` per group of same-shaped changes of commit ``rev`` (largest
    first; groups with fewer than ``min_sites`` sites are left out)."""
    repo = repo.resolve()
    parent = f"{rev}^"
    _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    names = [n for n in _git(repo, "diff", "--name-only", parent, rev).splitlines() if n]
    by_key: dict[tuple[str, tuple[Any, ...]], dict[str, list[Change]]] = {}
    parents: dict[str, str] = {}
    every: dict[str, list[Change]] = {}  # all the changes of each file, of every group
    for path in names[:MAX_FILES]:
        lang = _lang(path)
        before, after = _show(repo, parent, path), _show(repo, rev, path)
        if lang is None or before is None or after is None:
            continue
        parents[path] = before
        a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
        offsets = [0]
        for line in a:
            offsets.append(offsets[-1] + len(line))
        for i1, i2, j1, j2 in _hunks(a, b):
            base = offsets[i1]
            for c in changes_of("".join(a[i1:i2]), "".join(b[j1:j2]), lang):
                moved = Change(c.key, base + c.start, base + c.end, c.text)
                every.setdefault(path, []).append(moved)
    reordered: dict[str, list[Change]] = {}
    for path, cs in every.items():
        lang = _lang(path) or ""
        moves = _moves(parents[path], cs)
        if moves:
            reordered[path] = [c for c in cs if id(c) in moves]
        texts = _text_spans(parents[path], lang)
        for c in cs:
            if id(c) in moves:
                continue
            key = c.key
            if any(s < c.start and c.end < e for s, e in texts):
                # The same tokens changed in a docstring's prose are not the code change: no
                # rule states both (`log.msg(` in code, `>>> log.msg(` in a docstring).
                key = ((IN_TEXT, *key[0]), key[1])
            by_key.setdefault((lang, key), {}).setdefault(path, []).append(c)
    groups = sorted(
        by_key.items(), key=lambda kv: (-sum(len(v) for v in kv[1].values()), str(kv[0]))
    )
    results: list[GroupResult] = []
    learned: list[tuple[GroupResult, str, dict[str, list[Change]]]] = []
    for (lang, key), files in groups:
        sites = sum(len(v) for v in files.values())
        if sites < min_sites:
            continue
        shifted, bases, expected = _bases(files, parents, every)
        change = f"{' '.join(key[0])} -> {' '.join(key[1])}".strip()
        g = GroupResult(change=change, files=sorted(files), sites=sites)
        results.append(g)
        _learn_group(g, shifted, bases, expected, lang)
        learned.append((g, lang, files))
    results = _merge_alike(results, learned, parents, every)
    if reordered:
        n = sum(len(v) for v in reordered.values())
        results.append(
            GroupResult(
                change="(reordering)",
                files=sorted(reordered),
                sites=n,
                reason=f"{n} change(s) move code within its file (the same tokens removed in one "
                "place and added in another): a reordering, which no rewrite rule states",
                reordering=True,
            )
        )
    return results


def _bases(
    files: dict[str, list[Change]], parents: dict[str, str], every: dict[str, list[Change]]
) -> tuple[dict[str, list[Change]], dict[str, str], dict[str, str]]:
    """Per file of a group: its changes moved onto the base, the base (the commit's version
    but for those changes: :func:`_without`), and the commit's version."""
    shifted: dict[str, list[Change]] = {}
    bases: dict[str, str] = {}
    expected: dict[str, str] = {}
    for p, cs in files.items():
        bases[p], shifted[p] = _without(parents[p], every[p], cs)
        expected[p] = _apply(parents[p], every[p])
    return shifted, bases, expected


def _merge_alike(
    results: list[GroupResult],
    learned: list[tuple[GroupResult, str, dict[str, list[Change]]]],
    parents: dict[str, str],
    every: dict[str, list[Change]],
) -> list[GroupResult]:
    """``results`` with the groups of one language that learned the same rules as one group
    (its shapes listed, scored again over all its files), largest first."""
    alike: dict[tuple[str, str], list[tuple[GroupResult, dict[str, list[Change]]]]] = {}
    for g, lang, files in learned:
        if g.rules and g._result is not None:
            key = (lang, json.dumps(g.rules, sort_keys=True))
            alike.setdefault(key, []).append((g, files))
    gone: set[int] = set()
    for members in alike.values():
        if len(members) < 2:
            continue
        merged: dict[str, list[Change]] = {}
        for _, files in members:
            for path, cs in files.items():
                merged.setdefault(path, []).extend(cs)
        first = members[0][0]
        shifted, bases, expected = _bases(merged, parents, every)
        reproduced, extra, wrong = _score(first._result, shifted, bases, expected)
        g = GroupResult(
            change=first.change,
            files=sorted(merged),
            sites=sum(len(cs) for cs in merged.values()),
            examples=sorted({e for m, _ in members for e in m.examples}),
            rules=first.rules,
            reproduced=reproduced,
            extra=extra,
            reason="" if not wrong else f"still wrong in {len(wrong)} file(s)",
            shapes=[m.change for m, _ in members],
            _result=first._result,
        )
        gone |= {id(m) for m, _ in members}
        results.append(g)
    kept = [g for g in results if id(g) not in gone]
    return sorted(kept, key=lambda g: (g.reordering, -g.sites, g.change))


def _score(
    result: Any,
    files: dict[str, list[Change]],
    parents: dict[str, str],
    expected: dict[str, str],
) -> tuple[int, int, list[str]]:
    """What ``result``'s rules make of the group's files: the group's sites they reproduce,
    their rewrites the commit does not make, and the files they leave wrong."""
    reproduced = extra = 0
    wrong: list[str] = []
    for p in sorted(files, key=lambda p: (len(files[p]), p)):
        got, _ = result.apply(parents[p])
        made, want = _line_hunks(parents[p], got), _line_hunks(parents[p], expected[p])
        # Sites: the group's changes whose line hunk the rule made exactly.
        hit = made & want
        if got == expected[p]:
            reproduced += len(files[p])
        else:
            for c in files[p]:
                gap = parents[p][c.start : c.end]
                at = c.start + len(gap) - len(gap.lstrip())
                line = parents[p].count("\n", 0, at)
                reproduced += any(h[0] <= line < max(h[1], h[0] + 1) for h in hit)
        extra += len(made - want)
        if got != expected[p]:
            wrong.append(p)
    return reproduced, extra, wrong


def _text_spans(text: str, lang: str) -> list[tuple[int, int]]:
    """The spans of the file's multi-line string literals (Python docstrings, JavaScript
    template literals), found in the whole file: a hunk that starts inside one reads its prose
    as code tokens."""
    blanked = _blank_comments(text, lang)
    return [
        (m.start(), m.end())
        for m in _TOKEN.finditer(blanked)
        if m.group(0)[0] in "\"'`" and "\n" in m.group(0)
    ]


def _moves(parent: str, changes: list[Change]) -> set[int]:
    """The ids of the changes of one file that pair up as moves: a deletion and an insertion of
    the same tokens (a list item's separating comma aside) — an import re-sorted, a name moved
    within an import list. Each is a reordering, not a change of shape: grouped with the real
    deletions or insertions of those tokens it reads as a removal the rule cannot make 'without
    changing something else' (the moved line is there twice in the group's base)."""

    def toks(text: str) -> tuple[str, ...]:
        t = _TOKEN.findall(text)
        while t and t[0] == ",":
            t = t[1:]
        while t and t[-1] == ",":
            t = t[:-1]
        return tuple(t)

    dels: dict[tuple[str, ...], list[Change]] = {}
    for c in changes:
        if c.text.strip() == "" and parent[c.start : c.end].strip():
            t = toks(parent[c.start : c.end])
            if any(x[0].isalpha() or x[0] == "_" for x in t):
                dels.setdefault(t, []).append(c)
    out: set[int] = set()
    for c in changes:
        if parent[c.start : c.end].strip() == "" and c.text.strip():
            pending = dels.get(toks(c.text))
            if pending:
                out |= {id(c), id(pending.pop())}
    return out


def _learn_group(
    g: GroupResult,
    files: dict[str, list[Change]],
    parents: dict[str, str],
    expected: dict[str, str],
    lang: str,
) -> None:
    order = sorted(files, key=lambda p: (len(files[p]), p))
    examples = order[: 2 if len(files[order[0]]) == 1 and len(order) > 2 else 1]
    # The last rule that was learned, and the files refused as examples: a further example
    # whose change no one rule states together with the others' (two clean import deletions,
    # each learnable alone, anchored differently) is left out and the next wrong file is
    # tried, instead of losing the rule learned so far.
    kept: tuple[list[str], list[dict[str, Any]], int, int, list[str], Any] | None = None
    refused: list[str] = []
    for _ in range(2 * MAX_EXAMPLES):
        try:
            result = synthesize(
                [Example(parents[p], expected[p], language=lang, path=p) for p in examples]
            )
        except SynthesisError as exc:
            if len(examples) > 1:
                refused.append(examples.pop())
                if kept is None:
                    continue  # the first pair: learn from the first file alone
                examples = list(kept[0])
                nxt = [p for p in kept[4] if p not in refused]
                if not nxt:
                    break
                examples.append(nxt[0])
                continue
            g.examples, g.rules, g.reproduced, g.extra = list(examples), [], 0, 0
            g.reason = exc.reason
            return
        rules = [r.to_dict() for r in result.rules]
        reproduced, extra, wrong = _score(result, files, parents, expected)
        kept = (list(examples), rules, reproduced, extra, wrong, result)
        nxt = [p for p in wrong if p not in refused]
        if not nxt or len(examples) >= MAX_EXAMPLES:
            break
        examples.append(nxt[0])
    assert kept is not None  # every path that learned nothing has returned
    g.examples, g.rules, g.reproduced, g.extra, wrong, g._result = kept
    g.reason = "" if not wrong else f"still wrong in {len(wrong)} file(s)"
    if refused:
        g.reason += (", " if g.reason else "") + (
            f"no one rule with {', '.join(refused)} as a further example"
        )


def format_groups(results: list[GroupResult]) -> str:
    lines = []
    moves = [g for g in results if g.reordering]
    results = [g for g in results if not g.reordering]
    for g in moves:
        lines.append(f"(reordering): {g.sites} change(s) in {len(g.files)} file(s) — {g.reason}")
    for g in results:
        status = "whole group" if g.whole else ("partly" if g.rules else "no rule")
        change = " | ".join(x or "(layout)" for x in g.shapes) if g.shapes else g.change
        lines.append(
            f"{change or '(layout)'}: {g.sites} site(s) in {len(g.files)} file(s); "
            f"{status}: reproduces {g.reproduced}/{g.sites}"
            + (f", {g.extra} other rewrite(s)" if g.extra else "")
            + (f" — {g.reason}" if g.reason else "")
        )
        for r in g.rules:
            cons = f"  constraints: {r['constraints']}" if r.get("constraints") else ""
            lines.append(f"    rule: {r['rule']}{cons}  fix: {r['fix']!r}")
    whole = sum(1 for g in results if g.whole)
    sites = sum(g.sites for g in results)
    rep = sum(g.reproduced for g in results)
    lines.append(
        f"{len(results)} group(s), {whole} reproduced whole by their rule; "
        f"{rep} of {sites} sites reproduced"
    )
    return "\n".join(lines)
