"""Fitting a learned rule set to the repository it is for (wave 3m, issue 26: "too narrow"
and class 9, a rule that matches nothing).

The search (``synth.core``) returns the rule set it ranks first among those that reproduce
every example and leave the examples' unchanged code alone. From one or two examples that is
often a rule that holds an incidental detail of them: a literal call head, a context that
merely holds at every example site (``inside`` an ``attribute``: httpx's
``httpx.ResponseClosed`` renamed, while the other files import ``ResponseClosed`` by name), a
regex pinned to the one name shown. Such a rule can rewrite **nothing** in the repository the
user applies it to, and then it is no use there as learned: the bench's draws hold 16-29 of
every 100 real edits whose learned rules produce no site in the commit's other files.

Given the repository's files (``target``: what ``oopav synth --apply DIR`` will rewrite; only
their text now, never what they should become), :func:`fit` looks for the *least*
generalisation of that rule set that does something there:

- only when every change rule of the set rewrites nothing in ``target`` (a rule set that
  rewrites something is left exactly as learned: this never widens a rule that works);
- the one-step relaxations of :mod:`synth.relax` (a relational constraint dropped or narrowed
  to its kind, a regex or a metavariable's constraint dropped or widened, a literal
  identifier made a metavariable), plus an ``any`` of contexts dropped and a sub-expression
  of the pattern made a metavariable (in the fix too), then two steps of them;
- a candidate is kept only when the whole set, so relaxed, still makes exactly what it made
  of every example (the changed sites and the unchanged code alike: the examples' negatives
  bound the generalisation, as in the search) and leaves its own output alone;
- the words the examples' edit removes (a rename's old name) stay in the rule: the fit widens
  *where* a rule applies, never *what* it rewrites (without this, ``OldClosed -> NewClosed``
  learned from member accesses became "every member name -> NewClosed" in a repository that
  has no ``OldClosed``: 823 sites of click);
- a candidate that rewrites more than ``SITES_PER_EXAMPLE_SITE`` sites of ``target`` per
  example site (at least ``MIN_CAP``) is no near generalisation and is not taken;
- among those, the one that rewrites the **fewest** sites of ``target``, at least one (Occam:
  the smallest step that makes the rule do anything), fewer steps first.

Each fit is said in a note ("fitted to the repository: …"), since the rule now does more than
the examples show. Budgets bound the work (files, bytes, candidates counted, consistency
checks); a fit that finds nothing leaves the result as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oopav.synth import relax

if TYPE_CHECKING:
    from oopav.sandbox.astgrep import Rule
    from oopav.synth.core import SynthResult, SynthRule, _Ex

    Rewrites = Callable[[Rule, _Ex], list[Any] | None]

MAX_FILES = 1500
MAX_FILE_BYTES = 300_000
MAX_BYTES = 12_000_000
# Candidates counted over the target (each a pass over its files) and consistency checks
# against the examples, per fit.
MAX_COUNTS = 80
MAX_CHECKS = 40
# Depth-1 candidates (that rewrite nothing yet) expanded one step further.
MAX_FRONTIER = 12
# Sub-expressions of a pattern tried as metavariables, per rule.
MAX_SUBEXPRESSIONS = 12
# A fit rewrites at most this many sites of the target per example site (and at least
# MIN_CAP): past that the "least" generalisation is no longer near what the examples show.
SITES_PER_EXAMPLE_SITE = 4
MIN_CAP = 8
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Target:
    """The repository's files (path, text) a rule set is fitted to, parsed at most once."""

    def __init__(self, files: list[tuple[str, str]], exclude: set[str] | None = None) -> None:
        from oopav.sandbox.treecache import TreeCache

        kept: list[tuple[str, str]] = []
        total = 0
        for path, text in files:
            if exclude and path in exclude:
                continue
            if len(text) > MAX_FILE_BYTES or total + len(text) > MAX_BYTES:
                continue
            kept.append((path, text))
            total += len(text)
            if len(kept) >= MAX_FILES:
                break
        self.files = kept
        self.trees = TreeCache()
        self.counted = 0

    def count(self, rule: SynthRule) -> int:
        """Sites ``rule`` rewrites over the files (each file's original text); -1 when the
        rule does not run (a candidate ast-grep refuses)."""
        from oopav.sandbox.astgrep import rewrite_source

        self.counted += 1
        as_rule = rule.as_rule()
        n = 0
        for path, text in self.files:
            try:
                out, k = rewrite_source(text, as_rule, trees=self.trees, path=path)
            except Exception:
                return -1
            if out != text:
                n += k
        return n


def fit(
    result: SynthResult, exs: list[_Ex], target: Target, rewrites: Rewrites
) -> tuple[SynthResult, list[str]]:
    """``result`` fitted to ``target`` (module doc) and a note, or ``result`` unchanged."""
    rules = list(result.rules)
    active = [i for i, r in enumerate(rules) if not (r.follow_up or r.companion)]
    if not active or not target.files:
        return result, []
    for i in active:
        if target.count(rules[i]) != 0:
            return result, []  # it does something there (or cannot be counted): as learned
    try:
        want = [relax._outputs(rules, ex) for ex in exs]
    except Exception:
        return result, []
    # The words the examples' edit removes (a rename's old name) stay in the rule: the fit
    # widens where the rule applies, never what it changes (`OldClosed -> NewClosed` is not
    # "any member name -> NewClosed": in a repository without `OldClosed` that rewrote 823
    # sites of click).
    removed: set[str] = set()
    for ex in exs:
        removed |= set(_WORD.findall(ex.before)) - set(_WORD.findall(ex.after))
    cap = max(MIN_CAP, SITES_PER_EXAMPLE_SITE * sum(len(ex.sites) for ex in exs))
    counts = [MAX_COUNTS]
    checks = [MAX_CHECKS]
    frontier: list[tuple[list[SynthRule], list[str]]] = [(rules, [])]
    for depth in (1, 2):
        found: list[tuple[int, int, list[SynthRule], list[str]]] = []
        deeper: list[tuple[list[SynthRule], list[str]]] = []
        for cur, steps in frontier:
            for i in active:
                keep = _words(rules[i]) & removed
                for what, cand in _steps(cur[i], result.language):
                    if counts[0] <= 0:
                        break
                    if keep - _words(cand):
                        continue  # it would generalise away a word the edit removes
                    counts[0] -= 1
                    n = target.count(cand)
                    trial = [*cur[:i], cand, *cur[i + 1 :]]
                    if n > cap:
                        continue  # far wider than the examples: no near generalisation
                    if n > 0:
                        if checks[0] <= 0:
                            continue
                        checks[0] -= 1
                        if relax._consistent(trial, rules[i], cand, exs, want):
                            found.append((n, len(found), trial, [*steps, what]))
                    elif n == 0 and depth == 1 and len(deeper) < MAX_FRONTIER:
                        deeper.append((trial, [*steps, what]))
        if found:
            n, _, best, steps = min(found, key=lambda t: (t[0], t[1]))
            # A step that changed nothing the target sees is left out of the note.
            note = (
                "fitted to the repository: the rules learned from the examples rewrite nothing "
                f"there; {'; '.join(steps)} (the least generalisation that still reproduces "
                f"every example) rewrites {n} site(s) — review them"
            )
            return replace(result, rules=best), [note]
        frontier = deeper
        if not frontier:
            break
    return result, []


def _words(rule: SynthRule) -> set[str]:
    """The words a rule's matcher names (its rule object and constraints, not its fix)."""
    return set(_WORD.findall(json.dumps([rule.rule, rule.constraints], sort_keys=True)))


def _steps(rule: SynthRule, language: str) -> Iterator[tuple[str, SynthRule]]:
    """One-step generalisations of ``rule``: relax.py's, an ``any`` dropped, a sub-expression
    of the pattern made a metavariable."""
    yield from relax._candidates(rule)
    yield from _any_dropped(rule)
    yield from _subexpressions(rule, language)


def _any_dropped(rule: SynthRule) -> Iterator[tuple[str, SynthRule]]:
    """An ``any`` of contexts (``inside`` an attribute, or a method's name, …) dropped when the
    rule still says what the node is (its kind, pattern or regex)."""
    r = rule.rule
    if "any" in r and any(k in r for k in ("pattern", "kind", "regex")):
        yield (
            "its `any` of contexts dropped",
            replace(rule, rule={k: v for k, v in r.items() if k != "any"}),
        )


_META = re.compile(r"\$\$?\$?[A-Z_][A-Z0-9_]*")


def _subexpressions(rule: SynthRule, language: str) -> Iterator[tuple[str, SynthRule]]:
    """The pattern with one named sub-expression (more than a name: relax.py abstracts names)
    made a fresh metavariable, in the fix too where the fix holds it verbatim once."""
    from ast_grep_py import SgRoot

    pattern, put = relax._pattern_slot(rule.rule)
    if pattern is None or put is None or "\n" in pattern:
        return
    try:
        root = SgRoot(pattern, language).root()
    except Exception:
        return
    used = set(re.findall(r"\$+([A-Z_][A-Z0-9_]*)", pattern + rule.fix))
    used |= set((rule.constraints or {}).keys()) | set((rule.transform or {}).keys())
    var = next(f"S{n}" for n in range(1, 99) if f"S{n}" not in used)
    seen: set[str] = set()
    tried = 0
    top = root
    while True:  # the pattern's own node: abstracting it whole is no pattern
        named = [c for c in top.children() if c.is_named()]
        if len(named) != 1:
            break
        top = named[0]
    whole = (top.range().start.index, top.range().end.index)
    for node in top.find_all(regex=r"[\s\S]"):
        if tried >= MAX_SUBEXPRESSIONS:
            break
        text = node.text()
        span = (node.range().start.index, node.range().end.index)
        if (
            span == whole
            or not node.is_named()
            or node.kind() in ("identifier", "property_identifier", "field_identifier")
            or len(text) < 3
            or text in seen
            or _META.fullmatch(text)
            or pattern.count(text) != 1
            or rule.fix.count(text) > 1
        ):
            continue
        inner = set(_META.findall(text))
        if inner & set(_META.findall(rule.fix.replace(text, " "))):
            continue  # the fix uses its metavariables elsewhere: they would be unbound
        seen.add(text)
        tried += 1
        yield (
            f"`{text[:40]}` made ${var}",
            replace(
                rule,
                rule=put(pattern.replace(text, "$" + var)),
                fix=rule.fix.replace(text, "$" + var),
            ),
        )
