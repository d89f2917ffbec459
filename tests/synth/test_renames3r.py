"""Wave 3r of issue 26: a rename's follow-up renames the name in the file's import too
(docs/synth.md § Imports, "a rewrite that renames one name")."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_rules

INDEX = (
    "export type UseStore<T extends State, A = StoreApi<T>> = {\n  (): T\n}\n\n"
    "export function create<TState extends State>(\n  api: StoreApi<TState>\n"
    "): UseStore<TState, StoreApi<TState>> {\n  return api\n}\n"
)
CONTEXT = (
    "import { ReactNode } from 'react'\n"
    "import { EqualityChecker, UseStore } from 'zustand'\n\n"
    "function createContext<TState extends State>() {\n"
    "  const ctx = reactCreateContext<UseStore<TState> | undefined>(undefined)\n"
    "  const storeRef = useRef<UseStore<TState>>()\n  return ctx\n}\n"
)


def test_a_type_renamed_at_its_uses_is_renamed_in_the_import() -> None:
    """zustand 5f5527d5: `UseStore<…>` -> `UseBoundStore<…>` where the example file keeps the
    `UseStore` definition, so the rule is the generic type only; context.ts imports
    `UseStore` from 'zustand' and, its uses renamed, kept importing the old name (a broken
    file). The follow-up renames it there: the file uses the new name and not the old."""
    after = INDEX.replace("): UseStore<", "): UseBoundStore<")
    result = synthesize([Example(INDEX, after, path="src/index.ts")])
    assert result.apply(INDEX)[0] == after  # the kept definition stays
    got, _ = result.apply(CONTEXT)
    assert got == CONTEXT.replace("UseStore", "UseBoundStore")
    files = [("src/index.ts", INDEX), ("src/context.ts", CONTEXT)]
    assert not check_rules(result.rules, files, "typescript")
    # The old name still used elsewhere (`UseStore` alone, no generic): the import stays.
    mixed = CONTEXT + "let plain: UseStore\n"
    got, _ = result.apply(mixed)
    assert "import { EqualityChecker, UseStore } from 'zustand'" in got
    assert "useRef<UseBoundStore<TState>>" in got
    # A file that already imports the new name gets no second binding.
    both = CONTEXT.replace("UseStore }", "UseStore, UseBoundStore }")
    got, _ = result.apply(both)
    assert "import { EqualityChecker, UseStore, UseBoundStore } from 'zustand'" in got


def test_python_and_rust_imports_follow_a_narrow_rename() -> None:
    """The same follow-up for `from m import name` and a Rust use-list."""
    before = (
        "from .x import Template\n\n\ndef make(s):\n    return Template(s)\n\n\n"
        "class Template:\n    pass\n"
    )
    after = before.replace("return Template(s)", "return template_from_code(s)")
    result = synthesize([Example(before, after, path="jinja2/environment.py")])
    assert result.apply(before)[0] == after
    held = "from jinja2.environment import Template\n\n\ndef load(s):\n    return Template(s)\n"
    assert result.apply(held)[0] == held.replace("Template", "template_from_code")

    rs = (
        "use crate::body::Body;\n\nfn a() -> Response {\n    Body::wrap(x)\n}\n\n"
        "fn e() {\n    let b = Body::empty();\n}\n"
    )
    rs_after = rs.replace("Body::wrap(x)", "Inner::wrap(x)")
    result = synthesize([Example(rs, rs_after, path="src/a.rs")])
    assert result.apply(rs)[0] == rs_after  # `Body::empty()` kept: the rule is narrow
    held_rs = "use crate::body::{Body, Other};\n\nfn c() -> Other {\n    Body::wrap(q)\n}\n"
    got, _ = result.apply(held_rs)
    assert got == held_rs.replace("Body", "Inner")
    # `Body` still used (`Body::empty()`): its import stays.
    kept = held_rs + "fn d() {\n    Body::empty();\n}\n"
    got, _ = result.apply(kept)
    assert got.startswith("use crate::body::{Body, Other};\n")
    files = [("src/a.rs", rs), ("src/c.rs", held_rs), ("src/d.rs", kept)]
    # Rule by rule, as the CLI runs them (a follow-up sees the rewritten text only on a second
    # `ast-grep scan --update-all`, as every import follow-up: docs/synth.md § Imports).
    assert not check_rules(result.rules, files, "rust")


def test_a_type_renamed_where_its_definition_stays_is_narrowed_by_context_not_layout() -> None:
    """urfave/cli b6c5a56b: `&StringArg{…}` -> `&StringArgs{…}` in args.go, which keeps
    `StringArg = ArgumentBase[…]` (so a bare rename is refused). The winner was the lifted
    literal with its layout, `StringArg{\\n\\t\\t$$$A,\\n\\t}`: none of the four held-out
    literals, indented deeper, matched. The rename narrowed by where the site sits (the
    type of a composite literal) is preferred over a pattern carrying the example's lines."""
    before = (
        "package cli\n\nvar AnyArguments = []Argument{\n\t&StringArg{\n\t\tMax: -1,\n\t},\n}\n\n"
        "type (\n\tStringArg = ArgumentBase[string, StringConfig, stringValue]\n)\n"
    )
    after = before.replace("&StringArg{", "&StringArgs{")
    result = synthesize([Example(before, after, path="args.go")])
    assert result.apply(before)[0] == after
    held = (
        "package cli\n\nfunc TestArgs(t *testing.T) {\n\tcmd.Arguments = append(cmd.Arguments,\n"
        '\t\t&StringArg{\n\t\t\tName: "sa",\n\t\t},\n\t)\n\targ := &StringArg{Min: 0}\n'
        "\tvar s StringArg\n}\n"
    )
    got, _ = result.apply(held)
    assert got == held.replace("&StringArg{", "&StringArgs{")


def test_a_member_replaced_by_a_call_keeps_the_chain_layout() -> None:
    """yargs f13ebf43: `.argv` -> `.parse()` at the end of fluent chains, one example on one
    line (`y.argv`), one at the end of a chain over lines. The rules were rooted at the
    member access: the example's receiver (`y.argv`) or its line break and indentation in
    the fix (`$A\\n  .parse()`), so chains laid out otherwise got nothing or the example's
    indentation. Rooted at the member's name, receiver and layout stay as they are; the
    example's change is inside its site, which the evaluator now accepts."""
    one = "var y = yargs.command('get', 'x')\n  .help()\n\ny.argv\n"
    chain = "require('../../index')\n  .option('foo', {\n    nargs: 1\n  })\n  .argv\n"
    result = synthesize(
        [
            Example(one, one.replace("y.argv", "y.parse()"), path="a.js"),
            Example(chain, chain.replace(".argv", ".parse()"), path="b.js"),
        ]
    )
    held = (
        "it('works', () => {\n  const argv = yargs(['--x'])\n      .alias('x', 'y')\n"
        "      .argv\n  argv.x.should.equal(true)\n  yargs().option('a').argv\n})\n"
    )
    want = held.replace("      .argv", "      .parse()").replace(
        "option('a').argv", "option('a').parse()"
    )
    assert result.apply(held)[0] == want
    assert not check_rules(result.rules, [("held.js", held)], "javascript")
