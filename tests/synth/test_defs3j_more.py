"""Wave 3j of issue 26 (synth18): leftovers of the header and scoped-rename work (see
docs/synth.md § Too narrow: function headers and scoped renames) — each a small
self-written reproduction of what a real commit did."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_scoped_rename_expands_a_shorthand_property_and_a_destructured_binder() -> None:
    """A lint rename `err` -> `error` inside callbacks: a shorthand property `{ err }` in a
    renamed scope becomes `{ err: error }` (the property keeps its name), and a
    destructuring binder `({ err }) =>` becomes `({ err: error }) =>` with its uses. Before,
    the example was no plain rename (tokens added) and the rule was the callback literal."""
    before = (
        "get(u, (err) => {\n  log(err)\n  send({ err, code: 1 })\n})\n"
        "on('x', ({ err }) => {\n  warn(err)\n})\n"
        "const err = 3\nconsole.log({ err })\n"
    )
    after = (
        "get(u, (error) => {\n  log(error)\n  send({ err: error, code: 1 })\n})\n"
        "on('x', ({ err: error }) => {\n  warn(error)\n})\n"
        "const err = 3\nconsole.log({ err })\n"
    )
    result = synthesize([Example(before, after, path="a.js")])
    held = (
        "p.catch(function (err) {\n  res.json({ ok: false, err })\n})\n"
        "h(({ err, data }) => {\n  if (err) throw err\n  return data\n})\n"
        "f({ err })\n"
    )
    want = (
        "p.catch(function (error) {\n  res.json({ ok: false, err: error })\n})\n"
        "h(({ err: error, data }) => {\n  if (error) throw error\n  return data\n})\n"
        "f({ err })\n"
    )
    assert result.apply(held)[0] == want


def test_a_modifier_added_to_an_impl_is_a_rule_on_the_kind_narrowed_by_the_trait() -> None:
    """bytes' `impl<T, U> BufMut for Chain<T, U> where … {` -> `unsafe impl …`: learned as
    the impl literal (type parameters, `where` clause, methods), which no held-out impl
    matches. As a rule on `impl_item` with the trait `BufMut`, a held-out impl without
    generics, one nested in a module and one with a `where` clause gain `unsafe`; an
    `impl Buf for …` (another trait) and an inherent `impl` stay."""
    before = (
        "impl<T, U> Buf for Chain<T, U>\nwhere\n    T: Buf,\n{\n    fn a(&self) {}\n}\n\n"
        "impl<T, U> BufMut for Chain<T, U>\nwhere\n    T: BufMut,\n    U: BufMut,\n{\n"
        "    fn remaining_mut(&self) -> usize {\n        1\n    }\n}\n"
    )
    after = before.replace("impl<T, U> BufMut", "unsafe impl<T, U> BufMut")
    before2 = "impl<T> Limit<T> {\n    fn new() {}\n}\n\nimpl<T: BufMut> BufMut for Limit<T> {\n    fn b() {}\n}\n"
    after2 = before2.replace("impl<T: BufMut> BufMut", "unsafe impl<T: BufMut> BufMut")
    result = synthesize(
        [Example(before, after, path="chain.rs"), Example(before2, after2, path="limit.rs")]
    )
    held = (
        "impl Buf for BytesMut {\n    fn c() {}\n}\n\n"
        "impl BufMut for BytesMut {\n    #[inline]\n    fn d() {}\n}\n\n"
        "mod m {\n    impl<T: BufMut + ?Sized> BufMut for &mut T\n    where\n        T: Sized,\n"
        "    {\n        fn e() {}\n    }\n}\n\nimpl BytesMut {\n    fn f() {}\n}\n"
    )
    want = held.replace("impl BufMut for", "unsafe impl BufMut for").replace(
        "    impl<T: BufMut + ?Sized>", "    unsafe impl<T: BufMut + ?Sized>"
    )
    assert result.apply(held)[0] == want


def test_the_prefix_and_shorthand_rules_run_in_the_cli_as_in_process() -> None:
    """The kind rule with `pattern: $A` and the shorthand rules are rules the ast-grep CLI
    reads as the in-process rewriter does."""
    from oopav.synth.clicheck import check_rules

    rs = "impl<T> X for A<T> {\n    fn a() {}\n}\n\nimpl Y for B {}\n"
    rs_after = rs.replace("impl<T> X", "unsafe impl<T> X")
    js = "get(u, (err) => {\n  send({ err })\n})\non(({ err }) => warn(err))\n"
    js_after = js.replace("(err) =>", "(error) =>").replace("send({ err })", "send({ err: error })")
    js_after = js_after.replace("(({ err }) => warn(err))", "(({ err: error }) => warn(error))")
    for before, after, path, lang in (
        (rs, rs_after, "a.rs", "rust"),
        (js, js_after, "a.js", "javascript"),
    ):
        result = synthesize([Example(before, after, path=path)])
        assert result.apply(before)[0] == after
        found = check_rules(result.rules, [(path, before)], lang)
        assert not found, "\n".join(f.line() for f in found)
