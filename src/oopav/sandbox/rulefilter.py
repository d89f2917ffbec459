"""Which text a file must contain for an ast-grep rule to match anything in it.

A file that lacks it is neither parsed nor searched (the ``ast-grep`` CLI prunes files by a
pattern's fixed string too). The filter must be exact: it may keep a file that cannot match,
never drop one that can. So a requirement is derived only where ast-grep's matching forces it:

- ``pattern`` (a plain string, default strictness): every *named* leaf of the parsed pattern
  is compared with the candidate's leaf by text (ast-grep ``match_terminal``), so its text is
  in the file. Metavariables, unnamed tokens (compared by kind only), comments and other
  leaves without a letter or digit, and anything holding a ``$``/expando character are left
  out; a pattern that parses with an ERROR node,
  or a pattern object (``context``/``selector``/``strictness``), requires nothing.
- the keys of one rule object all hold (AND); ``all`` is AND, ``any`` is OR; ``has``,
  ``inside``, ``precedes``, ``follows`` need a node of the same file matching their sub-rule
  (``stopBy`` and ``field`` are not requirements); ``matches`` follows the rule's own utils.
- ``not``, ``kind``, ``regex``, ``nthChild``, ``range``, constraints and transforms require
  nothing here (they only narrow or are not literal).

A rule that does not compile requires nothing, so its error surfaces as before.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from ast_grep_py import SgNode, SgRoot

if TYPE_CHECKING:
    from oopav.sandbox.astgrep import Rule

# True: no requirement; str: that text; ("all" | "any", parts).
Need = Literal[True] | str | tuple[str, tuple[Any, ...]]  # True: no requirement

# ast-grep's expando character per language (crates/language/src/lib.rs,
# ``impl_lang_expando!``): ``$`` in a pattern becomes it before parsing, for grammars where
# ``$`` is not an identifier character. Languages not listed here get no filter.
EXPANDO: dict[str, str] = {
    "python": "µ",
    "rust": "µ",
    "go": "µ",
    "ruby": "µ",
    "kotlin": "µ",
    "csharp": "µ",
    "php": "µ",
    "swift": "µ",
    "c": "𐀀",
    "cpp": "𐀀",
    "javascript": "$",
    "typescript": "$",
    "tsx": "$",
    "java": "$",
    "scala": "$",
    "lua": "$",
    "bash": "$",
}
# Wider than ast-grep's metavariable names (upper case, digits, ``_``): taking a node for a
# metavariable that is not one only drops literals.
_WORD = re.compile(r"[A-Za-z0-9_]*")
_RELATIONS = ("has", "inside", "precedes", "follows")
# Checking a literal scans the file; a few long ones select as well as all of them.
_MAX_LITERALS = 4


def pre_process(pattern: str, expando: str) -> str:
    """ast-grep's ``pre_process_pattern``: ``$`` before an upper-case letter or ``_``, and
    ``$$$``, become the expando character."""
    out: list[str] = []
    dollars = 0
    for c in pattern:
        if c == "$":
            dollars += 1
            continue
        sigil = expando if ("A" <= c <= "Z" or c == "_" or dollars == 3) else "$"
        out.append(sigil * dollars)
        dollars = 0
        out.append(c)
    out.append((expando if dollars == 3 else "$") * dollars)
    return "".join(out)


def pattern_literals(pattern: str, language: str) -> list[str] | None:
    """Texts every match of ``pattern`` contains, or None when nothing can be said."""
    expando = EXPANDO.get(language)
    if expando is None:
        return None
    try:
        root = SgRoot(pre_process(pattern, expando), language).root()
    except Exception:
        return None
    sigils = {"$", expando}
    found: list[str] = []

    def walk(node: SgNode) -> bool:
        text = node.text()
        if text[:1] in sigils and _WORD.fullmatch(text.lstrip("".join(sigils))):
            return True  # a metavariable (or looks like one): it stands for any text
        kind = node.kind()
        if kind == "ERROR":
            return False
        children = node.children()
        if children:
            return all(walk(c) for c in children)
        # Extras (comments, line continuations) may be skipped by the matcher: only named
        # leaves with a letter or digit, outside comments, count.
        if (
            node.is_named()
            and "comment" not in kind
            and any(ch.isalnum() for ch in text)
            and not sigils & set(text)
        ):
            found.append(text)
        return True

    # ast-grep matches the innermost node that is the pattern's only child (a second child
    # that is empty is ignored); descending at least as far never adds a literal.
    node = root
    while True:
        children = node.children()
        if len(children) == 1 or (
            len(children) == 2 and (children[1].kind() == "" or children[1].text() == "")
        ):
            node = children[0]
        else:
            break
    if not walk(node) or any(c.kind() == "ERROR" for c in _all_nodes(root)):
        return None
    unique = sorted(set(found), key=lambda t: (-len(t), t))
    return unique[:_MAX_LITERALS]


def _all_nodes(node: SgNode) -> list[SgNode]:
    out = [node]
    for c in node.children():
        out += _all_nodes(c)
    return out


def _and(parts: list[Need]) -> Need:
    kept = [p for p in parts if p is not True]
    if not kept:
        return True
    return kept[0] if len(kept) == 1 else ("all", tuple(kept))


def _rule_need(rule: Any, language: str, utils: dict[str, Any], seen: frozenset[str]) -> Need:
    if not isinstance(rule, dict):
        return True
    parts: list[Need] = []
    for key, value in rule.items():
        if key == "pattern" and isinstance(value, str):
            lits = pattern_literals(value, language)
            parts.extend(lits or ())
        elif key in _RELATIONS and isinstance(value, dict):
            sub = {k: v for k, v in value.items() if k not in ("stopBy", "field")}
            parts.append(_rule_need(sub, language, utils, seen))
        elif key == "all" and isinstance(value, list):
            parts.extend(_rule_need(v, language, utils, seen) for v in value)
        elif key == "any" and isinstance(value, list) and value:
            alts = [_rule_need(v, language, utils, seen) for v in value]
            if all(a is not True for a in alts):
                parts.append(alts[0] if len(alts) == 1 else ("any", tuple(alts)))
        elif key == "matches" and isinstance(value, str) and value in utils:
            if value not in seen:
                parts.append(_rule_need(utils[value], language, utils, seen | {value}))
    return _and(parts)


def required_text(rule: Rule) -> Need:
    """The requirement of a rule on a file's text (True: none)."""
    try:
        SgRoot("", rule.language).root().find_all(rule.config())
    except Exception:
        return True
    return _rule_need(rule.rule, rule.language, rule.utils or {}, frozenset())


def may_match(need: Need, text: str) -> bool:
    """False only when ``text`` lacks what every match needs."""
    if need is True:
        return True
    if isinstance(need, str):
        return need in text
    op, parts = need
    if op == "all":
        return all(may_match(p, text) for p in parts)
    return any(may_match(p, text) for p in parts)
