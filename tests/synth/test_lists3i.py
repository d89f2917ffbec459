"""Wave 3i of issue 26 (synth13): JavaScript/TypeScript one-shot misses of the tuning draw,
each a small self-written reproduction of a class seen on real edits, failing on the branch
start (docs/synth.md § Missing semicolons, wave 3i synth13)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.semicolons import only_semicolons

CONTEXT = (
    "const proto = module.exports = {\n"
    "  inspect() {\n"
    "    return this.toJSON();\n"
    "  },\n\n"
    "  toJSON() {\n"
    "    return {\n"
    "      method: this.method,\n"
    "      url: this.url\n"
    "    }\n"
    "  },\n"
    "};\n"
)


def test_missing_semicolons_are_one_rule_over_statement_kinds_and_depths() -> None:
    """koa's "fix style issues": the example ends a `return {…}` with `;`; the file held out
    a `return function () {…}` and the `module.exports = class … {…}` that holds it. Before,
    the rule was `return $A` -> `return $A;` inside a block: neither the assignment statement
    nor (nested in it) the other return. Now every statement of the kinds that take a `;`
    and lack it gains one, nested ones by follow-up copies of the rule."""
    after = CONTEXT.replace("      url: this.url\n    }\n", "      url: this.url\n    };\n")
    result = synthesize([Example(CONTEXT, after, path="lib/context.js")])
    held = (
        "module.exports = class Application extends Emitter {\n"
        "  callback() {\n"
        "    const fn = compose(this.middleware);\n"
        "    return function (req, res) {\n"
        "      fn.call(ctx).catch(ctx.onerror);\n"
        "    }\n"
        "  }\n\n"
        "  onerror(err) {\n"
        "    console.error();\n"
        "  }\n"
        "}\n"
    )
    want = (
        held.replace("catch(ctx.onerror);\n    }\n", "catch(ctx.onerror);\n    };\n")[:-2] + "};\n"
    )
    assert result.apply(held)[0] == want


def test_a_kind_the_examples_leave_without_semicolon_is_not_given_one() -> None:
    """The examples' unchanged code is negative: an example whose `import` lines keep no
    `;` while a call statement gains one says imports are not the change's."""
    before = "import a from 'a'\n\nfunction f() {\n  a()\n  return 1;\n}\n"
    after = before.replace("  a()\n", "  a();\n")
    result = synthesize([Example(before, after, path="x.js")])
    held = "import b from 'b'\n\nb()\n"
    assert result.apply(held)[0] == "import b from 'b'\n\nb();\n"


def test_other_edits_are_not_missing_semicolons() -> None:
    assert only_semicolons("a()\n", "a();\n")
    assert only_semicolons("a() // x\n", "a(); // x\n")
    assert not only_semicolons("a()\n", "a(1);\n")
    assert not only_semicolons("a();\n", "a();;\n")
    assert not only_semicolons("f({\n", "f({;\n")
