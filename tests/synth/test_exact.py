"""Wave 3d of issue 26 (synth-exact): rules that reach the right sites of a real commit but
wrote the wrong bytes there, or stopped short where the examples do decide — each a small
self-written reproduction of what the commit did (see docs/synth.md § Exactness)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_deleted_import_keeps_the_blank_line_before_it_where_code_follows_directly() -> None:
    """structlog's `from collections import OrderedDict` removed: in the examples it stood
    alone between blank lines (either blank line may go), in the held-out file it led a
    group of imports (a blank line above, the next import right below). Joining the
    previous statement there took the group's blank line with it; the statement's own line
    goes instead, the wider gap stays."""
    one = "import abc\n\nfrom collections import OrderedDict\n\nimport pytest\n\nx = 1\n"
    two = "import threading\n\nfrom collections import OrderedDict\n\nimport attr\n"
    drop = "from collections import OrderedDict\n\n"
    result = synthesize(
        [
            Example(one, one.replace(drop, ""), path="a.py"),
            Example(two, two.replace(drop, ""), path="b.py"),
        ]
    )
    held = "import json\n\nfrom collections import OrderedDict\nfrom io import StringIO\n\nx = 2\n"
    assert result.apply(held)[0] == "import json\n\nfrom io import StringIO\n\nx = 2\n"
    # The layout of the examples still comes out as before, and a group's last import
    # (code above, a blank line below) joins the previous statement.
    assert result.apply(one)[0] == one.replace(drop, "")
    tail = "import json\nfrom collections import OrderedDict\n\nx = 2\n"
    assert result.apply(tail)[0] == "import json\n\nx = 2\n"
    # It is the import's follow-up like the rule it serves: an import still used stays.
    used = held.replace("x = 2", "x = OrderedDict()")
    assert result.apply(used)[0] == used


def test_a_go_call_head_reaches_its_unexported_twin() -> None:
    """chi's `mx.tree.FindRoute(rctx, path)` -> `FindRoute(rctx, method, path)`: the call
    head stays literal (the example keeps other two-argument calls), but in Go a name that
    differs only in the case of its first letter is the same operation exported or not —
    the held-out `n.findRoute(rctx, path)` (the method `FindRoute` wraps) follows; other
    names stay."""
    before = (
        "package chi\n\nfunc (mx *Mux) routeHTTP(w W, r *R) {\n"
        "\trctx := mx.pool.Get(w, r)\n\ths := mx.tree.FindRoute(rctx, routePath)\n"
        "\th.ServeHTTP(w, r)\n}\n"
    )
    after = before.replace("FindRoute(rctx, routePath)", "FindRoute(rctx, method, routePath)")
    result = synthesize([Example(before, after, path="mux.go")])
    held = (
        "package chi\n\nfunc (n *node) FindRoute(rctx *Context, path string) Handler {\n"
        "\trn := n.findRoute(rctx, path)\n\treturn n.find(rctx, path)\n}\n"
    )
    want = held.replace("findRoute(rctx, path)", "findRoute(rctx, method, path)")
    assert result.apply(held)[0] == want
    # An example that keeps a call of the twin says no: the head stays literal.
    kept = before.replace(
        "\th.ServeHTTP", "\tx := mx.tree.findRoute(rctx, routePath)\n\th.ServeHTTP"
    )
    narrow = synthesize(
        [
            Example(
                kept,
                kept.replace("FindRoute(rctx, routePath)", "FindRoute(rctx, method, routePath)"),
                path="mux.go",
            )
        ]
    )
    assert narrow.apply(held)[0] == held


def test_a_string_prefix_added_next_to_a_sibling_is_learned_with_that_sibling() -> None:
    """werkzeug's `Response.data is bytes`: `self.assert_equal(response.data, 'Hello')` ->
    `…, b'Hello')` while the example keeps every other string (`req.url`, `'http://…'`).
    The prefix is a change of any string (`$S` -> `b$S`, only strings without a prefix);
    what tells the changed one apart is its sibling: the node it sits in also holds
    `response.data` — so the held-out `assert response.data == '…'` follows, and a
    string compared with anything else stays."""
    before = (
        "class T(TestCase):\n    def test_a(self):\n        req = Request()\n"
        "        self.assert_equal(req.url, 'http://example.com/')\n"
        "        self.assert_equal(req.host, 'example.com')\n"
        "        response = Response()\n"
        "        self.assert_equal(response.data, 'Hello World!')\n"
        "        self.assert_equal(response.status, '200 OK')\n"
    )
    after = before.replace("(response.data, 'Hello", "(response.data, b'Hello")
    result = synthesize([Example(before, after, path="wrappers.py")])
    held = (
        "def test_fixer(self):\n    response = Response.from_app(app, env)\n"
        "    assert response.data == 'PATH_INFO: /foo'\n"
        "    assert response.status == '200 OK'\n"
        "    assert response.data == b'already'\n"
    )
    want = held.replace("== 'PATH_INFO", "== b'PATH_INFO")
    assert result.apply(held)[0] == want
