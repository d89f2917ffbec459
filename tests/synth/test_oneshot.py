"""Wave 3f of issue 26 (synth-oneshot4): classes of one-shot misses on real edits that
recur across the seeded draws — each a small self-written reproduction of what the real
commits did (see docs/synth.md § One shot, wave 3f). Each fails on the branch start
(main ce49f87)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_tail_expression_made_a_statement_is_learned_by_the_signature() -> None:
    """serde's and log's `x.clear()` -> `x.clear();` (clippy's `semicolon_if_nothing_returned`)
    at the end of functions that return nothing, kept where a `-> T` is declared. The two
    sites call different heads (`round(…)`, `self.check(…)`): a literal head per site
    reached no held-out call. One rule `$A` -> `$A;` inside a function that declares no
    return type (the innermost one: a nested `fn … -> R` keeps its tail), and not under a
    `#[cfg(…)]` no site is under (the linter's run never compiled it: serde kept
    `R::begin_raw_buffering(self)` under `#[cfg(feature = "raw_value")]`)."""
    a = (
        "fn apply(x: &mut Vec<u8>) {\n    round(x, 1)\n}\n\n"
        "fn size(x: &Vec<u8>) -> usize {\n    count(x)\n}\n"
    )
    b = (
        "impl T {\n    fn reset(&mut self) {\n        self.check(1, 2)\n    }\n\n"
        "    fn get(&self) -> u8 {\n        self.value()\n    }\n}\n"
    )
    result = synthesize(
        [
            Example(a, a.replace("round(x, 1)\n", "round(x, 1);\n"), path="a.rs"),
            Example(b, b.replace("self.check(1, 2)\n", "self.check(1, 2);\n"), path="b.rs"),
        ]
    )
    [rule] = result.rules
    assert rule.fix == "$A;"
    held = (
        "impl U {\n    fn clear(&mut self) {\n        self.map.clear()\n    }\n\n"
        "    fn len(&self) -> usize {\n        self.map.len()\n    }\n}\n\n"
        "fn outer() {\n    struct V;\n    impl W for V {\n        fn visit(&self) -> R {\n"
        "            Ok(())\n        }\n    }\n    finish(V)\n}\n\n"
        "fn spawn() {\n    run(|| {\n        compute()\n    })\n}\n\n"
        '#[cfg(feature = "raw")]\nfn raw(&mut self) {\n    R::raw(self)\n}\n'
    )
    want = (
        held.replace("self.map.clear()\n", "self.map.clear();\n")
        .replace("finish(V)\n", "finish(V);\n")
        .replace(
            "    run(|| {\n        compute()\n    })\n",
            "    run(|| {\n        compute()\n    });\n",
        )
    )
    assert result.apply(held)[0] == want


def test_trailing_commas_are_one_rule_at_every_depth() -> None:
    """zod's and ky's formatter commits: the last item of every multi-line object and array
    gains a trailing comma, nested ones too. The sites are whole lists whose text gains
    commas at several depths (before: one literal rule per object, reaching no held-out
    list). One rule for the last item of a multi-line list of the kinds the examples
    changed, repeated as nested follow-ups (ast-grep rewrites the outer of two overlapping
    matches only); a call's multi-line arguments, which no example changed, are left."""
    before = (
        "const a = {\n  x: 1,\n  y: [\n    {\n      t: 2\n    }\n  ]\n};\n"
        "const b = [\n  'p',\n  'q'\n];\n"
    )
    after = (
        "const a = {\n  x: 1,\n  y: [\n    {\n      t: 2,\n    },\n  ],\n};\n"
        "const b = [\n  'p',\n  'q',\n];\n"
    )
    result = synthesize([Example(before, after, path="a.ts")])
    assert result.rules[0].fix == "$A,"
    assert all(r.follow_up == "nested" for r in result.rules[1:])
    held = (
        "export const c = {\n  k: {\n    m: [\n      {n: 1},\n      {\n        o: f(x)\n"
        "      }\n    ]\n  },\n  ...rest\n};\n"
        "call(\n  one,\n  two\n);\n"
        "const {\n  u,\n  ...others\n} = c;\n"
        "const d = [1, 2];\n"
    )
    want = (
        "export const c = {\n  k: {\n    m: [\n      {n: 1},\n      {\n        o: f(x),\n"
        "      },\n    ],\n  },\n  ...rest,\n};\n"
        "call(\n  one,\n  two\n);\n"
        "const {\n  u,\n  ...others\n} = c;\n"
        "const d = [1, 2];\n"
    )
    assert result.apply(held)[0] == want


def test_a_parameter_list_gaining_a_trailing_comma_means_every_list() -> None:
    """ky's prettier `trailingComma: all`: the examples show a parameter list and an object
    gaining the comma; held out, a call's arguments, a type's arguments and an import list
    gain it too (only object and array literals: ES5's, zod's `es5`)."""
    before = (
        "export function f(\n\toptions: Options\n) {\n\treturn g({\n\t\tdevtools: true\n\t});\n}\n"
    )
    after = "export function f(\n\toptions: Options,\n) {\n\treturn g({\n\t\tdevtools: true,\n\t});\n}\n"
    result = synthesize([Example(before, after, path="a.ts")])
    held = (
        "import {\n\tA,\n\tB\n} from './b.js';\n"
        "type T = Expect<\n\tEqual<A, B>\n>;\n"
        "h(\n\t'/unicorn',\n\t[\n\t\t'x'\n\t]\n);\n"
        "function k(\n\ta: number,\n\t...rest: string[]\n) {}\n"
    )
    want = (
        "import {\n\tA,\n\tB,\n} from './b.js';\n"
        "type T = Expect<\n\tEqual<A, B>,\n>;\n"
        "h(\n\t'/unicorn',\n\t[\n\t\t'x',\n\t],\n);\n"
        "function k(\n\ta: number,\n\t...rest: string[]\n) {}\n"
    )
    assert result.apply(held)[0] == want


def test_a_wrapped_pattern_reaches_macro_arguments_too() -> None:
    """serde's `i64::MAX` -> `i64::max_value()`: a path alone is no statement, so the
    pattern is `{context: "fn _f() { $A::MAX }", selector: scoped_identifier}`, and the
    token-tree follow-up (wave 3d) was only made for plain string patterns: the held-out
    `overflow!(res * 10 + digit, u64::MAX)` stayed. The wrapped snippet is what the
    follow-up's token regex is made of."""
    before = "fn f(v: u64) -> bool {\n    v <= i64::MAX as u64\n}\n"
    after = before.replace("i64::MAX", "i64::max_value()")
    result = synthesize([Example(before, after, path="a.rs")])
    assert [r.follow_up for r in result.rules] == [None, "macro"]
    held = "fn g(res: u64) -> bool {\n    overflow!(res * 10, u64::MAX) || x < u32::MAX\n}\n"
    want = "fn g(res: u64) -> bool {\n    overflow!(res * 10, u64::max_value()) || x < u32::max_value()\n}\n"
    assert result.apply(held)[0] == want


def test_a_code_sample_changed_in_doc_comments_alone_is_learned() -> None:
    """ky's `response.clone().json()` -> `response.json()` made only in JSDoc code samples
    (the examples' sites are all comments): "comments are not rewritable" refused it. Two
    sites or more making one substitution that rewrites code (not a word of prose) are
    learned as the comment rule (a whole-word `replace` on comment nodes, wave 3b)."""
    before = (
        "/**\n```\nconst data = await response.clone().json();\n```\n*/\nexport type A = 1;\n"
        "/**\n```\nconst x = await response.clone().json();\n```\n*/\nexport type B = 2;\n"
    )
    after = before.replace("response.clone().json()", "response.json()")
    result = synthesize([Example(before, after, path="a.ts")])
    held = "/**\n```\n\tconst data = await response.clone().json();\n```\n*/\nconst n = 1;\n"
    assert result.apply(held)[0] == held.replace("clone().json()", "json()")
    # Prose alone still fails (one site, a word).
    try:
        synthesize([Example("// a fetch\nx = 1;\n", "// a read\nx = 1;\n", path="b.ts")])
    except ValueError as exc:
        assert "comments are not rewritable" in str(exc)
    else:
        raise AssertionError("a prose comment alone was learned")


def test_a_go_statement_inserted_in_a_body_is_one_insertion_rule() -> None:
    """chi's `r = r.WithContext(ctx)` added before `next.ServeHTTP(w, r)`: Go's block holds
    a `statement_list`, which was no insertion container, so each example was a literal
    rewrite of its whole function body (reaching no other function). One example has a
    blank line before the new statement (its site: before the call), the other none (its
    site: after `ctx = …`); a rule inserting before the call makes both: one rule."""
    a = (
        "package m\n\nfunc A(next http.Handler) http.Handler {\n"
        "\tfn := func(w http.ResponseWriter, r *http.Request) {\n"
        "\t\tctx := r.Context()\n\t\tgo watch(ctx)\n\n\t\tnext.ServeHTTP(w, r)\n\t}\n"
        "\treturn http.HandlerFunc(fn)\n}\n"
    )
    b = (
        "package m\n\nfunc B(next http.Handler) http.Handler {\n"
        "\tfn := func(w http.ResponseWriter, r *http.Request) {\n"
        "\t\tctx := r.Context()\n\t\tctx = context.WithValue(ctx, k, 1)\n"
        "\t\tnext.ServeHTTP(w, r)\n\t}\n\treturn http.HandlerFunc(fn)\n}\n"
    )
    new = "\t\tr = r.WithContext(ctx)\n"
    result = synthesize(
        [
            Example(a, a.replace("\t\tnext.ServeHTTP", new + "\t\tnext.ServeHTTP"), path="a.go"),
            Example(b, b.replace("\t\tnext.ServeHTTP", new + "\t\tnext.ServeHTTP"), path="b.go"),
        ]
    )
    # One rule (wave 3g: with its copies at the other tab depths, follow-ups).
    assert len([r for r in result.rules if not r.follow_up]) == 1
    held = (
        "package m\n\nfunc C(next http.Handler) http.Handler {\n"
        "\tfn := func(w http.ResponseWriter, r *http.Request) {\n"
        "\t\tctx, cancel := context.WithTimeout(r.Context(), t)\n\t\tdefer cancel()\n"
        "\t\tnext.ServeHTTP(w, r)\n\t}\n\treturn http.HandlerFunc(fn)\n}\n"
    )
    assert result.apply(held)[0] == held.replace("\t\tnext.ServeHTTP", new + "\t\tnext.ServeHTTP")


def test_a_go_package_qualifier_removed_in_types_reaches_values_too() -> None:
    """chi's `ctxhttp.X` -> `X` (the package folded in): the examples show types
    (`h ctxhttp.Handler`); a pattern `ctxhttp.$A` alone parses as a `qualified_type` and
    left `ctxhttp.HandlerFunc(t)` (a `selector_expression`) in the held-out file — half the
    edit. The rule reaches the name in both positions."""
    before = (
        "package m\n\nfunc f(h ctxhttp.Handler) ctxhttp.Handler {\n\treturn h\n}\n\n"
        "type S struct {\n\tH ctxhttp.Handler\n}\n"
    )
    after = before.replace("ctxhttp.", "")
    result = synthesize([Example(before, after, path="a.go")])
    held = (
        "package m\n\nfunc g(t T) ctxhttp.Handler {\n\tvar cxh ctxhttp.Handler\n"
        "\tcxh = ctxhttp.HandlerFunc(t)\n\treturn cxh\n}\n"
    )
    assert result.apply(held)[0] == held.replace("ctxhttp.", "")
