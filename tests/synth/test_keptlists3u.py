"""Wave 3u of issue 26: a formatter's rule (trailing commas, missing semicolons) learned from a
partial example that keeps a line (docs/synth.md § Formatter rules with kept lines): the kept
list item or statement is excluded by its text, the rule set stays the formatter's.
Self-written examples only."""

from __future__ import annotations

from oopav.synth import Example, synthesize

# Two lists given their trailing comma by hand; the third, `after: []`, kept without one on
# purpose (line 11: the commit forgot it, and the user says "not this one").
TS_BEFORE = """const a = f(
  one,
  two
)
const o = {
  x: 1,
  y: 2
}
const hooks = {
  before: [],
  after: []
}
"""
TS_AFTER = TS_BEFORE.replace("  two\n", "  two,\n").replace("  y: 2\n", "  y: 2,\n")
TS_HELD = """g(
  p,
  q
)
const z = [
  1,
  2
]
const w = {
  after: [],
  before: []
}
"""
TS_WANT = """g(
  p,
  q,
)
const z = [
  1,
  2,
]
const w = {
  after: [],
  before: [],
}
"""


def test_a_kept_list_item_is_excluded_from_the_trailing_comma_rule() -> None:
    """Before: the trailing-comma set rewrote the kept line 11, so it was given up and each
    edited list became a literal rule of its own (`f(one, two)`, the `{x: 1, y: 2}` object)
    that reached no other list. Now the kept item is left out by its text and the set is
    learned: every other multi-line list gains its comma."""
    result = synthesize([Example(TS_BEFORE, TS_AFTER, path="a.ts", partial=True, keep=(11,))])
    assert any("trailing commas" in n for n in result.notes)
    assert result.apply(TS_HELD)[0] == TS_WANT
    got = result.apply(TS_BEFORE)[0]
    assert got.splitlines()[10] == "  after: []"
    assert got == TS_AFTER


def test_the_kept_item_is_excluded_with_a_full_example_beside_it() -> None:
    """The same with a whole file given as well (the one-shot examples the protocol starts
    from): the partial example's kept line alone narrows the set."""
    full_before = "h(\n  1,\n  2\n)\n"
    full_after = "h(\n  1,\n  2,\n)\n"
    result = synthesize(
        [
            Example(full_before, full_after, path="b.ts"),
            Example(TS_BEFORE, TS_AFTER, path="a.ts", partial=True, keep=(11,)),
        ]
    )
    assert any("trailing commas" in n for n in result.notes)
    assert result.apply(TS_HELD)[0] == TS_WANT


def test_a_kept_item_with_the_text_of_an_edited_one_gives_no_formatter_set() -> None:
    """Guard (precision): the item kept (`two`, line 8) has the text of one edited in the
    same kind of list (`two,`, line 3); excluding it by its text would leave the edited one
    without its comma, so the set does not fit and is not offered. The kept line stays."""
    before = "f(\n  one,\n  two\n)\ng(\n  x,\n  y,\n  two\n)\n"
    after = before.replace("  two\n)\ng", "  two,\n)\ng")
    result = synthesize([Example(before, after, path="c.ts", partial=True, keep=(8,))])
    assert not any("trailing commas" in n for n in result.notes)
    assert result.apply(before)[0].splitlines()[7] == "  two"


JS_BEFORE = """const a = require('a')
let b = 2
start()
stop()
"""
JS_AFTER = """const a = require('a');
let b = 2;
start()
stop()
"""
JS_HELD = """import x from 'x'
const y = 1
run(x)
stop()
"""


def test_a_kept_statement_is_excluded_from_the_missing_semicolon_rule() -> None:
    """The missing-semicolon set, likewise: `stop()` (line 4) kept without its `;`. Before:
    the set rewrote it and was given up for literal rules of the two declarations. Now the
    kept statement is left out by its text and every other statement gains its `;`."""
    result = synthesize([Example(JS_BEFORE, JS_AFTER, path="m.js", partial=True, keep=(4,))])
    assert any("missing semicolons" in n for n in result.notes)
    assert result.apply(JS_HELD)[0] == "import x from 'x';\nconst y = 1;\nrun(x);\nstop()\n"
    assert result.apply(JS_BEFORE)[0].splitlines()[3] == "stop()"


def test_no_kept_line_leaves_the_trailing_comma_rule_as_it_was() -> None:
    """Guard: without a kept line the rule has no exclusion (the set as before wave 3u)."""
    result = synthesize([Example(TS_BEFORE, TS_AFTER, path="a.ts", partial=True)])
    assert any("trailing commas" in n for n in result.notes)
    assert "after: \\[\\]" not in result.to_yaml()
