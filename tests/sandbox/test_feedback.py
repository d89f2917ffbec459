"""Issue 16 §3: feedback that names the fix, and context cut with explicit markers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oopav.events.actions import AstGrepAction, SearchReplaceAction, SearchReplaceEdit
from oopav.handlers.actor import _feedback
from oopav.models.prompt import fit_sections
from oopav.sandbox.apply import Rejection, plan_action
from oopav.sandbox.astgrep import RuleError, pattern_problem, rule_from_action
from oopav.sandbox.patch import SearchFailure, apply_edit
from oopav.sandbox.validate import new_parse_errors

SRC = "def area(w, h):\n    return w * h\n\n\ndef total(items):\n    return sum(area(a, b) for a, b in items)\n"


def test_a_missed_search_block_quotes_the_nearest_lines_and_diffs_them() -> None:
    with pytest.raises(SearchFailure) as exc:
        apply_edit(SRC, "    return w*h\n", "    return h * w\n")
    msg = exc.value.message
    assert "Nearest candidate, lines 2-2" in msg
    assert "2 |     return w * h" in msg
    assert "-    return w*h\n+    return w * h" in msg


def test_a_syntax_error_gives_file_line_column_the_line_a_caret_and_the_node() -> None:
    broken = SRC.replace("sum(area(a, b)", "sum(area(a, b")
    findings = new_parse_errors("geo.py", SRC, broken)
    assert findings
    msg = findings[0].message
    assert msg.startswith("geo.py:6:")
    assert "(parser node: " in msg
    assert "    6 |     return sum(area(a, b for a, b in items)" in msg
    assert "\n      | " in msg and msg.rstrip().endswith("^")


def test_the_actor_relays_the_parse_error_in_full(tmp_path: Path) -> None:
    (tmp_path / "geo.py").write_text(SRC)
    edit = SearchReplaceEdit(
        path="geo.py", search="    return w * h\n", replace="    return w * (h\n"
    )
    action = SearchReplaceAction(edits=[edit])
    plan = plan_action(tmp_path, action)
    assert isinstance(plan, Rejection) and plan.reason == "parse_error"
    text = _feedback(plan)
    assert "geo.py would not parse after this change; nothing was written." in text
    assert "geo.py:2:" in text and "2 |     return w * (h" in text


@pytest.mark.parametrize(
    "action",
    [
        AstGrepAction(pattern="area($A, $B)", rewrite="area($B, $C)", language="python"),
        AstGrepAction(
            rule="id: r\nlanguage: python\nrule:\n  pattern: area($A, $B)\nfix: area($B, $C)\n"
        ),
        AstGrepAction(
            rule="id: r\nlanguage: python\nrule:\n  pattern: area($A, $B)\n"
            "fix:\n  template: area($B, $C)\n"
        ),
    ],
)
def test_a_rewrite_with_an_unbound_metavariable_is_rejected_in_every_form(
    action: AstGrepAction,
) -> None:
    with pytest.raises(RuleError) as exc:
        rule_from_action(action)
    assert "`$C` is used in" in exc.value.message
    assert "the pattern binds: $A, $B" in exc.value.message


def test_an_invalid_pattern_differs_from_a_pattern_that_matches_nothing(tmp_path: Path) -> None:
    (tmp_path / "geo.py").write_text(SRC)
    invalid = plan_action(
        tmp_path, AstGrepAction(pattern="area($A,, $B", rewrite="x", language="python")
    )
    assert isinstance(invalid, Rejection) and invalid.reason == "pattern_invalid"
    assert invalid.message.startswith("pattern is not valid python: syntax error at line 1")
    nothing = plan_action(
        tmp_path, AstGrepAction(pattern="volume($A)", rewrite="vol($A)", language="python")
    )
    assert isinstance(nothing, Rejection) and nothing.reason == "no_match"
    assert _feedback(nothing).startswith("pattern matched 0 sites in 1 file(s)")
    assert pattern_problem("def $F($$$ARGS): $$$BODY", "python") is None


def test_sections_over_the_budget_are_cut_with_explicit_markers() -> None:
    big = "\n".join(f"{i} | line {i}" for i in range(1, 401))
    text = fit_sections([("Plan", "step 1"), ("File a.py", big), ("Repository map", "x")], 300)
    assert text.startswith("### Plan\nstep 1\n### File a.py\n1 | line 1")
    assert "lines of File a.py not shown (the actor's context budget is 300 tokens) ...]" in text
    assert "[... not shown (context budget of 300 tokens spent): Repository map ...]" in text


def test_a_long_file_in_focus_shows_the_lines_around_the_tasks_identifiers(
    tmp_path: Path,
) -> None:
    from oopav.handlers.actor import _numbered_file

    rows = [f"x{i} = {i}" for i in range(1, 1001)]
    rows[599] = "y = target_name(a)"  # in no definition: a window around it
    (tmp_path / "big.py").write_text("\n".join(rows) + "\n")
    text = _numbered_file(tmp_path, "big.py", ("target_name",))
    head, text = text.split("\n", 1)
    assert re.fullmatch(r"\(context [0-9a-f]{8}\)", head)  # the hash a text block names
    assert text.startswith("[... lines 1-587 not shown ...]\n 588 | x588 = 588")
    assert " 600 | y = target_name(a)" in text
    assert text.endswith("[... lines 613-1000 not shown (1000 lines in all) ...]")
    short = _numbered_file(tmp_path, "big.py", ())
    assert short.splitlines()[1] == "   1 | x1 = 1" and "lines 241-1000 not shown" in short
    assert _numbered_file(tmp_path, "../etc/passwd").startswith("(not shown:")


def test_a_long_file_shows_whole_definitions_from_the_tags_instead_of_windows(
    tmp_path: Path,
) -> None:
    """Retrieval by symbol span: the function the task names and the class whose method
    mentions it are shown whole (tree-sitter tags), not a fixed window cut mid-function."""
    from oopav.context.spans import symbol_spans
    from oopav.handlers.actor import _numbered_file

    rows = [f"X{i} = {i}" for i in range(1, 401)]
    target = [
        "@decorator",
        "def fetch(url):",
        *[f"    step{i} = {i}" for i in range(30)],
        "    return url",
    ]
    user = [
        "class Client:",
        *[f"    a{i} = {i}" for i in range(20)],
        "    def get(self):",
        "        return fetch(self.url)",
    ]
    rows = rows[:200] + target + rows[200:300] + user + rows[300:]
    (tmp_path / "big.py").write_text("\n".join(rows) + "\n")
    spans = {
        s.name: (s.start, s.end) for s in symbol_spans("big.py", (tmp_path / "big.py").read_bytes())
    }
    assert spans["fetch"] == (200, 233)  # decorator to return: 0-based, end exclusive
    assert spans["get"] == (354, 356) and spans["Client"] == (333, 356)
    text = _numbered_file(tmp_path, "big.py", ("fetch",))
    shown = [line for line in text.splitlines() if " | " in line]
    assert shown[0] == "201 | @decorator" and "233 |     return url" in text
    assert "234 | " not in text  # the definition ends: no window past it
    # the innermost definition that mentions it: the method, whole, not the whole class
    assert "355 |     def get(self):" in text and "356 |         return fetch(self.url)" in text
    assert "334 | class Client:" not in text
    assert len(shown) == 33 + 2
