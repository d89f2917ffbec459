"""A compound statement's header edited in place (issue 26, wave 3u).

A change confined to the header of a Python compound statement — ``except:`` ->
``except Exception:``, ``async def`` -> ``def``, ``else:`` -> ``else:  # …`` — is learned at
the smallest node that is one node on both sides: the whole clause with its body. Its rule
writes the clause anew, the body as ``$$$A`` on the lines after the header::

    pattern: "except:\\n    $$$A"
    fix: "except Exception:\\n    $$$A"

Two things go wrong with that on code the examples do not show. A comment on the header line
(``except:  # retry``) is the first node ``$$$A`` takes: the fix moves it to a line of its own
and the body, re-indented from the comment's line, one level too deep. And a clause nested in
another one's body (``except:`` inside an ``except:``) is a second match inside the first:
ast-grep skips a match that overlaps one it rewrote, so one of the two stays (the rule keeps to
the outer or, with the layout guard of ``precision.nested_guard``, the inner).

Where the header is literal in the pattern and the fix (no metavariable in it) and the body is
the same ``$$$A`` on both sides, the rule is rewritten to edit the header's text only: the
whole node is bound (``pattern: $HEADER_NODE``) and a ``replace`` transform rewrites the header
at its start, leaving every other character of the node as it was — the comment, the body's
layout. Where the rule says nothing but the header (its kind, the layout it was kept to, the
nested guard, the ``ast`` twin), every nested clause with the same header is one of its matches
too, and the transform rewrites them in the same pass: the header at the start of any line of
the node (``(?m)^``). A rule with any other condition (a discriminating context) rewrites its
own node's header only and keeps its nested guard. Kept only where the rule set still
reproduces every example.
"""

from __future__ import annotations

import re
from typing import Any

NODE = "HEADER_NODE"
NEW = "HEADER_NEW"

# pattern / fix: a literal header ending with ':' then the body as one list metavariable on
# the lines below.
_SHAPE = re.compile(r"^(?P<head>[^\n$]*\S:)\n(?P<indent>[ \t]+)\$\$\$(?P<var>[A-Z][A-Z0-9_]*)$")

# Conditions that say nothing but the header (their removal or presence does not narrow
# which clauses of that header match): the rule's own pattern and kind, a layout regex of
# whitespace only, the nested guard, the ast twin of the pattern.
_PLAIN_KEYS = {"pattern", "kind", "regex", "not", "all"}


_NO_LONG_STRING = {"not": {"has": {"kind": "string", "regex": "\n", "stopBy": "end"}}}


def _shape(text: Any) -> tuple[str, str, str] | None:
    if isinstance(text, dict):
        text = text.get("context")
    if not isinstance(text, str):
        return None
    m = _SHAPE.match(text)
    if m is None:
        return None
    return m.group("head"), m.group("indent"), m.group("var")


def _layout_only(regex: Any) -> bool:
    return isinstance(regex, str) and not re.sub(r"\\[nt]|[ \t\n]", "", regex)


def _nested_guard(cond: Any, kind: str | None) -> bool:
    if not isinstance(cond, dict) or set(cond) != {"has"}:
        return False
    has = cond["has"]
    return (
        isinstance(has, dict)
        and set(has) == {"kind", "regex", "stopBy"}
        and (kind is None or has["kind"] == kind)
        and has["stopBy"] == "end"
        and _layout_only(has["regex"])
    )


def _twin(cond: Any, pattern: Any) -> bool:
    if not isinstance(cond, dict) or set(cond) != {"pattern"}:
        return False
    p = cond["pattern"]
    text = pattern.get("context") if isinstance(pattern, dict) else pattern
    return isinstance(p, dict) and p.get("strictness") == "ast" and p.get("context") == text


def _header_regex(head: str) -> str:
    """``head`` as a regex: its tokens literal, a run of blanks between them any run."""
    return r"[ \t]+".join(re.escape(part) for part in head.split())


def in_place(
    rule: dict[str, Any], fix: str, lang: str
) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """(rule, transform, fix) editing the header of ``rule``'s matches in place, or None when
    the rule is no whole-clause rewrite of a literal header (see the module doc)."""
    if lang != "python":
        return None
    before, after = _shape(rule.get("pattern")), _shape(fix)
    if before is None or after is None:
        return None
    head, _indent, var = before
    head2, _indent2, var2 = after
    if var != var2 or head == head2 or NODE in str(rule) or NEW in str(rule):
        return None
    kind = rule.get("kind")
    plain = set(rule) <= _PLAIN_KEYS
    if "regex" in rule and not _layout_only(rule["regex"]):
        plain = False
    if "not" in rule and not _nested_guard(rule["not"], kind):
        plain = False
    if any(not _twin(c, rule["pattern"]) for c in rule.get("all", [])):
        plain = False
    new = dict(rule)
    if plain:
        # The header alone decides: the layout kept and the nested clauses are no concern
        # of a rewrite that leaves everything but the headers as it was.
        new.pop("regex", None)
        new.pop("not", None)
        where = r"(?m)^([ \t]*)"
    else:
        where = r"^()"
    # A string of several lines in the node: its text could hold a line that reads as the
    # header, and ast-grep re-indents a multi-line fix, shifting the string's lines that sit
    # left of the node's column. Such a node is left alone.
    new["all"] = [*rule.get("all", []), {"pattern": "$" + NODE}, _NO_LONG_STRING]
    by = "${1}" + head2.replace("$", "$$")
    transform = {
        NEW: {"replace": {"source": "$" + NODE, "replace": where + _header_regex(head), "by": by}}
    }
    return new, transform, "$" + NEW
