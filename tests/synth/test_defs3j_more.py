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
