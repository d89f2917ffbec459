"""``oopav synth --from-git REPO REV``: one rule per hunk of a commit, verified on the parent.

For each hunk, the example is the parent file with only that hunk applied; the rule learned from
it is then applied to every file of its language in the parent tree, and counts as *learnable*
only when each rewrite it makes there is a change the commit also makes (line-exact), and it
makes the hunk itself. This turns history into gold actions for training.
"""

from __future__ import annotations

import difflib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.synth.core import Example, SynthesisError, SynthResult, language_of, synthesize

MAX_TREE_FILES = 2000
LANGUAGES = ("python", "javascript", "typescript", "tsx", "go", "rust")


@dataclass
class HunkResult:
    path: str
    start: int  # 1-based first line in the parent
    lines: int
    learnable: bool
    reason: str = ""
    rules: list[dict[str, Any]] = field(default_factory=list)
    also_rewrites: int = 0  # other hunks of the commit the rule reproduces

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start": self.start,
            "lines": self.lines,
            "learnable": self.learnable,
            "reason": self.reason,
            "rules": self.rules,
            "also_rewrites": self.also_rewrites,
        }


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode != 0:
        raise ValueError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _show(repo: Path, rev: str, path: str) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    if proc.returncode != 0:
        return None
    try:
        return proc.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lang(path: str) -> str | None:
    try:
        lang = language_of(Example("", "", path=path))
    except (SynthesisError, ValueError):
        return None
    return lang if lang in LANGUAGES else None


def _hunks(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def learn_commit(repo: Path, rev: str) -> list[HunkResult]:
    repo = repo.resolve()
    parent = f"{rev}^"
    _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    names = [n for n in _git(repo, "diff", "--name-only", parent, rev).splitlines() if n]
    tree = [n for n in _git(repo, "ls-tree", "-r", "--name-only", parent).splitlines() if n]
    parent_text: dict[str, str] = {}
    commit_text: dict[str, str] = {}

    def parent_of(path: str) -> str | None:
        if path not in parent_text:
            parent_text[path] = _show(repo, parent, path) or ""
        return parent_text[path]

    results: list[HunkResult] = []
    for path in names:
        lang = _lang(path)
        before, after = _show(repo, parent, path), _show(repo, rev, path)
        if lang is None or before is None or after is None:
            continue
        parent_text[path], commit_text[path] = before, after
        a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
        for i1, i2, j1, j2 in _hunks(a, b):
            example = "".join(a[:i1] + b[j1:j2] + a[i2:])
            hunk = HunkResult(path=path, start=i1 + 1, lines=max(i2 - i1, 1), learnable=False)
            results.append(hunk)
            try:
                result = synthesize([Example(before, example, language=lang, path=path)])
            except SynthesisError as exc:
                hunk.reason = exc.reason.replace("example 1", "the hunk")
                continue
            hunk.rules = [r.to_dict() for r in result.rules]
            same_lang = [p for p in tree if _lang(p) == lang][:MAX_TREE_FILES]
            problem, also = _verify(result, same_lang, parent_of, commit_text, repo, rev)
            hunk.learnable = problem is None
            hunk.reason = problem or ""
            hunk.also_rewrites = also
    return results


def _verify(
    result: SynthResult,
    files: list[str],
    parent_of: Any,
    commit_text: dict[str, str],
    repo: Path,
    rev: str,
) -> tuple[str | None, int]:
    """Every change the rules make in the parent tree must be one the commit makes."""
    also = 0
    for path in files:
        before = parent_of(path)
        if not before:
            continue
        got, n = result.apply(before)
        if not n or got == before:
            continue
        after = commit_text.get(path)
        if after is None:
            after = _show(repo, rev, path) or ""
        a = before.splitlines(keepends=True)
        wanted = {
            (i1, i2, tuple(after.splitlines(keepends=True)[j1:j2]))
            for i1, i2, j1, j2 in _hunks(a, after.splitlines(keepends=True))
        }
        g = got.splitlines(keepends=True)
        for i1, i2, j1, j2 in _hunks(a, g):
            if (i1, i2, tuple(g[j1:j2])) not in wanted:
                return (
                    f"the rule also rewrites {path}:{i1 + 1}, which the commit does not change "
                    "that way",
                    also,
                )
            also += 1
    return None, max(also - 1, 0)


def format_report(results: list[HunkResult]) -> str:
    lines = []
    ok = sum(1 for r in results if r.learnable)
    for r in results:
        mark = "learnable" if r.learnable else "not learnable"
        extra = f" (also reproduces {r.also_rewrites} other hunk(s))" if r.also_rewrites else ""
        lines.append(
            f"{r.path}:{r.start} +{r.lines}: {mark}{extra}"
            + (f" — {r.reason}" if r.reason and not r.learnable else "")
        )
        for rule in r.rules if r.learnable else []:
            lines.append(f"    rule: {rule['rule']}  fix: {rule['fix']!r}")
    lines.append(f"{ok} of {len(results)} hunks learnable")
    return "\n".join(lines)
