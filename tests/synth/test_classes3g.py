"""Wave 3g of issue 26 (synth5): classes of wrong rewrites on real edits, each a small
self-written reproduction that fails on the branch start (docs/synth.md § Precision on real
edits, wave 3g)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_rule_that_names_nothing_keeps_to_the_name_every_site_binds() -> None:
    """koa's `app.use(function(next){` -> `app.use(function *(next){` (middleware made
    generators): the rule `($$$A)` -> ` *($$$A)` names nothing, and the example file keeps no
    other function with parameters to object, so it made every `function(done){` of the
    tests a generator (35 wrong hunks). Every site binds the same name `next`: the rule
    keeps to it."""
    before = (
        "app.use(function(next){\n"
        "  return function *(){ yield next; };\n"
        "});\n"
        "app.use(function(next){\n"
        "  return function *(){ this.body = 1; };\n"
        "});\n"
    )
    after = before.replace("function(next)", "function *(next)")
    result = synthesize([Example(before, after, path="bench.js")])
    held = (
        "it('composes', function(done){\n"
        "  app.use(function(next){\n"
        "    return function *(){};\n"
        "  });\n"
        "  done();\n"
        "});\n"
    )
    want = held.replace("function(next)", "function *(next)")
    assert result.apply(held)[0] == want


def test_a_single_name_is_pinned_only_when_every_site_binds_it() -> None:
    """The pin needs two sites binding one name: two middleware functions with different
    parameter names keep the open rule (a list of two names would be a guess)."""
    before = "app.use(function(next){\n  return 1;\n});\napp.use(function(ctx){\n  return 2;\n});\n"
    after = before.replace("function(", "function *(")
    result = synthesize([Example(before, after, path="bench.js")])
    held = "it('x', function(done){\n  done();\n});\n"
    assert result.apply(held)[0] == held.replace("function(", "function *(")


def test_a_rule_narrowed_by_kept_names_keeps_to_the_top_level_its_sites_stand_at() -> None:
    """pluggy's `_Namespace = …` -> `_Namespace: TypeAlias = …`, made on module-level aliases
    and kept on `_T = TypeVar(…)` and on a function's locals: narrowed by the kept names
    only (`A` not `_T|plugin_name`), the rule rewrote every local assignment of another
    file (`opts: TypeAlias = spec.opts`, 20 wrong hunks). Every assignment's parent is an
    `expression_statement`, kept or not; the statement's container tells them apart (the
    module), so the rule keeps to the top level and still reaches an alias it never saw."""
    before = (
        "from typing import TypeVar\n"
        "\n"
        "_T = TypeVar('_T')\n"
        "_Namespace = ModuleType | type\n"
        "_Plugin = object\n"
        "_HookExec = Callable[[str], object]\n"
        "\n"
        "\n"
        "def register(plugin, name=None):\n"
        "    plugin_name = name or canonical(plugin)\n"
        "    return plugin_name\n"
    )
    after = before
    for name in ("_Namespace", "_Plugin", "_HookExec"):
        after = after.replace(f"{name} =", f"{name}: TypeAlias =")
    result = synthesize([Example(before, after, path="hooks.py")])
    held = "_HookImpl = Callable[..., object]\n\n\ndef load(spec):\n    opts = spec.opts\n    return opts\n"
    want = held.replace("_HookImpl =", "_HookImpl: TypeAlias =")
    assert result.apply(held)[0] == want


_MW = (
    "package m\n"
    "\n"
    "func {name}(next http.Handler) http.Handler {{\n"
    "\tfn := func(w http.ResponseWriter, r *http.Request) {{\n"
    "\t\tctx := r.Context()\n"
    "\t\tnext.ServeHTTP(w, r)\n"
    "\t}}\n"
    "\treturn http.HandlerFunc(fn)\n"
    "}}\n"
)


def test_a_statement_inserted_in_tab_indented_code_is_indented_at_its_own_depth() -> None:
    """chi's `r = r.WithContext(ctx)` inserted after `ctx := …` in middleware, two tabs deep
    in both examples: ast-grep re-indents a fix by spaces only, so the fix writes the tabs
    out — and wrote two tabs where the held-out file's statement stands three deep (inside
    an `if`): the right statement, one tab short. The rule keeps to its depth and repeats
    for the others, each by where its block closes."""
    examples = []
    for name in ("a", "b"):
        before = _MW.format(name=name)
        after = before.replace(
            "\t\tnext.ServeHTTP(w, r)\n", "\t\tr = r.WithContext(ctx)\n\t\tnext.ServeHTTP(w, r)\n"
        )
        examples.append(Example(before, after, path=f"{name}.go"))
    result = synthesize(examples)
    held = (
        "package m\n"
        "\n"
        "func t(next http.Handler) http.Handler {\n"
        "\tfn := func(w http.ResponseWriter, r *http.Request) {\n"
        "\t\tif ok {\n"
        "\t\t\tctx := r.Context()\n"
        "\t\t\tnext.ServeHTTP(w, r)\n"
        "\t\t}\n"
        "\t}\n"
        "\treturn http.HandlerFunc(fn)\n"
        "}\n"
    )
    want = held.replace(
        "\t\t\tnext.ServeHTTP(w, r)\n", "\t\t\tr = r.WithContext(ctx)\n\t\t\tnext.ServeHTTP(w, r)\n"
    )
    assert result.apply(held)[0] == want
    # Still the examples' own depth, and nothing in a block laid out on one line.
    assert result.apply(_MW.format(name="c"))[0] == examples[0].after.replace("func a(", "func c(")
    one_line = "package m\n\nfunc u() {\n\tfn := func() { ctx := 1; next.ServeHTTP(w, r) }\n}\n"
    assert result.apply(one_line)[0] == one_line


def test_an_inserted_statement_goes_where_the_name_it_uses_is_declared() -> None:
    """ky's `await server.close();` added after the last statement of the tests that start
    a server and forgot to close it: "after the last statement of every test" also hits
    the tests that start none (the examples keep those, so that rule is refused), and the
    rule fell back to one literal anchor per site (0 of 22 held-out sites). The statement
    uses `server`; every site's block declares it (`const server = …`): the rule keeps to
    such blocks. The anchor's own layout (a multi-line call in the example, one line in
    the held-out test) is no context for an insertion. (Two sites: one statement inserted
    once in a function is learned by its own anchor, wave 3e.)"""
    before = (
        "test('a', async t => {\n"
        "\tconst server = await createServer();\n"
        "\tawait t.throwsAsync(\n"
        "\t\tky.get(server.url),\n"
        "\t\t{message: 'oops'},\n"
        "\t);\n"
        "});\n"
        "\n"
        "test('b', async t => {\n"
        "\tconst response = await ky.get('https://example.com');\n"
        "\tt.is(response.status, 200);\n"
        "});\n"
        "\n"
        "test('c', async t => {\n"
        "\tconst server = await createServer();\n"
        "\tt.is(await ky.get(server.url).text(), 'ok');\n"
        "\tawait server.close();\n"
        "});\n"
        "\n"
        "test('f', async t => {\n"
        "\tconst server = await createServer();\n"
        "\tawait t.throwsAsync(ky.get(server.url), {message: 'no'});\n"
        "});\n"
    )
    after = before.replace("\t);\n});\n", "\t);\n\n\tawait server.close();\n});\n", 1).replace(
        "'no'});\n});\n", "'no'});\n\n\tawait server.close();\n});\n"
    )
    result = synthesize([Example(before, after, path="test/hooks.ts")])
    held = (
        "test('d', async t => {\n"
        "\tconst server = await createServer();\n"
        "\tt.is((await ky.get(server.url)).status, 200);\n"
        "});\n"
        "\n"
        "test('e', async t => {\n"
        "\tt.is(typeof ky, 'function');\n"
        "});\n"
    )
    want = held.replace("200);\n});\n", "200);\n\n\tawait server.close();\n});\n", 1)
    assert result.apply(held)[0] == want
