"""Wave 3j of issue 26 (synth15): discriminators and string rules that generalise past the
examples' own text — each a small self-written reproduction of a class seen on real edits
of repositories nobody tuned on, failing on the branch start (docs/synth.md § Wave 3j)."""

from __future__ import annotations

import re

from oopav.synth import Example, synthesize
from oopav.synth.discriminate import _shape

FORMS = (
    "class TestBuilder(TestCase):\n"
    "    def test_form(self):\n"
    "        b = Builder()\n"
    "        b.form['test'] = 'normal value'\n"
    "        req = b.get_request()\n"
    "        self.assert_strict_equal(req.method, 'POST')\n"
    "        self.assert_strict_equal(req.form['test'], 'normal value')\n"
    "        self.assert_strict_equal(req.files['test'].filename, 'test.txt')\n"
    "\n"
    "    def test_files(self):\n"
    "        req = Builder().get_request()\n"
    "        assert req.form['field'] == 'val1'\n"
    "        self.assert_strict_equal(req.form['foo'], 'bar')\n"
    "        self.assert_strict_equal(req.files['blafasel'].read(), 'foo')\n"
)


def test_a_sibling_is_matched_by_its_shape() -> None:
    """werkzeug's `'x'` -> `u'x'` where a string is compared with a form value
    (`assert_strict_equal(req.form['test'], 'normal value')`), kept beside `req.method`, in
    `b.form['test'] = …` and in `assert req.form[…] == …`: the sibling's text differs at
    each site (`req.form['test']`, `req.form['foo']`) and names no bare member, so the exact
    sibling said nothing and synth learned one literal rule per string, which reached no
    held-out site (`data.form['foo']`). The sibling's shape (any receiver, any key, the
    member `form`) inside the parent's kind does: one string-prefix rule."""
    after = FORMS.replace(
        "(req.form['test'], 'normal value')", "(req.form['test'], u'normal value')"
    ).replace("(req.form['foo'], 'bar')", "(req.form['foo'], u'bar')")
    result = synthesize([Example(FORMS, after, path="tests/test_builder.py")])
    assert result.apply(FORMS)[0] == after
    assert len(result.rules) == 1
    held = (
        "class TestParser(TestCase):\n"
        "    def test_multipart(self):\n"
        "        data = parse()\n"
        "        self.assert_strict_equal(data.form['foo'], 'a string')\n"
        "        self.assert_strict_equal(data.method, 'GET')\n"
        "        self.assert_strict_equal(data.form['bar'], u'already')\n"
    )
    want = held.replace("'a string'", "u'a string'")
    assert result.apply(held)[0] == want


def test_shape_keeps_the_members_and_abstracts_receiver_and_literals() -> None:
    """The unit: the receiver and the literals are free, the member names are not; a bare
    name or a multi-line text has no shape."""
    rx = _shape("req.form['test']")
    assert rx is not None
    assert re.match(rx, 'data.form["foo"]') and re.match(rx, "r.form[b'k']")
    assert not re.match(rx, "req.files['test']") and not re.match(rx, "req.form['a'].x")
    assert _shape("foo") is None and _shape("a.b(\n)") is None
    rx = _shape("self.get(1)")
    assert rx is not None and re.match(rx, "this.get(22)") and not re.match(rx, "self.put(1)")


def test_a_quote_style_change_is_one_string_rule() -> None:
    """marshmallow's "Enforce consistent quoting": `{"foo": "bar"}` -> `{'foo': 'bar'}`
    learned as one literal rule per dictionary (`$A == {"foo": "bar"}`), so the held-out
    `{"a": "b", "c": "d"}` kept its quotes. One rule over string literals, its quotes
    rewritten by an ast-grep `replace` transform, narrowed by where the examples changed
    them (in a dictionary's pairs; `"Missing" in errors["age"]` kept)."""
    before = (
        "def test_dict():\n"
        "    field = fields.Dict()\n"
        '    assert field.deserialize({"foo": "bar"}) == {"foo": "bar"}\n'
        '    assert "Missing" in errors["age"]\n'
        "\n"
        "def test_other():\n"
        '    data = MySchema().load({"name": "Phil"})\n'
        '    assert data["name"] == "x"\n'
    )
    after = before.replace('{"foo": "bar"}', "{'foo': 'bar'}").replace(
        '{"name": "Phil"}', "{'name': 'Phil'}"
    )
    result = synthesize([Example(before, after, path="tests/test_dict.py")])
    assert result.apply(before)[0] == after
    assert len(result.rules) == 1 and result.rules[0].transform
    held = (
        "def test_held():\n"
        '    assert field.deserialize({"a": "b", "c": "d"}) == {"a": "b"}\n'
        '    assert "kept" in data["x"]\n'
        '    assert {"q": "it\'s"} == {}\n'
    )
    want = held.replace('{"a": "b", "c": "d"}', "{'a': 'b', 'c': 'd'}").replace(
        '{"a": "b"}', "{'a': 'b'}"
    )
    # A body holding a quote keeps its quotes (`"it's"` is no `'it's'`).
    want = want.replace('{"q": "it\'s"}', "{'q': \"it's\"}")
    assert result.apply(held)[0] == want


def test_a_javascript_quote_change_is_one_string_rule() -> None:
    """The same in JavaScript: `{method: "GET", mode: "cors"}` and `{url: "/a"}` given
    single quotes, `log("starting")` kept, was learned as one rule per object
    (`{$A: "GET", $B: "cors"}`) and one per string; now one string rule where the examples
    changed them (an object's values)."""
    before = 'const opts = {method: "GET", mode: "cors"};\nsend({url: "/a"});\nlog("starting");\n'
    after = before.replace('"GET"', "'GET'").replace('"cors"', "'cors'").replace('"/a"', "'/a'")
    result = synthesize([Example(before, after, path="index.js")])
    assert result.apply(before)[0] == after
    assert len(result.rules) == 1
    held = 'fetch({url: "/b", method: "POST"});\nlog("kept");\n'
    assert result.apply(held)[0] == "fetch({url: '/b', method: 'POST'});\nlog(\"kept\");\n"


def test_a_prefix_with_new_quotes_is_one_string_rule() -> None:
    """requests' `"x"` -> `b'x'` (bytes, single quotes): the prefix and the quotes in one
    rule, kept strings left alone."""
    before = (
        "def test_send():\n"
        '    first = "put your hands up"\n'
        '    second = "put your hands down"\n'
        '    log("sending")\n'
    )
    after = before.replace('"put your hands up"', "b'put your hands up'").replace(
        '"put your hands down"', "b'put your hands down'"
    )
    result = synthesize([Example(before, after, path="tests/test_server.py")])
    assert result.apply(before)[0] == after
    assert len(result.rules) == 1
    held = 'def test_b():\n    data = "bananadine"\n    log("kept")\n'
    assert result.apply(held)[0] == held.replace('"bananadine"', "b'bananadine'")


CALLBACKS = (
    "test('a', function (t) {\n"
    "\ts.on('/', function (req, res) {\n"
    "\t\tres.end('ok');\n"
    "\t});\n"
    "\tgot(url, function (err, data) {\n"
    "\t\tt.equal(data, 'x');\n"
    "\t\tt.end();\n"
    "\t});\n"
    "\tgot(url2, function (err, body) {\n"
    "\t\tt.equal(body, 'y');\n"
    "\t});\n"
    "});\n"
)


def test_an_inserted_statement_is_anchored_to_the_neighbours_call_head() -> None:
    """got's `t.error(err);` inserted before `t.equal(data, 'x');` and `t.equal(body,
    'y');` (the callbacks' first assertion), kept out of the server handler's
    `res.end('ok');`: each anchor was kept literal, one rule per anchor, which reached no
    held-out neighbour (`t.equal(res.statusCode, 200);`). The anchors differ in their
    arguments only: one rule, next to the first statement calling `t.equal`."""
    after = CALLBACKS.replace(
        "\t\tt.equal(data, 'x');", "\t\tt.error(err);\n\t\tt.equal(data, 'x');"
    ).replace("\t\tt.equal(body, 'y');", "\t\tt.error(err);\n\t\tt.equal(body, 'y');")
    result = synthesize([Example(CALLBACKS, after, path="test/a.js")])
    assert result.apply(CALLBACKS)[0] == after
    assert len([r for r in result.rules if not r.follow_up]) == 1
    held = (
        "test('b', function (t) {\n"
        "\tgot(url3, function (err, res) {\n"
        "\t\tt.equal(res.statusCode, 200);\n"
        "\t\tt.equal(res.body, 'ok');\n"
        "\t});\n"
        "\ts.on('/x', function (req, res) {\n"
        "\t\tres.end('ok');\n"
        "\t});\n"
        "});\n"
    )
    want = held.replace(
        "\t\tt.equal(res.statusCode, 200);", "\t\tt.error(err);\n\t\tt.equal(res.statusCode, 200);"
    )
    assert result.apply(held)[0] == want


def test_one_string_given_new_quotes_stays_that_string() -> None:
    """starlette's linter commit, as mined: `'state'` -> `"state"` at each of its sites, the
    file's other single-quoted strings (`'_state'`) kept. One string's new quotes say
    nothing about the others': the rule stays that string (the quote rule needs the
    examples to agree on several strings)."""
    before = (
        "class Conn:\n"
        "    def __init__(self, scope):\n"
        "        scope.setdefault('state', {})\n"
        "\n"
        "    def __delattr__(self, key):\n"
        "        if key == '_state':\n"
        "            raise KeyError(key)\n"
    )
    after = before.replace("'state'", '"state"')
    result = synthesize([Example(before, after, path="requests.py")])
    assert result.apply(before)[0] == after
    held = "def f(self):\n    if hasattr(self, '_state'):\n        g(self._scope['state'])\n"
    assert result.apply(held)[0] == held.replace("'state'", '"state"')
