"""The prompt contract's answers as context-free grammars, GBNF (llama.cpp, vLLM, xgrammar) and
Lark, generated from the JSON schema of the role's payload: the schema msgspec derives from the
same structs the strict parser decodes with, so the grammars cannot drift from the parser.

:func:`answer_grammar` wraps the payload in the envelope that
:func:`oopav.models.prompt.parse_answer` reads (``<think>…</think><TAG>{json}</TAG>`` and, for the
actor and the planner, ``<state_update>{json}</state_update>``). The grammars are *sound* for the
parser — whatever they accept, the parser accepts (tested on a corpus) — and narrower only where a
decoder gains nothing: object keys appear at most once (in any order), whitespace runs are at most
``max_ws`` characters, ``\\u`` escapes are never lone surrogates, integers have at most 18
digits, bounded numbers have no exponent and at most 6 decimals, a bounded think text has no
``<``. ``compact`` is the decoding form: no whitespace inside JSON, one ``\\n`` between blocks
(what :func:`~oopav.models.prompt.render_answer` writes).

The schema goes through the grammar IR of :mod:`oopav.models.cfg`, rendered by
:meth:`Grammar.gbnf` and :meth:`Grammar.lark` (for ``Lark(text, parser="earley",
lexer="dynamic")``). Keywords a grammar cannot honour (``pattern``, ``format``, ``allOf``,
``not``, …) are refused, never ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from oopav.models.cfg import (
    EMPTY,
    Avoid,
    Chars,
    Grammar,
    GrammarError,
    Lit,
    Node,
    Ref,
    Rep,
    alt,
    opt,
    rep,
    seq,
)

# --- JSON schema -> IR ---------------------------------------------------------------------

# Annotations carry no constraint; msgspec's ``discriminator`` repeats what the enums say.
_IGNORED = frozenset(
    {"title", "description", "default", "examples", "$comment", "discriminator", "deprecated"}
)
_HANDLED = frozenset(
    {
        "$defs",
        "$ref",
        "type",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)
# Beyond this many properties the subset construction (any key order, each key once) is too
# large; such objects take their keys in schema order.
MAX_ANY_ORDER = 8
MAX_INT_DIGITS = 18  # < 2**63: every such integer decodes
MAX_DECIMALS = 6  # bounded numbers: no rounding across a bound
# Lark's dynamic lexer takes the first match of a terminal's regex, not the longest: "500" would
# lex as "5" under [1-9]|...|500. No digit ever follows a JSON number, so a lookahead that
# refuses one makes the regex engine backtrack to the whole number without changing the language.
_NUMBER_GUARD = "(?![0-9])"

_HEX = Chars(((48, 57), (65, 70), (97, 102)))
_DIGIT = Chars(((48, 57),))
_NONZERO = Chars(((49, 57),))


@dataclass(frozen=True)
class GrammarOptions:
    """``compact``: the decoding form. The bounds make a decoder's answer finite (even a random
    model's): ``think_chars`` caps the think text (then without ``<``), ``max_items`` every
    array, ``max_string_length`` every string whose schema sets no length — as runs of at most
    that many plain characters around at most ``max_escapes`` escapes (an exact character count
    would cost xgrammar ~30-50x more per token). ``max_ws``: the longest whitespace run."""

    compact: bool = False
    think_chars: int | None = None
    max_string_length: int | None = None
    max_items: int | None = None
    max_escapes: int = 16
    max_ws: int = 20
    # The actor's payload may be SEARCH/REPLACE text blocks (models/blocks.py) as well as JSON.
    # Off in the decoding form of small local policies (constrain.DECODING): they are trained
    # on JSON actions, and the closing phase of a token budget knows how to close JSON only.
    edit_blocks: bool = True


def _kebab(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name)
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"


class _Builder:
    def __init__(self, opts: GrammarOptions) -> None:
        self.opts = opts
        self.g = Grammar(rules={"root": EMPTY})  # root first; filled in last
        self.defs: dict[str, Any] = {}
        self.ws: Node = EMPTY if opts.compact else opt(self.rule("ws", self._ws(), token=True))
        self.comma: Node = (
            Lit(",") if opts.compact else self.rule("comma", seq(self.ws, Lit(","), self.ws))
        )

    def _ws(self) -> Node:
        return Rep(Chars(((9, 10), (13, 13), (32, 32))), 1, self.opts.max_ws)

    def rule(
        self, name: str, body: Node, comment: str = "", *, token: bool = False, guard: str = ""
    ) -> Ref:
        if name in self.g.rules and self.g.rules[name] != body:
            raise GrammarError(f"two different rules named {name!r}")
        self.g.rules[name] = body
        if comment:
            self.g.comments[name] = comment
        if token or guard:
            self.g.tokens[name] = guard
        return Ref(name)

    # -- values ---------------------------------------------------------------------------

    def document(self, schema: dict[str, Any], name: str) -> Ref:
        self.defs.update(schema.get("$defs", {}))
        body = self.value(schema, name, "#")
        return body if isinstance(body, Ref) else self.rule(name, body)

    def value(self, s: Any, name: str, path: str) -> Node:
        if s is True or s == {}:
            raise GrammarError(f"{path}: an unconstrained value ({{}} or true) is not supported")
        if not isinstance(s, dict):
            raise GrammarError(f"{path}: a schema must be an object, got {s!r}")
        unknown = set(s) - _HANDLED - _IGNORED
        if unknown:
            raise GrammarError(
                f"{path}: JSON schema keyword(s) {', '.join(sorted(unknown))} cannot be expressed "
                "by the grammar generator"
            )
        if "$ref" in s:
            ref = s["$ref"]
            if not ref.startswith("#/$defs/") or ref[8:] not in self.defs:
                raise GrammarError(f"{path}: unresolvable $ref {ref!r}")
            key = ref[8:]
            rname = _kebab(key)
            if rname not in self.g.rules:
                self.g.rules[rname] = EMPTY  # placeholder: recursion refers to it by name
                self.g.rules[rname] = self.value(self.defs[key], rname, ref)
            return Ref(rname)
        if "enum" in s or "const" in s:
            values = s["enum"] if "enum" in s else [s["const"]]
            return alt(*(Lit(self.dump(v)) for v in values))
        for key in ("anyOf", "oneOf"):
            if key in s:
                return alt(
                    *(
                        self.value(sub, f"{name}-{i}", f"{path}/{key}/{i}")
                        for i, sub in enumerate(s[key])
                    )
                )
        kind = s.get("type")
        if kind is None:
            raise GrammarError(f"{path}: a schema without type, enum, anyOf or $ref")
        if isinstance(kind, list):
            return alt(*(self.value({**s, "type": k}, name, path) for k in kind))
        if kind == "object":
            return self.object(s, name, path)
        if kind == "array":
            return self.array(s, name, path)
        if kind == "string":
            return self.string(s.get("minLength", 0), s.get("maxLength"))
        if kind == "integer":
            return self.integer(s, path)
        if kind == "number":
            return self.number(s, path)
        if kind == "boolean":
            return self.rule("boolean", alt(Lit("true"), Lit("false")), token=True)
        if kind == "null":
            return Lit("null")
        raise GrammarError(f"{path}: unknown type {kind!r}")

    def dump(self, v: Any) -> str:
        sep = (",", ":") if self.opts.compact else (", ", ": ")
        return json.dumps(v, ensure_ascii=False, separators=sep)

    def sep(self) -> Node:
        return self.comma

    def object(self, s: dict[str, Any], name: str, path: str) -> Node:
        props: dict[str, Any] = s.get("properties", {})
        required = set(s.get("required", ()))
        if missing := required - set(props):
            raise GrammarError(f"{path}: required but not described: {sorted(missing)}")
        if s.get("additionalProperties", False) not in (False, True):
            raise GrammarError(f"{path}: additionalProperties as a schema is not supported")
        keys = list(props)
        pairs = [
            self.rule(
                f"{name}-{_kebab(k)}-kv",
                seq(
                    Lit(json.dumps(k)),
                    self.ws,
                    Lit(":"),
                    self.ws,
                    self.value(v, f"{name}-{_kebab(k)}", f"{path}/properties/{k}"),
                ),
            )
            for k, v in props.items()
        ]
        open_, close = seq(Lit("{"), self.ws), seq(self.ws, Lit("}"))
        if not keys:
            return seq(open_, close)
        if len(keys) > MAX_ANY_ORDER:
            return seq(open_, self._ordered(keys, pairs, required), close)
        need = sum(1 << i for i, k in enumerate(keys) if k in required)

        def rest(mask: int) -> Ref:
            rname = f"{name}-rest-{mask}"
            if rname not in self.g.rules:
                self.g.rules[rname] = EMPTY
                done = mask & need == need
                self.g.rules[rname] = alt(
                    *[
                        seq(self.sep(), pairs[i], rest(mask | 1 << i))
                        for i in range(len(keys))
                        if not mask & 1 << i
                    ],
                    *([EMPTY] if done else []),
                )
            return Ref(rname)

        self.g.comments[name] = (
            f"{name}: its keys in any order, each at most once; {name}-rest-N follows the keys "
            f"whose bits are set in N (bit i: key i of {', '.join(keys)})"
        )
        first = [seq(pairs[i], rest(1 << i)) for i in range(len(keys))]
        if need == 0:
            first.append(EMPTY)
        return seq(open_, alt(*first), close)

    def _ordered(self, keys: list[str], pairs: list[Ref], required: set[str]) -> Node:
        # ``k1? (sep k2)? ...`` is wrong when k1 is absent (a leading comma); build it as the
        # alternatives "first present key is k_i" followed by the optional tail after it.
        def tail(i: int) -> Node:
            out: Node = EMPTY
            for j in range(len(keys) - 1, i, -1):
                step = seq(self.sep(), pairs[j])
                out = seq(step if keys[j] in required else opt(step), out)
            return out

        firsts: list[Node] = []
        for i, k in enumerate(keys):
            firsts.append(seq(pairs[i], tail(i)))
            if k in required:
                break
        else:
            firsts.append(EMPTY)
        return alt(*firsts)

    def array(self, s: dict[str, Any], name: str, path: str) -> Node:
        if "items" not in s:
            raise GrammarError(f"{path}: an array without items")
        lo = int(s.get("minItems", 0))
        hi = s.get("maxItems")
        if self.opts.max_items is not None:
            hi = max(lo, min(hi if hi is not None else self.opts.max_items, self.opts.max_items))
        item = self.value(s["items"], f"{name}-item", f"{path}/items")
        if not isinstance(item, Ref | Lit):
            item = self.rule(f"{name}-item", item)
        if hi == 0:
            body: Node = EMPTY
        else:
            more = rep(seq(self.sep(), item), max(lo - 1, 0), None if hi is None else hi - 1)
            body = seq(item, more) if lo else alt(seq(item, more), EMPTY)
        return seq(Lit("["), self.ws, body, self.ws, Lit("]"))

    def string(self, lo: int, hi: int | None) -> Ref:
        cap = self.opts.max_string_length
        quote = Lit('"')
        if (lo, hi) == (0, None):
            # Runs of plain characters between escapes: the language of char*, in a shape
            # xgrammar matches ~30x faster per token than a repeated alternative.
            if cap is None:
                run, name, escapes = Rep(_PLAIN, 0, None), "string", None
            else:
                escapes = self.opts.max_escapes
                run, name = Rep(_PLAIN, 0, cap), f"string-runs-{cap}-{escapes}"
            return self.rule(
                name, seq(quote, run, rep(seq(_escape(), run), 0, escapes), quote), token=True
            )
        # A length the schema sets is kept exactly, character by character.
        if cap is not None:
            hi = max(lo, min(hi if hi is not None else cap, cap))
        char = self.rule("char", _json_char(), "one character of a JSON string", token=True)
        name = f"string-{lo}-{hi if hi is not None else 'n'}"
        return self.rule(name, seq(quote, Rep(char, lo, hi), quote), token=True)

    def integer(self, s: dict[str, Any], path: str) -> Ref:
        lo, hi = _bounds(s, path)
        if lo is None:
            if hi is not None:
                raise GrammarError(f"{path}: an integer with a maximum but no minimum")
            body = seq(opt(Lit("-")), _uint_range(0, None))
            return self.rule("integer", body, guard=_NUMBER_GUARD)
        name = f"int-{lo}-{hi if hi is not None else 'n'}"
        return self.rule(name, _uint_range(lo, hi), guard=_NUMBER_GUARD)

    def number(self, s: dict[str, Any], path: str) -> Ref:
        if not {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} & s.keys():
            frac = seq(Lit("."), Rep(_DIGIT, 1, 16))
            exp = seq(
                Chars(((69, 69), (101, 101))), opt(Chars(((43, 43), (45, 45)))), Rep(_DIGIT, 1, 2)
            )
            body = seq(opt(Lit("-")), _uint_range(0, None), opt(frac), opt(exp))
            return self.rule("number", body, guard=_NUMBER_GUARD)
        return self.rule(*_number_range(s, path), guard=_NUMBER_GUARD)


def _bounds(s: dict[str, Any], path: str) -> tuple[int | None, int | None]:
    lo = s.get("minimum")
    hi = s.get("maximum")
    if "exclusiveMinimum" in s:
        lo = s["exclusiveMinimum"] + 1
    if "exclusiveMaximum" in s:
        hi = s["exclusiveMaximum"] - 1
    for v in (lo, hi):
        if v is not None and (v != int(v) or v < 0):
            raise GrammarError(f"{path}: only non-negative whole-number bounds are supported")
    return (None if lo is None else int(lo)), (None if hi is None else int(hi))


def _number_range(s: dict[str, Any], path: str) -> tuple[str, Node]:
    ex_lo = "exclusiveMinimum" in s
    ex_hi = "exclusiveMaximum" in s
    lo = s.get("exclusiveMinimum", s.get("minimum"))
    hi = s.get("exclusiveMaximum", s.get("maximum"))
    if lo is None:
        raise GrammarError(f"{path}: a number with a maximum but no minimum")
    for v in (lo, hi):
        if v is not None and (v != int(v) or v < 0):
            raise GrammarError(f"{path}: only non-negative whole-number bounds are supported")
    lo = int(lo)
    hi = None if hi is None else int(hi)
    frac = opt(seq(Lit("."), Rep(_DIGIT, 1, MAX_DECIMALS)))
    alts: list[Node] = []
    first = lo + 1 if ex_lo else lo
    last = None if hi is None else hi - 1
    if last is None or first <= last:
        alts.append(seq(_uint_range(first, last), frac))
    if ex_lo:  # lo itself only with a non-zero fraction
        alts.append(seq(Lit(f"{lo}."), Rep(_DIGIT, 0, MAX_DECIMALS - 1), _NONZERO))
    if hi is not None and not ex_hi and hi >= lo and not (ex_lo and hi == lo):
        alts.append(seq(Lit(str(hi)), opt(seq(Lit("."), Rep(Lit("0"), 1, MAX_DECIMALS)))))
    if not alts:
        raise GrammarError(f"{path}: an empty number range")
    name = f"num-{'x' if ex_lo else ''}{lo}-{'x' if ex_hi else ''}{hi if hi is not None else 'n'}"
    return name, alt(*alts)


def _uint_range(lo: int, hi: int | None) -> Node:
    """Decimal integers in ``[lo, hi]`` without leading zeros (``hi`` None: up to 18 digits)."""
    top = 10**MAX_INT_DIGITS - 1
    if hi is None or hi > top:
        hi = top
    alts: list[Node | tuple[str, int]] = []  # ("full", d): every d-digit number
    for d in range(len(str(lo)), len(str(hi)) + 1):
        a = max(lo, 10 ** (d - 1) if d > 1 else 0)
        b = min(hi, 10**d - 1)
        if a > b:
            continue
        if a == 10 ** (d - 1) and b == 10**d - 1 and d > 1:
            alts.append(("full", d))
        else:
            alts.append(_same_length(str(a), str(b)))
    # consecutive full digit-lengths collapse into one [1-9][0-9]{m,n}
    out: list[Node] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            out.append(seq(_NONZERO, Rep(_DIGIT, run[0] - 1, run[-1] - 1)))
            run.clear()

    for a in alts:
        if isinstance(a, tuple):
            run.append(a[1])
        else:
            flush()
            out.append(a)
    flush()
    return alt(*out)


def _same_length(a: str, b: str) -> Node:
    if a == b:
        return Lit(a)
    if len(a) == 1:
        return Chars(((ord(a), ord(b)),))
    if a[0] == b[0]:
        return seq(Lit(a[0]), _same_length(a[1:], b[1:]))
    n = len(a) - 1
    alts: list[Node] = []
    start, end = int(a[0]), int(b[0])
    if a[1:] != "0" * n:
        alts.append(seq(Lit(a[0]), _same_length(a[1:], "9" * n)))
        start += 1
    tail_hi: Node | None = None
    if b[1:] != "9" * n:
        tail_hi = seq(Lit(b[0]), _same_length("0" * n, b[1:]))
        end -= 1
    if start <= end:
        alts.append(seq(Chars(((48 + start, 48 + end),)), Rep(_DIGIT, n, n)))
    if tail_hi is not None:
        alts.append(tail_hi)
    return alt(*alts)


_PLAIN = Chars(((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)), negate=True)


def _json_char() -> Node:
    return alt(_PLAIN, _escape())


def _escape() -> Node:
    simple = Chars(tuple((ord(c), ord(c)) for c in '"\\/bfnrt'))
    # \uXXXX outside the surrogates, or a high+low surrogate pair: a lone surrogate is not text
    bmp = alt(
        seq(Chars(((48, 57), (65, 67), (97, 99), (69, 70), (101, 102))), Rep(_HEX, 3, 3)),
        seq(Chars(((68, 68), (100, 100))), Chars(((48, 55),)), Rep(_HEX, 2, 2)),
    )
    pair = seq(
        Chars(((68, 68), (100, 100))),
        Chars(((56, 57), (65, 66), (97, 98))),
        Rep(_HEX, 2, 2),
        Lit("\\u"),
        Chars(((68, 68), (100, 100))),
        Chars(((67, 70), (99, 102))),
        Rep(_HEX, 2, 2),
    )
    return seq(Lit("\\"), alt(simple, seq(Lit("u"), alt(bmp, pair))))


# --- the envelope --------------------------------------------------------------------------


def answer_grammar(tag: str = "action", options: GrammarOptions | None = None) -> Grammar:
    """The grammar of a whole answer whose payload tag is ``tag`` (``action``, ``plan`` or
    ``verdict``), as :func:`oopav.models.prompt.parse_role_answer` reads it."""
    from oopav.models.prompt import ROLE_OUTPUTS, output_schema, state_update_schema

    roles = {t: (role, with_state) for role, (t, _, with_state) in ROLE_OUTPUTS.items()}
    if tag not in roles:
        raise GrammarError(f"unknown tag {tag!r}; known: {', '.join(sorted(roles))}")
    role, with_state = roles[tag]
    opts = options or GrammarOptions()
    b = _Builder(opts)
    payload: Node = b.document(output_schema(role), tag.replace("_", "-"))
    if tag == "action" and opts.edit_blocks:  # or SEARCH/REPLACE text blocks, as parsed
        from oopav.models.blocks import edit_blocks_grammar

        blocks = edit_blocks_grammar(
            b.g,
            between=Lit("\n") if opts.compact else seq(Lit("\n"), b.ws),
            max_line=opts.max_string_length,
            max_lines=opts.max_items,
            max_blocks=opts.max_items,
        )
        payload = b.rule("action-payload", alt(payload, blocks), "a JSON action or text blocks")
    state = b.document(state_update_schema(), "state-update") if with_state else None
    if opts.think_chars is not None:
        think: Node = Rep(Chars(((60, 60),), negate=True), 1, max(1, opts.think_chars))
    else:
        think = Avoid("</think>")
    b.rule("think", think, "the think text: never contains </think>", token=True)
    ws = b.ws
    between = Lit("\n") if opts.compact else ws

    def block(name: str, body: Node) -> Node:
        return seq(Lit(f"<{name}>"), ws, body, ws, Lit(f"</{name}>"))

    parts: list[Node] = [ws, Lit("<think>"), opt(Ref("think")), Lit("</think>"), between]
    parts.append(block(tag, payload))
    if state is not None:
        parts += [between, block("state_update", state)]
    parts.append(ws)
    b.g.rules["root"] = seq(*parts)
    b.g.comments["root"] = f"<think>…</think><{tag}>…</{tag}>" + (
        "<state_update>…</state_update>" if with_state else ""
    )
    mode = "compact" if opts.compact else "flexible"
    b.g.header = (
        f"The oopav answer grammar for <{tag}> ({mode}), generated from the JSON schema by "
        "`oopav schema export`; do not edit by hand."
    )
    return b.g
