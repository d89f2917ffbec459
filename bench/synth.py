"""Synth benchmark: rules by example on the evaluation cases (tests/synth/cases/).

    python bench/synth.py [--cases tests/synth/cases] [--repeat 3] [--git REPO --commits 25]

Per language and overall: the share of cases whose rule, learned from at most two training
examples, rewrites every held-out file exactly; site precision (rewrites that are right) and
recall (expected sites rewritten); the examples needed (the fewest training examples that give
exact held-out results); synthesis time (median and p95 of the best of --repeat runs). The
baseline, measured in the same run, is the literal rule of each training site (its before text
as the pattern, its after text as the fix): what a search/replace of the example would do.

With ``--git REPO``: ``oopav synth --from-git`` over the last ``--commits`` non-merge commits of
REPO — hunks, learnable hunks (a rule verified on the parent tree), and rules that reproduce
more than their own hunk.

Targets (docs/benchmarks.md): >= 90% of cases exact from <= 2 examples, precision >= 0.98,
median synthesis < 100 ms.
"""

from __future__ import annotations

import argparse
import platform
import statistics
from collections import defaultdict
from pathlib import Path

from oopav.synth.evaluate import CaseScore, cases_in, load_case, score_case
from oopav.synth.sites import SiteError, find_sites, parse

ROOT = Path(__file__).resolve().parents[1]


def literal_baseline(case: dict) -> bool:
    """Held-out exact with the literal rules of the first two training examples."""
    lang = case["language"]
    pairs: list[tuple[str, str]] = []
    for e in case["train"][:2]:
        try:
            sites = find_sites(
                0, e["before"], e["after"], parse(e["before"], lang), parse(e["after"], lang), ""
            )
        except SiteError:
            return False
        pairs += [(s.before_text, s.after_text) for s in sites]
    for h in case["heldout"]:
        got = h["before"]
        for b, a in dict.fromkeys(pairs):
            got = got.replace(b, a)
        if got != h["after"]:
            return False
    return True


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=Path, default=ROOT / "tests" / "synth" / "cases")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--git", type=Path, help="also learn from the history of this repository")
    ap.add_argument("--commits", type=int, default=25)
    args = ap.parse_args()
    rows: dict[str, list[tuple[CaseScore, int | None, bool]]] = defaultdict(list)
    for path in cases_in(args.cases):
        case = load_case(path)
        k2 = min(2, len(case["train"]))
        runs = [score_case(case, k2) for _ in range(max(1, args.repeat))]
        best = min(runs, key=lambda s: s.ms)
        needed = next(
            (k for k in range(1, len(case["train"]) + 1) if score_case(case, k).exact), None
        )
        rows[case["language"]].append((best, needed, literal_baseline(case)))
    print(f"# synth benchmark — {platform.python_version()} on {platform.machine()}")
    header = (
        f"{'language':12} {'cases':>5} {'exact<=2':>9} {'baseline':>9} {'precision':>9} "
        f"{'recall':>7} {'examples':>8} {'median ms':>9} {'p95 ms':>7}"
    )
    print(header)
    everything: list[tuple[CaseScore, int | None, bool]] = []

    def line(
        name: str, items: list[tuple[CaseScore, int | None, bool]]
    ) -> tuple[float, float, float]:
        n = len(items)
        exact = sum(1 for s, _, _ in items if s.exact) / n
        base = sum(1 for _, _, b in items if b) / n
        produced = sum(s.produced for s, _, _ in items)
        correct = sum(s.correct for s, _, _ in items)
        expected = sum(s.expected for s, _, _ in items)
        precision = correct / produced if produced else 1.0
        recall = correct / expected if expected else 1.0
        needed = [k for _, k, _ in items if k is not None]
        mean_needed = statistics.mean(needed) if needed else float("nan")
        ms = [s.ms for s, _, _ in items]
        print(
            f"{name:12} {n:5d} {exact:9.1%} {base:9.1%} {precision:9.3f} {recall:7.3f} "
            f"{mean_needed:8.2f} {statistics.median(ms):9.1f} {p95(ms):7.1f}"
        )
        return exact, precision, statistics.median(ms)

    for lang in sorted(rows):
        line(lang, rows[lang])
        everything += rows[lang]
    exact, precision, median = line("overall", everything)
    failed = [s.name for s, _, _ in everything if not s.exact]
    if failed:
        print("not exact:", ", ".join(failed))
    print()
    for label, ok, figure in (
        (">= 90% of cases exact from <= 2 examples", exact >= 0.90, f"{exact:.1%}"),
        ("site precision >= 0.98", precision >= 0.98, f"{precision:.3f}"),
        ("median synthesis < 100 ms", median < 100, f"{median:.1f} ms"),
    ):
        print(f"{'PASS' if ok else 'MISS'}  {label}: {figure}")
    if args.git is not None:
        history(args.git, args.commits)


def history(repo: Path, commits: int) -> None:
    import subprocess
    import time

    from oopav.synth.gitlearn import learn_commit

    revs = subprocess.run(
        ["git", "-C", str(repo), "log", "--no-merges", "--format=%H", "-n", str(commits)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    hunks = learnable = general = 0
    t0 = time.perf_counter()
    for rev in revs:
        try:
            results = learn_commit(repo, rev)
        except ValueError:
            continue  # a root commit, and such
        hunks += len(results)
        learnable += sum(1 for r in results if r.learnable)
        general += sum(1 for r in results if r.learnable and r.also_rewrites)
    secs = time.perf_counter() - t0
    print()
    print(f"# --from-git over {len(revs)} commits of {repo}")
    print(
        f"hunks {hunks}, learnable {learnable} ({learnable / max(hunks, 1):.1%}), "
        f"rules that reproduce other hunks too {general}, {secs:.1f} s "
        f"({secs / max(len(revs), 1):.2f} s a commit)"
    )


if __name__ == "__main__":
    main()
