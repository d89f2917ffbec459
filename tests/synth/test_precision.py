"""Wave 3d of issue 26 (synth-precision): where the examples cannot decide, the narrower rule
that still covers every example site. Each test is a small self-written reproduction of a
real commit's precision loss (see docs/synth.md § Constraints and negatives)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ast_grep_py import SgRoot

from oopav.sandbox.astgrep import find_cli
from oopav.synth import Example, SynthRule, synthesize
from oopav.synth.precision import closures


def test_a_rule_narrowed_by_kept_names_is_closed_by_what_every_site_binds() -> None:
    """pluggy's `self.x = …` -> `self.x: "Final" = …` in `__init__`, with other assignments
    kept: a list of the kept names alone (`A` not `count|name|…`) would also rewrite a
    module-level `_T = TypeVar("_T")` in another file. Every site binds an attribute, so the
    rule says so too."""
    before = (
        "class M:\n"
        "    def __init__(self, name):\n"
        "        self.name = name\n"
        "        self._cache = {}\n"
        "        self.hook = Relay()\n"
        "        count = 0\n"
        "\n"
        "    def run(self):\n"
        "        res = self.hook()\n"
        "        total = len(res)\n"
        "        return total\n"
    )
    after = before.replace("self.name =", 'self.name: "Final" =').replace(
        "self.hook =", 'self.hook: "Final" ='
    )
    result = synthesize([Example(before, after, path="m.py")])
    [rule] = result.rules
    assert rule.constraints is not None and rule.constraints["A"]["kind"] == "attribute"
    held = "_T = TypeVar('_T')\n\n\nclass H:\n    def __init__(self, spec):\n        self.spec = spec\n"
    assert result.apply(held)[0] == held.replace("self.spec =", 'self.spec: "Final" =')


def test_a_metavariable_every_site_binds_alike_stays_that_value_when_kept_code_differs() -> None:
    """serde's `de::Deserializer` -> `de::Deserializer<'de>` in `where` bounds, with
    `de::Error` and `io::Write` kept there and `impl de::Visitor for V` kept: `$A::$B` -> `$A::$B<'$A>`
    narrowed by the kept names only would also give `fmt::Display<'fmt>` and rewrite
    `impl de::Deserializer for X` headers the examples never show changed. Every site binds
    `A` to `de` and sits in a trait bound, so the rule keeps to both."""
    before = (
        "impl de::Visitor for V {\n"
        "    fn visit<D>(self, d: D) -> Result<()>\n"
        "        where D: de::Deserializer\n"
        "    {\n"
        "        Ok(())\n"
        "    }\n"
        "    fn visit_map<M>(self, m: M) -> Result<()>\n"
        "        where M: de::MapVisitor\n"
        "    {\n"
        "        Ok(())\n"
        "    }\n"
        "    fn err<E>(self, e: E) -> Result<()>\n"
        "        where E: de::Error\n"
        "    {\n"
        "        Ok(())\n"
        "    }\n"
        "    fn write<W>(self, w: W) where W: io::Write {}\n"
        "}\n"
    )
    after = before.replace("de::Deserializer\n", "de::Deserializer<'de>\n").replace(
        "de::MapVisitor\n", "de::MapVisitor<'de>\n"
    )
    result = synthesize([Example(before, after, path="map.rs")])
    [rule] = result.rules
    assert rule.constraints is not None and rule.constraints["A"] == {"regex": "^de$"}
    held = (
        "impl fmt::Display for Number {\n"
        "    fn f<T>(self) where T: fmt::Write {}\n"
        "}\n"
        "impl de::Deserializer for Value {\n"
        "    fn g<V>(self) where V: de::SeqVisitor {}\n"
        "}\n"
    )
    want = held.replace("de::SeqVisitor {", "de::SeqVisitor<'de> {")
    assert result.apply(held)[0] == want


def test_changed_in_as_many_functions_as_kept_names_the_changed_ones() -> None:
    """rich's `Console(…)` -> `Console(…, _environ={})` in three test functions, kept in three
    others of the same files: as many kept as changed, so the examples cannot say that the
    commit changed every other function — the rule names the changed ones (precision
    first), instead of rewriting every `Console(…)` outside the three kept."""

    def fn(name: str, extra: str) -> str:
        return f"def {name}():\n    console = Console(width=1{extra})\n    check(console)\n\n\n"

    before = "".join(
        fn(n, "") for n in ("test_a", "test_b", "test_c", "test_x", "test_y", "test_z")
    )
    after = "".join(fn(n, ", _environ={}") for n in ("test_a", "test_b", "test_c")) + "".join(
        fn(n, "") for n in ("test_x", "test_y", "test_z")
    )
    result = synthesize([Example(before, after, path="test_m.py")])
    [rule] = result.rules
    assert "inside" not in repr(rule.rule.get("not", {}))  # no kept context named
    assert result.apply(fn("test_other", ""))[0] == fn("test_other", "")


def test_a_pattern_that_names_nothing_keeps_to_where_its_sites_sit() -> None:
    """chi's `cW(&buf, …)` -> `cW(buf, …)`: `&$A` -> `$A` names nothing, and the example
    keeps no `&x` elsewhere to object, so it rewrote `return &bw` and `&fancyWriter{}` in
    another file. Closed by where the site sits (an argument list), it does not."""
    before = 'package m\n\nfunc f() {\n\tcW(&buf, bRed, "panic")\n}\n'
    result = synthesize([Example(before, before.replace("&buf", "buf"), path="r.go")])
    [rule] = result.rules
    assert rule.rule["inside"] == {"kind": "argument_list", "stopBy": "neighbor"}
    held = "package m\n\nfunc g() *W {\n\tcW(&out, x)\n\treturn &bw\n}\n"
    assert result.apply(held)[0] == held.replace("&out", "out")


def test_a_pattern_that_names_nothing_keeps_the_kind_every_site_binds() -> None:
    """ky's `t.notThrowsAsync(() => ky(…))` -> `t.notThrowsAsync(ky(…))` at two sites: `() =>
    $A` -> `$A` would also unwrap `() => new Response(…)` handed to another call. Every site
    binds a call in an argument list, so the rule says both."""
    before = (
        "test('a', async t => {\n\tawait t.notThrowsAsync(() => ky(url, {a: 1}));\n"
        "\tawait t.notThrowsAsync(() => ky(url, {b: 2}));\n});\n"
    )
    after = before.replace("(() => ky(", "(ky(")
    result = synthesize([Example(before, after, path="t.js")])
    [rule] = result.rules
    assert rule.constraints == {"A": {"kind": "call_expression"}}
    held = "hook(() => new Response(body));\nawait t.throwsAsync(() => ky(url));\n"
    assert result.apply(held)[0] == held.replace("(() => ky(url))", "(ky(url))")


def test_a_path_prefix_learned_from_paths_of_several_kinds_keeps_to_their_heads() -> None:
    """serde's `use lib::*;` / `use io;` -> `use crate::…;` (two example files, each with
    that one `use`): `use $A;` -> `use crate::$A;` also wrote `use crate::super::Value;`
    and `use crate::serde::de;`. The sites bind a wildcard and a name (no one kind), so
    their heads are what the rule keeps to."""
    rule = {"pattern": "use $A;"}
    code = "use lib::*;\nuse io;\n"
    sites = SgRoot(code, "rust").root().find_all({"rule": rule})
    [(narrowed, cons), *_] = closures(rule, "use crate::$A;", None, sites)
    assert cons == {"A": {"regex": r"^(?:io|lib)\b"}}
    held = "use super::Value;\nuse serde::de;\nuse lib::str::FromStr;\nuse io;\n"
    learned = SynthRule("r", "rust", narrowed, "use crate::$A;", constraints=cons)
    assert learned.apply(held)[0] == held.replace("use lib", "use crate::lib").replace(
        "use io", "use crate::io"
    )


def test_a_token_rewritten_into_a_path_keeps_to_where_its_site_sits() -> None:
    """`use error::Error;` -> `use crate::error::Error;` learned as the token `error` ->
    `crate::error` rewrote `fn error(…)`, `self.error` and `error(read, …)` calls. A single
    token rewritten into more than a token (not a rename) keeps to its parent's kind and
    field (the path of a scoped name, so `super::error::E` keeps its `error`)."""
    before = "use error::Error;\n\nfn f() {}\n"
    result = synthesize(
        [Example(before, before.replace("use error", "use crate::error"), path="a.rs")]
    )
    held = (
        "use error::Error;\nuse super::error::E;\nfn error(r: &R) -> E { self.error; error(r) }\n"
    )
    assert result.apply(held)[0] == held.replace("use error", "use crate::error")


def test_an_operator_substituted_in_place_is_not_narrowed() -> None:
    """`a == b` -> `a === b`: the changed token is what the rule is about (as a name
    would be), so the rule stays `$A == $B` and reaches other contexts."""
    result = synthesize([Example("if (a == b) {}\n", "if (a === b) {}\n", language="javascript")])
    [rule] = result.rules
    assert rule.rule == {"pattern": "$A == $B"}
    assert result.apply("const s = x.id == y.id;\n")[0] == "const s = x.id === y.id;\n"


def test_a_member_rename_stays_in_the_member_namespace() -> None:
    """structlog's `factory.calls` -> `factory.call_args_list`: in Python an attribute's
    name is an `identifier` like a variable's, so the bare rename also renamed a local
    `calls = configure_logging()` in another file. Every site is an attribute's name, so
    the rename keeps to attribute names."""
    before = "def test_a(factory):\n    assert [call('x')] == factory.calls\n"
    result = synthesize(
        [Example(before, before.replace(".calls", ".call_args_list"), path="test_c.py")]
    )
    [rule] = result.rules
    member = {"kind": "attribute", "field": "attribute", "stopBy": "neighbor"}
    # Wave 3h: or a method of that name defined in a class (the member's definition).
    assert {"inside": member} in rule.rule.get("any", [{"inside": rule.rule.get("inside")}])
    held = "def test_b(o):\n    calls = configure()\n    assert calls == o.calls\n"
    assert result.apply(held)[0] == held.replace("o.calls", "o.call_args_list")


def test_kept_names_with_nothing_to_close_the_rule_give_way_to_the_sites_own_names() -> None:
    """ky's `import {HttpMethod}` -> `import {type HttpMethod}` (and `Mutable`), with `Ky`,
    `stop`, `requestMethods`, `validateAndMerge` imported as values and kept: a list of the
    kept names (`A` not those) made `type chromium` of a value imported in another file.
    Every name is an identifier in an import specifier, so nothing the sites share closes
    that list: the sites' own names are the narrower rule that still covers them."""
    before = (
        "import {Ky} from './core/Ky.js';\n"
        "import {requestMethods, stop} from './core/constants.js';\n"
        "import {HttpMethod} from './types/options.js';\n"
        "import {validateAndMerge} from './utils/merge.js';\n"
        "import {Mutable} from './utils/types.js';\n"
    )
    after = before.replace("{HttpMethod}", "{type HttpMethod}").replace(
        "{Mutable}", "{type Mutable}"
    )
    result = synthesize([Example(before, after, path="index.ts")])
    [rule] = result.rules
    assert rule.constraints == {"A": {"regex": "^(?:HttpMethod|Mutable)$"}}
    held = "import {chromium} from 'playwright';\nimport {Mutable} from './types.js';\n"
    assert result.apply(held)[0] == held.replace("{Mutable}", "{type Mutable}")


def test_a_layout_kept_rule_leaves_an_outer_node_whose_nested_one_it_cannot_rewrite() -> None:
    """ky's trailing commas in tab-indented code: the rule is kept to its sites' depth (a
    multi-line fix is not re-indented there), so on `ky.create({headers: {…}})` spread
    over lines it gave `},` to the outer object and left the inner `rainbow: 'rainbow'`
    without its comma — half an edit, a wrong hunk. An object holding a multi-line object
    is left alone; a flat one at the sites' depth still gets its comma. Wave 3f: a change
    of trailing commas only is learned by `synth/commas.py` (the last item of every
    multi-line object, at every depth), which gives the whole edit: the inner object's
    comma and the outer one's."""
    before = (
        "test('a', async t => {\n\tconst x = await ky.get(url, {\n\t\tfoo: true\n\t});\n"
        "\tconst y = {a: 1};\n\tt.is(x, y);\n});\n"
    )
    after = before.replace("\t\tfoo: true\n", "\t\tfoo: true,\n")
    result = synthesize([Example(before, after, path="t.ts")])
    held = (
        "test('b', async t => {\n\tconst e = ky.create({\n\t\theaders: {\n"
        "\t\t\trainbow: 'rainbow'\n\t\t}\n\t});\n\tconst z = await ky.get(url, {\n"
        "\t\tbar: 1\n\t});\n});\n"
    )
    want = (
        held.replace("\t\tbar: 1\n", "\t\tbar: 1,\n")
        .replace("'rainbow'\n", "'rainbow',\n")
        .replace("\t\t}\n\t});\n\tconst z", "\t\t},\n\t});\n\tconst z")
    )
    assert result.apply(held)[0] == want


def test_a_rule_that_wraps_its_match_keeps_off_code_already_in_the_new_form() -> None:
    """jinja's `t.Iterable` -> `t.Iterable[t.Any]` (kept `t.Mapping[str, t.Any]`): applied to
    code that already reads `t.Iterable[t.Any]` the rule gave `t.Iterable[t.Any][t.Any]`.
    `not` inside a subscript at all would lose `t.Optional[t.Iterator]` (a site inside a
    subscript), so the guard is the field the match lands in: a subscript's value."""
    before = (
        "a: t.Iterable = x\nb: t.Optional[t.Iterator] = y\nc: t.Sequence = z\n"
        "d: t.Mapping[str, t.Any] = w\n"
    )
    after = (
        "a: t.Iterable[t.Any] = x\nb: t.Optional[t.Iterator[t.Any]] = y\n"
        "c: t.Sequence[t.Any] = z\nd: t.Mapping[str, t.Any] = w\n"
    )
    result = synthesize([Example(before, after, path="m.py")])
    held = "e: t.Iterable[t.Any] = v\nf: t.List = u\n"
    assert result.apply(held)[0] == "e: t.Iterable[t.Any] = v\nf: t.List[t.Any] = u\n"


def test_an_inserted_statement_goes_only_into_the_container_its_anchors_sit_in() -> None:
    """A statement inserted before the first `const` of two functions: the rule "before the
    first `const` of its container" also matched the `const` of an `export const` (whose
    container is the `export_statement`) and wrote `export console.log(…);`, code that no
    longer parses (zod). The anchors sit in a `statement_block`; so does the rule."""
    before = (
        "function parse(data) {\n  const x = load(data);\n  return x;\n}\n\n"
        "function check(data) {\n  const ok = test(data);\n  return ok;\n}\n"
    )
    after = before.replace("  const ", "  console.log('PARSE');\n  const ")
    result = synthesize([Example(before, after, path="a.ts")])
    held = (
        "export const getType = (d) => {\n  return typeof d;\n};\n\n"
        "function run(v) {\n  const y = v + 1;\n  return y;\n}\n"
    )
    got = result.apply(held)[0]
    assert "export console" not in got
    assert got == held.replace("  const y", "  console.log('PARSE');\n  const y")


def test_one_statement_inserted_in_a_function_is_learned_by_its_own_anchor() -> None:
    """zod's debug `console.log('ASYNCPARSE');` inserted once, before a function's first
    `const`: "before the first `const` of every block" put it into 14 function bodies of
    another file. One site inside a function says nothing about other functions: the rule
    keeps to its anchor."""
    before = "function parseAsync(data) {\n  const x = load(data);\n  return x;\n}\n"
    after = before.replace("  const x", "  console.log('ASYNCPARSE');\n  const x")
    result = synthesize([Example(before, after, path="a.ts")])
    held = "function run(v) {\n  const y = v + 1;\n  return y;\n}\n"
    assert result.apply(held)[0] == held
    assert result.apply(before)[0] == after


def test_an_appended_argument_never_lands_in_an_empty_list_or_after_a_trailing_comma() -> None:
    """rich's `Console(…)` -> `Console(…, legacy_windows=False)` learned from one call:
    `Console($$$A)` -> `Console($$$A, legacy_windows=False)` wrote `Console(,
    legacy_windows=False)` for `Console()`, a double comma after a trailing one (`$$$A`
    takes it along) and the keyword twice where a call passes it already — code that no
    longer runs. Those calls are left alone; the others still get the argument."""
    before = "def test_screen():\n    console = Console(color_system=None, width=20, height=5)\n"
    after = before.replace("height=5)", "height=5, legacy_windows=False)")
    result = synthesize([Example(before, after, path="t.py")])
    kept = (
        "def test_a():\n"
        "    console = Console()\n"
        "    other = Console(\n        force_terminal=True, _environ={},\n    )\n"
        "    win = Console(legacy_windows=True)\n"
    )
    assert result.apply(kept)[0] == kept
    held = kept + "    plain = Console(color_system='auto')\n"
    assert result.apply(held)[0] == kept + (
        "    plain = Console(color_system='auto', legacy_windows=False)\n"
    )


def test_kept_expressions_give_way_to_the_sites_own_values() -> None:
    """zod's `core._parse(ZodRealError) as any` -> `core._parse(ZodRealError)` made on six
    calls and kept on six `_safe…` ones: `$A as any` with `A` not the six kept calls removed
    every other `as any` of another file (51 wrong hunks). A list of kept *expressions*
    is instances, not names the change keeps off: the sites' own values come first."""
    before = (
        "export const parse = core._parse(ZodError) as any;\n"
        "export const parseAsync = core._parseAsync(ZodError) as any;\n"
        "export const safeParse = core._safeParse(ZodError) as any;\n"
        "export const safeParseAsync = core._safeParseAsync(ZodError) as any;\n"
    )
    after = before.replace(
        "(ZodError) as any;\nexport const parseAsync", "(ZodError);\nexport const parseAsync"
    )
    after = after.replace("_parseAsync(ZodError) as any", "_parseAsync(ZodError)")
    result = synthesize([Example(before, after, path="parse.ts")])
    held = "inst.brand = () => inst as any;\nconst p = core._parse(ZodError) as any;\n"
    assert result.apply(held)[0] == held.replace("(ZodError) as any", "(ZodError)")


def test_a_rule_narrowed_by_kept_names_keeps_to_the_few_kinds_its_sites_sit_in() -> None:
    """jinja's `t.Type` -> `t.Type[t.Any]` made in a subscript and in parameters' types, with
    `t.Any` and `t.TYPE_CHECKING` kept: `$A.$B` with `B` not the kept names also wrote
    `t.cast[t.Any](int, v)` and `class G(t.NamedTuple[t.Any])` in another file. Every site
    sits in a `subscript` or a `type`; so does the rule (wave 3e: a few kinds, not one)."""
    before = (
        "import typing as t\n\n"
        "if t.TYPE_CHECKING:\n    import os\n\n"
        "_spec: t.Tuple[t.Type, str] = ()\n\n\n"
        "def test_in(value: t.Any, seq: t.Container) -> bool:\n    return value in seq\n\n\n"
        "def each(items: t.Iterator) -> t.Any:\n    return items\n"
    )
    after = (
        before.replace("t.Type,", "t.Type[t.Any],")
        .replace("seq: t.Container)", "seq: t.Container[t.Any])")
        .replace("items: t.Iterator)", "items: t.Iterator[t.Any])")
    )
    result = synthesize([Example(before, after, path="m.py")])
    held = (
        "import typing as t\n\n\ndef f(v: t.Iterable) -> int:\n    return t.cast(int, v)\n\n\n"
        "class G(t.NamedTuple):\n    a: int\n"
    )
    assert result.apply(held)[0] == held.replace("v: t.Iterable)", "v: t.Iterable[t.Any])")


def test_a_name_added_to_an_import_keeps_to_the_module_it_comes_from() -> None:
    """structlog's `from collections.abc import Iterable, Sequence` gaining `Callable`:
    `from $A.$B import $C, $D` -> `from $A.$B import Callable, $C, $D` put `Callable` into
    every two-name import of a dotted module (`from twisted.python.log import …` even lost
    its `.log`). The module is what the import is about: it stays that module."""
    before = (
        "import sys\nfrom collections.abc import Iterable, Sequence\n\nfrom structlog import dev\n"
        "\n\ndef f(x: Sequence) -> Iterable:\n    return x\n"
    )
    after = before.replace("import Iterable, Sequence", "import Callable, Iterable, Sequence")
    result = synthesize([Example(before, after, path="m.py")])
    held = (
        "from collections.abc import Mapping, Sequence\n"
        "from twisted.python.log import ILogObserver, textFromEventDict\n"
    )
    assert result.apply(held)[0] == held.replace("import Mapping", "import Callable, Mapping")


def test_an_expression_made_a_statement_stays_where_its_sites_statements_stand() -> None:
    """log's `b.iter(|| …)` -> `b.iter(|| …);` (a block's last expression made a statement):
    `$A.iter($$$B)` -> `$A.iter($$$B);` also matched `LOG_LEVEL_NAMES.iter()` in the middle
    of a method chain and wrote a `;` there. The sites sit in a `block`; so does the rule."""
    before = (
        "fn bench_a(b: &mut Bencher) {\n    b.iter(|| Value::from(1u8))\n}\n\n"
        "fn bench_b(b: &mut Bencher) {\n    b.iter(|| Value::from_debug(&1u8))\n}\n"
    )
    after = before.replace("1u8))\n", "1u8));\n")
    result = synthesize([Example(before, after, path="b.rs")])
    chain = (
        "fn level(s: &str) -> Option<usize> {\n    LOG_LEVEL_NAMES\n        .iter()\n"
        "        .position(|&n| n == s)\n}\n"
    )
    held = chain + "\nfn bench_c(b: &mut Bencher) {\n    b.iter(|| Value::from(2u8))\n}\n"
    assert result.apply(held)[0] == held.replace("(2u8))\n", "(2u8));\n")


def test_the_narrowed_rules_run_the_same_in_the_ast_grep_cli(tmp_path: Path) -> None:
    """The closures, the nested-layout guard and the idempotence field guard are plain
    ast-grep rule objects: the CLI applies them as the in-process rewriter does."""
    ky = (
        "test('a', async t => {\n\tconst x = await ky.get(url, {\n\t\tfoo: true\n\t});\n"
        "\tconst y = {a: 1};\n\tt.is(x, y);\n});\n"
    )
    ty = (
        "a: t.Iterable = x\nb: t.Optional[t.Iterator] = y\nc: t.Sequence = z\n"
        "d: t.Mapping[str, t.Any] = w\n"
    )
    go = 'package m\n\nfunc f() {\n\tcW(&buf, bRed, "panic")\n}\n'
    cases = [
        (
            Example(ky, ky.replace("\t\tfoo: true\n", "\t\tfoo: true,\n"), path="t.ts"),
            "t.ts",
            # No list nested in another's last item: the trailing-comma rule's nested
            # copies (wave 3f) reach those in process only (the CLI applies a rule
            # file's rules at once, docs/synth.md § Limits).
            "x(() => {\n\tconst e = ky.create({h: 1});\n"
            "\tconst z = await ky.get(url, {\n\t\tbar: 1\n\t});\n});\n",
        ),
        (
            Example(
                ty,
                ty.replace("t.Iterable =", "t.Iterable[t.Any] =")
                .replace("t.Iterator]", "t.Iterator[t.Any]]")
                .replace("t.Sequence =", "t.Sequence[t.Any] ="),
                path="m.py",
            ),
            "m.py",
            "e: t.Iterable[t.Any] = v\nf: t.List = u\n",
        ),
        (
            Example(go, go.replace("&buf", "buf"), path="r.go"),
            "r.go",
            "package m\n\nfunc g() *W {\n\tcW(&out, x)\n\treturn &bw\n}\n",
        ),
    ]
    for n, (example, name, held) in enumerate(cases):
        result = synthesize([example])
        (tmp_path / f"rule{n}.yml").write_text(result.to_yaml())
        tree = tmp_path / f"tree{n}"
        tree.mkdir()
        (tree / name).write_text(held)
        proc = subprocess.run(
            [
                find_cli(),
                "scan",
                "--rule",
                str(tmp_path / f"rule{n}.yml"),
                "--update-all",
                str(tree),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        want = result.apply(held)[0]
        assert want != held
        assert (tree / name).read_text() == want


def test_the_wave_3e_guards_run_the_same_in_the_ast_grep_cli(tmp_path: Path) -> None:
    """The append guard (`not: {any: [regex, …]}`), a closure by a few parent kinds
    (`inside: {any: [kind, …]}`), the statement guard and an import's pinned module are
    plain ast-grep rule objects: the CLI applies them as the in-process rewriter does."""
    console = "def test_screen():\n    console = Console(color_system=None, width=20, height=5)\n"
    typing = (
        "import typing as t\n\nif t.TYPE_CHECKING:\n    import os\n\n"
        "_spec: t.Tuple[t.Type, str] = ()\n\n\n"
        "def test_in(value: t.Any, seq: t.Container) -> bool:\n    return value in seq\n\n\n"
        "def each(items: t.Iterator) -> t.Any:\n    return items\n"
    )
    bench = (
        "fn bench_a(b: &mut Bencher) {\n    b.iter(|| Value::from(1u8))\n}\n\n"
        "fn bench_b(b: &mut Bencher) {\n    b.iter(|| Value::from_debug(&1u8))\n}\n"
    )
    imports = (
        "import sys\nfrom collections.abc import Iterable, Sequence\n\nfrom structlog import dev\n"
    )
    cases = [
        (
            Example(
                console,
                console.replace("height=5)", "height=5, legacy_windows=False)"),
                path="t.py",
            ),
            "t.py",
            "a = Console()\nb = Console(x=1,)\nc = Console(legacy_windows=True)\nd = Console(y=2)\n",
        ),
        (
            Example(
                typing,
                typing.replace("t.Type,", "t.Type[t.Any],")
                .replace("seq: t.Container)", "seq: t.Container[t.Any])")
                .replace("items: t.Iterator)", "items: t.Iterator[t.Any])"),
                path="m.py",
            ),
            "m.py",
            "def f(v: t.Iterable) -> int:\n    return t.cast(int, v)\n",
        ),
        (
            Example(bench, bench.replace("1u8))\n", "1u8));\n"), path="b.rs"),
            "b.rs",
            "fn level() -> usize {\n    NAMES\n        .iter()\n        .count()\n}\n\n"
            "fn bench_c(b: &mut Bencher) {\n    b.iter(|| 2)\n}\n",
        ),
        (
            Example(
                imports,
                imports.replace("import Iterable", "import Callable, Iterable"),
                path="i.py",
            ),
            "i.py",
            "from collections.abc import Mapping, Sequence\nfrom twisted.python.log import A, B\n",
        ),
    ]
    for n, (example, name, held) in enumerate(cases):
        result = synthesize([example])
        (tmp_path / f"rule{n}.yml").write_text(result.to_yaml())
        tree = tmp_path / f"tree{n}"
        tree.mkdir()
        (tree / name).write_text(held)
        proc = subprocess.run(
            [
                find_cli(),
                "scan",
                "--rule",
                str(tmp_path / f"rule{n}.yml"),
                "--update-all",
                str(tree),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        want = result.apply(held)[0]
        assert want != held
        assert (tree / name).read_text() == want
