"""Wave 3s of issue 26: JavaScript/TypeScript string concatenation made a template literal
(ESLint's prefer-template), learned as one rule for any concatenation of the examples' shape
(docs/synth.md § Arguments moved into their format string)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

BEFORE = (
    "function f(name) {\n  log('Hello ' + name + '!');\n  return 1;\n}\n\n"
    "function g(user) {\n  throw new Error(\"no \" + user.id + '.');\n}\n"
)
AFTER = (
    "function f(name) {\n  log(`Hello ${name}!`);\n  return 1;\n}\n\n"
    "function g(user) {\n  throw new Error(`no ${user.id}.`);\n}\n"
)
HELD = """function h(a, b, c) {
  warn('Bye ' + a + '.');
  x = 'k=' + b.k;
  y = "it's " + a + " ok";
  z = 'n ' + (a + 1) + '!';
  q = 'n ' + a * 2 + '!';
  w = 'a`b ' + a + '!';
  v = '' + f(a) + 'x';
  u = 'a ' + b + '!' + c;
  t = 'i\\'m ' + a[0] + '!';
  s = '${a} ' + a + '!';
}
"""
WANT = """function h(a, b, c) {
  warn(`Bye ${a}.`);
  x = 'k=' + b.k;
  y = `it's ${a} ok`;
  z = `n ${(a + 1)}!`;
  q = 'n ' + a * 2 + '!';
  w = 'a`b ' + a + '!';
  v = `${f(a)}x`;
  u = 'a ' + b + '!' + c;
  t = `i\\'m ${a[0]}!`;
  s = '${a} ' + a + '!';
}
"""


def test_concatenation_of_the_examples_shape_becomes_a_template_literal() -> None:
    """Learned from `'Hello ' + name + '!'` and `"no " + user.id + '.'`, the rule takes any
    string, value, string concatenation: strings in either quotes (an empty one too, an
    escape kept as it is), a name, member, call, index or parenthesised expression between
    them. Left alone: another shape (`'k=' + b.k`), a bare operator as the value (`a * 2`:
    kept to what the examples show), a string with a backtick or
    a `$` (the template would read it otherwise), and a concatenation that is the left part
    of a longer one (rewriting its start alone would be a different grouping)."""
    result = synthesize([Example(BEFORE, AFTER, path="a.js")])
    assert result.apply(BEFORE)[0] == AFTER
    assert result.apply(HELD)[0] == WANT
    files = [("a.js", BEFORE), ("h.js", HELD)]
    found = check_rules(result.rules, files, "javascript") + check_file(
        result.rules, files, "javascript"
    )
    assert not found, [f.line() for f in found]


def test_typescript_string_then_value() -> None:
    before = "export const url = (id: string): string => 'https://x.test/' + id;\n"
    after = "export const url = (id: string): string => `https://x.test/${id}`;\n"
    result = synthesize([Example(before, after, path="u.ts")])
    held = "const a = (p: P) => '/api/' + p.path;\nconst b = 1 + p;\n"
    assert result.apply(held)[0] == "const a = (p: P) => `/api/${p.path}`;\nconst b = 1 + p;\n"


def test_two_shapes_side_by_side_are_two_rules_not_their_block() -> None:
    """`log('Hello ' + name + '!')` right above `const s = 'id: ' + user.id`: the block that
    holds both anti-unified as one rule covering two sites (and nothing else anywhere); a
    shape rule now comes first for each site."""
    before = (
        "function f(name, user) {\n  log('Hello ' + name + '!');\n"
        "  const s = 'id: ' + user.id;\n}\n"
    )
    after = "function f(name, user) {\n  log(`Hello ${name}!`);\n  const s = `id: ${user.id}`;\n}\n"
    result = synthesize([Example(before, after, path="a.js")])
    assert result.apply(before)[0] == after
    assert len(result.rules) == 2
    held = (
        "function g(a, b) {\n  warn('Bye ' + a + '.');\n  if (x) {\n    y = 'k=' + b.k;\n  }\n}\n"
    )
    want = "function g(a, b) {\n  warn(`Bye ${a}.`);\n  if (x) {\n    y = `k=${b.k}`;\n  }\n}\n"
    assert result.apply(held)[0] == want
