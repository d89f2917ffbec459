"""Wave 3h of issue 26 (synth7): rules that stopped short of held-out sites of the same
systematic change ("too narrow"), each a small self-written reproduction of a class seen on
real edits, failing on the branch start (docs/synth.md § Too narrow, wave 3h)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_an_object_member_is_learned_as_the_member_not_the_whole_object() -> None:
    """koa's `inspect: function(){…}` -> `inspect(){…}` (methods made shorthand): a `key:
    value` pair alone parses as a labelled statement, so no pattern of one member matched and
    the rule was the whole object literal, comments and all — no other file has it. The
    member is parsed inside an object now, and the members without parameters and the one
    with share one `$$$` parameter list."""
    before = (
        "module.exports = {\n\n"
        "  /**\n   * Inspect.\n   */\n\n"
        "  inspect: function(){\n    return this.toJSON();\n  },\n\n"
        "  /**\n   * Return JSON.\n   */\n\n"
        "  toJSON: function(){\n    return 1;\n  },\n\n"
        "  onerror: function(err){\n    throw err;\n  }\n"
        "};\n"
    )
    after = (
        before.replace("inspect: function(", "inspect(")
        .replace("toJSON: function(", "toJSON(")
        .replace("onerror: function(", "onerror(")
    )
    result = synthesize([Example(before, after, path="lib/context.js")])
    held = (
        "module.exports = {\n"
        "  accepts: function(){\n    return 2;\n  },\n\n"
        "  get: function(field, other){\n    return field;\n  }\n"
        "};\n"
    )
    want = held.replace("accepts: function(", "accepts(").replace("get: function(", "get(")
    assert result.apply(held)[0] == want


def test_a_class_method_is_learned_as_the_method_not_the_whole_class() -> None:
    """The same for a class's methods: `get() {…}` -> `async get() {…}` alone parses as a
    call and a block, so the rule was the whole `class A {…}`; a method site is tried
    inside a class too."""
    before = (
        "class A {\n  // one\n  get() {\n    return this.fetch();\n  }\n\n"
        "  // two\n  put(x) {\n    return this.send(x);\n  }\n}\n"
    )
    after = before.replace("  get() {", "  async get() {").replace("  put(x) {", "  async put(x) {")
    result = synthesize([Example(before, after, path="a.ts")])
    held = "class B {\n  post(y) {\n    return this.send(y);\n  }\n}\n"
    assert result.apply(held)[0] == held.replace("  post(y) {", "  async post(y) {")


def test_a_member_lifted_to_from_its_key_stays_the_objects_pattern() -> None:
    """The member parse is for a site that *is* a member: a key renamed in one object and
    kept in another still learns the object's pattern (the wave 1 precision case)."""
    before = "const a = {retries: 2};\nconst b = {retries: 3, timeout: 1};\n"
    after = "const a = {limit: 2};\nconst b = {retries: 3, timeout: 1};\n"
    result = synthesize([Example(before, after, path="a.js")])
    held = "const c = {retries: 5};\nconst d = {retries: 1, timeout: 2};\n"
    assert result.apply(held)[0] == "const c = {limit: 5};\nconst d = {retries: 1, timeout: 2};\n"


def test_a_member_rename_reaches_the_method_that_defines_the_member() -> None:
    """jinja's `parser.ignore_colon()` -> `parser.skip_colon()` in `ext.py`; the held-out
    `parser.py` defines `def ignore_colon(self):` in the class and calls it. The rename
    kept to attribute names (a local `calls = …` is no member) and missed the method; a
    method of that name defined in a class is the member's definition. A local function
    or a module variable of that name is still no member."""
    before = "def parse(parser):\n    if parser.ignore_colon():\n        return 1\n    return 0\n"
    after = before.replace("ignore_colon", "skip_colon")
    result = synthesize([Example(before, after, path="ext.py")])
    held = (
        "class Parser:\n"
        "    def ignore_colon(self):\n        return 1\n\n"
        "    @property\n"
        "    def other(self):\n"
        "        def ignore_colon():\n            pass\n"
        "        return self.ignore_colon()\n\n"
        "ignore_colon = 3\n"
    )
    want = (
        "class Parser:\n"
        "    def skip_colon(self):\n        return 1\n\n"
        "    @property\n"
        "    def other(self):\n"
        "        def ignore_colon():\n            pass\n"
        "        return self.skip_colon()\n\n"
        "ignore_colon = 3\n"
    )
    assert result.apply(held)[0] == want


def test_a_member_rename_keeps_off_methods_the_examples_keep() -> None:
    """Where the example keeps a method of that name, the member uses alone are renamed."""
    before = "class A:\n    def calls(self):\n        return 1\n\ndef f(o):\n    return o.calls\n"
    after = before.replace("o.calls", "o.call_args_list")
    result = synthesize([Example(before, after, path="a.py")])
    held = "class B:\n    def calls(self):\n        return self.calls\n"
    assert result.apply(held)[0] == held.replace("self.calls", "self.call_args_list")


def test_a_field_whose_kept_copies_are_called_keeps_to_the_uncalled_ones() -> None:
    """gin's `msg.Error` -> `msg.Err` (a struct field), with the method `c.Error(err)` kept:
    `$A.Error` over-matched the call, and the context chosen was where the one site happened
    to sit (`inside: expression_list` of a `return`), so the held-out `assert.Equal(t,
    c.Errors[0].Error, …)` was missed. Every kept copy is the head of a call and no site
    is: not being called is the context."""
    before = (
        "package gin\n\n"
        "func (c *Context) Fail(err error) *Msg {\n"
        "\treturn c.Error(err)\n"
        "}\n\n"
        "func (c *Context) Last() error {\n"
        "\treturn c.Errors[0].Error\n"
        "}\n"
    )
    after = before.replace("c.Errors[0].Error", "c.Errors[0].Err")
    result = synthesize([Example(before, after, path="context.go")])
    held = (
        "package gin\n\n"
        "func TestErrors(t *testing.T) {\n"
        '\tc.Error(errors.New("first"))\n'
        '\tassert.Equal(t, c.Errors[0].Error, errors.New("first"))\n'
        '\tassert.Equal(t, c.Last().Error(), "first")\n'
        "}\n"
    )
    want = held.replace("c.Errors[0].Error,", "c.Errors[0].Err,")
    assert result.apply(held)[0] == want


def test_a_renamed_call_renames_the_function_it_calls() -> None:
    """axios's `buildUrl(…)` -> `buildURL(…)` in the adapters; the held-out helper defines
    `module.exports = function buildUrl(url, params) {`. The definition follows the calls
    (`follow_up: definition`); the `var buildUrl = require(…)` the examples keep is no
    definition and stays."""
    before = (
        "var buildUrl = require('./../helpers/buildUrl');\n"
        "function send(config) {\n"
        "  return buildUrl(config.url, config.params);\n"
        "}\n"
    )
    after = before.replace("return buildUrl(", "return buildURL(")
    result = synthesize([Example(before, after, path="lib/adapters/http.js")])
    held = "module.exports = function buildUrl(url, params) {\n  return url;\n};\n"
    assert result.apply(held)[0] == held.replace("function buildUrl", "function buildURL")
    assert any(r.follow_up == "definition" for r in result.rules)


def test_a_definition_the_examples_keep_refuses_the_follow_up() -> None:
    """Precision: where the example file defines the function and keeps its name, the
    calls' rename does not reach definitions (the rule set must reproduce the example)."""
    before = "def fetch(a):\n    return a\n\nx = fetch(1)\n"
    after = before.replace("x = fetch(1)", "x = fetch_page(1)")
    result = synthesize([Example(before, after, path="a.py")])
    assert not any(r.follow_up == "definition" for r in result.rules)
    assert result.apply("def fetch(b):\n    pass\n")[0] == "def fetch(b):\n    pass\n"


def test_a_parameter_given_to_the_definition_is_an_argument_of_the_calls() -> None:
    """axios's `function enhanceError(error, config, code)` -> `…, response)` in
    `enhanceError.js`; the held-out `createError.js` calls `return enhanceError(error,
    config, code);`. The calls of the function get the argument (a call that passes it
    already, or passes nothing, is left alone)."""
    before = (
        "module.exports = function enhanceError(error, config, code) {\n"
        "  error.config = config;\n"
        "  return error;\n"
        "};\n"
    )
    after = before.replace("config, code)", "config, code, response)")
    result = synthesize([Example(before, after, path="lib/core/enhanceError.js")])
    held = (
        "module.exports = function createError(message, config, code) {\n"
        "  var error = new Error(message);\n"
        "  enhanceError(error, response);\n"
        "  return enhanceError(error, config, code);\n"
        "};\n"
    )
    want = held.replace(
        "enhanceError(error, config, code)", "enhanceError(error, config, code, response)"
    )
    assert result.apply(held)[0].endswith(want.split("\n", 1)[1])
    assert any(r.follow_up == "definition" for r in result.rules)
