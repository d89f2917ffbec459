"""The embedded server dies under `oopav up` (issue 29, item 4): `up` restarts it on the same
port and store, logged, and a session in flight still completes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from chaos_harness import (
    _connect,
    _until_intake,
    _wait_all,
    finish_answer,
    make_repo,
    plan_answer,
    rename_all,
)
from chaos_harness import task as make_task

from oopav.bus.server import EmbeddedServer
from oopav.bus.supervisor import SupervisorStats, supervise

pytestmark = pytest.mark.chaos


async def _read_until(stream: asyncio.StreamReader, needle: str, timeout: float = 120) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        line = await asyncio.wait_for(stream.readline(), max(0.1, deadline - time.monotonic()))
        if not line:
            raise AssertionError(f"stream ended before {needle!r}: {seen[-2000:]}")
        seen += line.decode(errors="replace")
    return seen


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


async def test_supervisor_restarts_a_killed_server_on_its_port(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "nats", write_info=True)
    url = server.start()
    stop = asyncio.Event()
    stats = SupervisorStats()
    task = asyncio.create_task(supervise(server, stop, poll_s=0.05, stats=stats))
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        await js.publish("s.1", b"before")
        first = server.proc.pid  # type: ignore[union-attr]
        os.kill(first, signal.SIGKILL)
        for _ in range(1200):  # at most 60 s
            if stats.restarts:
                break
            await asyncio.sleep(0.05)
        assert stats.restarts == 1
        assert server.url == url and server.proc is not None and server.proc.pid != first
        assert json.loads(server.info_file.read_text())["pid"] == server.proc.pid
        # The same client reconnects, and the acknowledged message survived.
        ack = await js.publish("s.2", b"after", timeout=30)
        assert ack.seq == 2
        msg = await js.get_msg("S", 1)
        assert msg.data == b"before"
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await nc.close()
        server.stop()


@pytest.mark.timeout(400)
async def test_a_session_completes_after_the_server_is_killed_under_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "OOPAV_LOG_LEVEL": "INFO"}
    env.pop("OOPAV_NATS_URL", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "oopav.cli",
        "--data-dir",
        str(data),
        "up",
        "--no-learner",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None
    log_lines: list[str] = []

    async def drain() -> None:  # keep reading so `up` never blocks on a full pipe
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            log_lines.append(line.decode(errors="replace"))

    nc = None
    try:
        await _read_until(proc.stderr, "submit with:")
        reader = asyncio.create_task(drain())
        info = json.loads((data / "nats" / "server.json").read_text())
        nc = await _connect(info["url"])
        await _until_intake(nc)
        repo = make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
        script = tmp_path / "script.yaml"
        script.write_text(
            yaml.safe_dump({"planner": [plan_answer()], "actor": [rename_all(), finish_answer()]})
        )
        body = make_task(repo, model=f"scripted:{script}")
        body["instruction"] += f" ({uuid.uuid4().hex[:8]})"
        msg = await nc.request("oopav.tasks.submit", json.dumps(body).encode(), timeout=30)
        sid = json.loads(msg.data)["session_id"]
        os.kill(int(info["pid"]), signal.SIGKILL)  # mid-session
        outcomes = await _wait_all(nc, [sid], timeout=240)
        assert outcomes == {sid: "success"}, "".join(log_lines)[-4000:]
        text = "".join(log_lines)
        assert "nats_server_died" in text and "nats_server_restarted" in text
        new = json.loads((data / "nats" / "server.json").read_text())
        assert new["url"] == info["url"] and new["pid"] != info["pid"]
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 60)
        reader.cancel()
        assert proc.returncode == 0
        assert not _alive(int(new["pid"]))  # the restarted server is stopped with `up`
    finally:
        if nc is not None:
            await nc.close()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_store_write_error_restarts_the_server_once_space_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oopav.bus import storage

    free = {"bytes": 0}
    storage.set_probe(lambda _p: free["bytes"])
    storage._configured = storage.Watermark(tmp_path, min_free=100 << 20)
    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    server.start()
    stop = asyncio.Event()
    stats = SupervisorStats()
    task = asyncio.create_task(supervise(server, stop, poll_s=0.05, stats=stats))
    try:
        first = server.proc.pid  # type: ignore[union-attr]
        await asyncio.sleep(0.2)  # the supervisor is watching
        # What nats-server logs when a stream's write fails for lack of space.
        with (server.store_dir / "nats-server.log").open("a") as fh:
            fh.write(
                "[ERR] Filestore [OOPAV_EVENTS] Critical write error: no space left on device\n"
            )
        for _ in range(20):
            await asyncio.sleep(0.05)
        assert stats.write_errors == 1 and server.proc.pid == first  # type: ignore[union-attr]
        assert stats.restarts == 0  # no space yet: a restart would fail the same way
        free["bytes"] = 10 << 30
        for _ in range(1200):
            if stats.restarts:
                break
            await asyncio.sleep(0.05)
        assert stats.restarts == 1 and server.proc.pid != first  # type: ignore[union-attr]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        server.stop()
        storage.set_probe(None)
        storage._configured = None


async def test_a_failed_restart_is_retried_with_backoff(tmp_path: Path) -> None:
    import socket

    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    server.start()
    stop = asyncio.Event()
    stats = SupervisorStats()
    # Someone else takes the port while the server is down: the restart fails until it is free.
    thief = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    thief.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    task = None
    try:
        pid = server.proc.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGKILL)
        server.proc.wait()  # type: ignore[union-attr]
        thief.bind(("127.0.0.1", server.port))  # type: ignore[arg-type]
        thief.listen()
        task = asyncio.create_task(
            supervise(server, stop, poll_s=0.05, backoff_s=0.1, max_backoff_s=0.4, stats=stats)
        )
        for _ in range(600):
            if stats.failed_attempts >= 2:
                break
            await asyncio.sleep(0.05)
        assert stats.failed_attempts >= 2 and stats.restarts == 0
        thief.close()
        for _ in range(1200):
            if stats.restarts:
                break
            await asyncio.sleep(0.05)
        assert stats.restarts == 1 and server.proc is not None and server.proc.pid != pid
        assert server.url.endswith(f":{server.port}")
    finally:
        thief.close()
        stop.set()
        if task is not None:
            await asyncio.wait_for(task, 10)
        server.stop()
