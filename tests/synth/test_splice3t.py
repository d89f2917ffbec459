"""Wave 3t of issue 26: an item inserted into a list is written beside its neighbour, the rest
of the list left as it was (docs/synth.md § An item inserted into a list, at its neighbour)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

JS_BEFORE = """var a = path.join(__dirname, 'testfilename.log');
var configFile = path.join(dir || __dirname, 'test-config.json');
"""
JS_AFTER = JS_BEFORE.replace("__dirname, '", "__dirname, 'fixtures', '")
JS_HELD = """transports: [
  new File({ filename: path.join(__dirname, 'filelog.log' )}),
  exec('rm -rf ' + path.join(__dirname, 'testmaxsize*'), cb),
  path.join(a, b, c),
]
"""
JS_WANT = """transports: [
  new File({ filename: path.join(__dirname, 'fixtures', 'filelog.log' )}),
  exec('rm -rf ' + path.join(__dirname, 'fixtures', 'testmaxsize*'), cb),
  path.join(a, b, c),
]
"""


def test_an_argument_inserted_keeps_the_call_as_it_was() -> None:
    """winston 6169c96e: `path.join(__dirname, 'x')` -> `path.join(__dirname, 'fixtures',
    'x')`; the rule wrote the whole call anew, so `'filelog.log' )` lost its space (every
    site right, the file not). Checked with the real ast-grep CLI."""
    result = synthesize([Example(JS_BEFORE, JS_AFTER, path="a.js")])
    assert result.apply(JS_BEFORE)[0] == JS_AFTER
    assert result.apply(JS_HELD)[0] == JS_WANT
    files = [("a.js", JS_BEFORE), ("b.js", JS_HELD)]
    assert (
        check_rules(result.rules, files, "javascript")
        + check_file(result.rules, files, "javascript")
        == []
    )


PY_BEFORE = """a = connect(host, port)
b = connect(backup, 8080)
"""
PY_AFTER = PY_BEFORE.replace("connect(host, port)", "connect(host, None, port)").replace(
    "connect(backup, 8080)", "connect(backup, None, 8080)"
)
PY_HELD = """c = connect(
    primary,  # the main one
    port
)
d = connect(x, y)  # kept
"""
PY_WANT = """c = connect(
    primary,  # the main one
    None, port
)
d = connect(x, None, y)  # kept
"""


def test_an_argument_inserted_keeps_the_comment_and_the_layout() -> None:
    """A call laid out over lines with a comment between its arguments keeps both: the new
    argument is written before the item it precedes (the comment is no item: the position
    leaves it out)."""
    result = synthesize([Example(PY_BEFORE, PY_AFTER, path="a.py")])
    assert result.apply(PY_BEFORE)[0] == PY_AFTER
    assert result.apply(PY_HELD)[0] == PY_WANT
    files = [("a.py", PY_BEFORE), ("b.py", PY_HELD)]
    assert (
        check_rules(result.rules, files, "python") + check_file(result.rules, files, "python") == []
    )


def test_an_argument_appended_after_a_list_metavariable_stays_readable() -> None:
    """`zip($$$A)` -> `zip($$$A, strict=False)` keeps what lies between the items already and
    reads as the change it is: it is not re-rooted."""
    before = "pairs = zip(names, values)\nrows = list(zip(keys, cells))\n"
    after = before.replace("values)", "values, strict=False)").replace(
        "cells)", "cells, strict=False)"
    )
    [rule] = synthesize([Example(before, after, path="a.py")]).rules
    assert rule.rule["pattern"] == "zip($$$A)" and rule.fix == "zip($$$A, strict=False)"


BASES_BEFORE = """class Container(dict):
    pass


class Key(str):
    pass


class OutOfOrderTableProxy(dict):
    def __init__(self, container: Container) -> None:
        self._container = container
"""
BASES_AFTER = BASES_BEFORE.replace("(dict)", "(MutableMapping, dict)")
BASES_HELD = """class Table(Item, dict):
    pass


class InlineTable(Item, dict):
    pass


class Done(MutableMapping, dict):
    pass


x = f(dict)
"""
BASES_WANT = BASES_HELD.replace("(Item, dict)", "(Item, MutableMapping, dict)")


def test_a_base_inserted_beside_the_base_the_classes_share() -> None:
    """tomlkit b29cdf0c: `class C(dict)` -> `class C(MutableMapping, dict)`, learned as the
    literal list `(dict)` -> `(MutableMapping, dict)`: the held-out `(Item, dict)` got
    nothing. The change is an item inserted before the `dict` every site's list ends with,
    in a class's bases, once (not where it is there already; a call's `(dict)` stays)."""
    result = synthesize([Example(BASES_BEFORE, BASES_AFTER, path="container.py")])
    assert result.apply(BASES_BEFORE)[0] == BASES_AFTER
    assert result.apply(BASES_HELD)[0] == BASES_WANT
    assert result.apply(BASES_WANT)[0] == BASES_WANT
    files = [("a.py", BASES_BEFORE), ("b.py", BASES_HELD)]
    assert (
        check_rules(result.rules, files, "python") + check_file(result.rules, files, "python") == []
    )


GO_BEFORE = """package assert

func HTTPBodyContains(t TestingT, url string, str interface{}, msg string) bool {
	return true
}
"""


def test_a_parameter_list_written_out_stays_one_signature() -> None:
    """testify 0a813b58 adds `body io.Reader` to two helpers' parameter lists, learned as
    those lists written out; re-rooted at the `str interface{}` they share, it reached every
    function with such a parameter second from the end (2 wrong sites). A parameter list is
    one function's signature: not re-rooted (a class's bases are)."""
    from ast_grep_py import SgRoot

    from oopav.synth.splice import literal_splice

    lists = SgRoot(GO_BEFORE, "go").root().find_all(kind="parameter_list")
    fix = "(t TestingT, url string, body io.Reader, str interface{}, msg string)"
    assert [m.text() for m in lists] == [fix.replace("body io.Reader, ", "")]
    assert literal_splice(lists, fix, "go") is None
    root = SgRoot(BASES_BEFORE, "python").root()
    bases = [m for m in root.find_all(kind="argument_list") if m.text() == "(dict)"]
    assert literal_splice(bases, "(MutableMapping, dict)", "python") is not None
