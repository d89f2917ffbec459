"""A long-running process that connects just as the server goes down waits for it through the
stream set-up too (bench/chaos.py: a verifier restarted during the outage died at start-up
with a traceback from its stream lookup); a one-shot command still fails at once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nats.errors
import pytest

from oopav import app
from oopav.config import Settings


async def test_a_handler_whose_set_up_request_is_lost_waits_for_the_server(
    nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The set-up's first request is lost in flight (written to the socket of a server that
    then stopped: no reply ever comes, nats-py raises its TimeoutError): the process tries
    again instead of exiting."""
    real = app.ensure_streams
    calls: list[str] = []

    async def lost_first(js: Any) -> None:
        calls.append("ensure_streams")
        if len(calls) == 1:
            raise nats.errors.TimeoutError
        await real(js)

    monkeypatch.setattr(app, "ensure_streams", lost_first)
    settings = Settings(data_dir=tmp_path / "data", nats_url=nats_url)
    async with asyncio.timeout(60):
        async with app.open_bus(settings, name="test-wait", give_up_after=float("inf")) as bus:
            info = await bus.events.js.stream_info("OOPAV_EVENTS")
    assert info.config.name == "OOPAV_EVENTS"
    assert calls == ["ensure_streams", "ensure_streams"]


async def test_a_one_shot_command_does_not_wait(
    nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def times_out(js: Any) -> None:
        raise nats.errors.TimeoutError

    monkeypatch.setattr(app, "ensure_streams", times_out)
    settings = Settings(data_dir=tmp_path / "data", nats_url=nats_url)
    with pytest.raises(nats.errors.TimeoutError):
        async with app.open_bus(settings, name="test-once"):
            pass


def test_a_request_the_server_never_answers_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from oopav.cli.kit import run_async

    @run_async
    async def command() -> None:
        raise nats.errors.TimeoutError

    with pytest.raises(SystemExit) as exit_:
        command()
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: the NATS server did not answer in time"]
