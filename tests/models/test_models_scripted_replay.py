from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from oopav.events import ModelCalled, TaskSubmitted, root_event
from oopav.events.clock import ManualClock
from oopav.events.ids import IdGenerator
from oopav.models import (
    Message,
    ModelError,
    ModelRequest,
    ReplayBackend,
    ScriptedBackend,
    first_difference,
    load_backend,
    model_called_fields,
)

CLOCK = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))


def _req(role: str = "actor", user: str = "do it", n_extra: int = 0) -> ModelRequest:
    msgs = [Message(role="system", content="prefix"), Message(role="user", content=user)]
    msgs += [Message(role="user", content=f"extra {i}") for i in range(n_extra)]
    return ModelRequest(role=role, messages=msgs, seed=1)


# --- scripted ---------------------------------------------------------------------------


async def test_scripted_serves_in_order_then_fails_clearly() -> None:
    b = ScriptedBackend(["one", {"text": "two", "finish_reason": "length"}])
    assert (await b.complete(_req())).text == "one"
    r = await b.complete(_req(role="planner"))
    assert (r.text, r.finish_reason) == ("two", "length")
    assert r.completion_tokens > 0 and r.prompt_tokens > 0
    with pytest.raises(ModelError) as info:
        await b.complete(_req())
    assert info.value.kind == "exhausted"
    assert "ran out of responses after 2" in str(info.value)


async def test_scripted_keyed_by_role_keeps_one_queue_per_role() -> None:
    b = ScriptedBackend({"planner": ["p1"], "actor": ["a1", "a2"]})
    assert (await b.complete(_req("actor"))).text == "a1"
    assert (await b.complete(_req("planner"))).text == "p1"
    assert (await b.complete(_req("actor"))).text == "a2"
    with pytest.raises(ModelError, match="role 'planner'"):
        await b.complete(_req("planner"))
    with pytest.raises(ModelError, match="no responses for role 'critic'"):
        await b.complete(_req("critic"))


async def test_scripted_error_items_raise_the_recorded_kind() -> None:
    b = ScriptedBackend([{"error": "context_length: too long"}])
    with pytest.raises(ModelError) as info:
        await b.complete(_req())
    assert info.value.kind == "context_length"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
async def test_scripted_from_file_via_spec(tmp_path: Path, suffix: str) -> None:
    data = {"actor": ["<think></think>x"], "planner": ["plan"]}
    path = tmp_path / f"script{suffix}"
    path.write_text(json.dumps(data))  # JSON is valid YAML too
    b = load_backend(f"scripted:{path}")
    assert b.spec == f"scripted:{path}"
    assert (await b.complete(_req("planner"))).text == "plan"


def test_scripted_bad_file_is_invalid_spec(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        load_backend(f"scripted:{tmp_path / 'missing.yaml'}")
    assert info.value.kind == "invalid_spec"
    bad = tmp_path / "bad.yaml"
    bad.write_text("just a string")
    with pytest.raises(ModelError, match="must hold a list"):
        load_backend(f"scripted:{bad}")


# --- replay -----------------------------------------------------------------------------


def _recorded(pairs: list[tuple[ModelRequest, str]], *, error: str | None = None) -> list:
    ids = IdGenerator(seed=7)
    task = root_event(
        TaskSubmitted, handler="intake", clock=CLOCK, ids=ids, instruction="x", repo="/r"
    )
    events: list = [task]
    from oopav.models import ModelResponse

    for req, text in pairs:
        resp = ModelResponse(text=text, prompt_tokens=11, completion_tokens=3, latency_ms=9.0)
        fields = model_called_fields(req, resp, "openai:http://h/v1#m", error=None)
        if error:
            fields["error"] = error
        events.append(
            root_event(
                ModelCalled, handler="actor", clock=CLOCK, ids=ids, aggregate_id=task.id, **fields
            )
        )
    return events


async def test_replay_serves_recorded_responses_by_hash() -> None:
    a, b = _req(user="first"), _req(user="second")
    events = _recorded([(a, "answer A"), (b, "answer B"), (a, "answer A again")])
    replay = ReplayBackend.from_events(list(enumerate(events, start=1)))  # (sequence, event)
    r = await replay.complete(b)
    assert (r.text, r.prompt_tokens, r.completion_tokens) == ("answer B", 11, 3)
    assert (await replay.complete(a)).text == "answer A"
    assert (await replay.complete(a)).text == "answer A again"
    with pytest.raises(ModelError) as info:
        await replay.complete(a)
    assert info.value.kind == "exhausted"


async def test_replay_miss_names_first_differing_field_of_nearest_request() -> None:
    recorded = _req(user="rename fetch", n_extra=3)
    other = ModelRequest(role="planner", messages=[Message(role="user", content="zzz")])
    replay = ReplayBackend.from_events(_recorded([(other, "p"), (recorded, "a")]))
    drifted = ModelRequest(
        role="actor",
        messages=[*recorded.messages[:3], Message(role="user", content="extra 1 changed")],
        seed=1,
    )
    with pytest.raises(ModelError) as info:
        await replay.complete(drifted)
    assert info.value.kind == "replay_miss"
    assert "messages[3].content" in str(info.value)
    assert "\n" not in str(info.value)


def test_first_difference_paths() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "a[1].b"
    assert first_difference({"a": [1]}, {"a": [1, 2]}) == "a[1]"
    assert first_difference({"a": 1}, {"a": 1, "c": 2}) == "c"
    assert first_difference({"a": 1}, {"a": 1}) is None
    assert first_difference({"a": 1}, {"a": 1.0}) == "a"


async def test_replay_reraises_recorded_errors() -> None:
    req = _req()
    replay = ReplayBackend.from_events(_recorded([(req, "")], error="unavailable: server down"))
    with pytest.raises(ModelError) as info:
        await replay.complete(req)
    assert info.value.kind == "unavailable"


async def test_replay_spec_uses_injected_loader_once() -> None:
    req = _req()
    events = _recorded([(req, "from the stream")])
    calls: list[str] = []

    async def loader(session_id: str) -> list:
        calls.append(session_id)
        return list(enumerate(events, start=1))

    backend = load_backend("replay:01SESSION", replay_loader=loader)
    assert backend.spec == "replay:01SESSION"
    assert calls == []  # lazy: nothing is read until the first call
    assert (await backend.complete(req)).text == "from the stream"
    with pytest.raises(ModelError):
        await backend.complete(req)
    assert calls == ["01SESSION"]


async def test_replay_with_no_recorded_calls_says_so() -> None:
    replay = ReplayBackend.from_events([])
    with pytest.raises(ModelError, match="no model calls were recorded"):
        await replay.complete(_req())
