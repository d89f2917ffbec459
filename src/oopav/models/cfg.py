"""A small context-free grammar IR and its two renderings, GBNF (llama.cpp, vLLM, xgrammar) and
Lark (``Lark(text, parser="earley", lexer="dynamic")``). :mod:`oopav.models.schema_grammar`
builds the IR from a JSON schema; nothing here knows about JSON.

Both renderings are one language: token rules (``Grammar.tokens``) become Lark terminals, one
regular expression each, and stay rules in GBNF; :class:`Avoid` ("any text without this
string") becomes a lookahead in the regex and a small automaton of rules in GBNF.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

# --- the IR --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lit:
    text: str


@dataclass(frozen=True, slots=True)
class Chars:
    """One character of ``ranges`` (inclusive code point pairs), or of anything else when
    ``negate``."""

    ranges: tuple[tuple[int, int], ...]
    negate: bool = False


@dataclass(frozen=True, slots=True)
class Ref:
    name: str


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Rep:
    item: Node
    lo: int
    hi: int | None


@dataclass(frozen=True, slots=True)
class Avoid:
    """One or more characters of any kind, never containing ``text`` (a rule body on its own)."""

    text: str


Node = Lit | Chars | Ref | Seq | Alt | Rep | Avoid

EMPTY = Seq(())


class GrammarError(ValueError):
    """The schema uses something a context-free grammar here cannot express."""


def seq(*items: Node) -> Node:
    flat: list[Node] = []
    for it in items:
        if isinstance(it, Seq):
            flat.extend(it.items)
        else:
            flat.append(it)
    merged: list[Node] = []
    for it in flat:  # adjacent literals read better as one
        if isinstance(it, Lit) and merged and isinstance(merged[-1], Lit):
            merged[-1] = Lit(merged[-1].text + it.text)
        elif not (isinstance(it, Lit) and not it.text):
            merged.append(it)
    return merged[0] if len(merged) == 1 else Seq(tuple(merged))


def alt(*items: Node) -> Node:
    """Alternatives; an empty one becomes an optional group, duplicates are dropped."""
    out: list[Node] = []
    nullable = False
    for it in items:
        if it == EMPTY or it == Lit(""):
            nullable = True
        elif it not in out:
            out.append(it)
    if not out:
        return EMPTY
    body = out[0] if len(out) == 1 else Alt(tuple(out))
    return opt(body) if nullable else body


def opt(item: Node) -> Node:
    return Rep(item, 0, 1)


def rep(item: Node, lo: int, hi: int | None) -> Node:
    if hi == 0:
        return EMPTY
    return item if lo == hi == 1 else Rep(item, lo, hi)


@dataclass
class Grammar:
    """Named rules, ``root`` first."""

    rules: dict[str, Node] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)
    header: str = ""
    # Lexical rules (strings, numbers, whitespace, the think text): Lark terminals, each with
    # a guard appended to its regex (see _NUMBER_GUARD).
    tokens: dict[str, str] = field(default_factory=dict)

    def gbnf(self) -> str:
        return _GBNF(self).render()

    def lark(self) -> str:
        return _Lark(self).render()

    def max_bytes(self, name: str = "root") -> int | None:
        """The longest answer the grammar admits, in UTF-8 bytes (a bound on the tokens a
        byte-level tokenizer needs), or ``None`` when unbounded."""
        memo: dict[str, int | None] = {}
        visiting: set[str] = set()

        def node(n: Node) -> int | None:
            if isinstance(n, Lit):
                return len(n.text.encode())
            if isinstance(n, Chars):
                return 4 if n.negate else max(len(chr(hi).encode()) for _, hi in n.ranges)
            if isinstance(n, Ref):
                return rule(n.name)
            if isinstance(n, Avoid):
                return None
            if isinstance(n, Rep):
                one = node(n.item)
                if n.hi is None:
                    return 0 if one == 0 else None
                return None if one is None else one * n.hi
            parts = [node(i) for i in n.items]
            sizes = [p for p in parts if p is not None]
            if len(sizes) < len(parts):
                return None
            return sum(sizes) if isinstance(n, Seq) else max(sizes)

        def rule(name: str) -> int | None:
            if name in memo:
                return memo[name]
            if name in visiting:
                return None  # recursion: unbounded
            visiting.add(name)
            memo[name] = node(self.rules[name])
            visiting.discard(name)
            return memo[name]

        return rule(name)

    def min_bytes(self, name: str = "root") -> int:
        """The shortest answer the grammar admits, in UTF-8 bytes: what a decoder must still
        spend, at most, to close an answer from its start (a bound on a closing reserve)."""
        memo: dict[str, int] = {}
        visiting: set[str] = set()
        big = 1 << 40

        def node(n: Node) -> int:
            if isinstance(n, Lit):
                return len(n.text.encode())
            if isinstance(n, Chars | Avoid):
                return 1
            if isinstance(n, Ref):
                return rule(n.name)
            if isinstance(n, Rep):
                return 0 if n.lo == 0 else node(n.item) * n.lo
            parts = [node(i) for i in n.items]
            if not parts:
                return 0
            return sum(parts) if isinstance(n, Seq) else min(parts)

        def rule(name: str) -> int:
            if name in memo:
                return memo[name]
            if name in visiting:
                return big  # a recursive path is never the shortest one
            visiting.add(name)
            memo[name] = min(big, node(self.rules[name]))
            visiting.discard(name)
            return memo[name]

        return rule(name)


# --- renderers -----------------------------------------------------------------------------


def _kmp_states(text: str) -> list[dict[str, int]]:
    """For each matched-prefix length of ``text``, where each character of ``text`` leads (a
    character not in ``text`` leads back to 0)."""
    out = []
    for i in range(len(text)):
        row = {}
        for c in sorted(set(text)):
            s = text[:i] + c
            k = min(len(s), len(text))
            while k and not s.endswith(text[:k]):
                k -= 1
            row[c] = k
        out.append(row)
    return out


class _GBNF:
    def __init__(self, g: Grammar) -> None:
        self.g = g

    def render(self) -> str:
        lines = [f"# {self.g.header}"] if self.g.header else []
        for name, body in self.g.rules.items():
            if name in self.g.comments:
                lines.append(f"# {name}: {self.g.comments[name]}")
            if isinstance(body, Avoid):
                lines += self.avoid(name, body.text)
            else:
                lines.append(f"{name} ::= {self.node(body, top=True)}")
        return "\n".join(lines) + "\n"

    def avoid(self, name: str, text: str) -> list[str]:
        states = _kmp_states(text)

        def moves(i: int) -> list[str]:
            out = []
            by_target: dict[int, list[str]] = {}
            for c, k in states[i].items():
                by_target.setdefault(k, []).append(c)
            for k, cs in sorted(by_target.items()):
                if k == len(text) or k == 0:
                    continue
                out.append(f"{self.node(Chars(tuple((ord(c), ord(c)) for c in cs)))} {name}-{k}")
            # everything that neither advances nor restarts the match falls back to state 0
            keep = [c for c, k in states[i].items() if k != 0]
            out.append(
                f"{self.node(Chars(tuple((ord(c), ord(c)) for c in keep), negate=True))} {name}-0"
            )
            return out

        lines = [f"{name} ::= " + " | ".join(moves(0))]
        for i in range(len(text)):
            lines.append(f"{name}-{i} ::= " + " | ".join(['""', *moves(i)]))
        return lines

    def node(self, n: Node, top: bool = False) -> str:
        if isinstance(n, Lit):
            return _quote(n.text)
        if isinstance(n, Chars):
            if not n.negate and len(n.ranges) == 1 and n.ranges[0][0] == n.ranges[0][1]:
                return _quote(chr(n.ranges[0][0]))
            return _char_class(n)
        if isinstance(n, Ref):
            return n.name
        if isinstance(n, Seq):
            if not n.items:
                return '""'
            return " ".join(self.atom(i) for i in n.items)
        if isinstance(n, Alt):
            body = " | ".join(self.node(i) for i in n.items)
            return body if top else f"( {body} )"
        if isinstance(n, Rep):
            return self.atom(n.item) + _suffix(n.lo, n.hi)
        raise GrammarError("Avoid is a rule body of its own")

    def atom(self, n: Node) -> str:
        if isinstance(n, Seq) and len(n.items) > 1:
            return f"( {self.node(n)} )"
        return self.node(n)


def _suffix(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, 1):
        return "?"
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if hi is None:
        return f"{{{lo},}}"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


_GBNF_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quote(text: str) -> str:
    out = []
    for c in text:
        if c in _GBNF_ESC:
            out.append(_GBNF_ESC[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04X}")  # never \xHH: xgrammar reads every hex digit after it
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _class_char(cp: int, regex: bool) -> str:
    c = chr(cp)
    if regex:
        # Lark turns \xHH into the raw character before the regex engine sees it, so the
        # characters special in a class get a backslash instead.
        if cp < 0x20 or cp == 0x7F:
            return f"\\x{cp:02X}"
        return "\\" + c if c in "[]^-\\/" else c
    if c in "\\[]\t\n\r":
        return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(c, "\\" + c)
    if cp < 0x20 or cp == 0x7F or c in "^-":
        return f"\\u{cp:04X}"
    return c


def _char_class(n: Chars, *, regex: bool = False) -> str:
    parts = []
    for lo, hi in n.ranges:
        if lo == hi:
            parts.append(_class_char(lo, regex))
        else:
            parts.append(f"{_class_char(lo, regex)}-{_class_char(hi, regex)}")
    body = ("^" if n.negate else "") + "".join(parts)
    return f"[{body}]"


class _Lark:
    """Token rules (strings, numbers, whitespace, the think text) become terminals, one regular
    expression each; the structure (objects, arrays, the envelope) stays in rules."""

    def __init__(self, g: Grammar) -> None:
        self.g = g
        for name in g.tokens:
            if _nullable(g.rules[name], g):
                raise GrammarError(f"token {name!r} matches the empty string; Lark refuses that")

    def name(self, rule: str) -> str:
        if rule == "root":
            return "start"
        base = rule.replace("-", "_")
        return base.upper() if rule in self.g.tokens else base

    def render(self) -> str:
        lines = [f"// {self.g.header}"] if self.g.header else []
        lines.append('// Load with Lark(text, parser="earley", lexer="dynamic").')
        for rule, body in self.g.rules.items():
            if rule in self.g.comments:
                lines.append(f"// {rule}: {self.g.comments[rule]}")
            if rule in self.g.tokens:
                lines.append(f"{self.name(rule)}: /{self.regex(body)}{self.g.tokens[rule]}/")
            else:
                lines.append(f"{self.name(rule)}: {self.node(body, top=True)}")
        return "\n".join(lines) + "\n"

    def node(self, n: Node, top: bool = False) -> str:
        if isinstance(n, Lit):
            return json.dumps(n.text, ensure_ascii=False)
        if isinstance(n, Ref):
            return self.name(n.name)
        if isinstance(n, Seq):
            return " ".join(self.atom(i) for i in n.items) if n.items else ""
        if isinstance(n, Alt):
            body = " | ".join(self.node(i) for i in n.items)
            return body if top else f"({body})"
        if isinstance(n, Rep):
            item = self.atom(n.item)
            if (n.lo, n.hi) in ((0, 1), (0, None), (1, None)):
                return item + _suffix(n.lo, n.hi)
            if n.hi is None:
                return f"{item} ~ {n.lo} {item}*"
            if n.lo == 0:
                return f"[{item} ~ 1..{n.hi}]"
            return f"{item} ~ {n.lo}" if n.lo == n.hi else f"{item} ~ {n.lo}..{n.hi}"
        return f"/{self.regex(n)}/"  # a character class or an Avoid outside a token

    def atom(self, n: Node) -> str:
        if isinstance(n, Seq) and len(n.items) > 1:
            return f"({self.node(n)})"
        return self.node(n)

    def regex(self, n: Node) -> str:
        if isinstance(n, Lit):
            return re.escape(n.text).replace("/", "\\/")
        if isinstance(n, Chars):
            return _char_class(n, regex=True)
        if isinstance(n, Ref):
            return self.regex_atom(self.g.rules[n.name])
        if isinstance(n, Seq):
            return "".join(self.regex(i) for i in n.items)
        if isinstance(n, Alt):
            return "(?:" + "|".join(self.regex(i) for i in n.items) + ")"
        if isinstance(n, Rep):
            return self.regex_atom(n.item) + _suffix(n.lo, n.hi)
        text = re.escape(n.text).replace("/", "\\/")
        return f"(?:(?!{text})[\\s\\S])+"

    def regex_atom(self, n: Node) -> str:
        """``n`` as one unit a quantifier can follow."""
        body = self.regex(n)
        single = isinstance(n, Chars) or (isinstance(n, Lit) and len(n.text) == 1)
        return body if single or isinstance(n, Alt) else f"(?:{body})"


def _nullable(n: Node, g: Grammar, seen: frozenset[str] = frozenset()) -> bool:
    if isinstance(n, Lit):
        return not n.text
    if isinstance(n, Chars | Avoid):
        return False
    if isinstance(n, Ref):
        return n.name not in seen and _nullable(g.rules[n.name], g, seen | {n.name})
    if isinstance(n, Seq):
        return all(_nullable(i, g, seen) for i in n.items)
    if isinstance(n, Alt):
        return any(_nullable(i, g, seen) for i in n.items)
    return n.lo == 0 or _nullable(n.item, g, seen)
