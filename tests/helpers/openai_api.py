"""The pieces of the chat-completions API the tests' fake model servers answer with."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from typing import Any


def completion(
    text: str,
    usage: dict[str, int],
    *,
    id: str = "cmpl-1",
    finish_reason: str = "stop",
    **extra: Any,
) -> dict[str, Any]:
    """A chat completion whose one choice is the assistant's ``text``."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}}
    return {
        "id": id,
        "object": "chat.completion",
        **extra,
        "choices": [{**choice, "finish_reason": finish_reason}],
        "usage": usage,
    }


def send_json(
    handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None
) -> None:
    """Answer the request ``handler`` serves with the JSON body ``data``."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
