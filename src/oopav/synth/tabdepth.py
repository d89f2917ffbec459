"""Tab-indented fixes at every depth (issue 26, wave 3g).

ast-grep re-indents the lines of a multi-line fix by the *spaces* before the match only: on a
tab-indented line it adds nothing, so a rule that inserts a statement next to an anchor
writes the new line's tabs out (``core._tab_indent``). Those tabs are the depth of the
example's anchor: at another depth the statement lands one tab short or long (chi's
``r = r.WithContext(ctx)`` inserted before ``next.ServeHTTP(w, r)``, learned at two tabs,
written at two tabs inside a ``select`` case three deep — right statement, wrong layout).

A rule cannot see the whitespace before its match, but it can see where its parent block
closes: a statement ``k`` tabs deep sits in a block whose closing brace stands on its own
line ``k - 1`` tabs deep (gofmt, prettier and xo with tabs all lay blocks out so). So the
rule is kept to its own depth (``inside: {regex: '\\n\\t{k-1}\\}$', stopBy: neighbor}``)
and repeated for the other depths, each with its fix's tabs moved to that depth, as
``follow_up: depth`` copies (optional: they may match nothing). A statement in a block
laid out otherwise (a Go ``case`` clause, a one-line block) matches none of them and is
left alone: precision first. Kept only when the rule set still reproduces every example.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oopav.synth.discriminate import conjoin

if TYPE_CHECKING:  # core calls this module: no import back at run time (tests/test_layers.py)
    from oopav.synth.core import SynthResult, SynthRule

# Depths the copies cover (tabs): deeper code is rare, and each copy is a rule to run.
MAX_DEPTH = 6
_LEAD = re.compile(r"^(\t*)")


def tab_depth(fix: str) -> int:
    """The depth (tabs) the fix's continuation lines are written at: the fewest leading tabs
    of its non-blank lines after the first, all of them tab-indented; 0 when none is (or a
    line is indented by spaces first: ast-grep re-indents those itself)."""
    lines = [ln for ln in fix.split("\n")[1:] if ln.strip()]
    if not lines:
        return 0
    depths = []
    for ln in lines:
        lead = _LEAD.match(ln)
        tabs = len(lead.group(1)) if lead else 0
        if tabs == 0 or ln[tabs] in " ":
            return 0
        depths.append(tabs)
    return min(depths)


def at_depth(fix: str, old: int, new: int) -> str:
    """``fix`` with its continuation lines moved from ``old`` tabs deep to ``new``."""
    head, *rest = fix.split("\n")
    moved = ["\t" * new + ln[old:] if ln.strip() else ln for ln in rest]
    return "\n".join([head, *moved])


def _guard(depth: int, language: str) -> dict[str, Any]:
    """The match's parent block closes ``depth - 1`` tabs deep (its statements are
    ``depth`` deep)."""
    closing = "\\n\\}$" if depth == 1 else "\\n\\t{" + str(depth - 1) + "}\\}$"
    # Go's statements sit in a `statement_list` inside the `block` that has the braces.
    listed = {"kind": "statement_list", "inside": {"regex": closing, "stopBy": "neighbor"}}
    block: dict[str, Any] = {
        "any": [{"regex": closing}, listed] if language == "go" else [{"regex": closing}]
    }
    # A call matched as the anchor is the expression of its statement.
    statement = {"kind": "expression_statement", "inside": {**block, "stopBy": "neighbor"}}
    return {"inside": {"any": [*block["any"], statement], "stopBy": "neighbor"}}


def add_depth_rules(result: SynthResult, reproduces: Callable[[SynthResult], bool]) -> list[str]:
    """Replace each rule whose fix writes tabs (see the module doc) by its copies at every
    depth, where the rule set still reproduces the examples; the notes to add."""
    notes: list[str] = []
    i = 0
    while i < len(result.rules):
        rule = result.rules[i]
        depth = tab_depth(rule.fix)
        if (
            not depth
            or depth > MAX_DEPTH
            or rule.follow_up
            or rule.companion
            or rule.expand_start
            or rule.expand_end
            or "regex" in rule.rule  # kept to its sites' layout already (core._same_layout)
        ):
            i += 1
            continue
        copies: list[SynthRule] = [
            replace(rule, rule=conjoin(rule.rule, _guard(depth, rule.language)))
        ]
        for d in range(1, MAX_DEPTH + 1):
            if d == depth:
                continue
            copies.append(
                replace(
                    rule,
                    id=f"{rule.id}-d{d}",
                    rule=conjoin(rule.rule, _guard(d, rule.language)),
                    fix=at_depth(rule.fix, depth, d),
                    sites=0,
                    follow_up="depth",
                )
            )
        rules = [*result.rules[:i], *copies, *result.rules[i + 1 :]]
        candidate = replace(result, rules=rules)
        if not reproduces(candidate):
            i += 1
            continue
        result.rules[:] = rules
        notes.append(
            f"a fix writes tabs ({depth} deep, as in the examples); its rule "
            f"keeps to that depth and repeats for depths 1-{MAX_DEPTH} (follow-ups), since "
            "ast-grep re-indents a fix by spaces only"
        )
        i += len(copies)
    if notes:
        for n, r in enumerate(result.rules, 1):
            result.rules[n - 1] = replace(r, id=f"synth-{n}")
    return notes
