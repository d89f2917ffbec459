"""Wave 3j of issue 26 (synth14): a small change inside a function definition or a callback
learned as the whole function literal (header and body), which reproduces only its own
example — each a small self-written reproduction of what a real commit did (see
docs/synth.md § Too narrow: function headers and scoped renames)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_callback_parameter_renamed_with_its_uses_is_a_scoped_rename() -> None:
    """`(err) => { log(err) }` -> `(error) => { log(error) }`: the rule was the callback
    literal, body and all. Held-out callbacks with other bodies (a `function (err)`, a
    `.catch(err => …)`) are renamed with their uses; an `err` no function binds stays."""
    before = (
        "fs.readFile(p, (err) => {\n  log(err)\n  done(err, 1)\n})\n"
        "const err = 3\nconsole.log(err)\n"
    )
    after = before.replace("(err) =>", "(error) =>").replace(
        "log(err)\n  done(err", "log(error)\n  done(error"
    )
    result = synthesize([Example(before, after, path="read.js")])
    held = (
        "get(u, function (err) {\n  if (err) throw err\n})\n"
        "p.catch(err => {\n  console.error(err.message)\n})\n"
        "class A {\n  fail(err, res) {\n    res.send({ err: err })\n  }\n}\n"
        "console.log(err)\n"
    )
    want = (
        "get(u, function (error) {\n  if (error) throw error\n})\n"
        "p.catch(error => {\n  console.error(error.message)\n})\n"
        "class A {\n  fail(error, res) {\n    res.send({ err: error })\n  }\n}\n"
        "console.log(err)\n"
    )
    assert result.apply(held)[0] == want


def test_a_python_parameter_rename_reaches_a_comprehension_and_keeps_attributes() -> None:
    """attrs' `def has(cl)` -> `def has(cls)` (learned as the whole `def has` literal); the
    held-out `frozenset(cl for cl in what if isclass(cl))` binds `cl` in a comprehension. A
    keyword argument `cl=…`, an attribute `x.cl` and a module `cl` are no uses."""
    before = (
        "def asdict(inst, recurse=True):\n    return recurse\n\n\n"
        'def has(cl):\n    """Check *cl*."""\n    return getattr(cl, "__attrs__", None) is not None\n\n\n'
        'def assoc(inst):\n    return "{cl}".format(cl=inst.cl)\n'
    )
    after = before.replace("def has(cl)", "def has(cls)").replace("getattr(cl,", "getattr(cls,")
    result = synthesize([Example(before, after, path="_funcs.py")])
    held = (
        "def include(*what):\n    return (\n"
        "        frozenset(cl for cl in what if isclass(cl)),\n"
        "        frozenset(a for a in what if a.cl),\n    )\n\n\n"
        "def fields(cl, f=g(cl=1)):\n    return cl.x\n\n\ncl = 1\n"
    )
    want = (
        "def include(*what):\n    return (\n"
        "        frozenset(cls for cls in what if isclass(cls)),\n"
        "        frozenset(a for a in what if a.cl),\n    )\n\n\n"
        "def fields(cls, f=g(cl=1)):\n    return cls.x\n\n\ncl = 1\n"
    )
    assert result.apply(held)[0] == want


def test_an_unused_catch_binder_renamed_alone_where_the_examples_keep_used_ones() -> None:
    """zustand's lint fix `catch (e) {` -> `catch (_e) {` where `e` is unused, a `catch (e)
    { console.warn(e) }` kept in the same file: the rule was the whole `try` statement. The
    binder is renamed where its body does not use it, nowhere else."""
    before = (
        "function connect() {\n  try {\n    ext = window.__EXT__\n  } catch (e) {\n"
        "    // ignored\n  }\n}\n\nfunction send(x) {\n  try {\n    post(x)\n"
        "  } catch (e) {\n    console.warn(e)\n  }\n}\n"
    )
    after = before.replace("catch (e) {\n    // ignored", "catch (_e) {\n    // ignored")
    result = synthesize([Example(before, after, path="devtools.ts")])
    held = (
        "const load = () => {\n  try {\n    return JSON.parse(s)\n  } catch (e) {\n"
        "    return null\n  }\n}\n"
        "try {\n  x()\n} catch (e: any) {\n  return e\n}\n"
        "p.catch((e) => {\n  log(e)\n})\n"
    )
    want = held.replace("} catch (e) {\n    return null", "} catch (_e) {\n    return null")
    assert result.apply(held)[0] == want


def test_a_modifier_added_to_a_trait_method_is_learned_at_the_header() -> None:
    """bytes' `fn advance(&mut self, cnt: usize) {…}` -> `unsafe fn advance(…)` in `impl
    MutBuf for …` only (`impl Buf for …` kept): the rule was the one site's whole function,
    body literal, reaching no held-out `advance` with another body. The body is no context
    when the change is in the header: the trait implemented is."""
    before = (
        "pub struct S;\n\nimpl BufMut for S {\n    fn advance(&mut self, cnt: usize) {\n"
        "        self.buf.advance(cnt)\n    }\n}\n\n"
        "impl Buf for S {\n    fn advance(&mut self, cnt: usize) {\n"
        "        self.pos += cnt;\n    }\n}\n"
    )
    after = before.replace(
        "    fn advance(&mut self, cnt: usize) {\n        self.buf",
        "    unsafe fn advance(&mut self, cnt: usize) {\n        self.buf",
    )
    result = synthesize([Example(before, after, path="byte.rs")])
    held = (
        "impl<T: BufMut> BufMut for Take<T> {\n    fn advance(&mut self, mut cnt: usize) {\n"
        "        while cnt > 0 {\n            cnt -= 1;\n        }\n    }\n}\n\n"
        "impl<T: Buf> Buf for Take<T> {\n    fn advance(&mut self, cnt: usize) {\n"
        "        self.x += cnt;\n    }\n}\n"
    )
    want = held.replace(
        "    fn advance(&mut self, mut cnt", "    unsafe fn advance(&mut self, mut cnt"
    )
    assert result.apply(held)[0] == want


def test_a_return_annotation_added_is_learned_at_the_header_whatever_the_body() -> None:
    """requests' `def init_per_thread_state(self):` -> `… -> None:`: the body opens with a
    comment, which kept the body literal, so the rule was the whole `def` and reached no
    other definition of that name. The header is the rule; the body and the parameters,
    which stay, are any."""
    before = (
        "class HTTPDigestAuth(AuthBase):\n    def __init__(self, username):\n"
        "        self.username = username\n\n"
        "    def init_per_thread_state(self):\n"
        "        # Ensure state is initialized just once per-thread\n"
        '        if not hasattr(self._local, "init"):\n'
        "            self._local.init = True\n\n"
        "    def build(self, method):\n        return method\n"
    )
    after = before.replace(
        "def init_per_thread_state(self):", "def init_per_thread_state(self) -> None:"
    )
    result = synthesize([Example(before, after, path="auth.py")])
    held = (
        "class Proxy(HTTPDigestAuth):\n    def init_per_thread_state(self, *args):\n"
        "        super().init_per_thread_state()\n        # and the proxy's own\n"
        "        self.proxy = None\n\n    def build(self, method):\n        return method\n"
    )
    want = held.replace(
        "def init_per_thread_state(self, *args):", "def init_per_thread_state(self, *args) -> None:"
    )
    assert result.apply(held)[0] == want


def test_a_lint_rename_of_locals_and_parameters_renames_both_in_their_blocks() -> None:
    """A lint rename (unicorn's prevent-abbreviations: `err` -> `error`) of a local
    `const err = …` and a callback's `err`, both in one test: as a scoped rename the block
    that declares the local is a scope too. A held-out test's `const err` and a `catch
    (err)` are renamed with their uses (in a template string too); a module `err`, read in a function that declares none,
    stays."""
    before = (
        "test('cache', async t => {\n\tconst err = await t.throws(got(s.url));\n"
        "\tt.is(err.code, 'E');\n\treq.on('error', err => {\n"
        "\t\tt.fail(`error was emitted: ${err}`);\n\t});\n});\nconst err = 1;\n"
        "const show = () => {\n\tconsole.log(err);\n};\n"
    )
    after = (
        before.replace("const err = await", "const error = await")
        .replace("t.is(err.code", "t.is(error.code")
        .replace("'error', err =>", "'error', error =>")
        .replace("${err}", "${error}")
    )
    result = synthesize([Example(before, after, path="cache.js")])
    held = (
        "test('404', async t => {\n\tconst err = await t.throws(got.get(`${s.url}/404`));\n"
        "\tt.is(err.response.body, `${err.code}`);\n});\n"
        "test('x', async t => {\n\ttry {\n\t\tawait f();\n\t} catch (err) {\n"
        "\t\tt.truthy(err);\n\t}\n});\nconst f = () => {\n\treturn err;\n};\n"
    )
    want = (
        "test('404', async t => {\n\tconst error = await t.throws(got.get(`${s.url}/404`));\n"
        "\tt.is(error.response.body, `${error.code}`);\n});\n"
        "test('x', async t => {\n\ttry {\n\t\tawait f();\n\t} catch (error) {\n"
        "\t\tt.truthy(error);\n\t}\n});\nconst f = () => {\n\treturn err;\n};\n"
    )
    assert result.apply(held)[0] == want


def test_the_scoped_rename_and_header_rules_run_in_the_cli_as_in_process() -> None:
    """The scoped renames (`inside` with `field` and `any`, `not: {has: {field: body}}`) and
    the header rules are rules the ast-grep CLI reads as the in-process rewriter does."""
    from oopav.synth.clicheck import check_rules

    js = "get(u, (err) => {\n  log(err)\n})\nconst err = 1\n"
    js_after = js.replace("(err) => {\n  log(err)", "(error) => {\n  log(error)")
    ts = "try {\n  a()\n} catch (e) {\n  // ignored\n}\ntry {\n  b()\n} catch (e) {\n  warn(e)\n}\n"
    ts_after = ts.replace("catch (e) {\n  // ignored", "catch (_e) {\n  // ignored")
    py = (
        "def has(cl):\n    # a class?\n    return getattr(cl, 'x', None)\n\n\n"
        "def close(self):\n    # done\n    self.f.close()\n"
    )
    py_renamed = py.replace("has(cl)", "has(cls)").replace("getattr(cl,", "getattr(cls,")
    py_header = py.replace("def close(self):", "def close(self) -> None:")
    for before, after, path, lang in (
        (js, js_after, "a.js", "javascript"),
        (ts, ts_after, "a.ts", "typescript"),
        (py, py_renamed, "a.py", "python"),
        (py, py_header, "b.py", "python"),
    ):
        result = synthesize([Example(before, after, path=path)])
        assert result.apply(before)[0] == after
        found = check_rules(result.rules, [(path, before)], lang)
        assert not found, "\n".join(f.line() for f in found)
