"""Shared reporting for the bench scripts: every figure as the median of N runs, its spread
(min-max), its target and PASS/MISS.

A bench script declares its figures once (``Figure``), measures one run as a dict
``{key: value}``, repeats that ``--runs`` times (default 5) and hands the runs to ``report``.
``--quick`` asks the script for a smoke-sized run (CI runs every script that way; the
figures it prints then say nothing about speed). A target holds when the *median* meets it,
never one lucky run. Figures without a target are printed as ``info``.

Ratios are what to compare between runs: the machine is shared, so absolute figures move,
while a baseline measured in the same run moves with them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

Run = dict[str, float]


@dataclass(frozen=True)
class Figure:
    """One printed figure. ``target`` with ``higher`` (at least) or not (at most)."""

    key: str
    label: str
    unit: str = ""
    target: float | None = None
    higher: bool = True
    fmt: str = ",.2f"

    def verdict(self, value: float) -> str:
        if self.target is None:
            return "info"
        ok = value >= self.target if self.higher else value <= self.target
        return "PASS" if ok else "MISS"

    def target_text(self) -> str:
        if self.target is None:
            return ""
        return f"{'>=' if self.higher else '<='} {self.target:{self.fmt}}{self.unit_suffix()}"

    def unit_suffix(self) -> str:
        if not self.unit:
            return ""
        return self.unit if self.unit in ("x", "%") else f" {self.unit}"


@dataclass
class Summary:
    passed: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)


def parser(description: str | None, *, runs: int = 5) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=runs, help=f"runs per figure (default {runs})")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke-sized run (one run unless --runs is given): checks that the bench works, "
        "its figures mean nothing",
    )
    return ap


def runs_of(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    """``--runs``; 1 under ``--quick`` unless ``--runs`` was given explicitly."""
    argv = sys.argv[1:] if argv is None else argv
    explicit = any(a == "--runs" or a.startswith("--runs=") for a in argv)
    if args.quick and not explicit:
        return 1
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    return int(args.runs)


def repeat(measure: Callable[[int], Run], runs: int, *, label: str = "run") -> list[Run]:
    out = []
    for i in range(runs):
        t = time.perf_counter()
        out.append(measure(i))
        print(f"  [{label} {i + 1}/{runs} done in {time.perf_counter() - t:.1f} s]", flush=True)
    return out


async def arepeat(
    measure: Callable[[int], Awaitable[Run]], runs: int, *, label: str = "run"
) -> list[Run]:
    out = []
    for i in range(runs):
        t = time.perf_counter()
        out.append(await measure(i))
        print(f"  [{label} {i + 1}/{runs} done in {time.perf_counter() - t:.1f} s]", flush=True)
    return out


def report(
    title: str, figures: Iterable[Figure], runs: list[Run], summary: Summary | None = None
) -> Summary:
    """Print one line per figure: median, spread (min-max), target and verdict."""
    summary = summary if summary is not None else Summary()
    figures = list(figures)
    print(f"\n{title} (median of {len(runs)} run{'s' if len(runs) != 1 else ''}, spread min-max)")
    width = max([len(f.label) for f in figures] + [20])
    for fig in figures:
        values = [r[fig.key] for r in runs if fig.key in r]
        if not values:
            print(f"  {fig.label:<{width}}  (not measured)")
            continue
        med = statistics.median(values)
        lo, hi = min(values), max(values)
        verdict = fig.verdict(med)
        unit = fig.unit_suffix()
        target = fig.target_text()
        print(
            f"  {fig.label:<{width}}  {med:>10{fig.fmt}}{unit:<6}"
            f" ({lo:{fig.fmt}}-{hi:{fig.fmt}})"
            + (f"  target {target}" if target else "")
            + f"  {verdict}",
            flush=True,
        )
        if verdict == "PASS":
            summary.passed.append(fig.label)
        elif verdict == "MISS":
            summary.missed.append(fig.label)
    return summary


def conclude(summary: Summary) -> None:
    total = len(summary.passed) + len(summary.missed)
    print(f"\ntargets: {len(summary.passed)}/{total} PASS")
    for label in summary.missed:
        print(f"  MISS: {label}")


def run_async(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]
