"""Splits disjoint by repository and balanced by language (oopav.trainer.splits)."""

from __future__ import annotations

from dataclasses import dataclass

from oopav.trainer.splits import repository_of, split_by_repository, split_report


@dataclass(frozen=True)
class T:
    source: str
    language: str
    split: str = "train"


def corpus() -> list[T]:
    tasks = []
    for r in range(10):
        tasks += [T(f"py{r}/mod{i}.py", "python") for i in range(5 + r)]
    for r in range(6):
        tasks += [T(f"js{r}/lib/x{i}.js", "javascript") for i in range(4)]
    tasks += [T("solo/main.go", "go") for _ in range(7)]  # one Go repository: cannot be split
    return tasks


def test_no_repository_is_on_both_sides() -> None:
    out = split_by_repository(corpus(), 0.2)
    sides: dict[str, set[str]] = {}
    for t in out:
        sides.setdefault(repository_of(t.source), set()).add(t.split)
    assert all(len(s) == 1 for s in sides.values())


def test_each_language_gets_about_its_share_and_keeps_training_data() -> None:
    report = split_report(split_by_repository(corpus(), 0.2))
    for lang in ("python", "javascript"):
        row = report[lang]
        assert 0.15 <= row["test_share"] <= 0.45, (lang, row)
        assert row["repos"]["train"] >= 1 and row["repos"]["test"] >= 1
    # A language with a single repository stays in training rather than leak across sides.
    assert report["go"]["test"] == 0


def test_the_split_is_deterministic_for_a_seed_and_changes_with_it() -> None:
    a = [t.split for t in split_by_repository(corpus(), 0.3, seed=1)]
    b = [t.split for t in split_by_repository(corpus(), 0.3, seed=1)]
    c = [t.split for t in split_by_repository(corpus(), 0.3, seed=2)]
    assert a == b and a != c


def test_no_holdout_keeps_everything_in_training() -> None:
    assert {t.split for t in split_by_repository(corpus(), 0.0)} == {"train"}
