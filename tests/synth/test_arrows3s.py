"""Wave 3s of issue 26: an anonymous function expression made an arrow function (ESLint's
prefer-arrow-callback), learned at its header with the body any (docs/synth.md § Shape rules),
never where the arrow would mean something else."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

BEFORE = """fetch(url).then(function(res) {
\treturn res.json();
});
emitter.on('data', function() {
\treturn this.buffer;
});
"""
AFTER = BEFORE.replace("function(res) {", "res => {")
HELD = """describe('x', function() {
\tit('a', function() {
\t\treturn fetch(u).then(function(body) {
\t\t\texpect(body).to.be.ok;
\t\t});
\t});
\tlist.map(function(item) { return item.id; });
\tlist.map(async function(item) { return await item; });
\tlist.map(function named(item) { return named; });
\tlist.map(function(item) { return this.x + item; });
\tlist.map(function(item) { return arguments.length; });
\tlist.map(function*(item) { yield item; });
\tlist.reduce(function(a, b) { return a + b; });
});
"""
WANT = """describe('x', function() {
\tit('a', function() {
\t\treturn fetch(u).then(body => {
\t\t\texpect(body).to.be.ok;
\t\t});
\t});
\tlist.map(item => { return item.id; });
\tlist.map(async function(item) { return await item; });
\tlist.map(function named(item) { return named; });
\tlist.map(function(item) { return this.x + item; });
\tlist.map(function(item) { return arguments.length; });
\tlist.map(function*(item) { yield item; });
\tlist.reduce(function(a, b) { return a + b; });
});
"""


def test_a_callback_becomes_an_arrow_whatever_its_body() -> None:
    """node-fetch 83807124 (93 callbacks): the site is the whole function and its body was
    the rule's literal text. Now the header only, the body any. Left alone: a function that
    uses `this` or `arguments` (an arrow has its enclosing scope's), an `async` one, a named
    one, a generator, and two parameters where the example showed one (`res =>`)."""
    result = synthesize([Example(BEFORE, AFTER, path="a.js")])
    assert result.apply(BEFORE)[0] == AFTER
    assert result.apply(HELD)[0] == WANT
    files = [("a.js", BEFORE), ("t.js", HELD)]
    found = check_rules(result.rules, files, "javascript") + check_file(
        result.rules, files, "javascript"
    )
    assert not found, [f.line() for f in found]


def test_kept_callbacks_close_the_rule_by_the_parameters_name() -> None:
    """The example keeps other callbacks as they are (`function(err)` beside the changed
    `function(res)`): nothing syntactic tells them apart, the name does."""
    before = (
        "req.on('response', function(res) {\n\tdone(res);\n});\n"
        "req.on('error', function(err) {\n\tfail(err);\n});\n"
    )
    after = before.replace("function(res) {", "res => {")
    result = synthesize([Example(before, after, path="a.js")])
    assert result.apply(before)[0] == after
    held = "p.then(function(res) {\n\tok(res);\n}).catch(function(err) {\n\tno(err);\n});\n"
    want = "p.then(res => {\n\tok(res);\n}).catch(function(err) {\n\tno(err);\n});\n"
    assert result.apply(held)[0] == want


def test_a_callback_holding_a_template_literal_over_lines_is_left_alone() -> None:
    """`$BODY` is re-indented to the match's column by ast-grep's fix: inside a template
    literal laid out left of it that would change the string's text."""
    before = "describe('x', () => {\n  p.then(function(res) {\n    ok(res);\n  });\n});\n"
    after = before.replace("function(res) {", "res => {")
    result = synthesize([Example(before, after, path="a.js")])
    held = "function f() {\n  return y.then(function(v) {\n    const s = `a\nb`;\n    return v;\n  });\n}\n"
    assert result.apply(held)[0] == held
