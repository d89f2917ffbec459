"""Fixtures for the model tests: a chat-completions server on loopback and the tiny model."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helpers.openai_api import completion, send_json


class ChatServer:
    """A real HTTP server speaking the chat-completions API, answering from a queue."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, bytes, dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, payload, headers = (
                    outer.replies.pop(0) if outer.replies else (500, b"{}", {})
                )
                send_json(self, status, payload, headers)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reply(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.replies.append((status, raw, headers or {}))

    def complete(self, text: str, *, finish_reason: str = "stop") -> None:
        usage = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
        self.reply(200, completion(text, usage, finish_reason=finish_reason))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("xgrammar")
    from oopav.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir: Path) -> Any:
    from oopav.models.hf import HFBackend

    # Bounded strings, arrays and think text: a random model never closes a string on its own,
    # and the bound lets every constrained answer finish well inside max_tokens.
    return HFBackend(
        tiny_model_dir, device="cpu", think_chars=16, max_string_length=12, max_items=2
    )
