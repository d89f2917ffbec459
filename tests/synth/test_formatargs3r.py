"""Wave 3r of issue 26: arguments moved into their format string (docs/synth.md § Arguments
moved into their format string, wave 3r); and the token diff that made such a change look
like a rewrite of the whole call around it."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules
from oopav.synth.sites import find_sites, parse

PROXY = (
    "fn check(x: Scheme) {\n    match x {\n        Scheme::Http { .. } => (),\n"
    '        other => panic!("unexpected: {:?}", other),\n    }\n'
    '    let s = format!("http://{}", host);\n}\n'
    "fn check2(x: Scheme) {\n    match x {\n        Scheme::Https { .. } => (),\n"
    '        other => panic!("unexpected: {:?}", other),\n    }\n}\n'
)
REDIRECT = (
    "fn redirects(a: Action) {\n    match a {\n        Action::Follow => (),\n"
    '        other => panic!("unexpected {:?}", other),\n    }\n'
    '    let t = panic!("{} of {}", done, total);\n'
    '    let u = panic!("{0}", done);\n'
    '    let v = panic!("{:?}", self.state);\n'
    '    let w = format!("{:?}", other);\n}\n'
)


def test_rust_format_arguments_inlined_in_any_string_of_that_macro() -> None:
    """reqwest 05c3982e: `panic!("unexpected: {:?}", other)` -> `panic!("unexpected:
    {other:?}")` at three sites of proxy.rs; redirect.rs has five with another text
    ("unexpected {:?}"). Learned literally (the strings the same at every example site), the
    rule reached no other string: 0 of 5. Now any `panic!` string with one bare placeholder
    and a plain name after it; `format!` (kept in the example), a positional `{0}`, two
    placeholders (the examples show one) and a field access (Rust inlines names only) stay."""
    after = PROXY.replace('"unexpected: {:?}", other', '"unexpected: {other:?}"')
    result = synthesize([Example(PROXY, after, path="src/proxy.rs")])
    assert result.apply(PROXY)[0] == after
    got, _ = result.apply(REDIRECT)
    assert got == REDIRECT.replace('"unexpected {:?}", other', '"unexpected {other:?}"')
    # The real ast-grep CLI applies the rule file alike.
    files = [("src/proxy.rs", PROXY), ("src/redirect.rs", REDIRECT)]
    found = check_rules(result.rules, files, "rust") + check_file(result.rules, files, "rust")
    assert not found, [f.line() for f in found]


def test_two_placeholders_take_their_arguments_in_order() -> None:
    before = 'fn f() {\n    println!("{} -> {:>4}", from, to);\n}\n'
    after = 'fn f() {\n    println!("{from} -> {to:>4}");\n}\n'
    result = synthesize([Example(before, after, path="src/a.rs")])
    held = 'fn g() {\n    println!("{{literal}} {}: {}", key, value);\n    println!("{}", x);\n}\n'
    got, _ = result.apply(held)
    assert got == held.replace('"{{literal}} {}: {}", key, value', '"{{literal}} {key}: {value}"')


def test_python_format_call_becomes_an_f_string_wherever_it_stands() -> None:
    """pyupgrade's `"{} [{}]".format(a, b)` -> `f"{a} [{b}]"`: the format call itself is the
    rule (the token diff used to keep the inner `)` and delete the outer one, so the change
    looked like a rewrite of the `log(…)` call around it), any string with the examples'
    count of bare placeholders; `{0}` (numbered) and a computed argument stay."""
    before = (
        'def f(a, b):\n    log("{} [{}]".format(a, b))\n\n\n'
        'def g(self):\n    x = "{!r}".format(self.name)\n    return x\n\n\n'
        'def h(a):\n    y = "plain {}".format(a + 1)\n'
    )
    after = before.replace('"{} [{}]".format(a, b)', 'f"{a} [{b}]"').replace(
        '"{!r}".format(self.name)', 'f"{self.name!r}"'
    )
    result = synthesize([Example(before, after, path="m.py")])
    assert result.apply(before)[0] == after
    held = (
        'def k(c):\n    print("one {}".format(c))\n    s = "{}: {}".format(self.x, c)\n'
        '    t = "{0}".format(c)\n    u = "{}".format(len(c))\n'
    )
    want = held.replace('"one {}".format(c)', 'f"one {c}"').replace(
        '"{}: {}".format(self.x, c)', 'f"{self.x}: {c}"'
    )
    assert result.apply(held)[0] == want
    files = [("m.py", before), ("k.py", held)]
    found = check_rules(result.rules, files, "python") + check_file(result.rules, files, "python")
    assert not found, [f.line() for f in found]


def test_a_deleted_token_that_repeats_the_one_before_it_joins_the_change() -> None:
    """Which of two equal tokens a diff keeps is arbitrary: `x)` -> `y` after `(…)` deleted
    the outer `)`, so the site was the statement around it; slid left, one change."""
    before = "def f():\n    log(g(a))\n"
    after = "def f():\n    log(a)\n"
    (site,) = find_sites(
        0, before, after, parse(before, "python"), parse(after, "python"), "example"
    )
    assert (site.before_text, site.after_text) == ("g(a)", "a")
