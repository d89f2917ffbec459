"""What the wrong produced hunks of `bench/synth_real.py` are, against the real commit.

    python bench/synth_wrong_hunks.py CACHE SEED [--per-language 20] [--commits-of OLD_CACHE]

CACHE is a ``synth_real.py --cache`` file of this miner version (run synth_real.py first).
Each produced line hunk that is not an expected one (the pooled precision's wrong hunks) is
classed, one-shot and under the incremental protocol:

- *agrees with the commit*: the commit's own version of the file has exactly that hunk (the
  rule wrote what the commit wrote, the expected file leaves it out);
- *partial*: every line the rule changed is the expected line, but a neighbouring line of the
  same expected hunk was missed (a recall miss that the pooled score charges to precision);
- *other*: a wrong rewrite.

A diagnosis of the measurement (miner v8, docs/benchmarks.md § Synth on real edits), not a
score: it re-runs the synthesiser and reads the commits from the cached git directories.
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The bench's own module, next to this script.
import synth_real as S
from oopav.synth import Example, SynthesisError, synthesize

KINDS = ("agrees with the commit", "partial", "other")


def _line_map(before: str, other: str) -> dict[int, str | None]:
    """Parent line -> the other file's line (layout-free) where a hunk keeps the line count;
    None where it does not."""
    a = [S._layout_free(x) for x in before.splitlines()]
    b = [S._layout_free(x) for x in other.splitlines()]
    out: dict[int, str | None] = {}
    for i1, i2, j1, j2 in S._hunks(a, b):
        for k in range(i2 - i1):
            out[i1 + k] = b[j1 + k] if i2 - i1 == j2 - j1 else None
    return out


def classify(case: S.Case, examples: list[S.FileCase], held: list[S.FileCase]) -> Counter[str]:
    kinds: Counter[str] = Counter()
    try:
        result = synthesize([Example(f.before, f.after, path=f.path) for f in examples])
    except SynthesisError:
        return kinds
    for f in held:
        got, _ = result.apply(f.before)
        wrong = S._line_hunks(f.before, got) - S._line_hunks(f.before, f.after)
        if not wrong:
            continue
        real = subprocess.run(
            ["git", "--git-dir", case.gitdir, "show", f"{case.commit}:{f.path}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        commit_hunks = S._line_hunks(f.before, real)
        got_map, want_map = _line_map(f.before, got), _line_map(f.before, f.after)
        for h in wrong:
            lines = [k for k in range(h[0], max(h[1], h[0] + 1)) if k in got_map]
            if h in commit_hunks:
                kinds[KINDS[0]] += 1
            elif lines and all(
                got_map[k] is not None and want_map.get(k, "") == got_map[k] for k in lines
            ):
                kinds[KINDS[1]] += 1
            else:
                kinds[KINDS[2]] += 1
    return kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", type=Path)
    ap.add_argument("seed", type=int)
    ap.add_argument("--per-language", type=int, default=20)
    ap.add_argument("--commits-of", type=Path, metavar="OLD_CACHE")
    args = ap.parse_args()
    mined = pickle.loads(args.cache.read_bytes())[1]
    cases = S.select(mined, args.seed, args.per_language)
    if args.commits_of:
        by_commit = {c.commit: c for c in mined}
        old = pickle.loads(args.commits_of.read_bytes())[1]
        drawn = [c.commit for c in S.select(old, args.seed, args.per_language)]
        cases = [by_commit[c] for c in drawn if c in by_commit]
    for mode in ("one-shot", "incremental"):
        total: Counter[str] = Counter()
        where: dict[str, set[str]] = defaultdict(set)
        for case in cases:
            examples, held = S.split(case)
            if mode == "incremental":  # the examples the incremental protocol ends with
                s = S.score(case, examples, held)
                while not s.exact and len(examples) < 4:
                    wrong = [f for f in held if f.path in s.wrong]
                    if not wrong or len(held) == 1:
                        break
                    examples = [*examples, wrong[0]]
                    held = [f for f in held if f is not wrong[0]]
                    s = S.score(case, examples, held)
            kinds = classify(case, examples, held)
            total += kinds
            for k in kinds:
                where[k].add(f"{case.repo} {case.commit[:10]}")
        print(f"{mode}: {sum(total.values())} wrong hunks")
        for k in KINDS:
            print(f"  {total[k]:4}  {k}: {', '.join(sorted(where[k]))}")


if __name__ == "__main__":
    # The cache pickles the bench's classes as synth_real.py's __main__ ones.
    import __main__

    __main__.Case, __main__.FileCase, __main__.Unit = S.Case, S.FileCase, S.Unit
    main()
