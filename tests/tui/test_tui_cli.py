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


async def test_the_command_resolves_a_prefix_and_runs_the_app(
    tmp_path: Path, nats_url: str, nc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from tui_sessions import SessionBuilder

    from oopav.bus.store import EventStore
    from oopav.tui.app import OopavTUI

    b = SessionBuilder("one session", seed=31)
    await EventStore(nc).append(b.task)
    seen: dict[str, Any] = {}

    async def run_async(self: OopavTUI, **_: Any) -> None:  # no terminal in tests
        seen["session"] = self._initial_session
        seen["url"] = self.feed.url

    monkeypatch.setattr(OopavTUI, "run_async", run_async)
    monkeypatch.delenv("OOPAV_NATS_URL", raising=False)
    args = ["--nats-url", nats_url, "--data-dir", str(tmp_path), "tui", "--session"]
    # The command runs its own event loop: give it a thread.
    result = await asyncio.to_thread(CliRunner().invoke, cli, [*args, b.session_id[:13]])
    assert result.exit_code == 0, result.output
    assert seen == {"session": b.session_id, "url": nats_url}
