"""Wave 3s of issue 26: Python's ``%`` formatting moved into an f-string (flynt; ruff UP031
then UP032), learned as one rule for any string with the examples' placeholders (docs/synth.md
§ Arguments moved into their format string)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

BEFORE = (
    'def f(a, b):\n    log("%s [%r]" % (a, b))\n\n\n'
    'def g(self):\n    x = "name: %s" % self.name\n    return x\n\n\n'
    'def h(a):\n    y = "plain %d%%" % a\n'
)
AFTER = BEFORE.replace('"%s [%r]" % (a, b)', 'f"{a} [{b!r}]"').replace(
    '"name: %s" % self.name', 'f"name: {self.name}"'
)
HELD = (
    "def k(c):\n"
    '    print("one %s" % c)\n'
    '    s = "%s: %r" % (self.x, c)\n'
    '    t = "%s %s" % (c, c)\n'
    '    u = "%s" % len(c)\n'
    '    v = "{%s}" % c\n'
    "    w = 'single %s' % c\n"
    '    z = "%(name)s" % c\n'
)


def test_percent_formatting_becomes_an_f_string_in_any_string_of_that_shape() -> None:
    """Each placeholder takes the conversion the example gave it (`%r` -> `!r`); a string
    with other placeholders (`%s %s` where the example had `%s … %r`), `%%`, a brace or a
    mapping key, a computed operand, and a string in the other quotes (ast-grep's regexes
    have no back-references to keep the quote) stay as they are."""
    result = synthesize([Example(BEFORE, AFTER, path="m.py")])
    assert result.apply(BEFORE)[0] == AFTER
    got, _ = result.apply(HELD)
    want = HELD.replace('"one %s" % c', 'f"one {c}"').replace(
        '"%s: %r" % (self.x, c)', 'f"{self.x}: {c!r}"'
    )
    assert got == want
    # The real ast-grep CLI applies the rule file alike.
    files = [("m.py", BEFORE), ("k.py", HELD)]
    found = check_rules(result.rules, files, "python") + check_file(result.rules, files, "python")
    assert not found, [f.line() for f in found]


def test_a_width_and_precision_become_the_f_strings_format_spec() -> None:
    before = 'def f(x, n):\n    return "%.2f of %5d" % (x, n)\n'
    after = 'def f(x, n):\n    return f"{x:.2f} of {n:5d}"\n'
    result = synthesize([Example(before, after, path="m.py")])
    held = 'def g(total, count):\n    print("avg %.2f over %5d runs" % (total, count))\n'
    got, _ = result.apply(held)
    assert got == 'def g(total, count):\n    print(f"avg {total:.2f} over {count:5d} runs")\n'
