"""Arguments moved into their format string (wave 3r).

Real commits inline a format call's arguments into its placeholders: Rust's
``panic!("unexpected: {:?}", other)`` -> ``panic!("unexpected: {other:?}")`` (clippy's
``uninlined_format_args``), Python's ``"{} [{}]".format(a, b)`` -> ``f"{a} [{b}]"`` (pyupgrade).
Learned literally, each example's string was a rule of its own and reached no other string
(reqwest 05c3982e24: five held-out `panic!("unexpected {:?}", other)`, none rewritten).

The general rule keeps the string as ``$STR1`` (constrained to strings with the examples'
number of bare placeholders, ``{}`` or ``{:spec}`` / ``{!r}``) and each argument as ``$IA1``…
(identifiers, as Rust requires), and splits the string at its placeholders with ast-grep
``replace`` transforms (``$IP0`` up to and with the first ``{``, ``$IP1`` from there up to
and with the next, …) so the fix can put each argument right after its ``{``:
``panic!($IP0$IA1$IP1)``. Plain ast-grep: the CLI applies it alike.

Wave 3s: Python's ``%`` formatting the same way (flynt, ruff UP031 then UP032):
``"%s [%r]" % (a, b)`` -> ``f"{a} [{b!r}]"``, ``"%s" % a`` -> ``f"{a}"``. The string is split
around its ``%`` placeholders (``$IP0`` up to the first, ``$IP1`` between, …) and each
placeholder becomes ``{`` + argument + the conversion the example gave that placeholder
(``%r`` -> ``!r``, ``%.2f`` -> ``:.2f``); only strings with the examples' placeholders in
the examples' order match, never one with ``%%`` or a brace (an f-string would need them
written otherwise).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from oopav.synth.abstract import Template

# A string literal with an optional prefix (Python's f, b, r, u).
_STRING = re.compile(r"""(?<![\w$])([fFbBrRuU]{0,2})(["'])(?:\\.|(?!\2)[^\\\n])*\2""")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# Python's f-strings take a name or an attribute chain (`{self.x}`) where `.format` took it.
_DOTTED = _IDENT + r"(?:\." + _IDENT + ")*"
_SPEC = r"(?:[:!][^{}\"'\n]*)?"
_PLACEHOLDER = re.compile(r"\{" + _SPEC + r"\}")
# Languages whose format strings take ``{}`` placeholders that an argument's name can fill.
LANGS = frozenset({"rust", "python"})
MAX_ARGS = 3


def _lit(q: str) -> str:
    """One literal character of a string between ``q`` quotes: an escape, a doubled brace,
    anything but a brace, a backslash, the quote or a newline."""
    return r"(?:\\.|\{\{|\}\}|[^{}\\\n" + re.escape(q) + "])"


def _split(body: str) -> list[str] | None:
    """``body`` (between the quotes) as literal, placeholder, literal, …: None when a brace
    is neither doubled nor a bare placeholder (``{0}``, ``{name}`` name their argument)."""
    return _scan(body, "{", _PLACEHOLDER, doubled=("{{", "}}"), stray="}")


def _scan(
    body: str, opener: str, placeholder: re.Pattern[str], doubled: tuple[str, ...], stray: str
) -> list[str] | None:
    """``body`` split at its placeholders (``opener`` starts one, ``placeholder`` matches it
    whole): literal, placeholder, literal, …; escapes and ``doubled`` pairs are literal text.
    None at an ``opener`` that starts no placeholder or at a ``stray`` character."""
    out: list[str] = []
    i, last = 0, 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if any(body.startswith(d, i) for d in doubled):
            i += 2
            continue
        if c in stray:
            return None
        if c == opener:
            m = placeholder.match(body, i)
            if m is None:
                return None
            out += [body[last:i], m.group(0)]
            i = last = m.end()
            continue
        i += 1
    out.append(body[last:])
    return out


def inline_args(
    t: Template, kind: str, lang: str
) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(pattern, fix, constraints, transform) candidates when ``t`` moves its format call's
    arguments into the string's placeholders, in order, most general first; none otherwise.
    ``kind``: the string's node kind."""
    if lang not in LANGS:
        return []
    ps, fs = list(_STRING.finditer(t.pattern)), list(_STRING.finditer(t.fix))
    if not ps or len(ps) != len(fs):
        return []
    changed = [(p, f) for p, f in zip(ps, fs, strict=True) if p.group(0) != f.group(0)]
    if len(changed) != 1:
        return []
    p, f = changed[0]
    q = p.group(2)
    if p.group(1) or f.group(2) != q:
        return []
    python = lang == "python"
    if f.group(1) != ("f" if python else ""):
        return []
    body_a = p.group(0)[1:-1]
    body_b = f.group(0)[len(f.group(1)) + 1 : -1]
    percent = python and re.match(r"\s*%", t.pattern[p.end() :]) is not None
    pieces = _split_percent(body_a) if percent else _split(body_a)
    if pieces is None or not 1 <= len(pieces) // 2 <= MAX_ARGS:
        return []
    if percent:
        p0, f0 = t.pattern[: p.start()], t.fix[: f.start()]
        if p0 != f0:
            return []
        return _percent(q, pieces, body_b, p0, t.pattern[p.end() :], t.fix[f.end() :], kind)
    n = len(pieces) // 2
    # The new body: each placeholder with a name right after its `{`.
    name = _DOTTED if python else _IDENT
    want = "".join(
        re.escape(x) if k % 2 == 0 else r"\{(" + name + ")" + re.escape(x[1:])
        for k, x in enumerate(pieces)
    )
    mb = re.fullmatch(want, body_b)
    if mb is None:
        return []
    names = list(mb.groups())
    p0, p1 = t.pattern[: p.start()], t.pattern[p.end() :]
    f0, f1 = t.fix[: f.start()], t.fix[f.end() :]
    if p0 != f0:
        return []
    if python:
        args = (
            r"\.format\(\s*" + r"\s*,\s*".join(re.escape(w) + r"\b" for w in names) + r"\s*,?\s*\)"
        )
    else:
        args = "".join(r"\s*,\s*" + re.escape(w) + r"\b" for w in names) + r"(?:\s*,(?=\s*\)))?"
    ma = re.match(args, p1)
    if ma is None or p1[ma.end() :] != f1:
        return []
    metas = [f"$IA{k + 1}" for k in range(n)]
    call = (".format(" + ", ".join(metas) + ")") if python else "".join(", " + m for m in metas)
    lit = _lit(q)
    groups = [re.escape(q) + lit + r"*\{"]
    groups += [_SPEC + r"\}" + lit + r"*\{" for _ in range(n - 1)]
    groups.append(_SPEC + r"\}" + lit + "*" + re.escape(q))
    full = "^" + "".join(f"({g})" for g in groups) + "$"
    transform = {
        f"IP{k}": {"replace": {"source": "$STR1", "replace": full, "by": "${" + str(k + 1) + "}"}}
        for k in range(n + 1)
    }
    body = ("f" if python else "") + "".join(
        f"$IP{k}" + (metas[k] if k < n else "") for k in range(n + 1)
    )
    shape = (
        "^"
        + re.escape(q)
        + lit
        + "*"
        + (r"\{" + _SPEC + r"\}" + lit + "*") * n
        + re.escape(q)
        + "$"
    )
    cons: dict[str, Any] = {"STR1": {"kind": kind, "regex": shape}}
    # Rust inlines plain names only; an f-string takes an attribute chain as `.format` did.
    arg = (
        {"any": [{"kind": "identifier"}, {"kind": "attribute"}]}
        if python
        else {"kind": "identifier"}
    )
    for m in metas:
        cons[m[1:]] = arg
    out = [(p0 + "$STR1" + call + f1, f0 + body + f1, cons, transform)]
    if python and (p0 or f1):
        # The format call itself first: wherever it stands, not only in this statement.
        out.insert(0, ("$STR1" + call, body, cons, transform))
    return out


# A printf placeholder without a mapping key: flags, width, precision, conversion.
_PERCENT = re.compile(r"%[-#0 +]*(?:\d+)?(?:\.\d+)?[sradifeEgGxXoc]")


def _split_percent(body: str) -> list[str] | None:
    """``body`` as literal, ``%`` placeholder, literal, …: None when it holds ``%%``, a
    mapping key (``%(name)s``), a ``*`` width, or a brace (an f-string must double it)."""
    return _scan(body, "%", _PERCENT, doubled=(), stray="{}")


def _percent(
    q: str, pieces: list[str], body_b: str, p0: str, p1: str, f1: str, kind: str
) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """The ``%`` form of :func:`inline_args`: ``pieces`` from :func:`_split_percent`, the
    f-string's body ``body_b``, the pattern around the string (``p0``, ``p1``) and the fix
    after it (``f1``)."""
    n = len(pieces) // 2
    want = "".join(
        re.escape(x) if k % 2 == 0 else r"\{(" + _DOTTED + r")([!:][^{}]*)?\}"
        for k, x in enumerate(pieces)
    )
    mb = re.fullmatch(want, body_b)
    if mb is None:
        return []
    names = list(mb.groups()[0::2])
    convs = [c or "" for c in mb.groups()[1::2]]
    # The operand: a tuple of the names in order, or (one placeholder) the bare name.
    tup = r"\s*%\s*\(\s*" + r"\s*,\s*".join(re.escape(w) + r"\b" for w in names) + r"\s*,?\s*\)"
    ma = re.match(tup, p1)
    bare = False
    if ma is None and n == 1:
        ma = re.match(r"\s*%\s*" + re.escape(names[0]) + r"(?![\w.(\[])", p1)
        bare = ma is not None
    if ma is None or p1[ma.end() :] != f1:
        return []
    metas = [f"$IA{k + 1}" for k in range(n)]
    operand = metas[0] if bare else "(" + ", ".join(metas) + ("," if n == 1 else "") + ")"
    call = " % " + operand
    lit = r"(?:\\.|[^{}%\\\n" + re.escape(q) + "])"
    specs = [re.escape(x) for x in pieces[1::2]]
    groups = [re.escape(q) + lit + "*"] + [lit + "*" for _ in range(n - 1)]
    groups.append(lit + "*" + re.escape(q))
    full = "^" + "".join(f"({g})" + (specs[k] if k < n else "") for k, g in enumerate(groups)) + "$"
    transform = {
        f"IP{k}": {"replace": {"source": "$STR1", "replace": full, "by": "${" + str(k + 1) + "}"}}
        for k in range(n + 1)
    }
    body = "f" + "".join(
        f"$IP{k}" + ("{" + metas[k] + convs[k] + "}" if k < n else "") for k in range(n + 1)
    )
    shape = "^" + "".join(g + (specs[k] if k < n else "") for k, g in enumerate(groups)) + "$"
    cons: dict[str, Any] = {"STR1": {"kind": kind, "regex": shape}}
    for m in metas:
        cons[m[1:]] = {"any": [{"kind": "identifier"}, {"kind": "attribute"}]}
    out = [(p0 + "$STR1" + call + f1, p0 + body + f1, cons, transform)]
    if p0 or f1:
        out.insert(0, ("$STR1" + call, body, cons, transform))
    return out


# JavaScript/TypeScript concatenation turned into a template literal (wave 3s; ESLint's
# prefer-template): `'Hello ' + name + '!'` -> `` `Hello ${name}!` ``.
CONCAT_LANGS = frozenset({"javascript", "typescript", "tsx"})
_JS_EXPR = r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*"
_JS_PIECE = re.compile(r"""'(?:\\.|[^'\\`$\n])*'|"(?:\\.|[^"\\`$\n])*"|""" + _JS_EXPR)
# A string's body that a template literal holds as it is: escapes, no backtick, no `$`.
_SQ = r"(?:\\.|[^'\\`$\n])"
_DQ = r"""(?:\\.|[^"\\`$\n])"""
# What a concatenated value may be: a name, a member, a call, an index, a number, `this` or
# a parenthesised expression (`${(a + 1)}` reads as before). Never a string (that is
# joining strings) nor a bare operator: the chain's grouping would change its meaning.
_JS_VALUES = (
    "identifier",
    "member_expression",
    "call_expression",
    "subscript_expression",
    "number",
    "this",
    "parenthesized_expression",
)
MAX_PIECES = 7


def _concat_pieces(text: str) -> list[str] | None:
    """``text`` as its ``+``-separated pieces (strings and names), or None."""
    out: list[str] = []
    i = 0
    while True:
        m = _JS_PIECE.match(text, i)
        if m is None:
            return None
        out.append(m.group(0))
        i = m.end()
        plus = re.match(r"\s*\+\s*", text[i:])
        if plus is None:
            break
        i += plus.end()
    return out if i == len(text) and len(out) <= MAX_PIECES else None


def concat_template(
    before: str, after: str, lang: str
) -> tuple[dict[str, Any], str, dict[str, Any], dict[str, Any]] | None:
    """(rule, fix, constraints, transform) when the site ``before`` -> ``after`` turns a
    concatenation of strings and names into one template literal; None otherwise. The rule
    holds any concatenation of that shape (strings in either quotes, values that are names,
    members, calls or indexes), never one that is the left part of a longer one."""
    if lang not in CONCAT_LANGS or not (after.startswith("`") and after.endswith("`")):
        return None
    pieces = _concat_pieces(before)
    if pieces is None or len(pieces) < 2:
        return None
    strings = [p[0] in "'\"" for p in pieces]
    if all(strings) or not any(strings):
        return None
    if any(a and b for a, b in itertools.pairwise(strings)):
        return None  # two strings in a row: another change (joining them)
    body = "".join(p[1:-1] if s else "${" + p + "}" for p, s in zip(pieces, strings, strict=True))
    if after != "`" + body + "`":
        return None
    parts: list[str] = []
    fix = "`"
    cons: dict[str, Any] = {}
    transform: dict[str, Any] = {}
    shape = f"^(?:'({_SQ}*)'|\"({_DQ}*)\")$"
    for k, s in enumerate(strings, start=1):
        if s:
            parts.append(f"$STR{k}")
            fix += f"$IP{k}"
            cons[f"STR{k}"] = {"kind": "string", "regex": shape}
            transform[f"IP{k}"] = {
                "replace": {"source": f"$STR{k}", "replace": shape, "by": "${1}${2}"}
            }
        else:
            parts.append(f"$IA{k}")
            fix += "${" + f"$IA{k}" + "}"
            cons[f"IA{k}"] = {"any": [{"kind": v} for v in _JS_VALUES]}
    fix += "`"
    rule = {
        "pattern": " + ".join(parts),
        "kind": "binary_expression",
        "not": {"inside": {"kind": "binary_expression", "field": "left", "stopBy": "neighbor"}},
    }
    return rule, fix, cons, transform
