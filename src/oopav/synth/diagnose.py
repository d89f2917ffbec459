"""Why a learned rule matches nothing in a repository, in terms a user can act on (issue 26).

A rule learned from an example such as ``def base64_decode(string):`` cannot match the real
``def base64_decode(string: str | bytes) -> bytes:``; applying it only says "matches nothing".
:func:`near_matches` names the nodes of the same kind that share the most names with the rule
(``path:line``) and, where one exists, a generalisation of the rule that matches the nearest of
them (each bracketed list opened up to ``$$$``; then the kind with the name alone).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from ast_grep_py import SgRoot

_META = re.compile(r"\$+[A-Z_][A-Z0-9_]*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NODES = 20000  # nodes looked at over all files: a bounded search on a big repository


@dataclass
class Near:
    path: str
    line: int  # 1-based
    text: str  # the node's first line
    score: float


def _pattern_of(rule: dict[str, Any]) -> tuple[str | None, str | None]:
    """(pattern text, selector kind) of a rule made by the synthesiser."""
    p = rule.get("pattern")
    if isinstance(p, dict):
        return p.get("context"), p.get("selector")
    return (p if isinstance(p, str) else None), None


def _kind_of(pattern: str, language: str) -> str | None:
    root = SgRoot(pattern, language).root()
    node = root
    while True:
        named = [c for c in node.children() if c.is_named()]
        if len(named) != 1:
            return node.kind() if node is not root else None
        node = named[0]
        if node.kind() not in ("expression_statement", "source_file", "program", "module"):
            return node.kind()


def near_matches(
    rule: dict[str, Any], language: str, files: list[tuple[str, str]], limit: int = 3
) -> tuple[list[Near], dict[str, Any] | None]:
    """The ``limit`` nodes nearest to what ``rule`` looks for in ``files`` ((path, text)
    pairs), best first, and a generalised rule that matches the nearest one (or None)."""
    regex = rule.get("regex")
    if isinstance(regex, str) and "pattern" not in rule:
        return _near_names(regex, files, limit), None
    pattern, selector = _pattern_of(rule)
    if not pattern:
        return [], None
    kind = selector or _kind_of(pattern, language)
    if not kind:
        return [], None
    words = set(_WORD.findall(_META.sub(" ", pattern)))
    if not words:
        return [], None
    scored: list[tuple[float, int, Near, Any]] = []
    seen = 0
    for path, text in files:
        if not any(w in text for w in words):
            continue
        try:
            nodes = SgRoot(text, language).root().find_all(kind=kind)
        except Exception:
            return [], None
        for node in nodes:
            seen += 1
            if seen > MAX_NODES:
                break
            body = node.text()
            shared = words & set(_WORD.findall(body[:2000]))
            if not shared:
                continue
            score = len(shared) / len(words)
            near = Near(path, node.range().start.line + 1, body.split("\n", 1)[0][:120], score)
            scored.append((-score, abs(len(body) - len(pattern)), near, node))
    scored.sort(key=lambda t: (t[0], t[1], t[2].path, t[2].line))
    best = [t[2] for t in scored[:limit]]
    general = _generalise(pattern, selector, kind, scored[0][3]) if scored else None
    return best, general


def _generalise(pattern: str, selector: str | None, kind: str, node: Any) -> dict[str, Any] | None:
    """A wider rule that matches ``node``: bracketed lists opened up, then kind + name."""
    tries: list[dict[str, Any]] = []
    opened = _open_brackets(pattern)
    if opened != pattern:
        tries.append(
            {"pattern": {"context": opened, "selector": selector}}
            if selector
            else {"pattern": opened}
        )
    name = node.field("name")
    if name is not None:
        tries.append(
            {"kind": kind, "has": {"field": "name", "regex": f"^{re.escape(name.text())}$"}}
        )
    for rule in tries:
        try:
            if node.matches(**rule):
                return rule
        except Exception:
            continue
    return None


def _open_brackets(pattern: str) -> str:
    """Each first-line ``(...)`` / ``[...]`` / ``<...>`` content replaced by ``$$$Gn``; a
    trailing ``-> type`` or ``: type`` annotation on the first line is left to the match."""
    first, sep, rest = pattern.partition("\n")
    n = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal n
        n += 1
        return f"{m.group(1)}$$$G{n}{m.group(3)}"

    first = re.sub(r"([(\[<])([^()\[\]<>]*)([)\]>])", repl, first)
    return first + sep + rest


def _near_names(regex: str, files: list[tuple[str, str]], limit: int) -> list[Near]:
    name = regex.strip("^$").replace("\\", "")
    counts: dict[str, tuple[str, int]] = {}
    for path, text in files:
        for m in _WORD.finditer(text):
            w = m.group(0)
            if w not in counts:
                counts[w] = (path, text.count("\n", 0, m.start()) + 1)
    close = difflib.get_close_matches(name, list(counts), n=limit, cutoff=0.6)
    return [Near(counts[w][0], counts[w][1], w, 0.0) for w in close]


def explain(rule: dict[str, Any], language: str, files: list[tuple[str, str]], where: str) -> str:
    """One paragraph: the rule matches nothing in ``where``; nearest …; a rule that would."""
    near, general = near_matches(rule, language, files)
    msg = f"the rule learned from your example matches nothing in {where}"
    if near:
        msg += "; nearest: " + "; ".join(f"{n.path}:{n.line} {n.text.strip()}" for n in near)
    if general is not None:
        msg += f"; a generalisation that matches the nearest: {general}"
    elif near:
        msg += "; give an example taken from one of these"
    return msg


def nearest_note(rule: dict[str, Any], language: str, files: list[tuple[str, str]]) -> str:
    """``"; nearest: path:line …"`` for a rejection message, or "" (never raises: it only
    adds to a message)."""
    try:
        near, general = near_matches(rule, language, files)
    except Exception:
        return ""
    if not near:
        return ""
    note = "; nearest: " + "; ".join(f"{n.path}:{n.line} {n.text.strip()}" for n in near)
    if general is not None:
        note += f"; a rule that matches the nearest: {general}"
    return note
