"""Partial examples where the site-level protocol needs them (issue 26, wave 3h synth9): rules
learned one after another and the trailing-comma rule set take partial examples, and the
site-level protocol withdraws a site the synthesiser refuses. Self-written examples only."""

from __future__ import annotations

import sys
from pathlib import Path

from oopav.synth import Example, synthesize

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_real import Case, FileCase, score, site_level

# Two changes that interfere side by side (the rule for `old` -> `new` rewrites the block
# the rule for `z = 3` -> `z = 4` must match as it was), as one file edited in part: the
# last `old(9)` is left for the rule, lines 1, 6 and 7 are kept on purpose.
SEQ_BEFORE = (
    "z = 3\nx = old(1)\nif cond:\n    y = old(2)\n    z = 3\nif other:\n    z = 3\nw = old(9)\n"
)
SEQ_AFTER = (
    "z = 3\nx = new(1)\nif cond:\n    y = new(2)\n    z = 4\nif other:\n    z = 3\nw = old(9)\n"
)


def test_rules_learned_one_after_another_take_a_partial_example() -> None:
    """Before: the sequential learner refused partial examples (each step re-diffs the
    examples from the earlier rules' output, where a partial example's unchanged code,
    rewritten by them, looked like a site to undo), so this example had no rule. Now each
    step's target keeps the earlier rules' rewrites of the unchanged code."""
    result = synthesize([Example(SEQ_BEFORE, SEQ_AFTER, path="m.py", partial=True, keep=(1, 6, 7))])
    assert any("one after another" in n for n in result.notes)
    assert result.rules[0].fix == "new"
    got, _ = result.apply(SEQ_BEFORE)
    # The edited sites as the user wrote them, the kept lines kept, the `old(9)` left for
    # the rule rewritten.
    assert got == SEQ_AFTER.replace("w = old(9)", "w = new(9)")
    assert result.partial_examples == [1]


def test_a_kept_line_binds_the_rules_learned_for_a_partial_example() -> None:
    """Guard: a kept line of a partial example is a negative for whatever learner runs (line
    2, `x = old(1)`, kept while `old` is renamed in the block): it comes out as it was."""
    after = SEQ_AFTER.replace("x = new(1)", "x = old(1)")
    result = synthesize([Example(SEQ_BEFORE, after, path="m.py", partial=True, keep=(1, 2, 6, 7))])
    got = result.apply(SEQ_BEFORE)[0].splitlines()
    assert got[1] == "x = old(1)" and got[3] == "    y = new(2)" and got[4] == "    z = 4"


RS_BEFORE = (
    "fn main() {\n    let a = g(\n        1,\n        2\n    );\n"
    "    let b = f(\n        x,\n        y\n    );\n}\n"
)
RS_HELD = "fn h() {\n    k(\n        p,\n        q\n    );\n}\n"


def test_the_trailing_comma_rule_set_is_learned_from_a_partial_example() -> None:
    """One call of two given its trailing comma by hand. Before: the other call's list,
    still without one in the partial example's after text, counted as a kept list, so the
    trailing-comma set was not tried and the rule was the literal `f(…)`. Now the partial
    example's unchanged lists are the rule's to change."""
    after = RS_BEFORE.replace("        y\n", "        y,\n")
    result = synthesize([Example(RS_BEFORE, after, path="m.rs", partial=True)])
    assert any("trailing commas" in n for n in result.notes)
    assert result.apply(RS_HELD)[0] == RS_HELD.replace("        q\n", "        q,\n")
    assert result.apply(RS_BEFORE)[0] == after.replace("        2\n", "        2,\n")
    # A kept line still binds: the list kept on line 4 stays without its comma. Wave 3u
    # (test_keptlists3u): the set is learned less the kept item (by its text), so the
    # held-out call still gains its comma.
    kept = synthesize([Example(RS_BEFORE, after, path="m.rs", partial=True, keep=(4,))])
    assert any("trailing commas" in n for n in kept.notes)
    assert kept.apply(RS_BEFORE)[0].splitlines()[3] == "        2"
    assert kept.apply(RS_HELD)[0] == RS_HELD.replace("        q\n", "        q,\n")


def test_the_site_level_protocol_withdraws_a_site_the_synthesiser_refuses() -> None:
    """A site added that the synthesiser refuses ("no rule": a `server.close()` the commit
    kept, in the same context as the one every example deletes) used to end the protocol
    with no rules at all (0 hunks produced). Now it is withdrawn: the rules before it stand,
    and the withdrawn site still counts as an example site."""
    ex = FileCase("e.py", "def f():\n    x = 1\n    server.close()\n", "def f():\n    x = 1\n", 1)
    held_before = (
        "def f():\n    x = 1\n    server.close()\n\n\n"
        "def g():\n    x = 1\n    server.close()\n    log(1)\n"
    )
    held_after = held_before.replace("    server.close()\n    log", "    log")
    held = FileCase("h.py", held_before, held_after, 1)
    case = Case("r", "/nonexistent", "0" * 40, "python", "close", [ex, held])
    first = score(case, [ex], [held])
    assert first.learned and not first.exact and (first.correct, first.produced) == (1, 2)
    s = site_level(case, first)
    assert s.added_sites == ["h.py:3 keep refused"]
    assert s.learned and (s.correct, s.produced) == (1, 2)
    assert s.example_sites == 2


def test_lines_inserted_under_a_rust_comment_are_an_insertion_before_the_next_item() -> None:
    """A Rust `// comment`'s words are no token (its only leaf is `//`): an attribute added
    on the line below one came out as the comment's last word "replaced" by itself plus the
    new line, no rewrite of one node ("not a rewrite of one syntax node"), whole example or
    partial. Now it is the insertion it is, anchored on the item below."""
    before = (
        "use x;\n\n// Sources\n\nimpl<R> IoRead<R> {\n    fn f() {}\n}\n\n"
        "struct S;\n\n// more\nimpl<R> Other<R> {}\n"
    )
    after = before.replace("impl<R> IoRead", '#[cfg(feature = "std")]\nimpl<R> IoRead')
    for partial in (False, True):
        result = synthesize([Example(before, after, path="m.rs", partial=partial)])
        got = result.apply(before)[0]
        assert '#[cfg(feature = "std")]\nimpl<R> IoRead<R>' in got
        assert got == after or partial
    # Directly under the comment line, no blank line between.
    tight = "fn a() {}\n// c\nimpl<R> IoRead<R> {}\n"
    tight_after = tight.replace("impl<R>", '#[cfg(feature = "std")]\nimpl<R>')
    assert synthesize([Example(tight, tight_after, path="m.rs")]).apply(tight)[0] == tight_after


def test_a_member_kept_by_name_is_excluded_by_its_name() -> None:
    """Every member of an interface gains a type parameter but `head` (a partial example that
    keeps its line): only the member's name tells the kept copy apart. Before: the rule was
    literal, `get` only (the named definitions that tell code apart held no interface
    member; in ky's real file the site had no rule at all). Now the kept member's
    name is excluded — not a list of the changed ones, which would stop at the next member."""
    before = (
        "interface Ky {\n"
        "\tget: (url: Input) => ResponsePromise;\n"
        "\tpost: (url: Input) => ResponsePromise;\n"
        "\thead: (url: Input) => ResponsePromise;\n"
        "\tput: (url: Input) => ResponsePromise;\n"
        "}\n"
    )
    after = before.replace("\tget: (", "\tget: <T>(").replace(
        "get: <T>(url: Input) => ResponsePromise;", "get: <T>(url: Input) => ResponsePromise<T>;"
    )
    result = synthesize([Example(before, after, path="ky.ts", partial=True, keep=(4,))])
    got = result.apply(before)[0]
    assert "\thead: (url: Input) => ResponsePromise;\n" in got
    assert "\tput: <T>(url: Input) => ResponsePromise<T>;\n" in got
    assert "\tpost: <T>(url: Input) => ResponsePromise<T>;\n" in got
    held = "interface K2 {\n\tpatch: (url: Input) => ResponsePromise;\n}\n"
    assert result.apply(held)[0] == held.replace("patch: (", "patch: <T>(").replace(
        "ResponsePromise;", "ResponsePromise<T>;"
    )
