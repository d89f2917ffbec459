"""Fitting a learned rule set to the repository it is for (synth/target.py, wave 3m).

A rename learned from member accesses only (``errs.OldClosed``) keeps to member names; the
repository imports the name bare. Given the repository's files, the rule that rewrites
nothing there is widened by the least step that still reproduces every example."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from oopav.cli import cli
from oopav.synth import Example, synthesize

BEFORE = """import errs


def test_a():
    with raises(errs.OldClosed):
        a()


def test_b():
    with raises(errs.OldClosed):
        b()
"""
AFTER = BEFORE.replace("OldClosed", "NewClosed")
REPO = (
    "from .exc import (\n    OldClosed,\n    Other,\n)\n\n\ndef close(s):\n    raise OldClosed()\n"
)


# `self.flag` typed as bool; the example keeps `self.n = a`, so the right-hand side stays a
# boolean `and` (a negative for "every assignment").
FLAG_BEFORE = (
    "class A:\n    def __init__(self, a, b):\n"
    "        self.flag = a and isinstance(b, int)\n        self.n = a\n"
)
FLAG_AFTER = FLAG_BEFORE.replace("self.flag =", "self.flag: bool =")


def _example() -> Example:
    return Example(BEFORE, AFTER, path="tests/test_x.py")


def test_a_rule_that_rewrites_nothing_in_the_repository_is_fitted_to_it() -> None:
    learned = synthesize([_example()])
    # As learned, the rule keeps to member names: the repository's bare name stays.
    assert learned.apply(REPO)[0] == REPO
    fitted = synthesize([_example()], target=[("pkg/models.py", REPO)])
    got, n = fitted.apply(REPO)
    assert n == 2
    assert got == REPO.replace("OldClosed", "NewClosed")
    # Still reproduces the example, and says what it did.
    assert fitted.apply(BEFORE)[0] == AFTER
    assert any(note.startswith("fitted to the repository") for note in fitted.notes)
    assert "`any` of contexts dropped" in " ".join(fitted.notes)


def test_a_rule_that_already_rewrites_something_there_is_left_as_learned() -> None:
    repo = REPO + "\n\nx = errs.OldClosed\n"
    learned = synthesize([_example()])
    fitted = synthesize([_example()], target=[("pkg/models.py", repo)])
    assert fitted.to_yaml() == learned.to_yaml()
    assert not any(n.startswith("fitted") for n in fitted.notes)
    # The bare import stays: the rule rewrites the member access only.
    assert "    OldClosed,\n" in fitted.apply(repo)[0]


def test_the_examples_unchanged_code_bounds_the_fit() -> None:
    # The example keeps a bare `OldClosed` (a local of that name): dropping the member
    # context would rewrite it, so no fit reproduces the example and none is made.
    before = BEFORE + "\n\ndef local():\n    OldClosed = 1\n    return OldClosed\n"
    after = AFTER + "\n\ndef local():\n    OldClosed = 1\n    return OldClosed\n"
    ex = Example(before, after, path="tests/test_x.py")
    learned = synthesize([ex])
    fitted = synthesize([ex], target=[("pkg/models.py", REPO)])
    assert fitted.to_yaml() == learned.to_yaml()
    assert fitted.apply(REPO)[0] == REPO
    assert fitted.apply(before)[0] == after


def test_the_fit_never_generalises_away_the_name_the_edit_changes() -> None:
    # A repository with member names but no `OldClosed`: dropping the rename's regex would
    # match every member (`t.BinaryIO` -> `t.NewClosed`); the fit keeps the old name, so it
    # finds nothing and leaves the rule as learned.
    repo = "import typing as t\n\n\ndef f(s: t.BinaryIO) -> t.TextIO:\n    return s.read()\n"
    learned = synthesize([_example()])
    fitted = synthesize([_example()], target=[("pkg/io.py", repo)])
    assert fitted.to_yaml() == learned.to_yaml()
    assert fitted.apply(repo)[0] == repo
    assert not any(n.startswith("fitted") for n in fitted.notes)


def test_a_fit_far_wider_than_the_examples_is_not_taken() -> None:
    # An insertion (no word removed): the least step that matches rewrites 12 sites of the
    # repository from 1 example site, past the cap (8): not taken.
    before, after = FLAG_BEFORE, FLAG_AFTER
    ex = Example(before, after, path="m.py")
    body = "".join(f"        self.z{i} = p and check(q)\n" for i in range(12))
    repo = "class B:\n    def __init__(self, p, q):\n" + body
    fitted = synthesize([ex], target=[("r.py", repo)])
    assert fitted.apply(repo)[0] == repo
    assert not any(n.startswith("fitted") for n in fitted.notes)


def test_the_least_generalisation_is_taken() -> None:
    # The example keeps `self.n = a`, so the right-hand side stays a boolean `and`. Two
    # one-step generalisations match in the repository: the call head `isinstance` made a
    # metavariable (one site there) and the whole call (two). The fewer wins.
    before, after = FLAG_BEFORE, FLAG_AFTER
    ex = Example(before, after, path="m.py")
    repo = (
        "class B:\n    def __init__(self, p, q):\n        self.x = p and q\n"
        "        self.z = p and check(q)\n        self.y = 5\n"
    )
    assert synthesize([ex]).apply(repo)[1] == 0
    fitted = synthesize([ex], target=[("r.py", repo)])
    got, n = fitted.apply(repo)
    assert n == 1, fitted.to_yaml()
    assert "self.z: bool = p and check(q)\n" in got
    assert "        self.x = p and q\n" in got  # the wider step was not taken
    assert "        self.y = 5\n" in got
    assert fitted.apply(before)[0] == after


def test_cli_apply_fits_the_rule_to_the_directory(tmp_path: Path) -> None:
    (tmp_path / "ex.yml").write_text(
        yaml.safe_dump({"examples": [{"before": BEFORE, "after": AFTER, "path": "t.py"}]})
    )
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "models.py").write_text(REPO)
    out = CliRunner().invoke(
        cli, ["synth", str(tmp_path / "ex.yml"), "--apply", str(repo), "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["apply"]["sites"] == 2
    assert any(n.startswith("fitted to the repository") for n in data["notes"])
    assert (repo / "pkg" / "models.py").read_text() == REPO  # a dry run


def test_the_loop_stop_names_the_fitted_rule(tmp_path: Path) -> None:
    # The observer's check before any test runs (handlers/support/examples_check.py): the
    # session still stops (the loop applies no rule the examples do not show), and the reason
    # names the fitted rule for the user to review.
    from oopav.handlers.support.examples_check import examples_match_nothing

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "models.py").write_text(REPO)
    why = examples_match_nothing(
        tmp_path, [{"before": BEFORE, "after": AFTER, "path": "tests/test_x.py"}]
    )
    assert why is not None
    assert "match nothing in the repository" in why
    assert "a rule widened to fit the repository (its `any` of contexts dropped)" in why
    assert "would rewrite 2 site(s)" in why
    assert (tmp_path / "pkg" / "models.py").read_text() == REPO


def test_cli_write_needs_fit_to_write_the_fitted_rule(tmp_path: Path) -> None:
    (tmp_path / "ex.yml").write_text(
        yaml.safe_dump({"examples": [{"before": BEFORE, "after": AFTER, "path": "t.py"}]})
    )
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    target = repo / "pkg" / "models.py"
    target.write_text(REPO)
    args = ["synth", str(tmp_path / "ex.yml"), "--apply", str(repo), "--write"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert target.read_text() == REPO  # the examples do not show the fitted rule: not written
    assert "would rewrite 2 site(s); not written" in out.stderr
    assert "pass --fit to write it" in out.stderr
    out = CliRunner().invoke(cli, [*args, "--fit"])
    assert out.exit_code == 0, out.output
    assert target.read_text() == REPO.replace("OldClosed", "NewClosed")
    bad = CliRunner().invoke(cli, ["synth", str(tmp_path / "ex.yml"), "--fit"])
    assert bad.exit_code == 2 and "--fit needs --apply DIR --write" in bad.output
