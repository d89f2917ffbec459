from __future__ import annotations

import socket
from typing import Any

import pytest

from oopav.models import Message, ModelError, ModelRequest, Sampling, load_backend, output_schema
from oopav.models.openai import OpenAIBackend

ChatServer = Any  # the fixture type lives in conftest.py (tests are not a package)


def _req(envelope: str | None = None) -> ModelRequest:
    return ModelRequest(
        role="actor",
        messages=[Message(role="system", content="sys"), Message(role="user", content="go")],
        schema=output_schema("actor"),
        envelope=envelope,
        state_update=False,
        sampling=Sampling(temperature=0.2, max_tokens=64, stop=["</x>"]),
        seed=5,
    )


def _backend(server: ChatServer, **kw: object) -> OpenAIBackend:
    opts: dict[str, object] = {"backoff_s": 0.0, "max_retries": 2}
    opts.update(kw)
    b = load_backend(f"openai:{server.base_url}#tiny-model", **opts)
    assert isinstance(b, OpenAIBackend)
    return b


async def test_completion_with_json_schema_response_format(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OOPAV_API_KEY", "sk-test")
    chat_server.complete('{"type": "finish", "summary": "ok"}')
    b = _backend(chat_server)
    r = await b.complete(_req())
    await b.aclose()
    assert r.text == '{"type": "finish", "summary": "ok"}'
    assert (r.prompt_tokens, r.completion_tokens, r.finish_reason) == (42, 7, "stop")
    assert r.latency_ms > 0
    sent = chat_server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    body = sent["body"]
    assert body["model"] == "tiny-model"
    assert body["messages"][1] == {"role": "user", "content": "go"}
    assert (body["temperature"], body["max_tokens"], body["seed"], body["stop"]) == (
        0.2,
        64,
        5,
        ["</x>"],
    )
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == output_schema("actor")
    assert "structured_outputs" not in body


async def test_envelope_goes_as_vllm_grammar(chat_server: ChatServer) -> None:
    pytest.importorskip("xgrammar")
    chat_server.complete("<think></think><action>{}</action>")
    b = _backend(chat_server)
    await b.complete(_req(envelope="action"))
    await b.aclose()
    body = chat_server.requests[0]["body"]
    assert "response_format" not in body
    grammar = body["structured_outputs"]["grammar"]
    assert '"<think>"' in grammar and "</action>" in grammar and "root ::=" in grammar


async def test_structured_none_sends_no_constraint(chat_server: ChatServer) -> None:
    chat_server.complete("{}")
    b = _backend(chat_server, structured="none")
    await b.complete(_req())
    await b.aclose()
    body = chat_server.requests[0]["body"]
    assert "response_format" not in body and "structured_outputs" not in body


async def test_retries_429_and_5xx_then_succeeds(chat_server: ChatServer) -> None:
    chat_server.reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
    chat_server.reply(503, {"error": {"message": "warming up"}})
    chat_server.complete("done")
    b = _backend(chat_server)
    r = await b.complete(_req())
    await b.aclose()
    assert r.text == "done"
    assert len(chat_server.requests) == 3


async def test_429_after_every_retry_is_rate_limited(chat_server: ChatServer) -> None:
    for _ in range(3):
        chat_server.reply(429, {"error": {"message": "quota"}})
    b = _backend(chat_server, max_retries=2)
    with pytest.raises(ModelError) as info:
        await b.complete(_req())
    await b.aclose()
    assert info.value.kind == "rate_limited"
    assert "quota" in str(info.value)
    assert len(chat_server.requests) == 3


@pytest.mark.parametrize(
    "payload",
    [b"not json at all", b'{"choices": []}', b'{"choices": [{"message": {"content": 3}}]}'],
)
async def test_malformed_body_is_bad_response(chat_server: ChatServer, payload: bytes) -> None:
    chat_server.reply(200, payload)
    b = _backend(chat_server)
    with pytest.raises(ModelError) as info:
        await b.complete(_req())
    await b.aclose()
    assert info.value.kind == "bad_response"
    assert "\n" not in str(info.value)
    assert len(chat_server.requests) == 1  # a malformed answer is not retried


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (404, "The model `tiny-model` does not exist.", "not_found"),
        (
            400,
            "This model's maximum context length is 2048 tokens. However, you requested 9000 tokens.",
            "context_length",
        ),
        (401, "Invalid API key", "auth"),
        (422, "temperature must be >= 0", "bad_request"),
    ],
)
async def test_client_errors_are_typed(
    chat_server: ChatServer, status: int, message: str, kind: str
) -> None:
    chat_server.reply(status, {"error": {"message": message}})
    b = _backend(chat_server)
    with pytest.raises(ModelError) as info:
        await b.complete(_req())
    await b.aclose()
    assert info.value.kind == kind
    assert len(chat_server.requests) == 1


async def test_server_down_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = load_backend(f"openai:http://127.0.0.1:{port}/v1#m", backoff_s=0.0)
    with pytest.raises(ModelError) as info:
        await b.complete(_req())
    await b.aclose()
    assert info.value.kind == "unavailable"
    assert "is the server running" in str(info.value)
