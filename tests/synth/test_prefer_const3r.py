"""Wave 3r of issue 26: `let` -> `const` where the name is never assigned again (ESLint's
prefer-const), told from the kept `let`s by that (docs/synth.md § Never assigned again)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_rules

MIDDLEWARE = (
    "describe('middleware', () => {\n  it('runs once', () => {\n    let callCount = 0\n"
    "    let argv = yargs('cmd subcmd')\n      .parse()\n    callCount++\n"
    "    argv.should.be.ok\n  })\n})\n"
)
COMMAND = (
    "function freezer (self) {\n  let frozens = []\n  let n = 0\n  n += 1\n"
    "  let empty\n  let frozen = frozens.pop()\n"
    "  for (let keys = ['a', 'b'], i = 0, l = keys.length; i < l; i++) {\n    empty = keys[i]\n  }\n"
    "  let { a } = frozen\n  return [frozen, n, empty, a]\n}\n"
)


def test_let_becomes_const_only_where_the_name_is_never_assigned_again() -> None:
    """yargs 996329ba: `let argv = …` -> `const argv = …`, while `let callCount = 0` (incremented
    below) stays. The example decided nothing but this literal statement; the kept `let` and
    the changed one differ in whether their name is assigned again in the file: `let
    frozens`, `let frozen` become `const`; `let n` (`n += 1`), a `let` with no value (`const`
    needs one), a loop's `let` of several names (`i++`) and a destructuring stay."""
    after = MIDDLEWARE.replace("let argv", "const argv")
    result = synthesize([Example(MIDDLEWARE, after, path="test/middleware.js")])
    assert result.apply(MIDDLEWARE)[0] == after
    got, _ = result.apply(COMMAND)
    assert got == COMMAND.replace("let frozens", "const frozens").replace(
        "let frozen =", "const frozen ="
    )
    files = [("test/middleware.js", MIDDLEWARE), ("lib/command.js", COMMAND)]
    assert not check_rules(result.rules, files, "javascript")
