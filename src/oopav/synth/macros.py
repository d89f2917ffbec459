"""Rust macro arguments: the same rewrite inside a macro invocation's token tree.

ast-grep parses a Rust macro's arguments (``tri!(to_value(&value))``, ``assert_eq!(…)``,
``format!(…)``) as a flat *token tree*, so a rule learned on ordinary code (serde's
``to_value(&$A)`` -> ``to_value($A)``) never reaches the same code inside a macro, where
much of a Rust code base lives. For a plain pattern rule this module derives a follow-up
that rewrites the pattern's token sequence inside the outermost token tree that holds it, by
a ``replace`` transform (a regex over the tokens, whitespace between them free; each
metavariable a run of name, path and field tokens), and keeps it only when the rule set
still reproduces every example (it must rewrite nothing the examples keep)::

    rule:
      kind: token_tree
      pattern: $TT
      regex: \\bto_value\\s*\\(\\s*&\\s*[\\w.:']+\\s*\\)
      not: {inside: {kind: token_tree, stopBy: end}}
    transform:
      NEWTT: {replace: {source: $TT, replace: 'to_value\\s*\\(\\s*&\\s*(?P<A>[\\w.:']+)\\s*\\)', by: 'to_value(${A})'}}
    fix: $NEWTT
    metadata: {optional: true, follow_up: macro}

Only single-line patterns of at least three tokens with a metavariable (a literal would be a
text search through the macro's tokens, strings included), each metavariable once (a regex
has no back-references to say "the same text twice"); word tokens at either end are bounded
(``\\b``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # core calls this module: no import back at run time (tests/test_layers.py)
    from oopav.synth.core import SynthResult, SynthRule

_TOKEN = re.compile(r"\$\$\$[A-Z][A-Z0-9_]*|\$[A-Z][A-Z0-9_]*|\w+|\S")
# What a metavariable stands for in a token tree: names, paths, fields, lifetimes, numbers
# (`value`, `self.key`, `de::Error`, `'a`), or for `$$$` a run without brackets.
_SINGLE = r"[\w.:']+"
_MULTI = r"[^()\[\]{}]*"


def _token_regex(pattern: str, capture: bool) -> str | None:
    """``pattern`` as a regex over its tokens (free whitespace between them), or None when
    it cannot be one (a line break, a metavariable twice)."""
    if "\n" in pattern:
        return None
    tokens = _TOKEN.findall(pattern)
    seen: set[str] = set()
    out: list[str] = []
    prev_word = False
    for tok in tokens:
        if tok.startswith("$"):
            name = tok.lstrip("$")
            if name in seen:
                return None
            seen.add(name)
            body = _MULTI if tok.startswith("$$$") else _SINGLE
            piece = f"(?P<{name}>{body})" if capture else f"(?:{body})"
            word = True
        else:
            piece = re.escape(tok)
            word = bool(re.match(r"\w", tok))
        if out:
            out.append(r"\s+" if prev_word and word else r"\s*")
        elif word:
            out.append(r"\b")  # `value`, not the end of `other_value`
        out.append(piece)
        prev_word = word
    if prev_word:
        out.append(r"\b")
    # A structure with a hole: a literal (`use io;`, `error`) would be a text search through
    # the macro's tokens, strings included; a bare name is the rename's, which reaches
    # identifiers in token trees already.
    return "".join(out) if seen and len(tokens) >= 3 else None


def _by(fix: str) -> str | None:
    """The fix as a regex replacement (``$A`` -> ``${A}``, a literal ``$`` doubled)."""
    if "\n" in fix:
        return None
    parts = re.split(r"(\$\$\$[A-Z][A-Z0-9_]*|\$[A-Z][A-Z0-9_]*)", fix)
    return "".join(
        "${" + p.lstrip("$") + "}" if i % 2 else p.replace("$", "$$") for i, p in enumerate(parts)
    )


def _snippet(pattern: Any) -> str | None:
    """The code a pattern matches: the pattern itself, or (wave 3f) the snippet a
    ``{context, selector}`` pattern wraps — serde's `$A::MAX` -> `$A::max_value()` is
    parsed inside `fn _f() { … }` (a path alone is no statement), and its follow-up
    reaches `overflow!(…, u64::MAX)` like a plain pattern's would."""
    if isinstance(pattern, str):
        return pattern
    if not isinstance(pattern, dict) or set(pattern) != {"context", "selector"}:
        return None
    from oopav.synth.sites import WRAPPERS as _WRAPPERS

    context = pattern["context"]
    for wrapper in _WRAPPERS["rust"]:
        head, _, tail = wrapper.replace("{{", "\0").replace("}}", "\1").partition("{}")
        head, tail = (x.replace("\0", "{").replace("\1", "}") for x in (head, tail))
        if isinstance(context, str) and context.startswith(head) and context.endswith(tail):
            inner = context[len(head) : len(context) - len(tail)]
            if inner:
                return inner
    return None


def macro_rule(rule: SynthRule, n: int) -> SynthRule | None:
    """The token-tree follow-up of ``rule`` (see the module doc), or None."""
    pattern = _snippet(rule.rule.get("pattern"))
    if (
        rule.language != "rust"
        or set(rule.rule) != {"pattern"}
        or pattern is None
        or rule.constraints
        or rule.transform
        or rule.expand_start
        or rule.expand_end
        or rule.follow_up
        or rule.companion
    ):
        return None
    find, capture, by = _token_regex(pattern, False), _token_regex(pattern, True), _by(rule.fix)
    if find is None or capture is None or by is None or not re.search(r"\w", pattern):
        return None
    return type(rule)(
        id=f"synth-{n}",
        language="rust",
        rule={
            "kind": "token_tree",
            "pattern": "$TT",
            "regex": find,
            "not": {"inside": {"kind": "token_tree", "stopBy": "end"}},
        },
        fix="$NEWTT",
        transform={"NEWTT": {"replace": {"source": "$TT", "replace": capture, "by": by}}},
        follow_up="macro",
    )


def add_macro_rules(result: SynthResult, reproduces: Callable[[SynthResult], bool]) -> list[str]:
    """Append a token-tree follow-up after each Rust rule that has one, when the rule set
    still reproduces the examples with it; the notes say which."""
    if result.language != "rust":
        return []
    notes: list[str] = []
    rules = list(result.rules)
    for rule in list(rules):
        extra = macro_rule(rule, len(rules) + 1)
        if extra is None:
            continue
        trial = replace(result, rules=[*rules, extra])
        if reproduces(trial):
            rules.append(extra)
            notes.append(
                f"{extra.id}: {rule.id} inside macro arguments too (a token tree to ast-grep)"
            )
    result.rules = rules
    return notes
