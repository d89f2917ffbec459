"""`oopav tui` as a command: registered, lazy about Textual, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from oopav.cli import cli


def test_importing_the_cli_does_not_import_textual() -> None:
    code = "import sys, oopav.cli; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_lists_the_keys() -> None:
    result = CliRunner().invoke(cli, ["tui", "--help"])
    assert result.exit_code == 0
    assert "--session ID" in result.output
    assert "/ filter" in result.output


def test_no_server_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OOPAV_NATS_URL", raising=False)
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "tui"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no NATS server")


def test_an_unknown_session_is_a_one_line_error(
    tmp_path: Path, nats_url: str, nc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OOPAV_NATS_URL", raising=False)
    result = CliRunner().invoke(
        cli, ["--nats-url", nats_url, "--data-dir", str(tmp_path), "tui", "--session", "ffff"]
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: no session matches 'ffff': see `oopav sessions`"
    ]
