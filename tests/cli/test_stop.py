"""Starting and stopping like a user expects: one Ctrl-C aborts and stops `oopav run` and its
embedded server, a second exits at once, two runs share a server without killing each other,
an orphaned embedded server is adopted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

from helpers.cli import reaped, spawn_oopav
from oopav.bus.server import EmbeddedServer, adopt_running, find_running

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TASK = ROOT / "examples" / "rename_fetch" / "task.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie child of ours counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _spawn_run(data_dir: Path, *args: str) -> asyncio.subprocess.Process:
    return await spawn_oopav("run", *args, data_dir=data_dir, cwd=str(ROOT))


async def _read_until(stream: asyncio.StreamReader, needle: str, timeout: float = 90) -> str:
    seen = []

    async def read() -> str:
        while True:
            line = (await stream.readline()).decode()
            if not line:
                raise AssertionError(f"no {needle!r} in {''.join(seen)}")
            seen.append(line)
            if needle in line:
                return "".join(seen)

    return await asyncio.wait_for(read(), timeout)


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier and c not in out}
        out |= frontier
    return out


async def _running(pid: int, argv: list[str], timeout: float = 240) -> None:
    """Wait until ``argv`` runs below ``pid`` (the sandboxed baseline test command): what the
    test waits for is that event, not a guess of how long start-up takes on a loaded machine.
    The deadline only keeps a broken run from hanging the suite."""
    want = "\0".join(argv).encode()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        for child in _descendants(pid):
            try:
                if Path(f"/proc/{child}/cmdline").read_bytes().rstrip(b"\0") == want:
                    return
            except OSError:
                continue
        await asyncio.sleep(0.1)
    raise AssertionError(f"{argv} never started below pid {pid}")


async def _events(store_dir: Path, sid: str) -> list[object]:
    """A session's events, read from the (stopped) embedded server's store."""
    from oopav.bus.store import EventStore, connect

    server = EmbeddedServer(store_dir, write_info=False)
    url = await asyncio.to_thread(server.start)
    try:
        nc = await connect(url)
        try:
            return [e for _, e in await EventStore(nc).read("session", sid)]
        finally:
            await nc.close()
    finally:
        await asyncio.to_thread(server.stop)


async def test_ctrl_c_aborts_the_session_and_stops_the_embedded_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # The baseline test run hangs: the session is in work when the user presses Ctrl-C.
    proc = await _spawn_run(data, "--task", str(EXAMPLE_TASK), "--test-command", "sleep 120")
    assert proc.stderr is not None
    try:
        head = await _read_until(proc.stderr, "session ", timeout=240)
        await _running(proc.pid, ["sleep", "120"])  # the observer is in the baseline test run
        sid = next(ln.split()[1] for ln in head.splitlines() if ln.startswith("session "))
        info = json.loads((data / "nats" / "server.json").read_text())
        proc.send_signal(signal.SIGINT)
        # A deadline, not an estimate: the abort is what is waited for.
        _, err = await asyncio.wait_for(proc.communicate(), 240)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = head + err.decode()
    assert proc.returncode == 130, text
    assert f"interrupted: session {sid} ended as aborted" in text
    assert "oopav resume" in text and "Traceback" not in text
    assert not _alive(int(info["pid"])), "the embedded nats-server outlived oopav run"
    assert not (data / "nats" / "server.json").exists()
    events = await _events(data / "nats", sid)
    end = events[-1]
    assert end.type == "session_completed" and end.outcome == "aborted"  # type: ignore[attr-defined]
    assert end.reason == "interrupted"  # type: ignore[attr-defined]

    from oopav.services import INTERRUPTED

    assert INTERRUPTED == "interrupted"


async def test_a_second_ctrl_c_exits_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = await _spawn_run(data, "--task", str(EXAMPLE_TASK), "--test-command", "sleep 120")
    assert proc.stderr is not None
    try:
        await _read_until(proc.stderr, "session ", timeout=240)
        await _running(proc.pid, ["sleep", "120"])
        info = json.loads((data / "nats" / "server.json").read_text())
        proc.send_signal(signal.SIGINT)
        await _read_until(proc.stderr, "stopping: draining", timeout=240)
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 240)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130
    assert "interrupted again: exiting now" in err.decode()
    assert not _alive(int(info["pid"]))


async def test_two_runs_at_once_each_get_their_outcome(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = await _spawn_run(data, "--task", str(EXAMPLE_TASK), "--json")
    for _ in range(600):  # its server is up
        if find_running(data / "nats"):
            break
        await asyncio.sleep(0.05)
    assert find_running(data / "nats")
    second = await _spawn_run(data, "--task", str(EXAMPLE_TASK), "--json")
    async with reaped(first, second):
        out1, _ = await asyncio.wait_for(first.communicate(), 300)
        out2, err2 = await asyncio.wait_for(second.communicate(), 300)
    r1, r2 = json.loads(out1), json.loads(out2)
    assert (first.returncode, second.returncode) == (0, 0), err2.decode()[-2000:]
    assert r1["session_id"] != r2["session_id"]
    assert r1["outcome"] == r2["outcome"] == "success"
    assert find_running(data / "nats") is None  # the last one out stopped the server


def test_an_orphaned_embedded_server_is_adopted(tmp_path: Path) -> None:
    store = tmp_path / "nats"
    server = EmbeddedServer(store)
    url = server.start()
    try:
        # Its starter died (kill -9): a dead pid is recorded as the owner.
        dead = subprocess.Popen(["true"])
        dead.wait()
        info = json.loads(server.info_file.read_text())
        info["owner"] = dead.pid
        server.info_file.write_text(json.dumps(info))
        assert adopt_running(store) == url
    finally:
        server.stop()
    assert adopt_running(store) is None


async def test_sigterm_stops_oopav_up_and_its_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = await spawn_oopav("up", "--concurrency", "4", data_dir=data)
    assert proc.stderr is not None
    async with reaped(proc):
        await _read_until(proc.stderr, "submit with:")
        info = json.loads((data / "nats" / "server.json").read_text())
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "stopping: draining" in err.decode() and "Traceback" not in err.decode()
    assert not _alive(int(info["pid"]))
    assert find_running(data / "nats") is None
