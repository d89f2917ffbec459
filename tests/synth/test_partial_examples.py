"""Partial examples (issue 26, wave 3h synth8): "I changed this one call in this file; do the
rest". A partial example's edited sites are positives the rules must reproduce exactly; its
unchanged code is not a negative (whatever the rules do there is no failure), so the rule
comes out as general as the positives and the explicit negatives allow. Self-written
examples only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from oopav.cli import cli
from oopav.events.catalog import Example as WireExample
from oopav.handlers.support.submission import Accepted, Rejected, parse_submission
from oopav.models.synth import examples_block
from oopav.synth import Example, SynthesisError, synthesize

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import synth_real
from synth_real import FileCase, next_site, with_hunks

# One call of three edited by hand; the other two left for the rule.
BEFORE = "def show(a, b, c, d):\n    pager(a)\n    pager(b, c)\n    pager(d)\n"
AFTER = "def show(a, b, c, d):\n    pager(a, color)\n    pager(b, c)\n    pager(d)\n"
OTHER = "def more(x):\n    pager(x)\n    return pager(x, 2)\n"


def test_a_partial_example_generalises_to_its_unedited_sites() -> None:
    result = synthesize([Example(BEFORE, AFTER, path="show.py", partial=True)])
    got, _ = result.apply(BEFORE)
    # The edited site as the user wrote it, and the sites left for the rule done the same way.
    assert got == (
        "def show(a, b, c, d):\n    pager(a, color)\n    pager(b, c, color)\n    pager(d, color)\n"
    )
    assert (
        result.apply(OTHER)[0]
        == "def more(x):\n    pager(x, color)\n    return pager(x, 2, color)\n"
    )
    assert result.partial_examples == [1]
    assert any("example 1 is partial" in n for n in result.notes)


def test_the_same_example_not_partial_keeps_its_unchanged_sites() -> None:
    # Not partial: `pager(b, c)` and `pager(d)` are code the rule must leave alone.
    result = synthesize([Example(BEFORE, AFTER, path="show.py")])
    assert result.apply(BEFORE)[0] == AFTER
    assert result.apply(OTHER)[0] == OTHER
    assert result.partial_examples == []
    assert "partial_examples" not in result.to_json()


def test_explicit_negatives_still_bind_and_the_edited_site_is_reproduced() -> None:
    # With a partial example, a negative (an unchanged example, not partial) still says what
    # the rule must leave alone: `pager(…)` inside `quiet(…)` stays; the edited site is
    # reproduced exactly and the other top-level calls follow.
    keep = "def q(z):\n    quiet(pager(z))\n"
    result = synthesize(
        [
            {"before": BEFORE, "after": AFTER, "path": "show.py", "partial": True},
            {"before": keep, "after": keep, "path": "keep.py"},
        ]
    )
    got = result.apply(BEFORE)[0]
    assert got.splitlines()[1] == "    pager(a, color)"
    assert "pager(d, color)" in got
    assert result.apply(keep)[0] == keep


def test_two_partial_examples_that_disagree_on_an_edited_site_fail() -> None:
    # Free elsewhere, exact on the edited sites: the same `pager(a)` in the same code cannot
    # become both `pager(a, color)` and `pager(a, mono)`.
    mono = AFTER.replace("color", "mono")
    with pytest.raises(SynthesisError):
        synthesize(
            [
                Example(BEFORE, AFTER, path="show.py", partial=True),
                Example(BEFORE, mono, path="other.py", partial=True),
            ]
        )


def test_a_partial_example_that_changes_nothing_is_refused() -> None:
    with pytest.raises(SynthesisError) as err:
        synthesize(
            [
                Example(BEFORE, AFTER, path="show.py"),
                Example(OTHER, OTHER, path="other.py", partial=True),
            ]
        )
    assert err.value.example == 2
    assert "partial but changes nothing" in err.value.reason
    with pytest.raises(SynthesisError, match="`partial` must be true or false"):
        synthesize([{"before": BEFORE, "after": AFTER, "path": "a.py", "partial": "yes"}])
    with pytest.raises(SynthesisError, match="`keep` needs `partial: true`"):
        synthesize([Example(BEFORE, AFTER, path="a.py", keep=(2,))])
    with pytest.raises(SynthesisError, match="`keep` line 9 is outside its before text"):
        synthesize([Example(BEFORE, AFTER, path="a.py", partial=True, keep=(9,))])


def test_oopav_synth_json_says_which_examples_were_partial(tmp_path: Path) -> None:
    ex = tmp_path / "ex.json"
    ex.write_text(
        json.dumps([{"before": BEFORE, "after": AFTER, "path": "show.py", "partial": True}])
    )
    r = CliRunner().invoke(cli, ["synth", str(ex), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["partial_examples"] == [1]
    assert data["rules"][0]["fix"] == "pager($$$A, color)"
    assert any("example 1 is partial" in n for n in data["notes"])
    # --apply reaches a file the example does not show.
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(OTHER)
    r = CliRunner().invoke(cli, ["synth", str(ex), "--apply", str(src), "--write"])
    assert r.exit_code == 0, r.output
    assert (
        src / "m.py"
    ).read_text() == "def more(x):\n    pager(x, color)\n    return pager(x, 2, color)\n"


def test_oopav_synth_refuses_a_bad_partial_field(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text(
        json.dumps([{"before": BEFORE, "after": AFTER, "path": "s.py", "partial": "yes"}])
    )
    r = CliRunner().invoke(cli, ["synth", str(ex)])
    assert r.exit_code != 0
    assert "`partial` must be true or false" in r.output
    same = tmp_path / "same.json"
    same.write_text(
        json.dumps([{"before": OTHER, "after": OTHER, "path": "s.py", "partial": True}])
    )
    r = CliRunner().invoke(cli, ["synth", str(same)])
    assert r.exit_code == 3
    assert "partial but changes nothing" in r.output


def _submission(example: dict[str, object]) -> bytes:
    return json.dumps(
        {"instruction": "add color to every pager call", "repo": ".", "examples": [example]}
    ).encode()


def test_a_task_carries_partial_examples_to_the_synth_policy() -> None:
    got = parse_submission(
        _submission({"before": BEFORE, "after": AFTER, "path": "show.py", "partial": True}),
        check_repo=False,
    )
    assert isinstance(got, Accepted), got
    assert got.examples[0].partial is True
    # The wire event keeps it; an example that is not partial encodes as before the field.
    assert b'"partial":true' in msgspec.json.encode(got.examples[0])
    plain = WireExample(before="a", after="b", path="p.py")
    assert b"partial" not in msgspec.json.encode(plain)
    # The context block the `synth:` policy reads back carries it, and learns the general rule.
    block = examples_block(got.examples)
    items = json.loads(block.split("\n", 1)[1])
    assert items[0]["partial"] is True
    assert synthesize(items).apply(OTHER)[0].count("color") == 2
    assert "partial" not in examples_block([plain])


def test_a_task_with_a_partial_example_that_changes_nothing_is_rejected() -> None:
    got = parse_submission(
        _submission({"before": OTHER, "after": OTHER, "path": "o.py", "partial": True}),
        check_repo=False,
    )
    assert isinstance(got, Rejected)
    assert got.field == "examples.0.partial"
    assert "partial but changes nothing" in got.error


# --- the bench's site-level step (bench/synth_real.py) ------------------------------------

HELD_BEFORE = "def a():\n    pager(1)\n\n\ndef b():\n    pager(2)\n    pager(3)\n"
HELD_AFTER = (
    "def a():\n    pager(1, color)\n\n\ndef b():\n    pager(2, color)\n    pager(3, color)\n"
)


def test_the_site_level_step_adds_the_first_wrong_hunk_as_a_partial_example() -> None:
    held = FileCase("h.py", HELD_BEFORE, HELD_AFTER, 3)
    # The rules got the first hunk right and missed the second.
    got = "def a():\n    pager(1, color)\n\n\ndef b():\n    pager(2)\n    pager(3)\n"
    found = next_site(held, got, [], [])
    assert found is not None and found[0] == "site"
    hunk = found[1]
    assert isinstance(hunk, tuple)
    step = with_hunks(held, [hunk])
    assert step.partial and step.sites == 1 and step.path == "h.py" and step.keep == ()
    assert step.before == HELD_BEFORE
    # Only that hunk applied: the file as a user who edited that site by hand leaves it.
    assert step.after == (
        "def a():\n    pager(1)\n\n\ndef b():\n    pager(2, color)\n    pager(3, color)\n"
    )
    # Shown already and still left as it was (the synthesiser left that site out): nothing
    # new to add there — not a line to keep.
    missed = "def a():\n    pager(1, color)\n\n\ndef b():\n    pager(2)\n    pager(3, color)\n"
    assert next_site(held, missed, [hunk], []) is None
    # Learned from it as a partial example, the held-out file comes out whole.
    result = synthesize([Example(step.before, step.after, path=step.path, partial=True)])
    assert result.apply(HELD_BEFORE)[0] == HELD_AFTER


def test_the_site_level_step_keeps_a_line_the_rules_rewrote_and_the_commit_kept() -> None:
    # The commit changed `pager(2)` only; the rules also rewrote `pager(1)` (line 2).
    after = HELD_BEFORE.replace("pager(2)", "pager(2, color)")
    held = FileCase("h.py", HELD_BEFORE, after, 1)
    got = HELD_AFTER
    first = next_site(held, got, [], [])
    assert first is not None and first[0] == "keep" and first[1] == [2]
    step = with_hunks(held, [], [2])
    assert step.partial and step.keep == (2,) and step.after == HELD_BEFORE
    # Taken and kept already: nothing new to show at those places; the next difference
    # (`pager(3)`, line 7, also kept by the commit) is the next step.
    second = next_site(held, got, [], [2])
    assert second == ("keep", [7])
    # A partial example that keeps a line is a negative there and free elsewhere.
    keep_line = "def b():\n    pager(2)\n    pager(9)\n"
    result = synthesize(
        [
            Example(BEFORE, AFTER, path="show.py", partial=True),
            Example(keep_line, keep_line, path="k.py", partial=True, keep=(3,)),
        ]
    )
    assert result.apply(keep_line)[0] == keep_line
    assert result.apply(BEFORE)[0].splitlines()[1] == "    pager(a, color)"


def test_the_site_level_protocol_scores_the_held_out_file_whole() -> None:
    from synth_real import Case, score, site_level

    # One example file whose single site is literal (`pager(0)` -> `pager(0, color)` next to
    # an unchanged `pager(9)`), one held-out file: the file-level protocol cannot add an
    # example; the site level adds the held-out file's first wrong hunk, partial.
    ex_before = "def z():\n    pager(0)\n    pager(9)\n"
    ex_after = "def z():\n    pager(0, color)\n    pager(9)\n"
    ex = FileCase("e.py", ex_before, ex_after, 1)
    held = FileCase("h.py", HELD_BEFORE, HELD_AFTER, 3)
    case = Case("r", "/nonexistent", "0" * 40, "python", "pager", [ex, held])
    first = score(case, [ex], [held])
    assert not first.exact
    s = site_level(case, first)
    assert s.exact
    assert s.added_sites == ["h.py:2"]
    assert s.example_sites == 2 and s.examples == 2
    assert "outputs" not in s.to_json()
    assert synth_real.SITE_CAP == 4
