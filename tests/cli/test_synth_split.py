"""`oopav synth --split DIR`: one rule file per rule, to apply one `ast-grep scan` at a time
in order — what a user needs when rules learned one after another read otherwise at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from click.testing import CliRunner

from oopav.cli import cli
from oopav.cli.synth import write_split
from oopav.sandbox.astgrep import find_cli
from oopav.synth.core import SynthResult, SynthRule


def _scan(rule_file: Path, tree: Path) -> None:
    subprocess.run(
        [find_cli(), "scan", "--rule", str(rule_file), "--update-all", str(tree)],
        check=True,
        capture_output=True,
        timeout=60,
    )


def test_split_files_applied_in_order_give_what_the_rule_set_gives(tmp_path: Path) -> None:
    """The second rule rewrites what the first produced: one scan of the whole file applies
    both to the original text (the second finds nothing); the split files, in order, give the
    rule set's own result."""
    first = SynthRule(
        id="rename", language="python", rule={"pattern": "foo($$$A)"}, fix="bar($$$A)"
    )
    second = SynthRule(
        id="add arg", language="python", rule={"pattern": "bar($A)"}, fix="bar($A, 1)"
    )
    result = SynthResult([first, second], "python", 1)
    source = "foo(x)\n"
    assert result.apply(source)[0] == "bar(x, 1)\n"

    whole = tmp_path / "all.yml"
    whole.write_text(result.to_yaml())
    at_once = tmp_path / "at-once"
    at_once.mkdir()
    (at_once / "m.py").write_text(source)
    _scan(whole, at_once)
    assert (at_once / "m.py").read_text() == "bar(x)\n"  # why --split exists

    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "07-stale.yml").write_text("left from an earlier split\n")
    written = write_split(result, folder)
    assert [p.name for p in written] == ["01-rename.yml", "02-add-arg.yml"]
    assert sorted(p.name for p in folder.iterdir()) == ["01-rename.yml", "02-add-arg.yml"]
    in_order = tmp_path / "in-order"
    in_order.mkdir()
    (in_order / "m.py").write_text(source)
    for path in written:
        assert len(list(yaml.safe_load_all(path.read_text()))) == 1
        _scan(path, in_order)
    assert (in_order / "m.py").read_text() == "bar(x, 1)\n"


def test_cli_split_writes_the_files_and_says_how_to_run_them(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text(
        yaml.safe_dump(
            [{"path": "a.py", "before": "fetch(1)\nfetch(2)\n", "after": "get(1)\nget(2)\n"}]
        )
    )
    folder = tmp_path / "out" / "rules"
    r = CliRunner().invoke(cli, ["synth", str(ex), "--split", str(folder)])
    assert r.exit_code == 0, r.output
    files = sorted(folder.glob("*.yml"))
    assert len(files) == 1 and files[0].name.startswith("01-")
    assert yaml.safe_load(files[0].read_text())["fix"] == "get"
    assert "apply them one at a time, in order" in r.output
    assert f"for f in {folder}/[0-9][0-9]-*.yml" in r.output


def test_cli_split_into_a_file_is_one_clear_error(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text(yaml.safe_dump([{"path": "a.py", "before": "fetch(1)\n", "after": "get(1)\n"}]))
    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a folder\n")
    r = CliRunner().invoke(cli, ["synth", str(ex), "--split", str(blocker / "rules")])
    assert r.exit_code == 1
    assert "cannot write the rules to" in r.output
