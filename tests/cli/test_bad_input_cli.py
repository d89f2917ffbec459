"""Bad input at the CLI, as a user hits it: one clear line and a non-zero exit, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from oopav.cli import cli

DEAD = ("--nats-url", "nats://127.0.0.1:1")
BAD_YAML = "output_dir: [\n  bad"


@pytest.mark.parametrize(
    "args",
    [
        ("train", "sft", "--config", "{bad}"),
        ("train", "srl", "--config", "{bad}"),
        ("synth", "{bad}"),
        ("run", "--policy", "{bad}", "--repo", "{tmp}", "do something"),
        ("guidance", "seed", "m", "{bad}"),
        ("models", "check", "scripted:{bad}"),
        ("up", "--reflector-config", "{bad}"),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_malformed_yaml_file_is_one_line(args: tuple[str, ...], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML)
    argv = [a.format(bad=bad, tmp=tmp_path) for a in args]
    result = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path / "data"), "--nats-url", "nats://127.0.0.1:1", *argv]
    )
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    error = [line for line in lines if "bad.yaml" in line]
    # PyYAML's own message spans six lines with carets; the user gets the problem and where.
    assert len(error) == 1 and "line 2, column 6" in error[0], result.output
    assert not any(line.lstrip().startswith("^") for line in lines), result.output

