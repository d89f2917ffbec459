"""Synth on real edits: systematic edits mined from public git histories (issue 26).

    python bench/synth_real.py GITDIR [GITDIR ...] [--seed 26] [--per-language 9]
                               [--max-commits 3000] [--cli 12] [--from-git] [--json OUT]
                               [--why] [--only N,M]

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

Scored per language and overall, one-shot and incremental (Refazer's protocol: while a held-out
file is wrong, add the first wrong one as a further example, at most 4 examples):
learned (a rule set was synthesised), exact (every held-out file byte-identical), site precision
(rewritten line hunks that are expected ones) and recall (expected hunks reached), examples
(files) and example sites used. Timings: median ``synthesize`` time in process, and the median
wall time of ``oopav synth EXAMPLES.json`` per call on --cli cases. With --from-git: the
commit's --from-git report (groups when the synthesiser has ``learn_groups``, hunks otherwise).

``--why`` prints, for each miss, the first held-out hunk where the produced file differs from
the expected one (``-`` before, ``+`` expected, ``>`` produced) and the learned rules;
``--only`` scores the listed cases (1-based) alone, to iterate on a class of failures.

Targets (issue 26): one-shot exact >= 60%, incremental exact >= 85% with <= 3 example sites on
average, site precision >= 0.98 in both, --from-git group rules reproduce >= 70% of the sites of
their group, median synthesis <= 100 ms in process and <= 400 ms per CLI call.
"""

from __future__ import annotations

import argparse
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
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ast_grep_py import SgRoot

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
MINER_VERSION = "5"  # bump when mining changes (invalidates --cache)
_TOKEN = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
    r"|`(?:[^`\\]|\\.)*`|\d[\w.]*|\w+|\S"
)
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
    return [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(_strip_comments(text, lang))]


def _tokens(text: str, lang: str) -> list[str]:
    return [t for _, _, t in _spans(text, lang)]


def _abstract(tok: str) -> str:
    if tok[0] in "\"'`":
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
    """One token-level change inside a hunk: old[start:end] (hunk offsets) becomes ``text``."""

    key: tuple
    start: int
    end: int
    text: str


MERGE_GAP = 3  # changes this few equal tokens apart on one line are one change


def hunk_units(old: str, new: str, lang: str) -> list[Unit]:
    """The token-level changes of one hunk, each keyed by its tokens with literals abstracted
    (only-literal changes keep their literals). Nothing for prose-only hunks (comments,
    whitespace, docstrings), version strings, and line reordering (import sorting)."""
    if sorted(old.splitlines()) == sorted(new.splitlines()) and old.strip():
        return []
    a, b = _spans(old, lang), _spans(new, lang)
    at, bt = [t for *_, t in a], [t for *_, t in b]
    if at == bt:
        return []
    ops = [
        op
        for op in difflib.SequenceMatcher(None, at, bt, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    merged: list[list[int]] = []
    for _, i1, i2, j1, j2 in ops:
        if merged:
            p = merged[-1]
            same_line = (
                "\n"
                not in old[a[p[1] - 1][1] if p[1] else 0 : a[i1][0] if i1 < len(a) else len(old)]
            )
            if i1 - p[1] <= MERGE_GAP and same_line:
                p[1], p[3] = i2, j2
                continue
        merged.append([i1, i2, j1, j2])
    units: list[Unit] = []
    for i1, i2, j1, j2 in merged:
        olds, news = at[i1:i2], bt[j1:j2]
        raw = olds + news
        if all(_VERSION.match(t) or t in ("__version__", "version") for t in raw):
            continue
        if any(t.startswith(('"""', "'''")) for t in raw):
            continue  # a docstring
        key = (tuple(_abstract(t) for t in olds), tuple(_abstract(t) for t in news))
        if all(t in ("<str>", "<num>") for t in key[0] + key[1]):
            key = (tuple(olds), tuple(news))  # the same change only with the same literals
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
            if "\n" in text and "\n" not in old[os_:oe] and i2 == i1:
                # Tokens inserted into a line that the commit also rewrapped: in the line's
                # own layout.
                text = re.sub(r"\s*\n\s*", " ", text)
                text = re.sub(r"([(\[{]) ", r"\1", text)
                text = re.sub(r" ([)\]},])", r"\1", text)
                if not old[os_:oe]:
                    text = text.strip()
        units.append(Unit(key, os_, oe, text))
    return units


@dataclass
class FileCase:
    path: str
    before: str
    after: str  # the parent with only the group's hunks applied
    sites: int


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
        code = [p for p in paths if os.path.splitext(p)[1] in EXT and not SKIP_PATH.search(p)]
        langs = {EXT[os.path.splitext(p)[1]] for p in code}
        if len(code) < 2 or len(code) > 40 or len(langs) != 1 or len(paths) > 60:
            continue
        lang = langs.pop()
        groups: dict[tuple, list[tuple[str, int, Unit]]] = defaultdict(list)
        texts: dict[str, str] = {}
        for path in code:
            before, after = git.show(f"{sha}^", path), git.show(sha, path)
            if before is None or after is None or before.count("\n") > MAX_FILE_LINES:
                continue
            a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
            texts[path] = before
            offsets = [0]
            for line in a:
                offsets.append(offsets[-1] + len(line))
            for n, (i1, i2, j1, j2) in enumerate(_hunks(a, b)):
                if lang == "python" and _in_docstring(before, i1):
                    continue
                for u in hunk_units("".join(a[i1:i2]), "".join(b[j1:j2]), lang):
                    base = offsets[i1]
                    groups[u.key].append(
                        (path, n, Unit(u.key, base + u.start, base + u.end, u.text))
                    )
        best = None
        for key, members in groups.items():
            hunks = {(p, n) for p, n, _ in members}
            files = {p for p, _, _ in members}
            if len(hunks) >= 3 and len(files) >= 2:
                if best is None or len(members) > len(groups[best]):
                    best = key
        if best is None:
            continue
        by_file: dict[str, list[Unit]] = defaultdict(list)
        for path, _, u in groups[best]:
            by_file[path].append(u)
        files = []
        for path, us in sorted(by_file.items()):
            before = texts[path]
            out, pos = [], 0
            for u in sorted(us, key=lambda u: u.start):
                out += [before[pos : u.start], u.text]
                pos = u.end
            files.append(FileCase(path, before, "".join(out) + before[pos:], len(us)))
        if not all(_still_parses(f.before, f.after, lang) for f in files):
            continue  # part of a larger change: alone it leaves broken code
        x, y = best
        sig_text = f"{' '.join(x)} -> {' '.join(y)}"[:100]
        cases.append(Case(name, str(gitdir), sha, lang, sig_text, files))
    git.close()
    return cases


def _still_parses(before: str, after: str, lang: str) -> bool:
    """The edit alone keeps the file parseable (when the parent parsed)."""

    def broken(text: str) -> bool:
        root = SgRoot(text, lang).root()
        return root.find(kind="ERROR") is not None or root.kind() == "ERROR"

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


def _line_hunks(before: str, after: str) -> set[tuple[int, int, tuple[str, ...]]]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return {(i1, i2, tuple(b[j1:j2])) for i1, i2, j1, j2 in _hunks(a, b)}


def score(case: Case, examples: list[FileCase], heldout: list[FileCase]) -> Score:
    s = Score(examples=len(examples), example_sites=sum(f.sites for f in examples))
    exs = [Example(f.before, f.after, path=f.path) for f in examples]
    for f in heldout:
        s.expected += len(_line_hunks(f.before, f.after))
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = synthesize(exs)
    except SynthesisError as exc:
        s.cpu_ms = (time.process_time() - c0) * 1000
        s.ms = (time.perf_counter() - t0) * 1000
        s.error = exc.reason[:160]
        return s
    except Exception as exc:  # a crash is a finding, not a reason to stop the run
        s.ms = (time.perf_counter() - t0) * 1000
        s.error = f"crash: {type(exc).__name__}: {str(exc)[:120]}"
        return s
    s.ms = (time.perf_counter() - t0) * 1000
    s.cpu_ms = (time.process_time() - c0) * 1000
    s.learned = True
    s.rules = len(result.rules)
    s.rule_text = result.to_yaml()
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
            if not s.why:
                s.why = f"{f.path}:\n" + _first_difference(f.before, f.after, got)
        produced, want = _line_hunks(f.before, got), _line_hunks(f.before, f.after)
        s.produced += len(produced)
        s.correct += len(produced & want)
    s.exact = exact and bool(heldout)
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
        best = max(groups, key=lambda g: g.sites, default=None)
        return {
            "mode": "groups",
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
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    mined: list[Case] = []
    key = [str(d) for d in args.gitdirs] + [str(args.max_commits), MINER_VERSION]
    if args.cache and args.cache.exists():
        cached_key, mined = pickle.loads(args.cache.read_bytes())
        if cached_key != key:
            mined = []
    if not mined:
        for d in args.gitdirs:
            found = mine(d, args.max_commits)
            print(f"# mined {repo_name(d)}: {len(found)} candidate edits", flush=True)
            mined += found
        if args.cache:
            args.cache.write_bytes(pickle.dumps((key, mined)))
    cases = select(mined, args.seed, args.per_language)
    print(f"# {len(mined)} candidates; selected {len(cases)} (seed {args.seed})")
    print(f"# mining took {time.perf_counter() - t0:.0f} s")
    rows: dict[str, list[tuple[Score, Score]]] = defaultdict(list)
    results = []
    errors: Counter[str] = Counter()
    only = {int(x) for x in args.only.split(",")} if args.only else None
    for n, case in enumerate(cases, 1):
        if only is not None and n not in only:
            continue
        examples, heldout = split(case)
        one = score(case, examples, heldout)
        inc = incremental(case, one)
        rows[case.language].append((one, inc))
        mark = "EXACT" if one.exact else ("inc-EXACT" if inc.exact else "miss")
        print(
            f"{n:2}. {case.repo} {case.commit[:10]} {case.language} sites={case.sites} "
            f"ex={','.join(f.path for f in examples)} held={','.join(f.path for f in heldout)}"
            f"\n    change: {case.signature}"
            f"\n    {mark}: learned={one.learned} rules={one.rules} "
            f"sites {one.correct}/{one.produced} of {one.expected}; incremental "
            f"{inc.examples} ex, {inc.correct}/{inc.produced} of {inc.expected}; "
            f"{one.ms:.0f} ms {one.error}",
            flush=True,
        )
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
                "one_shot": one.__dict__,
                "incremental": inc.__dict__,
            }
        )
    print()
    print("\n".join(table(rows)))
    one_all = [a for rs in rows.values() for a, _ in rs]
    inc_all = [b for rs in rows.values() for _, b in rs]
    n = len(one_all)
    print("\nfailure reasons (one-shot):")
    for reason, k in errors.most_common():
        print(f"  {k:3}  {reason}")
    cli: list[tuple[float, float]] = []
    cli_module: list[tuple[float, float]] = []
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
    print(
        f"incremental exact: {inc_x:.0%} with {inc_sites:.2f} example sites "
        f"(target >= 85%, <= 3) {verdict(inc_x >= 0.85 and inc_sites <= 3)}"
    )
    print(
        f"site precision: one-shot {one_p:.3f}, incremental {inc_p:.3f} (target >= 0.98) "
        f"{verdict(min(one_p, inc_p) >= 0.98)}"
    )
    if args.from_git:
        seen = set()
        for case in cases:
            if case.commit in seen or len(seen) >= args.from_git:
                continue
            seen.add(case.commit)
            try:
                fg.append(from_git(case))
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
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
