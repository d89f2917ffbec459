"""Wave 3u of issue 26: a learned pattern matches no node with more in it than the pattern
says (docs/synth.md § No match with more than the pattern says). ast-grep's default
``smart`` strictness let ``raise $A`` match ``raise X from e`` and the fix dropped ``from e``."""

from __future__ import annotations

from dataclasses import replace

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules
from oopav.synth.core import SynthRule
from oopav.synth.strictness import strict_guard

RAISE_BEFORE = """def load(path):
    if not path:
        raise ValueError(path)
"""
RAISE_AFTER = RAISE_BEFORE.replace("raise ValueError(path)", "raise ConfigError(path) from None")
RAISE_HELD = """def parse(text):
    try:
        return int(text)
    except TypeError as e:
        raise ValueError(text) from e
    raise ValueError(text)
"""
RAISE_WANT = RAISE_HELD.replace(
    "    raise ValueError(text)\n", "    raise ConfigError(text) from None\n"
)


def test_raise_with_a_cause_is_left_alone() -> None:
    """Before: the held-out `raise ValueError(text) from e` became `… from None` (its cause
    dropped). The example shows no cause, so a raise that has one is not what it shows."""
    result = synthesize([Example(RAISE_BEFORE, RAISE_AFTER, path="a.py")])
    assert result.apply(RAISE_BEFORE)[0] == RAISE_AFTER
    assert result.apply(RAISE_HELD)[0] == RAISE_WANT
    files = [("a.py", RAISE_BEFORE), ("b.py", RAISE_HELD)]
    assert (
        check_rules(result.rules, files, "python") + check_file(result.rules, files, "python") == []
    )


def test_assert_message_is_not_dropped() -> None:
    before = "def t(x, y):\n    assert x\n    assert y\n"
    after = "def t(x, y):\n    assert x is True\n    assert y is True\n"
    held = "def u(z, q):\n    assert z, 'z must hold'\n    assert q\n"
    result = synthesize([Example(before, after, path="t.py")])
    assert (
        result.apply(held)[0] == "def u(z, q):\n    assert z, 'z must hold'\n    assert q is True\n"
    )


def test_trailing_comma_still_matches() -> None:
    """Extra punctuation is no more code: `f(x, y,)` is still `f($A, $B)` (which `cst`
    strictness would refuse)."""
    before = "f(a, b)\nf(c, d)\n"
    after = "g(b, a)\ng(d, c)\n"
    result = synthesize([Example(before, after, path="s.py")])
    assert result.apply("f(x, y,)\nf(\n    x,\n    y,\n)\n")[0] == "g(y, x)\ng(y, x)\n"


def test_typescript_default_and_javascript_async() -> None:
    """A parameter's default value and an `async` keyword are more than a pattern says."""
    ts_before = "function area(w: number, h: number) {\n  return w * h;\n}\n"
    ts_after = "function area(w: Length, h: number) {\n  return w * h;\n}\n"
    rule = {"pattern": "function $F($A: number, $$$R) { $$$B }"}
    guarded = strict_guard(rule, "typescript")
    assert guarded is not None
    assert guarded["all"] == [
        {"pattern": {"context": "function $F($A: number, $$$R) { $$$B }", "strictness": "ast"}}
    ]
    result = synthesize([Example(ts_before, ts_after, path="a.ts")])
    assert result.apply(ts_before)[0] == ts_after
    held = "export default async function main() {}\nexport default function other() {}\n"
    rule = {"pattern": "export default function $F() {}"}
    unguarded = SynthRule("r", "javascript", rule, "export function $F() {}")
    # the hazard itself: smart strictness matches the async function and the fix drops `async`
    assert unguarded.apply(held)[0].startswith("export function main() {}")
    guarded = strict_guard(rule, "javascript")
    assert guarded is not None
    assert replace(unguarded, rule=guarded).apply(held)[0] == (
        "export default async function main() {}\nexport function other() {}\n"
    )


def test_leaves_and_explicit_strictness_are_not_guarded() -> None:
    assert strict_guard({"kind": "identifier", "regex": "^a$"}, "python") is None
    assert strict_guard({"pattern": "$A"}, "python") is None
    assert strict_guard({"pattern": "foo"}, "python") is None
    assert strict_guard({"pattern": {"context": "raise $A", "strictness": "cst"}}, "python") is None
    both = strict_guard(
        {"pattern": {"context": "class A:\n    $X: $T", "selector": "expression_statement"}},
        "python",
    )
    assert both is not None
    assert both["all"][0]["pattern"]["selector"] == "expression_statement"
