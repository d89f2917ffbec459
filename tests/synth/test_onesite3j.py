"""The site-level protocol from one site (issue 26, wave 3j synth16): Refazer's start, the
rule learned from ONE example site. Self-written examples only."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from oopav.synth import Example, synthesize
from synth_real import Case, FileCase, site_level_one


def test_a_start_site_the_synthesiser_refuses_does_not_end_the_protocol() -> None:
    """The first example file's one site changes a comment only (no rule can rewrite it).
    Before: the protocol ended there, no rules and 1 site. Now the refused site is
    withdrawn and the next file's site shown: the rule learned from it does the held-out
    file, the refused site still counted as spent (2 sites)."""
    comment = FileCase(
        "a.py", "# call old_api() here\nx = 1\n", "# call new_api() here\nx = 1\n", 1
    )
    code = FileCase("b.py", "y = old_api(1)\n", "y = new_api(1)\n", 1)
    held = FileCase("c.py", "z = old_api(2)\nw = 3\n", "z = new_api(2)\nw = 3\n", 1)
    case = Case(
        "r", "/nonexistent", "0" * 40, "python", "old_api -> new_api", [comment, code, held]
    )
    s = site_level_one(case)
    assert s.learned and s.exact
    assert s.example_sites == 2
    assert s.added_sites == ["a.py start refused"]


def test_the_rest_of_an_edited_line_is_kept() -> None:
    """A partial example's two sites (`x != y`, `a != b` -> `!==`), one on a line whose other
    comparison the user left alone (`null != x`). Before: the rest of an edited line was
    free, like the file's unchanged lines, so `$A != $B` was learned and rewrote the kept
    `null != …` too (the site-level protocol then spent a further `keep` site on that very
    line: koa's `null != original && original !== val`). Now the rest of an edited line is
    kept: the rule leaves `null != …` alone and still does the unchanged `p != q`."""
    before = "if (null != x && x != y) f();\nif (a != b) g();\nif (p != q) g();\n"
    after = "if (null != x && x !== y) f();\nif (a !== b) g();\nif (p != q) g();\n"
    result = synthesize([Example(before, after, path="a.js", partial=True)])
    held = "if (null != u && u != v) h();\nwhile (m != n) k();\n"
    assert result.apply(held)[0] == "if (null != u && u !== v) h();\nwhile (m !== n) k();\n"
    assert result.apply(before)[0] == after.replace("p != q", "p !== q")
