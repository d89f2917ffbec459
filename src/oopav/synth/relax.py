"""Relaxing a chosen rule's incidental constraints (wave 3l synth25, issue 26 "too narrow").

The search (``synth.core``) picks a rule that reproduces every example and leaves the
examples' unchanged code alone; that rule often carries constraints the examples do not ask
for: a metavariable's regex pinned to the one name they show (``B: regex ^i$``), an
``inside``/``has`` context that merely holds at every example site, a ``not`` that excludes
nothing, a literal call head where a metavariable would do. Held-out sites differ in exactly
those details.

:func:`relax` is an Occam step over the rules chosen (whatever node they are rooted at): each
constraint in turn is relaxed —

- a relational constraint (``inside``, ``has``, ``not``, ``follows``, ``precedes``) dropped,
  or an ``inside``/``has`` narrowed to its kind alone;
- a pinned regex (a metavariable's constraint, or a rule's own ``regex`` beside its
  ``kind``/``pattern``) dropped, else widened to what the examples' names share (a common
  prefix or suffix, their identifier shape);
- a literal identifier of the pattern (a call head, a member name) made a metavariable, in
  the fix too —

and a relaxation is kept only when the whole rule set, so relaxed, makes exactly what it made
before of every example (before text: the changed sites and the unchanged ones alike, explicit
negatives too) and does to the examples' after texts what the rule did (no rewrite of its own
output). A relaxation is *evidenced* when the relaxed rule, alone, rewrites more of the
examples' nodes exactly as the examples do than the rule did (sites another rule of the set
rewrites: the examples show the wider rule at work; a set of one change has no such
evidence); a match it leaves as it is tests nothing, and otherwise the examples say nothing
either way. Evidenced relaxations are kept (the default, ``OOPAV_RELAX=evidenced``): the
draws of ``bench/synth_real.py`` showed the others writing wrong hunks on held-out files
(docs/benchmarks.md § Synth on real edits, wave 3l synth25). ``OOPAV_RELAX=all`` keeps those
too, after the evidenced ones, except for a constant fix (a rename whose replacement does not
depend on what it matches: ``X -> Y`` is not ``anything -> Y``) and a literal made a
metavariable; ``off`` skips the pass. A rule another relaxed rule makes redundant (its
examples' sites rewritten by the relaxed one) is dropped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oopav.sandbox.astgrep import Rule
    from oopav.synth.core import SynthResult, SynthRule, _Ex

    Rewrites = Callable[[Rule, _Ex], list[Any] | None]

# The default mode (see the module doc): ``evidenced`` or ``all``.
DEFAULT_MODE = "evidenced"
# At most this many checks against the examples per rule set (a candidate's evidence: one
# rule over the examples; its consistency: the whole set).
MAX_CHECKS = 30

RELATIONAL = ("inside", "has", "not", "follows", "precedes")
POSITIVE = ("pattern", "kind", "regex", "all", "any", "inside", "has", "follows", "precedes")
# Words a pattern keeps literal in every language (keywords and literals): a metavariable
# there would not parse, or would match what no example shows.
KEYWORDS = frozenset(
    "and as async await break case catch chan class const continue crate def default defer "
    "del delete dyn elif else enum except export extends false finally fn for from func "
    "function go if impl import in instanceof interface is lambda let loop match mod mut "
    "new nil none not null or package pass pub raise range ref return select self static "
    "struct super switch this throw trait true try type typeof undefined unsafe use var "
    "void where while with yield None True False Self".split()
)
_TOKEN = re.compile(
    r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`[^`]*`|\$\$?\$?[A-Z_][A-Z0-9_]*|[A-Za-z_]\w*'
)
_LITERALS = re.compile(r"^\^\(?((?:\\.|[\w])+(?:\|(?:\\.|[\w])+)*)\)?\$$")


def mode() -> str:
    value = os.environ.get("OOPAV_RELAX", DEFAULT_MODE)
    return value if value in ("off", "evidenced", "all") else DEFAULT_MODE


def relax(
    result: SynthResult, exs: list[_Ex], rewrites: Rewrites, how: str | None = None
) -> tuple[SynthResult, list[str]]:
    """``result`` with its rules' incidental constraints relaxed (module doc), and a note per
    rule relaxed. The result is returned unchanged when nothing relaxes. ``rewrites`` is
    ``core._right_rewrites`` (what a rule rewrites in an example as the example does; passed
    in: no import cycle)."""
    how = how or mode()
    if how == "off" or not result.rules:
        return result, []
    rules = list(result.rules)
    # Evidence is another rule's sites rewritten the same way: a set of one change has none.
    changes = sum(1 for r in rules if not (r.follow_up or r.companion))
    phases = ["evidenced"] if changes > 1 else []
    if how == "all":
        phases.append("all")
    if not phases:
        return result, []
    try:
        want = [_outputs(rules, ex) for ex in exs]
    except Exception:
        return result, []
    budget = [MAX_CHECKS]
    notes: list[str] = []
    for phase in phases:
        for i in range(len(rules)):
            r = rules[i]
            if r.follow_up or r.companion or r.expand_start or r.expand_end:
                continue
            done: list[str] = []
            changed = True
            while changed and budget[0] > 0:
                changed = False
                base = _rewritten(rules[i], exs, rewrites)
                for what, cand in _candidates(rules[i]):
                    if budget[0] <= 0:
                        break
                    if phase == "all" and ("$" not in cand.fix or " made $" in what):
                        # Without evidence (phase 1 took what had some), a constant fix (a
                        # rename) keeps what it matches ("X -> Y" is not "anything -> Y"),
                        # and a literal of the pattern stays literal (a call head: `get(u)`
                        # is not every call).
                        continue
                    budget[0] -= 1
                    evidenced = _rewritten(cand, exs, rewrites) > base
                    if phase == "evidenced" and not evidenced:
                        continue
                    budget[0] -= 1
                    trial = [*rules[:i], cand, *rules[i + 1 :]]
                    if not _consistent(trial, rules[i], cand, exs, want):
                        continue
                    rules[i] = cand
                    done.append(what + ("" if evidenced else " (no example tells)"))
                    changed = True
                    break
            if done:
                notes.append(f"{r.id} relaxed: " + "; ".join(done))
    if not notes:
        return result, []
    # A rule whose sites a relaxed rule now rewrites is redundant.
    i = 0
    while i < len(rules) and len(rules) > 1:
        r = rules[i]
        trial = rules[:i] + rules[i + 1 :]
        if not (r.follow_up or r.companion) and _same(trial, exs, want):
            notes.append(f"{r.id} dropped: a relaxed rule rewrites its sites")
            rules = trial
            continue
        i += 1
    if len(rules) != len(result.rules):
        rules = [replace(r, id=f"synth-{n}") for n, r in enumerate(rules, 1)]
    new = replace(result, rules=rules)
    _log(notes)
    return new, notes


def _log(notes: list[str]) -> None:
    """Measurement aid: with ``OOPAV_RELAX_LOG`` set, one JSON line per relaxed rule set
    (the bench case from ``OOPAV_RELAX_CASE``)."""
    path = os.environ.get("OOPAV_RELAX_LOG")
    if not path:
        return
    line = {"case": os.environ.get("OOPAV_RELAX_CASE", ""), "mode": mode(), "notes": notes}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


# --- checks ----------------------------------------------------------------------------------


def _outputs(rules: list[SynthRule], ex: _Ex) -> str:
    text = ex.before
    for r in rules:
        text = r.apply(text)[0]
    return text


def _same(rules: list[SynthRule], exs: list[_Ex], want: list[str]) -> bool:
    try:
        return all(_outputs(rules, ex) == w for ex, w in zip(exs, want, strict=True))
    except Exception:
        return False


def _consistent(
    trial: list[SynthRule], old: SynthRule, new: SynthRule, exs: list[_Ex], want: list[str]
) -> bool:
    """The relaxed set makes of every example what the set made of it, and the relaxed rule
    does to each (complete) example's after text what the rule did."""
    if not _same(trial, exs, want):
        return False
    try:
        for ex in exs:
            if ex.partial:
                continue
            if new.apply(ex.after)[0] != old.apply(ex.after)[0]:
                return False
    except Exception:
        return False
    return True


def _rewritten(rule: SynthRule, exs: list[_Ex], rewrites: Rewrites) -> int:
    """How many nodes ``rule`` rewrites in the examples' before texts exactly as the examples
    do (``rewrites``: ``core._right_rewrites``). A match it leaves as it is tests nothing (a
    rename's constant fix leaves its own output alone), and a site another rule of the set
    rewrites first is no evidence unless this rule, alone, would rewrite it the same way."""
    try:
        as_rule = rule.as_rule()
        return sum(len(rewrites(as_rule, ex) or []) for ex in exs)
    except Exception:
        return -1


# --- candidates ------------------------------------------------------------------------------


def _candidates(rule: SynthRule) -> Iterator[tuple[str, SynthRule]]:
    """Each one-step relaxation of ``rule``: (what was relaxed, the relaxed rule)."""
    for what, new in _rule_steps(rule.rule):
        yield what, replace(rule, rule=new)
    for name, cons in (rule.constraints or {}).items():
        rest = {k: v for k, v in (rule.constraints or {}).items() if k != name}
        yield f"${name}'s constraint dropped", replace(rule, constraints=rest or None)
        if isinstance(cons, dict) and isinstance(cons.get("regex"), str):
            for rx in _widened(cons["regex"]):
                wide = dict(rest, **{name: dict(cons, regex=rx)})
                yield f"${name} widened to {rx}", replace(rule, constraints=wide)
    yield from _abstracted(rule)


def _rule_steps(rule: dict[str, Any], where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """One-step relaxations of a rule object (itself, its ``all`` items, its ``inside``/``has``
    sub-rules): a relational key dropped or narrowed to its kind, a regex dropped or widened."""
    for key in RELATIONAL:
        if key not in rule:
            continue
        rest = {k: v for k, v in rule.items() if k != key}
        if any(k in rest for k in POSITIVE):
            yield f"{where}{key} dropped", rest
        sub = rule[key]
        if key in ("inside", "has") and isinstance(sub, dict):
            kind_only = {k: sub[k] for k in ("kind", "stopBy", "field") if k in sub}
            if "kind" in kind_only and kind_only != sub:
                yield f"{where}{key} narrowed to its kind", dict(rule, **{key: kind_only})
            for what, new in _rule_steps(sub, f"{where}{key}."):
                yield what, dict(rule, **{key: new})
    if isinstance(rule.get("regex"), str) and ("kind" in rule or "pattern" in rule):
        rest = {k: v for k, v in rule.items() if k != "regex"}
        yield f"{where}regex dropped", rest
        for rx in _widened(rule["regex"]):
            yield f"{where}regex widened to {rx}", dict(rule, regex=rx)
    items = rule.get("all")
    if isinstance(items, list):
        for n, item in enumerate(items):
            if len(items) > 1 and isinstance(item, dict) and not _positive_item(item):
                yield f"{where}all[{n}] dropped", dict(rule, all=items[:n] + items[n + 1 :])
            if isinstance(item, dict):
                for what, new in _rule_steps(item, f"{where}all[{n}]."):
                    yield what, dict(rule, all=[*items[:n], new, *items[n + 1 :]])


def _positive_item(item: dict[str, Any]) -> bool:
    """An ``all`` item that says what the node is (its pattern or kind): never dropped."""
    return "pattern" in item or "kind" in item


def _widened(regex: str) -> list[str]:
    """Wider regexes for a regex of literal names (``^i$``, ``^(a|b)$``): their common prefix
    or suffix, else their identifier shape."""
    m = _LITERALS.match(regex)
    if not m:
        return []
    names = [re.sub(r"\\(.)", r"\1", n) for n in m.group(1).split("|")]
    if not all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
        return []
    out: list[str] = []
    prefix = _common_prefix(names)
    suffix = _common_prefix([n[::-1] for n in names])[::-1]
    if len(names) > 1 and len(prefix) >= 2:
        out.append(f"^{re.escape(prefix)}\\w*$")
    if len(names) > 1 and len(suffix) >= 2:
        out.append(f"^\\w*{re.escape(suffix)}$")
    shape = _shape(names)
    if shape:
        out.append(shape)
    return [rx for rx in out if rx != regex]


def _common_prefix(names: list[str]) -> str:
    first = min(names, key=len)
    for n, ch in enumerate(first):
        if any(name[n] != ch for name in names):
            return first[:n]
    return first


def _shape(names: list[str]) -> str | None:
    if all(re.fullmatch(r"[A-Z][A-Z0-9_]*", n) for n in names):
        return "^[A-Z][A-Z0-9_]*$"
    if all(re.fullmatch(r"_*[a-z][a-z0-9_]*", n) for n in names):
        return "^_*[a-z][a-z0-9_]*$"
    if all(re.fullmatch(r"_*[A-Z][A-Za-z0-9]*", n) for n in names):
        return "^_*[A-Z][A-Za-z0-9]*$"
    if all(re.fullmatch(r"_*[a-z][A-Za-z0-9]*", n) for n in names):
        return "^_*[a-z][A-Za-z0-9]*$"
    return None


def _abstracted(rule: SynthRule) -> Iterator[tuple[str, SynthRule]]:
    """The rule with one literal identifier of its pattern (top level, or an ``all`` item's)
    made a fresh metavariable, in the fix too."""
    pattern, put = _pattern_slot(rule.rule)
    if pattern is None or put is None:
        return
    used = set(re.findall(r"\$+([A-Z_][A-Z0-9_]*)", pattern + rule.fix))
    used |= set((rule.constraints or {}).keys()) | set((rule.transform or {}).keys())
    var = next(f"R{n}" for n in range(1, 99) if f"R{n}" not in used)
    seen: list[str] = []
    for m in _TOKEN.finditer(pattern):
        tok = m.group(0)
        if tok[0] in "\"'`$" or tok in KEYWORDS or tok in seen:
            continue
        seen.append(tok)
    for tok in seen:
        new_pattern = _swap(pattern, tok, "$" + var)
        new_fix = _swap(rule.fix, tok, "$" + var)
        yield f"`{tok}` made ${var}", replace(rule, rule=put(new_pattern), fix=new_fix)


def _pattern_slot(rule: dict[str, Any]) -> tuple[str | None, Any]:
    pattern = rule.get("pattern")
    if isinstance(pattern, str):
        return pattern, lambda p: dict(rule, pattern=p)
    items = rule.get("all")
    if isinstance(items, list):
        for n, item in enumerate(items):
            if isinstance(item, dict) and isinstance(item.get("pattern"), str):

                def put(p: str, n: int = n, item: dict[str, Any] = item) -> dict[str, Any]:
                    return dict(rule, all=[*items[:n], dict(item, pattern=p), *items[n + 1 :]])

                return item["pattern"], put
    return None, None


def _swap(text: str, tok: str, var: str) -> str:
    """``text`` with the identifier token ``tok`` (outside string literals) replaced."""
    return _TOKEN.sub(lambda m: var if m.group(0) == tok else m.group(0), text)
