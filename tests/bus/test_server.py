"""The embedded nats-server and what a user sees when no server is reachable."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from oopav.bus.errors import NatsUnavailable
from oopav.bus.server import EmbeddedServer, ServerError, find_running, nats_server_binary
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import ensure_streams
from oopav.events import catalog as ev


def test_binary_is_found() -> None:
    path = nats_server_binary()
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    assert "nats-server" in out.stdout


async def test_start_find_restart_keeps_data(tmp_path: Path) -> None:
    store_dir = tmp_path / "nats"
    server = EmbeddedServer(store_dir)
    url = server.start()
    try:
        assert url.startswith("nats://127.0.0.1:") and server.port
        assert find_running(store_dir) == url
        with pytest.raises(ServerError, match="already uses"):
            EmbeddedServer(store_dir).start()
        nc = await connect(url)
        await ensure_streams(nc.jetstream())
        event = ev.CriticVerdict(
            id="e1",
            aggregate_id="s1",
            correlation_id="s1",
            actor="t/0",
            ts=datetime(2026, 1, 1, tzinfo=UTC),
            verdict="reject",
            reasons=["kept"],
        )
        await EventStore(nc).append(event)
        await nc.close()
    finally:
        server.stop()
    assert find_running(store_dir) is None
    assert not (store_dir / "server.json").exists()

    again = EmbeddedServer(store_dir)
    url2 = again.start()
    try:
        nc = await connect(url2)
        assert await ensure_streams(nc.jetstream()) == [
            "OOPAV_EVENTS: unchanged",
            "OOPAV_INTAKE: unchanged",
            "OOPAV_DLQ: unchanged",
        ]
        [(seq, back)] = await EventStore(nc).read("session", "s1")
        assert seq == 1 and back == event
        await nc.close()
    finally:
        again.stop()


def test_find_running_ignores_a_stale_info_file(tmp_path: Path) -> None:
    (tmp_path / "server.json").write_text('{"url": "nats://127.0.0.1:1", "pid": 999999999}')
    assert find_running(tmp_path) is None
    (tmp_path / "server.json").write_text("garbage")
    assert find_running(tmp_path) is None


async def test_unreachable_url_is_a_one_line_error() -> None:
    url = "nats://127.0.0.1:1"
    with pytest.raises(NatsUnavailable) as info:
        await connect(url)
    text = str(info.value)
    assert "\n" not in text
    assert url in text and "oopav up" in text and "--nats-url" in text


def test_cli_with_unreachable_server_exits_nonzero(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        __import__("oopav.cli", fromlist=["cli"]).cli,
        ["--nats-url", "nats://127.0.0.1:1", "--data-dir", str(tmp_path), "sessions"],
    )
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: cannot reach NATS at nats://127.0.0.1:1")


def test_cli_subprocess_with_unreachable_server(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "oopav.cli",
            "--nats-url",
            "nats://127.0.0.1:1",
            "--data-dir",
            str(tmp_path),
            "sessions",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "cannot reach NATS at nats://127.0.0.1:1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_frozen_embedded_server_is_named_as_such(tmp_path: Path) -> None:
    """`kill -STOP` on the server of a live `oopav up`: a command says the server is not
    answering, not 'pass --nats-url' to the very server that does not answer."""
    import os
    import signal

    server = EmbeddedServer(tmp_path / "nats")
    server.start()
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        env = {k: v for k, v in os.environ.items() if k != "OOPAV_NATS_URL"}
        proc = subprocess.run(
            [sys.executable, "-m", "oopav.cli", "--data-dir", str(tmp_path), "sessions"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not answering its health check" in lines[0], proc.stderr


def test_a_port_taken_between_choosing_and_binding_is_chosen_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process can bind a free port before nats-server does (seen when two test runs
    shared a machine): the server picks another instead of failing."""
    import socket

    from oopav.bus import server as server_mod

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real_free_port = server_mod.free_port
    first = [taken.getsockname()[1]]
    monkeypatch.setattr(server_mod, "free_port", lambda: first.pop() if first else real_free_port())
    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    try:
        url = server.start()
        assert url.endswith(f":{server.port}") and server.port != taken.getsockname()[1]
    finally:
        server.stop()
        taken.close()
