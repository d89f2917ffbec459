"""Train/test splits disjoint by repository and balanced by language.

The default split (``tasks.split_of``) is disjoint by source file, which leaks: two files of one
repository share its names, idioms and helpers, so a policy evaluated on the other file has seen
its neighbours. Splitting by repository keeps every task of a repository on one side. Done
naively (hash the repository, hold out below ``holdout``) it also skews languages — one large
Go repository can be the whole test side of Go, or none of it — so the assignment is balanced:
for each language, repositories (in a seeded hash order) go to test until that language's test
share reaches ``holdout``; a repository whose tasks mix languages counts for its main one.
Deterministic for the same tasks, holdout and seed."""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any


def repository_of(source: str, depth: int = 1) -> str:
    """The repository a task's source belongs to: the first ``depth`` path components (a corpus
    laid out as one directory per repository), or the file itself when it has no directory."""
    parts = PurePosixPath(source).parts
    return "/".join(parts[:depth]) if len(parts) > depth else source


def _order(name: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "big")


def assign_repositories(
    counts: dict[str, Counter[str]], holdout: float, seed: int = 0
) -> dict[str, str]:
    """``{repository: "train" | "test"}`` from each repository's task count per language."""
    if holdout <= 0:
        return dict.fromkeys(counts, "train")
    main = {repo: c.most_common(1)[0][0] for repo, c in counts.items() if c}
    totals: Counter[str] = Counter()
    for repo, lang in main.items():
        totals[lang] += sum(counts[repo].values())
    out = dict.fromkeys(counts, "train")
    held: Counter[str] = Counter()
    repos_of: dict[str, list[str]] = {}
    for repo, lang in main.items():
        repos_of.setdefault(lang, []).append(repo)
    for lang, repos in sorted(repos_of.items()):
        if len(repos) < 2:
            continue  # a language with one repository cannot be split without leaking
        for repo in sorted(repos, key=lambda r: (_order(r, seed), r)):
            if held[lang] >= holdout * totals[lang]:
                break
            n = sum(counts[repo].values())
            # Never take the last repository of a language: training needs one too.
            if sum(1 for r in repos if out[r] == "train") <= 1:
                break
            out[repo] = "test"
            held[lang] += n
    return out


def split_by_repository(
    tasks: Sequence[Any],
    holdout: float,
    *,
    seed: int = 0,
    repo_of: Callable[[str], str] = repository_of,
) -> list[Any]:
    """``tasks`` (dataclasses with ``source``, ``language`` and ``split``) re-split by
    repository, balanced by language."""
    counts: dict[str, Counter[str]] = {}
    for t in tasks:
        counts.setdefault(repo_of(t.source), Counter())[t.language] += 1
    sides = assign_repositories(counts, holdout, seed)
    return [dataclasses.replace(t, split=sides[repo_of(t.source)]) for t in tasks]


def split_report(
    tasks: Sequence[Any], repo_of: Callable[[str], str] = repository_of
) -> dict[str, Any]:
    """Per language: tasks and repositories on each side, and the test share."""
    out: dict[str, Any] = {}
    for t in tasks:
        row = out.setdefault(
            t.language, {"train": 0, "test": 0, "repos": {"train": set(), "test": set()}}
        )
        row[t.split] += 1
        row["repos"][t.split].add(repo_of(t.source))
    for row in out.values():
        row["repos"] = {k: len(v) for k, v in row["repos"].items()}
        total = row["train"] + row["test"]
        row["test_share"] = round(row["test"] / total, 4) if total else 0.0
    return out
