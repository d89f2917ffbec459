"""Mined codemod tasks: the commits of a local git repository → (instruction, pre, post, gold rule).

Every commit (``--rev A..B``, else every commit with a parent) goes through the rules-by-example
miner (:func:`oopav.synth.gitlearn.learn_commit`): one rule per hunk, learned from the hunk and
kept only when every rewrite it makes in the parent tree is one the commit makes. Each such
*learnable* hunk becomes a task in the format of the synthetic ones (:class:`Task`):

- ``pre``: the code the hunk changes, as the parent has it — the smallest function around the
  hunk that fits a prompt, else the whole file when it is short, else the hunk's lines with a
  little context when they parse on their own;
- ``rule``: the learned rule as an ``ast_grep`` action (full YAML form); ``post``: what it makes
  of ``pre`` (verified like a synthetic task: it rewrites something and still parses);
- ``instruction``: the commit's subject line — what the author said the change was;
- ``family``: ``git_rename`` (an identifier rename) or ``git_rewrite``; ``source``: the file,
  so train and test are disjoint by file, as for synthetic tasks.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from oopav.events.actions import AstGrepAction
from oopav.trainer.tasks import (
    Generated,
    Task,
    _parses,
    _verify,
    ensure_test_split,
    snippet_spans,
    split_of,
)

CONTEXT_LINES = 3


def commits(repo: Path, rev: str | None = None) -> list[str]:
    """Commits of ``rev`` (a range ``A..B`` or a revision; default HEAD) that have a parent,
    oldest first, merges left out (their changes are their parents')."""
    from oopav.synth.gitlearn import _git

    spec = rev or "HEAD"
    out = _git(repo, "rev-list", "--reverse", "--no-merges", "--min-parents=1", spec, "--")
    return [line for line in out.splitlines() if line]


def window(source: str, start: int, lines: int, language: str) -> tuple[int, int] | None:
    """Lines (first, last; 0-based) of ``source`` around the hunk at ``start .. start + lines``
    (1-based) to show in a prompt: the smallest function around it that fits a prompt, else
    the hunk's own lines, else those with a little context, when they parse on their own."""
    first, last = start - 1, start - 1 + max(lines, 1) - 1
    best: tuple[int, int] | None = None
    for s, e, _code in snippet_spans(source, language):
        if s <= first and last <= e and (best is None or e - s < best[1] - best[0]):
            best = (s, e)
    if best is not None:
        return best
    rows = source.splitlines(keepends=True)
    for lo, hi in ((first, last), (first - CONTEXT_LINES, last + CONTEXT_LINES)):
        lo, hi = max(0, lo), min(len(rows) - 1, hi)
        if _parses(_text(rows, lo, hi), language):
            return lo, hi
    return None


def _text(rows: list[str], first: int, last: int) -> str:
    text = textwrap.dedent("".join(rows[first : last + 1]))
    return text if text.endswith("\n") else text + "\n"


def after_window(before: str, after: str, first: int, last: int) -> str | None:
    """What the commit made of lines ``first .. last`` of ``before`` (dedented), or None when a
    change of the commit crosses the window's edge."""
    import difflib

    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            lo, hi = max(i1, first), min(i2, last + 1)
            out += b[j1 + lo - i1 : j1 + hi - i1] if lo < hi else []
        elif i1 == i2:  # an insertion: the window's when it falls strictly inside
            out += b[j1:j2] if first < i1 <= last else []
        elif first <= i1 and i2 <= last + 1:
            out += b[j1:j2]
        elif i1 <= last and i2 > first:
            return None
    return _text(out, 0, len(out) - 1) if out else None


def mine(
    repo: str | Path,
    *,
    rev: str | None = None,
    n: int = 1000,
    holdout: float = 0.2,
) -> Generated:
    """Up to ``n`` verified tasks from the commits of ``repo``, deterministic for a history."""
    from oopav.synth.gitlearn import _git, _show, learn_commit

    root = Path(repo).resolve()
    if not _is_repo(root):
        raise ValueError(f"{repo} is not a git repository")
    tasks: list[Task] = []
    seen: set[str] = set()
    rejected: dict[str, int] = {}

    def reject(why: str) -> None:
        rejected[why] = rejected.get(why, 0) + 1

    for sha in commits(root, rev):
        if len(tasks) >= n:
            break
        subject = _git(root, "log", "-1", "--format=%s", sha).strip() or f"commit {sha[:10]}"
        for hunk in learn_commit(root, sha):
            if len(tasks) >= n:
                break
            if not hunk.learnable:
                reject("not_learnable")
                continue
            rules = hunk.rules
            if len(rules) != 1:
                # Optional follow-ups (a definition renamed with its calls, synth/definitions.py)
                # may do nothing in this hunk's window: try the one rule they follow; the check
                # below still demands the commit's whole change to the window.
                core = [r for r in rules if not (r.get("metadata") or {}).get("optional")]
                rules = core if len(core) == 1 else rules
            if len(rules) != 1:
                reject("rule_set")  # one action per task: a rule set needs several steps
                continue
            rule = rules[0]
            before = _show(root, f"{sha}^", hunk.path) or ""
            span = window(before, hunk.start, hunk.lines, rule["language"])
            if span is None:
                reject("no_snippet")
                continue
            pre = _text(before.splitlines(keepends=True), *span)
            # The task's answer must be the commit's own change to this code, not a part of it.
            expected = after_window(before, _show(root, sha, hunk.path) or "", *span)
            action = AstGrepAction(rule=yaml.safe_dump(rule, sort_keys=False, allow_unicode=True))
            family = "git_rename" if "regex" in rule["rule"] else "git_rewrite"
            task = _verify(
                family,
                rule["language"],
                hunk.path,
                split_of(hunk.path, holdout),
                f"{subject.rstrip('.')}.",
                pre,
                action,
                rejected,
            )
            if task is None or task.id in seen:
                continue
            if task.post != expected:
                reject("partial_change")
                continue
            seen.add(task.id)
            tasks.append(task)
    return Generated(ensure_test_split(tasks, holdout), rejected)


def _is_repo(path: Path) -> bool:
    from oopav.synth.gitlearn import _git

    try:
        _git(path, "rev-parse", "--git-dir")
    except ValueError:
        return False
    return True
