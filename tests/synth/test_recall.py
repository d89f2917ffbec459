"""Wave 3d of issue 26 (synth-recall): rules too narrow for the held-out sites of a real
commit — each a small self-written reproduction of what the commit did (see docs/synth.md
§ Constraints and negatives)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_decorator_changed_on_generators_only_is_narrowed_by_what_the_definition_holds() -> (
    None
):
    """pluggy's `@hookimpl` -> `@hookimpl(wrapper=True)` on the generator functions, kept on
    the others: the decorated definition `has` a `yield` — not the literal `def wrapper`
    (which no held-out generator is called)."""
    before = (
        'hookimpl = Marker("x")\n\n\n@hookimpl\ndef hook(a):\n    return a\n\n\n'
        "@hookimpl\ndef wrapper(a):\n    return (yield)\n"
    )
    after = before.replace("@hookimpl\ndef wrapper", "@hookimpl(wrapper=True)\ndef wrapper")
    result = synthesize([Example(before, after, path="p.py")])
    [rule] = result.rules
    assert rule.rule["inside"]["inside"]["has"] == {"kind": "yield", "stopBy": "end"}
    held = (
        "class P:\n    @hookimpl\n    def m1(self):\n        out.append(1)\n        yield\n\n"
        "    @hookimpl\n    def m2(self, x):\n        return x\n"
    )
    want = held.replace("@hookimpl\n    def m1", "@hookimpl(wrapper=True)\n    def m1")
    assert result.apply(held)[0] == want
