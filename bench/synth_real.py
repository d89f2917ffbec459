"""Synth on real edits: systematic edits mined from public git histories (issue 26).

    python bench/synth_real.py GITDIR [GITDIR ...] [--seed 26] [--per-language 9]
                               [--max-commits 3000] [--cli 12] [--from-git] [--json OUT]
                               [--why] [--only N,M] [--cache FILE] [--diff-against CACHE]
                               [--commits-of CACHE] [--cli-check]

Each GITDIR is a (bare) git directory of a public repository, e.g. the mirrors the ``fetch`` tool
makes under /work/.mirror/OWNER+NAME/repo. Nothing fetched is committed: the cases are mined,
built and scored in memory (and a temporary directory for the CLI timings) on every run, and the
case list (repo, commit, paths) is printed so that a run can be reproduced.

Mining. For every non-merge commit (newest first, at most --max-commits per repository) that
changes 2..40 files of one supported language, each changed file is line-diffed against the
parent; each hunk's change is described at token level (comments dropped; string and number
literals abstracted to one placeholder each). Hunks that change nothing but comments,
whitespace, docstrings or version strings, and hunks that only reorder lines (import reordering),
are dropped. A *systematic edit* is a group of >= 3 hunks of one commit with the same
description, in >= 2 files; the largest group of a commit is its candidate. Cases are drawn by a
seeded shuffle with a quota per language (round-robin over the repositories of the language).

A case's files are the group's files; the expected result of each is its parent version with only
the group's hunks applied (the commit's other changes are left out). Examples: the 1-2 files with
the fewest sites (hunks), at most all but one; held out: the others.

What "only this edit" needs (miner v6-v8; each rule's count is printed with the mining summary):
whole inserted lines keep their own line; one change repeated a few tokens apart is that change
each time; a change opening a bracket it does not close takes in the changes after it until the
brackets balance (or is a fragment, left out); an insertion or deletion does not cut a
multi-character operator (`::`); triple-quoted strings are found in the whole file. A file where
the commit changed this edit's own tokens by another change (an import renamed and re-sorted, a
name renamed two ways, `(object)` -> `(metaclass=...)`, an insertion inside a larger rewrite) is
repaired when that change is only a reordering once the edit is applied, and left out otherwise;
an edit left with < 3 hunks or < 2 files, or one that alone leaves a file unparseable, gives way to
the commit's next largest edit. Miner v8: a Rust lifetime (`'v`) is a token, not the start of a
character literal; and a line of a kept file that the commit changed by this edit alone (its
commit version has the tokens of the parent line with the edit applied) is in the expected
file even when the hunk's token diff keyed it as another change. ``--diff-against OLD_CACHE``
prints what changed against another miner's cases; ``--commits-of OLD_CACHE`` scores the
commits another miner drew (a new candidate list reshuffles the seeded draw).

Site precision and recall compare line hunks modulo layout (tokens, not whitespace): a hunk that
only re-lays code out is not a site, and a site written in another layout is still that site
(``exact`` stays byte-identical; such a miss is classed ``layout``). Each miss is classed by what
limits it (MISS_CLASSES: no rule, too general, examples cannot decide, wrong rewrite, too narrow,
layout) and the run prints a table of the classes.

Scored per language and overall, one-shot and incremental (Refazer's protocol: while a held-out
file is wrong, add the first wrong one as a further example, at most 4 examples; where no one
rule set reproduces the examples, ``synthesize`` learns them in groups, wave 3g synth6, and
the run counts such rule sets); and, as its own line and table, **site-level** (Refazer's own
protocol: while a held-out file is wrong, add the first wrongly edited *site* — the first wrong
hunk of the first wrong held-out file — as a further example: that file with only the hunks
added so far applied, marked ``partial`` so that its unchanged code is no negative — where the
first difference is code the commit kept and the rules rewrote, its lines go in as lines that
partial example ``keep``, a negative site; the held-out files stay held out and are still scored
whole, byte for byte; at most SITE_CAP sites (hunks or kept lines) beyond the start; ``--json``'s ``site_level`` per case, with ``added_sites``). The file-level
protocol cannot add an example to a case with a single held-out file; the site level can:
learned (a rule set was synthesised), exact (every held-out file byte-identical), site precision
(rewritten line hunks that are expected ones) and recall (expected hunks reached), examples
(files) and example sites used. Timings: median ``synthesize`` time in process, and the median
wall time of ``oopav synth EXAMPLES.json`` per call on --cli cases. With --from-git: the
commit's --from-git report (groups when the synthesiser has ``learn_groups``, hunks otherwise).

``--cli-check`` runs every learned rule set (one-shot and incremental) with the real ast-grep
CLI too (``oopav.synth.clicheck``): each rule through ``ast-grep scan --rule FILE
--update-all`` over the examples and held-out files, byte for byte against the in-process
rewriter, then the whole rule file at once; it prints each finding under its case and a
``cli-check:`` summary (rules rejected, applied otherwise, deletions needing several runs,
rule files read otherwise at once).

``--why`` prints, for each miss, the first held-out hunk where the produced file differs from
the expected one (``-`` before, ``+`` expected, ``>`` produced) and the learned rules;
``--only`` scores the listed cases (1-based) alone, to iterate on a class of failures.

Targets (issue 26): one-shot exact >= 60%, incremental exact >= 85% with <= 3 example sites on
average, site precision >= 0.98 in both, --from-git group rules reproduce >= 70% of the sites of
their group, median synthesis <= 100 ms in process and <= 400 ms per CLI call.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import pickle
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ast_grep_py import SgRoot

from oopav.sandbox.astgrep import Rule
from oopav.synth import Example, SynthesisError, synthesize

EXT = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
}
LANGS = ("python", "javascript", "typescript", "go", "rust")
SKIP_PATH = re.compile(r"(^|/)(dist|vendor|node_modules|build|\.yarn)/|\.min\.js$|\.d\.ts$")
MAX_FILE_LINES = 4000
MINER_VERSION = "9"  # bump when mining changes (invalidates --cache)
_TOKEN = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
    r"|`(?:[^`\\]|\\.)*`|\d[\w.]*|\w+|\S"
)
# Miner v9: a change that takes in a docstring *and code* (a helper deleted with its docstring
# and the decorator of the next function) is a change, not prose: v8 dropped it, so an edit's
# site inside it (that `@threadpool`) stayed unchanged in the example, a false negative that
# made synth refuse; now the clash check leaves that file out or repairs it.
# Rust (miner v8): a lifetime (`'v`, `'static`) is one token, and a character literal holds one
# character or escape. The generic string alternative read `'v> self::serde::Serialize for
# Value<'` as one literal, so the edit on that line was keyed as another (literal) change and
# left out of the expected file although the commit made exactly this edit there.
_RUST_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]*\}|.))\''
    r"|'[A-Za-z_]\w*|\d[\w.]*|\w+|\S"
)
TRIPLE_QUOTES = ('"""', "'''")
_LIFETIME = re.compile(r"'[A-Za-z_]\w*$")  # a Rust lifetime is a name, not a literal
_VERSION = re.compile(r"^[\"'`]?v?\d+(\.\d+)+[\w.-]*[\"'`]?$")


# --- git -------------------------------------------------------------------------------------


class Git:
    def __init__(self, gitdir: Path) -> None:
        self.dir = gitdir
        self._cat = subprocess.Popen(
            ["git", "--git-dir", str(gitdir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def run(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.dir), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        ).stdout

    def show(self, rev: str, path: str) -> str | None:
        assert self._cat.stdin and self._cat.stdout
        self._cat.stdin.write(f"{rev}:{path}\n".encode())
        self._cat.stdin.flush()
        header = self._cat.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        data = self._cat.stdout.read(int(header[2]) + 1)[:-1]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def close(self) -> None:
        if self._cat.stdin:
            self._cat.stdin.close()
        self._cat.wait(timeout=30)


def repo_name(gitdir: Path) -> str:
    for part in (gitdir.name, gitdir.parent.name):
        if "+" in part:
            return part.replace("+", "/", 1)
    return gitdir.resolve().name


# --- mining ----------------------------------------------------------------------------------


def _hunks(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def _strip_comments(text: str, lang: str) -> str:
    """Comments blanked out with spaces (offsets kept)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    if lang == "python":
        return re.sub(r"(?m)(?<![\w\"'])#.*$", blank, text)
    text = re.sub(r"/\*[\s\S]*?\*/", blank, text)
    text = re.sub(r"(?m)^\s*\*.*$", blank, text)
    return re.sub(r"(?m)(?:^|(?<=[\s;{}(),]))//.*$", blank, text)


def _spans(text: str, lang: str) -> list[tuple[int, int, str]]:
    pattern = _RUST_TOKEN if lang == "rust" else _TOKEN
    return [(m.start(), m.end(), m.group(0)) for m in pattern.finditer(_strip_comments(text, lang))]


def _tokens(text: str, lang: str) -> list[str]:
    return [t for _, _, t in _spans(text, lang)]


def _abstract(tok: str) -> str:
    if tok[0] in "\"'`" and not _LIFETIME.match(tok):
        return "<str>"
    if tok[0].isdigit():
        return "<num>"
    return tok


def _in_docstring(before: str, line: int) -> bool:
    """Python: the line sits inside a triple-quoted string (an odd number of them before it)."""
    head = "".join(before.splitlines(keepends=True)[:line])
    return (head.count('"""') + head.count("'''")) % 2 == 1


@dataclass
class Unit:
    """One token-level change inside a hunk: old[start:end] (hunk offsets) becomes ``text``;
    ``olds``/``news`` are its concrete tokens (the key abstracts their literals)."""

    key: tuple
    start: int
    end: int
    text: str
    olds: tuple[str, ...] = ()
    news: tuple[str, ...] = ()
    repaired: str = ""  # which miner rule built it ("" when none was needed)


MERGE_GAP = 3  # changes this few equal tokens apart on one line are one change
# What the miner's rules dropped or repaired, per candidate (printed with the mining summary).
STATS: Counter[str] = Counter()
_BRACKETS = ("()", "[]", "{}")


def _balanced(tokens: Iterable[str]) -> bool:
    """As many of each opening bracket as closing ones: a change that opens a bracket it does
    not close is a fragment of a larger rewrite (`/x/` -> `{message: /x/}` is two insertions)."""
    toks = list(tokens)
    return all(toks.count(o) == toks.count(c) for o, c in _BRACKETS)


def _key(olds: list[str], news: list[str]) -> tuple:
    key = (tuple(_abstract(t) for t in olds), tuple(_abstract(t) for t in news))
    if all(t in ("<str>", "<num>") for t in key[0] + key[1]):
        key = (tuple(olds), tuple(news))  # the same change only with the same literals
    return key


def _splits(spans: list[tuple[int, int, str]], i1: int, i2: int) -> bool:
    """The run spans[i1:i2] cuts a multi-character operator (`::`, `=>`, `!=`): at one of its
    ends a punctuation token touches a kept punctuation token."""

    def glued(x: int, y: int) -> bool:
        return (
            0 <= x < len(spans)
            and 0 <= y < len(spans)
            and spans[x][1] == spans[y][0]
            and not re.match(r"[\w\"'`]", spans[x][2])
            and not re.match(r"[\w\"'`]", spans[y][2])
        )

    return glued(i1 - 1, i1) or glued(i2 - 1, i2)


def _slide(
    ops: list[tuple[str, int, int, int, int]],
    a: list[tuple[int, int, str]],
    b: list[tuple[int, int, str]],
) -> list[tuple[str, int, int, int, int]]:
    """A pure insertion or deletion that cuts a multi-character operator is moved, within the
    equal tokens after it, to where it cuts none: `T: self::serde` -> `T: serde` deletes
    `self::`, not `: self:` (whose whitespace splice gave `T:serde`)."""
    out = []
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        spans, s1, s2 = (a, i1, i2) if j1 == j2 else (b, j1, j2)
        if (j1 == j2) == (i1 == i2) or not _splits(spans, s1, s2):
            out.append((tag, i1, i2, j1, j2))
            continue
        limit = (ops[k + 1][1] if j1 == j2 else ops[k + 1][3]) if k + 1 < len(ops) else len(spans)
        shift = 0
        while s2 + shift < limit and spans[s1 + shift][2] == spans[s2 + shift][2]:
            shift += 1
            if not _splits(spans, s1 + shift, s2 + shift):
                out.append((tag, i1 + shift, i2 + shift, j1 + shift, j2 + shift))
                break
        else:
            out.append((tag, i1, i2, j1, j2))
    return out


def hunk_units(old: str, new: str, lang: str, fragments: list[Unit] | None = None) -> list[Unit]:
    """The token-level changes of one hunk, each keyed by its tokens with literals abstracted
    (only-literal changes keep their literals). Nothing for prose-only hunks (comments,
    whitespace, docstrings), version strings, and line reordering (import sorting).

    Changes a few tokens apart on one line are one change, unless every part is the same
    change (`A): A` -> `B): B` is two renames, not one rewrite of four tokens); a change that
    leaves a bracket unbalanced takes in the next change of the hunk until it balances, and is
    left out (appended to ``fragments``) when nothing balances it."""
    if sorted(old.splitlines()) == sorted(new.splitlines()) and old.strip():
        return []
    a, b = _spans(old, lang), _spans(new, lang)
    at, bt = [t for *_, t in a], [t for *_, t in b]
    if at == bt:
        return []
    ops = _slide(
        [
            op
            for op in difflib.SequenceMatcher(None, at, bt, autojunk=False).get_opcodes()
            if op[0] != "equal"
        ],
        a,
        b,
    )
    merged: list[list[int]] = []
    parts: list[list[tuple[int, int, int, int]]] = []
    for _, i1, i2, j1, j2 in ops:
        if merged:
            p = merged[-1]
            same_line = (
                "\n"
                not in old[a[p[1] - 1][1] if p[1] else 0 : a[i1][0] if i1 < len(a) else len(old)]
            )
            if i1 - p[1] <= MERGE_GAP and same_line:
                p[1], p[3] = i2, j2
                parts[-1].append((i1, i2, j1, j2))
                continue
        merged.append([i1, i2, j1, j2])
        parts.append([(i1, i2, j1, j2)])
    # Repeated instances of one change merged by proximity are that change, each on its own.
    spans: list[tuple[list[int], str]] = []
    for m, ps in zip(merged, parts, strict=True):
        keys = {_key(at[i1:i2], bt[j1:j2]) for i1, i2, j1, j2 in ps}
        if len(ps) > 1 and len(keys) == 1:
            spans += [(list(q), "split-repeated") for q in ps]
        else:
            spans.append((m, ""))
    # A change that opens a bracket it does not close is part of a larger rewrite: it takes in
    # the changes after it (and the tokens between) until the brackets balance.
    balanced: list[tuple[list[int], str]] = []
    k = 0
    while k < len(spans):
        (i1, i2, j1, j2), how = spans[k]
        k += 1
        while not (_balanced(at[i1:i2]) and _balanced(bt[j1:j2])) and k < len(spans):
            (_, i2, _, j2), _ = spans[k]
            k += 1
            how = "merged-bracket"
        if not (_balanced(at[i1:i2]) and _balanced(bt[j1:j2])):
            if fragments is not None:
                fragments.append(Unit(_key(at[i1:i2], bt[j1:j2]), 0, 0, ""))
            continue
        balanced.append(([i1, i2, j1, j2], how))
    units: list[Unit] = []
    for (i1, i2, j1, j2), how in balanced:
        olds, news = at[i1:i2], bt[j1:j2]
        raw = olds + news
        if all(_VERSION.match(t) or t in ("__version__", "version") for t in raw):
            continue
        if raw and all(t.startswith(('"""', "'''")) for t in raw):
            continue  # a docstring
        key = _key(olds, news)
        if i2 > i1 and j2 > j1:
            # A replacement: the changed tokens only, so that a reflow of the whitespace
            # around them (another change of the commit) is not part of this one.
            os_, oe, text = a[i1][0], a[i2 - 1][1], new[b[j1][0] : b[j2 - 1][1]]
        else:
            os_ = a[i1 - 1][1] if i1 > 0 else 0
            oe = a[i2][0] if i2 < len(a) else len(old)
            ns = b[j1 - 1][1] if j1 > 0 else 0
            ne = b[j2][0] if j2 < len(b) else len(new)
            text = new[ns:ne]
            # v9: whole lines inserted in front of the hunk's first line (a new import above
            # a rewritten one) are lines, not tokens folded into that line (that glued
            # `from collections import OrderedDictfrom .compat import …`, requests 2aab9a9a39).
            ahead = i1 == i2 == 0 and re.search(r"\n[ \t]*$", text) is not None
            if ahead:
                how = how or "whole-lines"
            elif "\n" in text and "\n" not in old[os_:oe] and i2 == i1 and old.strip():
                # Tokens inserted into a line that the commit also rewrapped: in the line's
                # own layout. (Whole lines inserted, an empty old hunk, keep theirs: folding
                # them put `stacklevel=2,` at column 0 of the next line.)
                text = re.sub(r"\s*\n\s*", " ", text)
                text = re.sub(r"([(\[{]) ", r"\1", text)
                text = re.sub(r" ([)\]},])", r"\1", text)
                if not old[os_:oe]:
                    text = text.strip()
            elif not old.strip() and "\n" in text:
                how = how or "whole-lines"
        units.append(Unit(key, os_, oe, text, tuple(olds), tuple(news), how))
    return units


@dataclass
class FileCase:
    path: str
    before: str
    after: str  # the parent with only the group's hunks applied
    sites: int
    # A partial example (the site-level protocol): a held-out file with only some of its
    # hunks applied; its unchanged code is not a negative (synth's `partial`, wave 3h),
    # but for the 1-based lines it keeps.
    partial: bool = False
    keep: tuple[int, ...] = ()


@dataclass
class Case:
    repo: str
    gitdir: str
    commit: str
    language: str
    signature: str
    files: list[FileCase]

    @property
    def sites(self) -> int:
        return sum(f.sites for f in self.files)


def mine(gitdir: Path, max_commits: int) -> list[Case]:
    git = Git(gitdir)
    name = repo_name(gitdir)
    log = git.run(
        "log", "--no-merges", "--no-renames", f"-n{max_commits}", "--format=@%H", "--name-only"
    )
    commits: list[tuple[str, list[str]]] = []
    for chunk in log.split("@")[1:]:
        lines = [x for x in chunk.splitlines() if x.strip()]
        if lines:
            commits.append((lines[0], lines[1:]))
    cases: list[Case] = []
    for sha, paths in commits:
        case = mine_commit(git, name, sha, paths)
        if case is not None:
            cases.append(case)
    git.close()
    return cases


def mine_commit(git: Git, name: str, sha: str, paths: list[str]) -> Case | None:
    """The commit's largest systematic edit that stands on its own, as a case, if any."""
    code = [p for p in paths if os.path.splitext(p)[1] in EXT and not SKIP_PATH.search(p)]
    langs = {EXT[os.path.splitext(p)[1]] for p in code}
    if len(code) < 2 or len(code) > 40 or len(langs) != 1 or len(paths) > 60:
        return None
    lang = langs.pop()
    groups: dict[tuple, list[tuple[str, int, Unit]]] = defaultdict(list)
    texts: dict[str, str] = {}
    afters: dict[str, str] = {}  # the commit's version of each file
    in_file: dict[str, list[Unit]] = defaultdict(list)  # every change, every key
    added: dict[str, list[list[str]]] = defaultdict(list)  # the commit's new lines
    fragments: dict[tuple, set[tuple[str, int]]] = defaultdict(set)
    for path in code:
        before, after = git.show(f"{sha}^", path), git.show(sha, path)
        if before is None or after is None or before.count("\n") > MAX_FILE_LINES:
            continue
        a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
        texts[path] = before
        afters[path] = after
        # Triple-quoted strings, found in the whole file (a hunk may hold only one quote).
        prose = [
            (ds, de)
            for ds, de, t in (_spans(before, lang) if lang == "python" else [])
            if t.startswith(('"""', "'''"))
        ]
        file_tokens: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        moved: dict[tuple[str, ...], bool] = {}
        offsets = [0]
        for line in a:
            offsets.append(offsets[-1] + len(line))
        for n, (i1, i2, j1, j2) in enumerate(_hunks(a, b)):
            added[path] += [sorted(_tokens(x, lang)) for x in b[j1:j2]]
            if lang == "python" and _in_docstring(before, i1):
                continue
            frags: list[Unit] = []
            for u in hunk_units("".join(a[i1:i2]), "".join(b[j1:j2]), lang, frags):
                base = offsets[i1]
                unit = Unit(u.key, base + u.start, base + u.end, u.text, u.olds, u.news, u.repaired)
                if any(
                    ((ds < unit.end and unit.start < de) or ds < unit.start < de)
                    # v9: a change that holds a whole docstring and code is code
                    and not (unit.start <= ds and de <= unit.end)
                    for ds, de in prose
                ):
                    continue  # inside a docstring (or another triple-quoted text)
                if (not u.olds or not u.news) and _whole_lines(before, unit, lang):
                    # v9: whole lines moved, not removed or added: the file has them as
                    # often after as before (isort put `import json` above `import typing`;
                    # the diff deletes it in one hunk and inserts it in another). Only whole
                    # lines: uvicorn's `self.server_state.x` -> `self.x` deletes
                    # `server_state.` where another change adds `= server_state.x`.
                    if file_tokens is None:
                        file_tokens = (tuple(_tokens(before, lang)), tuple(_tokens(after, lang)))
                    seq = u.olds or u.news
                    if seq not in moved:
                        # (> 0: lines inside a multi-line string are no tokens of the file,
                        # zod's `"exact": true,` added to inline snapshots)
                        n0, n1 = _count(file_tokens[0], seq), _count(file_tokens[1], seq)
                        moved[seq] = n0 == n1 > 0
                    if moved[seq]:
                        continue
                groups[u.key].append((path, n, unit))
                in_file[path].append(unit)
            for f in frags:
                fragments[f.key].add((path, n))
    built = None
    first_reason = ""
    indexed: dict[str, tuple[list[tuple[int, int, str]], dict[str, list[int]]]] = {}
    # The commit's largest edit that stands on its own (stable: ties keep the first seen).
    for key in sorted(groups, key=lambda k: -len(groups[k])):
        if not _systematic(groups[key]):
            continue
        built = _build(key, groups[key], texts, in_file, added, lang, indexed, afters)
        if isinstance(built, str):
            first_reason = first_reason or built
            built = None
            continue
        break
    largest_fragment = max((len(hs) for hs in fragments.values() if _big(hs)), default=0)
    if built is None:
        if first_reason:
            STATS[f"commits dropped: {first_reason}"] += 1
        elif largest_fragment:
            STATS["commits dropped: the edit is a fragment of a larger rewrite"] += 1
        return None
    key, files, notes = built
    if first_reason:
        notes.add(f"next edit taken; the largest: {first_reason}")
    elif largest_fragment > sum(f.sites for f in files):
        notes.add("next edit taken; the largest was a fragment of a larger rewrite")
    for note in notes:
        STATS[note] += 1
    x, y = key
    sig_text = f"{' '.join(x)} -> {' '.join(y)}"[:100]
    return Case(name, str(git.dir), sha, lang, sig_text, files)


def _whole_lines(before: str, unit: Unit, lang: str) -> bool:
    """The unit deletes whole lines of ``before``, or inserts whole lines (its text ends a
    line and holds exactly its new tokens)."""
    if unit.olds:
        ls = before.rfind("\n", 0, unit.start) + 1
        le = before.find("\n", max(unit.start, unit.end - 1))
        line = before[ls : len(before) if le < 0 else le]
        return tuple(_tokens(line, lang)) == unit.olds
    return "\n" in unit.text and tuple(_tokens(unit.text, lang)) == unit.news


def _big(hunks: set[tuple[str, int]]) -> bool:
    return len(hunks) >= 3 and len({p for p, _ in hunks}) >= 2


def _systematic(members: list[tuple[str, int, Unit]]) -> bool:
    """>= 3 hunks in >= 2 files."""
    return _big({(p, n) for p, n, _ in members})


def _occurrences(
    tokens: list[tuple[int, int, str]], index: dict[str, list[int]], seq: tuple[str, ...]
) -> list[tuple[int, int]]:
    """(start, end) offsets of each occurrence of the token sequence ``seq``."""
    n = len(seq)
    return [
        (tokens[i][0], tokens[i + n - 1][1])
        for i in index.get(seq[0], ())
        if i + n <= len(tokens) and all(tokens[i + k][2] == seq[k] for k in range(1, n))
    ]


def _token_index(text: str, lang: str) -> tuple[list[tuple[int, int, str]], dict[str, list[int]]]:
    tokens = _spans(text, lang)
    index: dict[str, list[int]] = defaultdict(list)
    for i, (_, _, t) in enumerate(tokens):
        index[t].append(i)
    return tokens, index


def _build(
    key: tuple,
    members: list[tuple[str, int, Unit]],
    texts: dict[str, str],
    in_file: dict[str, list[Unit]],
    added: dict[str, list[list[str]]],
    lang: str,
    indexed: dict[str, tuple[list[tuple[int, int, str]], dict[str, list[int]]]],
    afters: dict[str, str] | None = None,
) -> tuple[tuple, list[FileCase], set[str]] | str:
    """The case of one edit: each file's parent with only this edit applied, and notes on
    what was repaired; or why there is none.

    A file where the commit changed this edit's own tokens by *another* change (an import
    line that was renamed and re-sorted, a name renamed two ways, `(object)` that became
    `(metaclass=…)`) has no "only this edit" there. It is repaired when the other change is
    this edit plus a reordering (the edited line's tokens are those of a line the commit
    added: the edit is applied in place), and left out otherwise; likewise a file where the
    commit inserted this edit's tokens inside a larger change. Then the edit must still span
    >= 3 hunks in >= 2 files, and leave every file parseable."""
    notes: set[str] = set()
    afters = afters or {}
    by_file: dict[str, list[Unit]] = defaultdict(list)
    hunks: dict[str, set[int]] = defaultdict(set)
    for path, n, u in members:
        by_file[path].append(u)
        hunks[path].add(n)
        if u.repaired:
            notes.add(f"repaired: {u.repaired}")
    olds = {u.olds for _, _, u in members if u.olds}
    news = {u.news for _, _, u in members if u.news}
    mapped: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for _, _, u in members:
        mapped[u.olds].add(u.text)
    files = []
    for path, us in sorted(by_file.items()):
        before = texts[path]
        others = [u for u in in_file[path] if u.key != key]
        if olds:
            if path not in indexed:
                indexed[path] = _token_index(before, lang)
            changed = [(o.start, o.end) for o in others if o.olds]
            clash = (
                sorted(
                    {
                        (s, e, seq)
                        for seq in olds
                        for s, e in _occurrences(*indexed[path], seq)
                        if any(cs < e and s < ce for cs, ce in changed)
                    }
                )
                if changed
                else []
            )
            repairs: list[Unit] | None = []
            for s, e, seq in clash:
                line_start = before.rfind("\n", 0, s) + 1
                line_end = before.find("\n", e)
                line_end = len(before) if line_end < 0 else line_end
                choices = mapped.get(seq, set())
                edited = before[line_start:s] + next(iter(choices), "") + before[e:line_end]
                if len(choices) != 1 or sorted(_tokens(edited, lang)) not in added[path]:
                    repairs = None
                    break
                repairs.append(Unit(key, s, e, next(iter(choices))))
            if repairs is None:
                notes.add("file left out: another change took this edit's tokens there")
                continue
            if repairs:
                notes.add("repaired: this edit's tokens also re-sorted by the commit")
                us = us + repairs
        elif any(
            _count(o.news, seq) > _count(o.olds, seq)
            for o in others
            if o.olds  # new code alone (nothing replaced) is no site a rule could reach
            for seq in news
        ):
            notes.add("file left out: this insertion is inside a larger change there")
            continue
        if path in afters and olds:
            agreeing = _agreeing_lines(key, before, afters[path], us, members, lang)
            if agreeing:
                notes.add("v8: a line the commit changed by this edit alone added (no unit had it)")
                us = us + agreeing
        out, pos = [], 0
        for u in sorted(us, key=lambda u: u.start):
            out += [before[pos : u.start], u.text]
            pos = u.end
        files.append(FileCase(path, before, "".join(out) + before[pos:], len(us)))
    kept = {f.path for f in files}
    if not _big({(p, n) for p in kept for n in hunks[p]}):
        return "fewer than 3 sites in 2 files once files another change took are left out"
    if not all(_still_parses(f.before, f.after, lang) for f in files):
        return "alone it leaves a file unparseable"  # part of a larger change
    return key, files, notes


def _agreeing_lines(
    key: tuple,
    before: str,
    after: str,
    units: list[Unit],
    members: list[tuple[str, int, Unit]],
    lang: str,
) -> list[Unit]:
    """Lines the commit changed by this edit alone that none of the edit's units reached
    (miner v8): the commit's version of the line has the tokens of the parent line with every
    occurrence of the edit's old tokens replaced by its new ones (one mapping each), so the
    commit wrote exactly this edit there; a rule that writes that line is right, and the
    expected file must have it. Until v7 such a line was left out when the hunk's token diff
    keyed it as another change: `t.Optional[t.BinaryIO]` -> `t.Optional[t.IO[bytes]]`, whose
    new `]` aligns with the kept one and leaves a bracket fragment (werkzeug 770ac299b8);
    `total: float` -> `total: Optional[float]` whose bracket merged with the docstring line
    below (rich 052b157858). Lines are paired only inside hunks that keep the line count (a
    reflow is another change); the line is taken with the commit's bytes. Python lines inside
    triple-quoted strings are not edits."""
    mapping: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for _, _, u in members:
        if u.olds:
            mapping[u.olds].add(u.news)
    seqs = sorted((o for o, ns in mapping.items() if len(ns) == 1), key=len, reverse=True)
    if not seqs:
        return []
    prose = (
        [(s, e) for s, e, t in _spans(before, lang) if t.startswith(TRIPLE_QUOTES)]
        if lang == "python"
        else []
    )
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    offsets = [0]
    for line in a:
        offsets.append(offsets[-1] + len(line))
    out: list[Unit] = []
    for i1, i2, j1, j2 in _hunks(a, b):
        if i2 - i1 != j2 - j1:
            continue
        for k in range(i2 - i1):
            s = offsets[i1 + k]
            e = s + len(a[i1 + k].rstrip("\r\n"))
            if any(
                (u.start < e and s < u.end) or (u.start == u.end and s < u.start < e) for u in units
            ) or any(ds < e and s < de for ds, de in prose):
                continue  # a unit of the edit has this line, or it is inside a docstring
            toks = _tokens(before[s:e], lang)
            applied: list[str] = []
            n = 0
            while n < len(toks):
                seq = next((q for q in seqs if tuple(toks[n : n + len(q)]) == q), None)
                if seq is None:
                    applied.append(toks[n])
                    n += 1
                else:
                    applied += next(iter(mapping[seq]))
                    n += len(seq)
            new_line = b[j1 + k].rstrip("\r\n")
            if applied != toks and applied == _tokens(new_line, lang):
                out.append(Unit(key, s, e, new_line, repaired="commit-agrees"))
    return out


def _count(tokens: tuple[str, ...], seq: tuple[str, ...]) -> int:
    n = len(seq)
    return sum(1 for i in range(len(tokens) - n + 1) if tokens[i : i + n] == seq)


def _still_parses(before: str, after: str, lang: str) -> bool:
    """The edit alone keeps the file parseable (when the parent parsed)."""

    def broken(text: str) -> bool:
        root = SgRoot(text, lang).root()
        if root.find(kind="ERROR") is not None or root.kind() == "ERROR":
            return True
        if lang == "python":
            # v9: tree-sitter recovers some broken lines without an ERROR node.
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # old files' invalid escapes
                    ast.parse(text)
            except (SyntaxError, ValueError):
                return True
        return False

    return broken(before) or not broken(after)


def select(cases: list[Case], seed: int, per_language: int) -> list[Case]:
    """A seeded shuffle, then round-robin over each language's repositories up to its quota."""
    rng = random.Random(seed)
    pool = sorted(cases, key=lambda c: (c.repo, c.commit))
    rng.shuffle(pool)
    out: list[Case] = []
    for lang in LANGS:
        by_repo: dict[str, list[Case]] = defaultdict(list)
        for c in pool:
            if c.language == lang:
                by_repo[c.repo].append(c)
        repos = sorted(by_repo)
        taken = 0
        while taken < per_language and any(by_repo.values()):
            for r in repos:
                if by_repo[r] and taken < per_language:
                    out.append(by_repo[r].pop(0))
                    taken += 1
    return out


def case_diff(
    path: Path, mined: list[Case], cases: list[Case], seed: int, per_language: int
) -> list[str]:
    """What changed against another miner's cache: candidates gained/lost/rebuilt (a different
    edit or different expected files for the same commit) and the selection's turnover."""
    cached = pickle.loads(path.read_bytes())
    old_key, old_mined = cached[0], cached[1]
    old = {c.commit: c for c in old_mined}
    new = {c.commit: c for c in mined}

    def same(a: Case, b: Case) -> bool:
        return a.signature == b.signature and [(f.path, f.after) for f in a.files] == [
            (f.path, f.after) for f in b.files
        ]

    rebuilt = [c for c in new if c in old and not same(old[c], new[c])]
    out = [
        f"# against {path} (miner v{old_key[-1]}): {len(old_mined)} -> {len(mined)} candidates; "
        f"{len(set(new) - set(old))} new, {len(set(old) - set(new))} gone, {len(rebuilt)} "
        "rebuilt (another edit or other expected files)"
    ]
    old_sel = {c.commit for c in select(old_mined, seed, per_language)}
    new_sel = [c.commit for c in cases]
    for n, c in enumerate(cases, 1):
        if c.commit not in old_sel:
            why = "new candidate" if c.commit not in old else "drawn now"
            if c.commit in old and not same(old[c.commit], c):
                why = f"rebuilt (was: {old[c.commit].signature[:50]})"
            out.append(f"#   + {n:2}. {c.repo} {c.commit[:10]} {c.signature[:60]} ({why})")
        elif not same(old[c.commit], c):
            out.append(
                f"#   ~ {n:2}. {c.repo} {c.commit[:10]} rebuilt: {old[c.commit].signature[:40]}"
                f" -> {c.signature[:40]}, files {len(old[c.commit].files)} -> {len(c.files)}"
            )
    for c in select(old_mined, seed, per_language):
        if c.commit not in new_sel:
            why = "no longer a candidate" if c.commit not in new else "not drawn now"
            out.append(f"#   - {c.repo} {c.commit[:10]} {c.signature[:60]} ({why})")
    return out


# --- scoring ---------------------------------------------------------------------------------


@dataclass
class Score:
    learned: bool = False
    exact: bool = False
    produced: int = 0
    correct: int = 0
    expected: int = 0
    examples: int = 0
    example_sites: int = 0
    ms: float = 0.0
    cpu_ms: float = 0.0  # CPU time of the synthesis (the box is shared: wall time inflates)
    error: str = ""
    wrong: list[str] = field(default_factory=list)
    rules: int = 0
    why: str = ""  # a miss: the first held-out hunk that differs (expected vs produced)
    rule_text: str = ""
    # Per held-out path: line ranges rewritten where the commit changed nothing there.
    over: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    miss_class: str = ""
    # --cli-check: the learned rules checked with the ast-grep CLI (synth/clicheck.py), and
    # one line per rule it refuses or applies otherwise than the in-process rewriter.
    cli_rules: int = 0
    cli_findings: list[str] = field(default_factory=list)
    # Groups of examples learned one rule set each (synthesize's `groups`, wave 3g synth6):
    # 0 when one rule set covers every example.
    groups: int = 0
    # What the rules made of each wrong held-out file (the site-level protocol's next step
    # reads it; left out of --json).
    outputs: dict[str, str] = field(default_factory=dict)
    # The site-level protocol: the partial examples added, as "path:line" of each hunk.
    added_sites: list[str] = field(default_factory=list)
    # --repo-aware: sites rewritten in files of the repository the commit did not touch (the
    # commit kept them: every one is wrong), and whether the rules were fitted to the repository.
    outside: int = 0
    fitted: bool = False

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "outputs"}


# Set by --cli-check: every learned rule set is run by the real ast-grep CLI too.
CLI_CHECK = False
# Set by --repo-aware: synthesize() gets the repository's files at the commit's parent (their
# text only: what `oopav synth --apply DIR` sees) as its `target` (synth/target.py).
REPO_AWARE = False
_REPO_FILES: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
_TOUCHED: dict[tuple[str, str], set[str]] = {}


def commit_paths(case: Case) -> set[str]:
    """Every path the commit changed (the miner leaves some of them out of a case)."""
    key = (case.gitdir, case.commit)
    if key not in _TOUCHED:
        git = Git(Path(case.gitdir))
        try:
            out = git.run("diff-tree", "-r", "--no-commit-id", "--name-only", case.commit)
        finally:
            git.close()
        _TOUCHED.clear()
        _TOUCHED[key] = set(out.splitlines())
    return _TOUCHED[key]


def repo_files(case: Case) -> list[tuple[str, str]]:
    """The case language's files of the repository at the commit's parent (path, text)."""
    key = (case.gitdir, case.commit, case.language)
    if key not in _REPO_FILES:
        git = Git(Path(case.gitdir))
        try:
            paths = git.run("ls-tree", "-r", "--name-only", f"{case.commit}^").splitlines()
            out = []
            for p in paths:
                if EXT.get(os.path.splitext(p)[1]) != case.language or SKIP_PATH.search(p):
                    continue
                text = git.show(f"{case.commit}^", p)
                if text is not None:
                    out.append((p, text))
        finally:
            git.close()
        _REPO_FILES.clear()  # one commit's tree at a time: cases come commit by commit
        _REPO_FILES[key] = out
    return _REPO_FILES[key]


def _layout_free(line: str) -> str:
    """A line's tokens, one space apart: what is left when layout is taken away (a string
    literal is one token, so whitespace inside one still counts)."""
    return " ".join(_TOKEN.findall(line))


def _line_hunks(before: str, after: str) -> set[tuple[int, int, str]]:
    """The changed line ranges of ``before`` with their new text, compared modulo layout:
    a hunk that only re-lays lines out (indentation, spacing, blank lines, a rewrap) is not a
    site, and a site reached with a layout the commit did not use is still that site (the
    byte-exact verdict is ``exact``'s; a miss that is only layout is classed ``layout``)."""
    a = [_layout_free(x) for x in before.splitlines()]
    b = [_layout_free(x) for x in after.splitlines()]
    out = set()
    for i1, i2, j1, j2 in _hunks(a, b):
        old, new = " ".join(x for x in a[i1:i2] if x), " ".join(x for x in b[j1:j2] if x)
        if old != new:
            out.add((i1, i2, new))
    return out


# What limits a miss, the first that applies (the run's summary table):
MISS_CLASSES = (
    ("no rule", "nothing learned from the examples (the synthesiser's reason is printed)"),
    ("too general", "rewrites code the commit kept, in a syntactic context no example site has"),
    (
        "examples cannot decide",
        "rewrites code the commit kept, of the same kind and context as an example site",
    ),
    ("wrong rewrite", "reaches a site the commit changed but writes something else there"),
    ("too narrow", "misses sites the commit changed, rewrites nothing wrong"),
    ("layout", "every site right modulo layout; the bytes differ (indentation, wrapping)"),
)


def _contexts(rules: list[Rule], text: str, lines: set[int] | None) -> set[tuple[str, str]]:
    """(kind, parent kind) of the rules' matches, those on ``lines`` when given."""
    out = set()
    for rule in rules:
        try:
            nodes = SgRoot(text, rule.language).root().find_all(rule.config())
        except Exception:
            continue
        for node in nodes:
            r = node.range()
            if lines is None or any(n in lines for n in range(r.start.line, r.end.line + 1)):
                parent = node.parent()
                out.add((node.kind(), parent.kind() if parent is not None else ""))
    return out


def _changed_lines(before: str, after: str) -> set[int]:
    a, b = before.splitlines(), after.splitlines()
    return {n for i1, i2, _, _ in _hunks(a, b) for n in range(i1, max(i2, i1 + 1))}


def classify(s: Score, rules: list[Rule], examples: list[FileCase], held: dict) -> str:
    """The class of a miss (MISS_CLASSES), from what the run produced: a rewrite where the
    commit kept the code is *too general* when the rule matched it in a (kind, parent kind)
    that no example site has, else the examples cannot decide (a heuristic: the same kind in
    the same parent is what the examples can show)."""
    if not s.learned:
        return "no rule"
    kept = [(path, h) for path, hs in s.over.items() for h in hs]
    if kept:
        shown: set[tuple[str, str]] = set()
        for f in examples:
            shown |= _contexts(rules, f.before, _changed_lines(f.before, f.after))
        for path, (i1, i2) in kept:
            if _contexts(rules, held[path].before, set(range(i1, max(i2, i1 + 1)))) - shown:
                return "too general"
        return "examples cannot decide"
    if s.produced > s.correct:
        return "wrong rewrite"
    if s.correct < s.expected:
        return "too narrow"
    return "layout"


def score(case: Case, examples: list[FileCase], heldout: list[FileCase]) -> Score:
    s = Score(examples=len(examples), example_sites=sum(f.sites for f in examples))
    exs = [
        # `partial` only where set: a baseline's src (PYTHONPATH) may predate it.
        Example(
            f.before,
            f.after,
            path=f.path,
            **({"partial": True} if f.partial else {}),
            **({"keep": f.keep} if f.keep else {}),
        )
        for f in examples
    ]
    for f in heldout:
        s.expected += len(_line_hunks(f.before, f.after))
    target = None
    if REPO_AWARE:
        # The held-out files as the commit's parent has them (their before text), the rest of
        # the repository too; never what they become.
        held = {f.path: f.before for f in heldout}
        target = [(p, held.get(p, t)) for p, t in repo_files(case)]
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = synthesize(exs, target=target) if target is not None else synthesize(exs)
    except SynthesisError as exc:
        s.cpu_ms = (time.process_time() - c0) * 1000
        s.ms = (time.perf_counter() - t0) * 1000
        s.error = exc.reason[:160]
        s.miss_class = "no rule"
        return s
    except Exception as exc:  # a crash is a finding, not a reason to stop the run
        s.ms = (time.perf_counter() - t0) * 1000
        s.error = f"crash: {type(exc).__name__}: {str(exc)[:120]}"
        s.miss_class = "no rule"
        return s
    s.ms = (time.perf_counter() - t0) * 1000
    s.cpu_ms = (time.process_time() - c0) * 1000
    s.learned = True
    s.rules = len(result.rules)
    s.groups = len(getattr(result, "groups", []))  # a baseline's src may predate groups
    s.rule_text = result.to_yaml()
    s.fitted = any(n.startswith("fitted to the repository") for n in result.notes)
    if target is not None:
        # Files the commit changed but the case leaves out (another change there) are not
        # scored either way: only files the commit kept as they were count.
        touched = {f.path for f in [*examples, *heldout]} | commit_paths(case)
        for p, t in target:
            if p in touched:
                continue
            try:
                got, _ = result.apply(t)
            except Exception:
                continue
            if got != t:
                s.outside += len(_line_hunks(t, got))
    if CLI_CHECK:
        from oopav.synth.clicheck import check_file, check_rules

        files = [(f.path, f.before) for f in [*examples, *heldout]]
        s.cli_rules = len(result.rules)
        found = check_rules(result.rules, files, result.language)
        found += check_file(result.rules, files, result.language)
        s.cli_findings = [f"{f.kind}\t{f.line()}" for f in found]
    exact = True
    for f in heldout:
        try:
            got, _ = result.apply(f.before)
        except Exception as exc:
            got = f.before
            s.error = f"apply crash: {exc}"[:160]
        if got != f.after:
            exact = False
            s.wrong.append(f.path)
            s.outputs[f.path] = got
            if not s.why:
                s.why = f"{f.path}:\n" + _first_difference(f.before, f.after, got)
        produced, want = _line_hunks(f.before, got), _line_hunks(f.before, f.after)
        s.produced += len(produced)
        s.correct += len(produced & want)
        over = [
            (i1, i2)
            for i1, i2, _ in produced - want
            if not any(i1 <= w2 and w1 <= i2 for w1, w2, _ in want)
        ]
        if over:
            s.over[f.path] = over
    s.exact = exact and bool(heldout)
    if not s.exact:
        rules = [r.as_rule() for r in result.rules]
        s.miss_class = classify(s, rules, examples, {f.path: f for f in heldout})
    return s


def _first_difference(before: str, want: str, got: str, width: int = 3) -> str:
    """Why a held-out file is wrong: the first line hunk where the expected and the produced
    file differ, as ``-`` before / ``+`` expected / ``>`` produced lines."""
    a, w, g = before.splitlines(), want.splitlines(), got.splitlines()
    sm = difflib.SequenceMatcher(None, w, g, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        # The before lines at the same place (by the expected file's line numbers, roughly).
        lines = [f"      line {i1 + 1}:"]
        lines += [f"      - {x[:110]}" for x in a[i1 : min(i2, i1 + width)] if x not in w]
        lines += [f"      + {x[:110]}" for x in w[i1 : min(i2, i1 + width)]]
        lines += [f"      > {x[:110]}" for x in g[j1 : min(j2, j1 + width)]]
        if len(lines) == 1:
            lines.append("      (produced and expected differ only in line count)")
        return "\n".join(lines)
    return "      (no line difference)"


def split(case: Case) -> tuple[list[FileCase], list[FileCase]]:
    """Examples: the file with the fewest sites, and the next one too when that file has a
    single site (and a held-out file remains); held out: the rest."""
    ordered = sorted(case.files, key=lambda f: (f.sites, f.path))
    k = 2 if ordered[0].sites == 1 and len(ordered) > 2 else 1
    return ordered[:k], ordered[k:]


def incremental(case: Case, first: Score) -> Score:
    examples, heldout = split(case)
    s = first
    while not s.exact and len(examples) < 4:
        wrong = [f for f in heldout if f.path in s.wrong]
        if not wrong or len(heldout) == 1:
            break  # nothing left to learn from without emptying the held-out set
        examples = [*examples, wrong[0]]
        heldout = [f for f in heldout if f is not wrong[0]]
        s = score(case, examples, heldout)
    return s


# The site-level protocol's cap: at most this many sites added beyond the start's examples
# (the file-level protocol's cap is 4 example files, 3.4 sites on average; Refazer reports 2.9
# examples, each one edited location). The run also reports exactness within 3 sites.
SITE_CAP = 4

Hunk = tuple[int, int, int, int]


def next_site(
    f: FileCase, got: str, taken: list[Hunk], kept: list[int], refused: list[Hunk] | None = None
) -> tuple[str, Hunk | list[int]] | None:
    """The first wrongly edited site of ``f`` (``got``: what the rules made of it), where the
    expected and the produced file first differ (as ``--why`` prints it): ``("site", hunk)``,
    the commit's hunk there (``_hunks``' (i1, i2, j1, j2) of ``f.before`` -> ``f.after``),
    when it is not taken yet; else ``("keep", lines)``, the 1-based lines of ``f.before``
    there — code the commit kept that the rules rewrote (a negative inside the partial
    example, its ``keep``). None when every difference is at what was added already.
    ``refused``: hunks added once that the synthesiser refused (withdrawn; skipped here, and
    kept lines it refused are in ``kept``)."""
    a = f.before.splitlines(keepends=True)
    w = f.after.splitlines(keepends=True)
    g = got.splitlines(keepends=True)
    hunks = _hunks(a, w)
    sm = difflib.SequenceMatcher(None, w, g, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        hit = [
            h
            for h in hunks
            if (h[2] < i2 and i1 < h[3])
            or (h[2] == h[3] and i1 <= h[2] <= i2)
            or (i1 == i2 and h[2] <= i1 <= h[3])
        ]
        if hit and refused and all(h in refused for h in hit):
            continue  # shown once and refused: the synthesiser cannot take it
        if hit:
            fresh = [h for h in hit if h not in taken and h not in (refused or [])]
            if fresh:
                return ("site", fresh[0])
            # A hunk shown already that the rules still get wrong. Left as it was: the
            # synthesiser left the site out (the examples contradict it), nothing to add.
            # Rewritten otherwise: its line holds code the commit kept too (`null != a &&
            # a !== b`), which the rules rewrote.
            if any(g[j1:j2] and all(x in a[h[0] : h[1]] for x in g[j1:j2]) for h in hit):
                continue
            lines = [n + 1 for h in hit for n in range(h[0], h[1])]
        else:
            # Code the commit kept, rewritten: its lines in before's numbering.
            shift = sum((h[1] - h[0]) - (h[3] - h[2]) for h in hunks if h[3] <= i1)
            lo, hi = (i1 - 1, i1 + 1) if i1 == i2 else (i1, i2)
            lines = [n + shift + 1 for n in range(max(lo, 0), hi) if 0 <= n + shift < len(a)]
        fresh_lines = [n for n in dict.fromkeys(lines[:5]) if n not in kept]
        if fresh_lines:
            return ("keep", fresh_lines)
    return None


def with_hunks(f: FileCase, hunks: list[Hunk], keep: list[int] | None = None) -> FileCase:
    """``f``'s before with only ``hunks`` of its change applied, as a partial example (one
    site per hunk, and one per group of ``keep`` lines, code it keeps): the held-out file as
    a user who edited those sites by hand, and marked those lines as not to touch, leaves it."""
    a = f.before.splitlines(keepends=True)
    w = f.after.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for i1, i2, j1, j2 in sorted(hunks):
        out += a[pos:i1] + w[j1:j2]
        pos = i2
    out += a[pos:]
    return FileCase(
        f.path, f.before, "".join(out), len(hunks), partial=True, keep=tuple(sorted(keep or []))
    )


def site_level(
    case: Case,
    first: Score,
    start: tuple[list[FileCase], list[FileCase], dict[str, list[Hunk]]] | None = None,
    refused_start: dict[str, list[Hunk]] | None = None,
) -> Score:
    """Refazer's site-level protocol: while a held-out file is wrong, add its first wrongly
    edited site — the first wrong hunk of the first wrong held-out file — as a further,
    partial example (that file with only the hunks added so far applied; a site the commit
    kept and the rules rewrote goes in as lines it keeps); the held-out files stay held out
    and are still scored whole, byte for byte. At most SITE_CAP sites added.

    ``start``: (examples, scored files, sites taken already) when the protocol does not
    start from the one-shot split (:func:`site_level_one`); ``refused_start``: start sites
    the synthesiser refused there (not shown again)."""
    examples, heldout = split(case) if start is None else (start[0], start[1])
    taken: dict[str, list[Hunk]] = {k: list(v) for k, v in (start[2] if start else {}).items()}
    start_sites = sum(e.sites for e in examples) + sum(len(v) for v in taken.values())
    kept: dict[str, list[int]] = {}
    # Sites the synthesiser refused (wave 3h synth9): a user told "no rule" for the site
    # just added withdraws it, keeps the rules they had and shows the next wrong site; the
    # withdrawn site still counts as an example site (the user spent it).
    refused: dict[str, list[Hunk]] = {k: list(v) for k, v in (refused_start or {}).items()}
    refused_lines: dict[str, list[int]] = {}
    added: list[str] = []
    s = first
    while not s.exact and s.learned and len(added) < SITE_CAP:
        step = None
        for f in heldout:
            if f.path in s.wrong and f.path in s.outputs:
                found = next_site(
                    f,
                    s.outputs[f.path],
                    taken.get(f.path, []),
                    kept.get(f.path, []) + refused_lines.get(f.path, []),
                    refused.get(f.path, []),
                )
                if found is not None:
                    step = (f, found)
                    break
        if step is None:
            break
        f, (what, where) = step
        if what == "site":
            assert isinstance(where, tuple)
            taken.setdefault(f.path, []).append(where)
            added.append(f"{f.path}:{where[0] + 1}")
        else:
            assert isinstance(where, list)
            kept.setdefault(f.path, []).extend(where)
            added.append(f"{f.path}:{where[0]} keep")
        partials = [
            with_hunks(g, taken.get(g.path, []), kept.get(g.path))
            for g in heldout
            if taken.get(g.path) or kept.get(g.path)
        ]
        prev = s
        s = score(case, [*examples, *partials], heldout)
        if not s.learned and prev.learned:
            # Refused: withdrawn, the rules before it stand.
            if what == "site":
                assert isinstance(where, tuple)
                taken[f.path].remove(where)
                refused.setdefault(f.path, []).append(where)
            else:
                assert isinstance(where, list)
                kept[f.path] = kept[f.path][: -len(where)]
                refused_lines.setdefault(f.path, []).extend(where)
            added[-1] += " refused"
            s = replace(prev)
        s.example_sites = start_sites + len(added)
    if s is not first:
        s.added_sites = added
    return s


def site_level_one(case: Case) -> Score:
    """The site-level protocol from **one** site, as Refazer starts: the first hunk of the
    one-shot split's first example file (the file with the fewest sites) as a partial
    example (the whole file when that hunk is its only one), then the first wrong site of
    the first wrong file added until exact (at most SITE_CAP). Scored: every file of the
    commit but a start file whose one site is all of it — the other example files and the
    start file's own other sites too — so it is stricter than the one-shot split's scoring,
    and its figures are its own line, not the headline's.

    A start site the synthesiser refuses (a comment's change, a statement added) does not
    end the protocol (wave 3j synth16): it is withdrawn and the next site shown instead — the
    start file's next hunk, then the next file's first — each refused one still counted as
    a site the user spent (at most SITE_CAP of them); a start file shown whole stays out of
    the scoring (the user edited it by hand)."""
    examples, heldout = split(case)
    files = [*examples, *heldout]
    done: list[str] = []  # start files shown whole and refused: edited by hand, not scored
    refused: dict[str, list[Hunk]] = {}  # start hunks refused, of files still scored
    spent = 0
    shown: list[str] = []  # the refused start sites, as `added_sites` names them
    first: Score | None = None
    for f in files:
        hunks = _hunks(f.before.splitlines(True), f.after.splitlines(True))
        for hunk in hunks if len(hunks) > 1 else [None]:
            if len(hunks) <= 1:
                start_ex, taken = [f], {}
                scored = [g for g in files if g is not f and g.path not in done]
            else:
                start_ex, taken = [], {f.path: [hunk]}
                scored = [g for g in files if g.path not in done]
            ex0 = start_ex or [with_hunks(f, taken[f.path])]
            first = score(case, ex0, scored)
            spent += 1
            if first.learned:
                break
            shown.append(
                f"{f.path}:{hunk[0] + 1} start refused" if hunk else f"{f.path} start refused"
            )
            if spent > SITE_CAP:
                break
            if len(hunks) <= 1:
                done.append(f.path)
            else:
                refused.setdefault(f.path, []).append(hunk)
        else:
            continue
        break
    assert first is not None
    first.example_sites = spent
    if not first.learned:
        first.added_sites = shown
        return first
    s = site_level(case, first, (start_ex, scored, taken), refused)
    if s is not first:
        s.example_sites = max(s.example_sites, 1) + spent - 1
    s.added_sites = shown + s.added_sites
    return s


def cli_ms(examples: list[FileCase], tmp: Path, module: bool = False) -> tuple[float, float] | None:
    """(wall ms, CPU ms) of one ``oopav synth EXAMPLES.json`` (``module``: through
    ``python -m oopav.cli``, the same command without the console script's wrapper)."""
    path = tmp / "examples.json"
    path.write_text(
        json.dumps([{"before": f.before, "after": f.after, "path": f.path} for f in examples])
    )
    cmd = (
        [sys.executable, "-m", "oopav.cli", "synth", str(path)]
        if module
        else [str(Path(sys.executable).with_name("oopav")), "synth", str(path)]
    )
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    ms = (time.perf_counter() - t0) * 1000
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) * 1000
    return (ms, cpu) if proc.returncode in (0, 3) else None


def from_git(case: Case) -> dict:
    from oopav.synth import gitlearn

    try:
        from oopav.synth.groups import learn_groups  # the grouping of issue 26
    except ImportError:
        learn_groups = None
    t0 = time.perf_counter()
    if learn_groups is not None:
        groups = learn_groups(Path(case.gitdir), case.commit)
        # The commit's moves (re-sorted imports) are reported apart, as no group: the miner
        # drops import-reorder-only edits too.
        moved = sum(g.sites for g in groups if getattr(g, "reordering", False))
        groups = [g for g in groups if not getattr(g, "reordering", False)]
        best = max(groups, key=lambda g: g.sites, default=None)
        return {
            "mode": "groups",
            "moved": moved,
            "groups": len(groups),
            "learned": sum(1 for g in groups if g.rules),
            "sites": best.sites if best else 0,
            "reproduced": best.reproduced if best else 0,
            "all_sites": sum(g.sites for g in groups),
            "all_reproduced": sum(g.reproduced for g in groups),
            "s": time.perf_counter() - t0,
        }
    hunks = gitlearn.learn_commit(Path(case.gitdir), case.commit)
    group_hunks = case.sites
    best_also = max((h.also_rewrites for h in hunks if h.learnable), default=-1)
    return {
        "mode": "hunks",
        "hunks": len(hunks),
        "learned": sum(1 for h in hunks if h.learnable),
        "sites": group_hunks,
        # The best one hunk's rule reproduces itself and `also_rewrites` other hunks.
        "reproduced": min(group_hunks, best_also + 1) if best_also >= 0 else 0,
        "s": time.perf_counter() - t0,
    }


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def table(rows: dict[str, list[tuple[Score, Score]]]) -> list[str]:
    out = [
        "| language | edits | learned | exact (one-shot) | precision | recall | example sites "
        "| exact (incremental) | precision | recall | examples | example sites | median ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    every = [r for lang in rows for r in rows[lang]]
    for lang, rs in [*sorted(rows.items()), ("**overall**", every)]:
        n = len(rs)
        one = [a for a, _ in rs]
        inc = [b for _, b in rs]
        out.append(
            f"| {lang} | {n} | {sum(a.learned for a in one)} "
            f"| {sum(a.exact for a in one)} ({100 * sum(a.exact for a in one) / n:.0f}%) "
            f"| {_ratio(sum(a.correct for a in one), sum(a.produced for a in one))} "
            f"| {_ratio(sum(a.correct for a in one), sum(a.expected for a in one))} "
            f"| {statistics.mean(a.example_sites for a in one):.2f} "
            f"| {sum(b.exact for b in inc)} ({100 * sum(b.exact for b in inc) / n:.0f}%) "
            f"| {_ratio(sum(b.correct for b in inc), sum(b.produced for b in inc))} "
            f"| {_ratio(sum(b.correct for b in inc), sum(b.expected for b in inc))} "
            f"| {statistics.mean(b.examples for b in inc):.2f} "
            f"| {statistics.mean(b.example_sites for b in inc):.2f} "
            f"| {statistics.median(a.ms for a in one):.0f} |"
        )
    return out


def site_table(rows: dict[str, list[Score]]) -> list[str]:
    """The site-level protocol per language: exact, precision, recall, example sites."""
    out = [
        "| language | edits | exact (site-level) | precision | recall | example sites "
        "| exact within 3 sites |",
        "|---|---|---|---|---|---|---|",
    ]
    every = [c for lang in rows for c in rows[lang]]
    for lang, cs in [*sorted(rows.items()), ("**overall**", every)]:
        n = len(cs)
        out.append(
            f"| {lang} | {n} | {sum(c.exact for c in cs)} ({100 * sum(c.exact for c in cs) / n:.0f}%) "
            f"| {_ratio(sum(c.correct for c in cs), sum(c.produced for c in cs))} "
            f"| {_ratio(sum(c.correct for c in cs), sum(c.expected for c in cs))} "
            f"| {statistics.mean(c.example_sites for c in cs):.2f} "
            f"| {sum(c.exact and c.example_sites <= 3 for c in cs)} |"
        )
    return out


def miss_table(misses: list[tuple[int, Score, Score]]) -> list[str]:
    """What limits each one-shot miss, by class: how many, which cases, the held-out hunks
    they get wrong (rewritten but not as the commit did) and miss, and how many the
    incremental protocol still misses."""
    out = [
        "| what limits the miss | one-shot misses | cases | wrong hunks | missed hunks "
        "| still missed (incremental) | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, meaning in MISS_CLASSES:
        ms = [(n, a, b) for n, a, b in misses if a.miss_class == name]
        if not ms:
            continue
        out.append(
            f"| {name} | {len(ms)} | {', '.join(str(n) for n, _, _ in ms)} "
            f"| {sum(a.produced - a.correct for _, a, _ in ms)} "
            f"| {sum(a.expected - a.correct for _, a, _ in ms)} "
            f"| {sum(not b.exact for _, _, b in ms)} | {meaning} |"
        )
    return out


def cli_summary(scores: list[Score]) -> list[str]:
    """--cli-check: rule sets checked (one-shot, incremental and site-level, the same set counted once),
    rules, and the rules the CLI refuses or applies otherwise, by kind."""
    seen: dict[str, Score] = {}
    for s in scores:
        if s.learned:
            seen.setdefault(s.rule_text, s)
    rules = sum(s.cli_rules for s in seen.values())
    kinds: Counter[str] = Counter()
    for s in seen.values():
        # A rule with several differing files counts once per kind.
        kinds.update({(f.split("\t", 1)[0], f.split(" ", 2)[1]) for f in s.cli_findings})
    by_kind = Counter(k for k, _ in kinds.elements())
    bad = sum(by_kind[k] for k in ("rejected", "differs"))
    return [
        f"cli-check: {len(seen)} distinct rule sets, {rules} rules run by `ast-grep scan "
        f"--update-all` ({find_cli_version()}): {by_kind['rejected']} rejected, "
        f"{by_kind['differs']} applied otherwise, {by_kind['passes']} deletions needing "
        f"several runs; rule files read otherwise at once: {by_kind['file']} "
        f"{'PASS' if not bad else 'MISS'} (target: 0 rejected, 0 applied otherwise)"
    ]


def find_cli_version() -> str:
    from oopav.sandbox.astgrep import find_cli

    out = subprocess.run([find_cli(), "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gitdirs", nargs="+", type=Path)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--per-language", type=int, default=9)
    ap.add_argument("--max-commits", type=int, default=3000)
    ap.add_argument("--cli", type=int, default=12, help="time `oopav synth` on this many cases")
    ap.add_argument(
        "--from-git", type=int, default=0, metavar="N", help="also run --from-git on N commits"
    )
    ap.add_argument("--cache", type=Path, help="keep the mined cases here between runs (pickle)")
    ap.add_argument("--json", type=Path, help="write per-case results here")
    ap.add_argument(
        "--why", action="store_true", help="print each miss's first wrong hunk and its rules"
    )
    ap.add_argument("--only", help="score only these case numbers (1-based, comma-separated)")
    ap.add_argument(
        "--diff-against",
        type=Path,
        metavar="CACHE",
        help="another miner's --cache file: print which candidates and chosen cases changed",
    )
    ap.add_argument(
        "--commits-of",
        type=Path,
        metavar="CACHE",
        help="score the commits another miner's cache drew (as this miner builds them)",
    )
    ap.add_argument(
        "--cli-check",
        action="store_true",
        help="run every learned rule with the real ast-grep CLI too and report the rules it "
        "refuses or applies otherwise than the in-process rewriter",
    )
    ap.add_argument(
        "--repo-aware",
        action="store_true",
        help="give synthesis the repository's files at the commit's parent (text only) as its "
        "target: a rule set that rewrites nothing there is fitted to it (synth/target.py); "
        "rewrites in files the commit did not touch are counted as wrong sites (outside)",
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    global CLI_CHECK, REPO_AWARE
    CLI_CHECK = args.cli_check
    REPO_AWARE = args.repo_aware

    t0 = time.perf_counter()
    mined: list[Case] = []
    key = [str(d) for d in args.gitdirs] + [str(args.max_commits), MINER_VERSION]
    if args.cache and args.cache.exists():
        cached = pickle.loads(args.cache.read_bytes())
        if cached[0] == key:
            mined = cached[1]
            STATS.update(cached[2] if len(cached) > 2 else {})
    if not mined:
        for d in args.gitdirs:
            found = mine(d, args.max_commits)
            print(f"# mined {repo_name(d)}: {len(found)} candidate edits", flush=True)
            mined += found
        if args.cache:
            args.cache.write_bytes(pickle.dumps((key, mined, dict(STATS))))
    cases = select(mined, args.seed, args.per_language)
    if args.commits_of:
        # Like for like with another miner: the commits it drew, as this miner builds them.
        cached = pickle.loads(args.commits_of.read_bytes())
        by_commit = {c.commit: c for c in mined}
        drawn = [c.commit for c in select(cached[1], args.seed, args.per_language)]
        cases = [by_commit[c] for c in drawn if c in by_commit]
        print(f"# the {len(drawn)} commits {args.commits_of} drew: {len(cases)} still candidates")
    print(
        f"# miner v{MINER_VERSION}: {len(mined)} candidates; selected {len(cases)} (seed {args.seed})"
    )
    print(
        f"# mining took {time.perf_counter() - t0:.0f} s; what the miner's rules did (candidates):"
    )
    for what, k in sorted(STATS.items()):
        print(f"#   {k:4}  {what}")
    if args.diff_against:
        print("\n".join(case_diff(args.diff_against, mined, cases, args.seed, args.per_language)))
    rows: dict[str, list[tuple[Score, Score]]] = defaultdict(list)
    site_rows: dict[str, list[Score]] = defaultdict(list)
    site1_rows: dict[str, list[Score]] = defaultdict(list)
    results = []
    errors: Counter[str] = Counter()
    misses: list[tuple[int, Score, Score]] = []
    only = {int(x) for x in args.only.split(",")} if args.only else None
    for n, case in enumerate(cases, 1):
        if only is not None and n not in only:
            continue
        os.environ["OOPAV_RELAX_CASE"] = str(n)  # synth/relax.py's measurement log
        examples, heldout = split(case)
        one = score(case, examples, heldout)
        inc = incremental(case, one)
        site = site_level(case, one)
        site1 = site_level_one(case)
        site1_rows[case.language].append(site1)
        rows[case.language].append((one, inc))
        site_rows[case.language].append(site)
        mark = "EXACT" if one.exact else ("inc-EXACT" if inc.exact else "miss")
        if not one.exact:
            mark += f" [{one.miss_class}]"
            misses.append((n, one, inc))
        print(
            f"{n:2}. {case.repo} {case.commit[:10]} {case.language} sites={case.sites} "
            f"ex={','.join(f.path for f in examples)} held={','.join(f.path for f in heldout)}"
            f"\n    change: {case.signature}"
            f"\n    {mark}: learned={one.learned} rules={one.rules} "
            f"sites {one.correct}/{one.produced} of {one.expected}; incremental "
            f"{inc.examples} ex, {inc.correct}/{inc.produced} of {inc.expected}"
            + (f" ({inc.groups} example groups)" if inc.groups else "")
            + f"; site-level {'EXACT' if site.exact else 'miss'} {site.example_sites} sites, "
            f"{site.correct}/{site.produced} of {site.expected}"
            + f"; from one site {'EXACT' if site1.exact else 'miss'} {site1.example_sites} sites"
            + f"; {one.ms:.0f} ms {one.error}"
            + (f" [fitted to the repository; {one.outside} outside]" if one.fitted else "")
            + (f" [{one.outside} sites outside]" if one.outside and not one.fitted else ""),
            flush=True,
        )
        if args.cli_check:
            for line in dict.fromkeys(one.cli_findings + inc.cli_findings + site.cli_findings):
                print("    cli-check: " + line.split("\t", 1)[1][:220])
        if args.why and not one.exact:
            print(one.why or f"      {one.error}")
            if one.rule_text:
                print("      rules: " + one.rule_text[:600].replace("\n", "\n      "))
        if one.error:
            errors[re.sub(r"example \d+|line \d+|'.*", "", one.error)[:70]] += 1
        results.append(
            {
                "repo": case.repo,
                "commit": case.commit,
                "language": case.language,
                "change": case.signature,
                "examples": [f.path for f in examples],
                "heldout": [f.path for f in heldout],
                "one_shot": one.to_json(),
                "incremental": inc.to_json(),
                "site_level": site.to_json(),
                "site_level_one": site1.to_json(),
            }
        )
    print()
    print("\n".join(table(rows)))
    print()
    print("incremental, site-level (Refazer's protocol: the first wrong hunk of the first wrong")
    print(f"held-out file added as a partial example, at most {SITE_CAP} sites beyond the start):")
    print("\n".join(site_table(site_rows)))
    print()
    print("site-level from one site (Refazer's start: the fewest-sites file's first hunk; every")
    print("other site of the commit scored, the example files' too):")
    print("\n".join(site_table(site1_rows)))
    print()
    print("\n".join(miss_table(misses)))
    one_all = [a for rs in rows.values() for a, _ in rs]
    inc_all = [b for rs in rows.values() for _, b in rs]
    n = len(one_all)
    print("\nfailure reasons (one-shot):")
    for reason, k in errors.most_common():
        print(f"  {k:3}  {reason}")
    cli: list[tuple[float, float]] = []
    cli_module: list[tuple[float, float]] = []
    if args.cli:
        # A wheel install is byte-compiled; an editable or `git archive` tree under
        # PYTHONDONTWRITEBYTECODE=1 never is, and then every call compiles oopav.synth first
        # (411 vs 268 ms a call on wave 3l's main): time what a user runs.
        import compileall

        import oopav

        compileall.compile_dir(str(Path(oopav.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases[: args.cli]:
            ms = cli_ms(split(case)[0], Path(tmp))
            if ms is not None:
                cli.append(ms)
    fg: list[dict] = []
    in_ms = statistics.median(a.ms for a in one_all) if one_all else 0.0
    in_cpu = statistics.median(a.cpu_ms for a in one_all) if one_all else 0.0
    cli_med = statistics.median(w for w, _ in cli) if cli else float("nan")
    cli_cpu = statistics.median(c for _, c in cli) if cli else float("nan")
    one_p = sum(a.correct for a in one_all) / max(1, sum(a.produced for a in one_all))
    inc_p = sum(b.correct for b in inc_all) / max(1, sum(b.produced for b in inc_all))
    one_x = sum(a.exact for a in one_all) / max(1, n)
    inc_x = sum(b.exact for b in inc_all) / max(1, n)
    inc_sites = statistics.mean(b.example_sites for b in inc_all) if inc_all else 0

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"median synthesis in process: {in_ms:.0f} ms wall, {in_cpu:.0f} ms CPU "
        f"(target <= 100) {verdict(in_ms <= 100)} wall, {verdict(in_cpu <= 100)} CPU"
    )
    print(
        f"median `oopav synth` call: {cli_med:.0f} ms wall, {cli_cpu:.0f} ms CPU over "
        f"{len(cli)} cases (target <= 400) {verdict(cli_med <= 400)} wall, "
        f"{verdict(cli_cpu <= 400)} CPU"
    )
    if cli_module:
        mod_med = statistics.median(w for w, _ in cli_module)
        mod_cpu = statistics.median(c for _, c in cli_module)
        print(
            f"median `python -m oopav.synth` call: {mod_med:.0f} ms wall, {mod_cpu:.0f} ms CPU "
            f"over {len(cli_module)} cases (target <= 400) {verdict(mod_med <= 400)} wall, "
            f"{verdict(mod_cpu <= 400)} CPU"
        )
    print(f"one-shot exact: {one_x:.0%} (target >= 60%) {verdict(one_x >= 0.6)}")
    if REPO_AWARE:
        fitted = [a for a in one_all if a.fitted]
        out_sites = sum(a.outside for a in one_all)
        out_prec = sum(a.correct for a in one_all) / max(
            1, sum(a.produced + a.outside for a in one_all)
        )
        print(
            f"repo-aware (one-shot): {len(fitted)} rule sets fitted to the repository, "
            f"{sum(a.exact for a in fitted)} of them exact; rewrites in files the commit did "
            f"not touch: {out_sites} sites in {sum(1 for a in one_all if a.outside)} cases; "
            f"site precision counting them: {out_prec:.3f}; exact with nothing written "
            f"outside: {sum(a.exact and not a.outside for a in one_all) / max(1, n):.0%}"
        )
    print(
        f"incremental exact: {inc_x:.0%} with {inc_sites:.2f} example sites "
        f"(target >= 85%, <= 3) {verdict(inc_x >= 0.85 and inc_sites <= 3)}"
    )
    print(
        f"site precision: one-shot {one_p:.3f}, incremental {inc_p:.3f} (target >= 0.98) "
        f"{verdict(min(one_p, inc_p) >= 0.98)}"
    )
    site_all = [c for rs in site_rows.values() for c in rs]
    site_x = sum(c.exact for c in site_all) / max(1, n)
    site_p = sum(c.correct for c in site_all) / max(1, sum(c.produced for c in site_all))
    site_sites = statistics.mean(c.example_sites for c in site_all) if site_all else 0
    within3 = sum(c.exact and c.example_sites <= 3 for c in site_all)
    print(
        f"incremental, site-level (Refazer's protocol): exact {site_x:.0%} with {site_sites:.2f} "
        f"example sites; exact within 3 example sites {within3}/{n}; precision {site_p:.3f}; "
        f"partial examples added {sum(len(c.added_sites) for c in site_all)} "
        f"(target as incremental: >= 85%, <= 3) {verdict(site_x >= 0.85 and site_sites <= 3)}"
    )
    s1_all = [c for rs in site1_rows.values() for c in rs]
    s1_x = sum(c.exact for c in s1_all) / max(1, n)
    s1_p = sum(c.correct for c in s1_all) / max(1, sum(c.produced for c in s1_all))
    s1_sites = statistics.mean(c.example_sites for c in s1_all) if s1_all else 0
    print(
        f"incremental, site-level from one site: exact {s1_x:.0%} with {s1_sites:.2f} example "
        f"sites; exact within 3 example sites {sum(c.exact and c.example_sites <= 3 for c in s1_all)}/{n}; "
        f"precision {s1_p:.3f} (target as incremental: >= 85%, <= 3) "
        f"{verdict(s1_x >= 0.85 and s1_sites <= 3)}"
    )
    grouped = [(a, b) for a, b in zip(one_all, inc_all, strict=True) if a.groups or b.groups]
    print(
        f"rule sets learned in example groups: one-shot {sum(bool(a.groups) for a, _ in grouped)}, "
        f"incremental {sum(bool(b.groups) for _, b in grouped)} "
        f"(of them exact: {sum(a.exact for a, _ in grouped if a.groups)}, "
        f"{sum(b.exact for _, b in grouped if b.groups)})"
    )
    if args.cli_check:
        checked = [s for rs in rows.values() for pair in rs for s in pair]
        checked += [c for cs in site_rows.values() for c in cs]  # the site level's too
        print("\n".join(cli_summary(checked)))
    if args.from_git:
        seen = set()
        for case in cases:
            if case.commit in seen or len(seen) >= args.from_git:
                continue
            seen.add(case.commit)
            try:
                fg.append(from_git(case))
                g = fg[-1]
                print(
                    f"  --from-git {case.repo} {case.commit[:10]}: {g['learned']} of "
                    f"{g.get('groups', g.get('hunks', 0))} learned; largest group "
                    f"{g['reproduced']}/{g['sites']}"
                    + (
                        f"; all groups {g['all_reproduced']}/{g['all_sites']}"
                        if "all_sites" in g
                        else ""
                    )
                    + (f"; {g['moved']} moved (reordering, not grouped)" if g.get("moved") else "")
                    + f"; {g['s']:.1f} s",
                    flush=True,
                )
            except Exception as exc:
                print(f"  --from-git {case.repo} {case.commit[:10]}: {exc}")
    if fg:
        sites = sum(g["sites"] for g in fg)
        rep = sum(g["reproduced"] for g in fg)
        mode = fg[0]["mode"]
        print(
            f"--from-git ({mode}) on {len(fg)} commits: {sum(g['learned'] for g in fg)} "
            f"{mode} learned of {sum(g.get('groups', g.get('hunks', 0)) for g in fg)}; the mined "
            f"edit's sites reproduced by one rule: {rep}/{sites} ({rep / max(1, sites):.0%}) "
            f"(target >= 70%) {verdict(rep >= 0.7 * sites)}; "
            f"median {statistics.median(g['s'] for g in fg):.1f} s a commit"
        )
        if "all_sites" in fg[0]:
            a_sites = sum(g["all_sites"] for g in fg)
            a_rep = sum(g["all_reproduced"] for g in fg)
            print(
                f"--from-git over all groups: {a_rep}/{a_sites} sites reproduced by their "
                f"group's rule ({a_rep / max(1, a_sites):.0%})"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
