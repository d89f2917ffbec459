from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import msgspec
import pytest

from oopav.events import ModelCalled, decode, encode, root_event
from oopav.events.clock import ManualClock
from oopav.models import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Sampling,
    load_backend,
    model_called_fields,
    request_hash,
)


def _req(**kw: object) -> ModelRequest:
    base: dict[str, object] = {
        "role": "actor",
        "messages": [Message(role="system", content="s"), Message(role="user", content="u")],
        "schema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "int"}}},
        "seed": 3,
    }
    base.update(kw)
    return ModelRequest(**base)  # type: ignore[arg-type]


def test_request_hash_is_canonical_over_key_order_and_builtins() -> None:
    a = _req()
    b = _req(
        schema={"properties": {"a": {"type": "int"}, "b": {"type": "string"}}, "type": "object"}
    )
    assert request_hash(a) == request_hash(b)
    assert request_hash(msgspec.to_builtins(a)) == request_hash(a)
    assert request_hash(_req(seed=4)) != request_hash(a)
    assert request_hash(_req(sampling=Sampling(temperature=0.5))) != request_hash(a)
    assert len(request_hash(a)) == 64


def test_model_called_fields_make_a_valid_event_that_round_trips() -> None:
    req = _req()
    resp = ModelResponse(
        text="hi", prompt_tokens=5, completion_tokens=1, latency_ms=2.5, finish_reason="length"
    )
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    ev = root_event(
        ModelCalled, handler="actor", clock=clock, **model_called_fields(req, resp, "scripted:x")
    )
    back = decode(encode(ev))
    assert isinstance(back, ModelCalled)
    assert back.request_hash == request_hash(req)
    assert request_hash(back.request) == back.request_hash
    assert (back.response, back.prompt_tokens, back.finish_reason) == ("hi", 5, "length")
    assert back.error is None


def test_model_called_fields_for_a_failed_call_record_the_error() -> None:
    fields = model_called_fields(_req(), None, "openai:x#m", error=ModelError("timeout", "slow"))
    assert fields["error"] == "timeout: slow"
    assert fields["finish_reason"] == "error"
    assert ModelError.from_recorded(fields["error"]).kind == "timeout"


def test_model_error_is_one_line() -> None:
    err = ModelError("unavailable", "cannot reach\n  the server\n")
    assert "\n" not in str(err)
    assert str(err) == "unavailable: cannot reach the server"


@pytest.mark.parametrize(
    "spec", ["nope", "unknown:x", "openai:http://h:1/v1", "openai:ftp://h#m", "scripted:"]
)
def test_bad_specs_are_invalid_spec_errors(spec: str) -> None:
    with pytest.raises(ModelError) as info:
        load_backend(spec)
    assert info.value.kind == "invalid_spec"


def test_spec_comes_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "s.json"
    script.write_text('["x"]')
    monkeypatch.setenv("OOPAV_MODEL", f"scripted:{script}")
    assert load_backend().spec == f"scripted:{script}"
    monkeypatch.delenv("OOPAV_MODEL")
    with pytest.raises(ModelError, match="OOPAV_MODEL"):
        load_backend()


def test_vllm_without_vllm_installed_says_so() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed")
    with pytest.raises(ModelError) as info:
        load_backend("vllm:/models/x")
    assert info.value.kind == "missing_dependency"
    assert "oopav[gpu]" in str(info.value)


def test_importing_the_cli_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys, oopav.cli, oopav.models, oopav.models.registry;"
        "heavy=[m for m in ('torch','transformers','xgrammar','vllm') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
