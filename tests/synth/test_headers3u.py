"""Wave 3u of issue 26: a compound statement's header edited in place (docs/synth.md § A
clause's header edited in place). boltons 6d186bf3 turned every bare ``except:`` into
``except Exception:``; the rule wrote each clause anew with its body as ``$$$A``, which moved
a comment on the header line to a line of its own (the body one level deeper) and, with the
nested-layout guard, left an ``except:`` alone that held another one."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules
from oopav.synth.headers import in_place

BEFORE = """def load(path):
    try:
        return read(path)
    except:
        return None


def save(path, data):
    try:
        write(path, data)
    except:
        log("failed")
        raise
"""
AFTER = BEFORE.replace("except:", "except Exception:")

# A comment on the header line, and a bare except inside another one's body.
HELD = """def guess(obj):
    try:
        text = str(obj)
    except:  # fall back to repr
        try:
            text = repr(obj)
        except:
            text = object.__repr__(obj)
    return text


def keep(x):
    try:
        return x()
    except ValueError:
        return None
"""
WANT = HELD.replace("except:", "except Exception:")


def test_comment_on_the_header_line_and_nested_clauses() -> None:
    """Before: the comment went to its own line with the body re-indented under it, and the
    outer `except:` (it holds another one) was left as it was."""
    result = synthesize([Example(BEFORE, AFTER, path="a.py")])
    assert result.apply(BEFORE)[0] == AFTER
    assert result.apply(HELD)[0] == WANT
    rule = result.rules[0]
    assert rule.transform is not None and rule.fix == "$HEADER_NEW"
    files = [("a.py", BEFORE), ("b.py", HELD)]
    assert (
        check_rules(result.rules, files, "python") + check_file(result.rules, files, "python") == []
    )


def test_other_headers_are_left_alone() -> None:
    """A typed clause is no bare one: it keeps its text."""
    result = synthesize([Example(BEFORE, AFTER, path="a.py")])
    held = 'def f():\n    try:\n        g()\n    except KeyError:\n        pass\n    s = "x"\n'
    assert result.apply(held)[0] == held


def test_a_discriminating_rule_rewrites_its_own_header_only() -> None:
    """A rule with a condition beyond its header does not reach the clauses nested in its
    match through the transform: the header at the node's start only."""
    rule = {
        "pattern": "except:\n    $$$A",
        "kind": "except_clause",
        "inside": {"kind": "function_definition", "stopBy": "end"},
    }
    edited = in_place(rule, "except Exception:\n    $$$A", "python")
    assert edited is not None
    new, transform, fix = edited
    assert transform["HEADER_NEW"]["replace"]["replace"] == "^()except:"
    assert new["inside"] == rule["inside"] and fix == "$HEADER_NEW"
    plain = in_place({"pattern": "except:\n    $$$A"}, "except Exception:\n    $$$A", "python")
    assert plain is not None and plain[1]["HEADER_NEW"]["replace"]["replace"].startswith("(?m)")


def test_not_a_literal_header() -> None:
    """A header with a metavariable, a body that differs, or another language: no change."""
    assert (
        in_place({"pattern": "def $F():\n    $$$A"}, "def $F() -> None:\n    $$$A", "python")
        is None
    )
    assert (
        in_place({"pattern": "except:\n    $$$A"}, "except Exception:\n    $$$B", "python") is None
    )
    assert in_place({"pattern": "except:\n    $$$A"}, "except Exception:\n    $$$A", "rust") is None


def test_a_clause_holding_a_multi_line_string_is_left_alone() -> None:
    """A line of a multi-line string that reads as the header is text, and ast-grep would
    re-indent the string's lines left of the clause's column: such a clause is not touched."""
    result = synthesize([Example(BEFORE, AFTER, path="a.py")])
    held = (
        "def h():\n    try:\n        c()\n    except:\n"
        '        log("""oops\nexcept: this line is text\n""")\n'
        '    try:\n        c()\n    except:\n        log("x")\n'
    )
    want = held[::-1].replace(":tpecxe", ":noitpecxE tpecxe", 1)[::-1]
    assert result.apply(held)[0] == want
