"""The endpoint pool (``openai:<url1>|<url2>#model``): failover, cool-off and health checks
against real local HTTP servers — one healthy, one slow, one dead."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from oopav.models.base import Message, ModelError, ModelRequest
from oopav.models.pool import EndpointPool
from oopav.models.registry import load_backend

ChatServer = Any  # the fixture type lives in conftest.py (tests are not a package)


def _req() -> ModelRequest:
    return ModelRequest(role="actor", messages=[Message(role="user", content="hi")])


class SlowServer:
    """Answers every request, but only after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                time.sleep(delay)
                body = json.dumps({"choices": [{"message": {"content": "slow"}}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first: the point of a slow server

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_url() -> str:
    """A loopback port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_pool_fails_over_from_a_dead_and_a_slow_endpoint(chat_server: ChatServer) -> None:
    slow = SlowServer(delay=3.0)
    try:
        clock = FakeClock()
        pool = EndpointPool(
            [dead_url(), slow.base_url, chat_server.base_url],
            "m",
            options={"timeout_s": 0.5, "max_retries": 0},
            clock=clock,
        )
        chat_server.complete("from the healthy one")
        resp = await pool.complete(_req())
        assert resp.text == "from the healthy one"
        # model_called.backend names the endpoint that served the call.
        assert resp.backend == f"openai:{chat_server.base_url}#m"
        dead, slow_ep, _good = pool.endpoints
        assert dead.failures == 1 and "cannot reach" in dead.last_error
        assert slow_ep.failures == 1 and "did not answer in time" in slow_ep.last_error
        # The next call goes straight to the endpoint that answered: the others cool off.
        chat_server.complete("again")
        assert (await pool.complete(_req())).text == "again"
        assert len(chat_server.requests) == 2
        assert next(e.url for e in pool.order()) == chat_server.base_url
        # Cool-off doubles on each failure, up to the cap.
        clock.now += 10
        before = dead.down_until
        chat_server.close()
        with pytest.raises(ModelError) as err:
            await pool.complete(_req())
        assert err.value.kind == "unavailable"
        assert "no endpoint of the pool answered (3 tried)" in str(err.value)
        assert dead.failures == 2 and dead.down_until - clock.now == pytest.approx(4.0)
        assert dead.down_until > before
        await pool.aclose()
    finally:
        slow.close()


async def test_errors_no_other_server_would_fix_are_raised_at_once(chat_server: ChatServer) -> None:
    other = type(chat_server)()  # a second server of the fixture's kind
    try:
        pool = EndpointPool([chat_server.base_url, other.base_url], "m")
        chat_server.reply(400, {"error": {"message": "bad field"}})
        with pytest.raises(ModelError) as err:
            await pool.complete(_req())
        assert err.value.kind == "bad_request"
        assert other.requests == []  # no failover for the request's own fault
        await pool.aclose()
    finally:
        other.close()


async def test_health_reports_each_endpoint_and_puts_a_recovered_one_back(
    chat_server: ChatServer,
) -> None:
    class Models(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"data": [{"id": "m"}]}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    up = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        clock = FakeClock()
        pool = EndpointPool([up, dead_url()], "m", clock=clock)
        pool.endpoints[0].down_until = clock.now + 30
        rows = await pool.health()
        assert [(r["up"], r["serves"]) for r in rows] == [(True, True), (False, False)]
        assert "ConnectError" in rows[1]["error"]
        assert pool.endpoints[0].down_until == 0.0  # healthy again: back in rotation
        await pool.aclose()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_pool_spec_builds_a_pool_and_checks_every_url() -> None:
    pool = load_backend("openai:http://a:1/v1|http://b:2/v1#m")
    assert isinstance(pool, EndpointPool)
    assert pool.spec == "openai:http://a:1/v1|http://b:2/v1#m"
    with pytest.raises(ModelError, match="bad openai base URL 'ftp://b'"):
        load_backend("openai:http://a:1/v1|ftp://b#m")
