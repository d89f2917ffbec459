"""Prompts stored as blobs and deltas (issue 27 §4), against the real test server's Object
Store: they rebuild exactly, store only what is new, and a broken one is refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from oopav.events import catalog as ev
from oopav.history.blobs import BlobStore
from oopav.history.prompts import PromptError, expand, is_stored, prompt_refs, store_request
from oopav.models.base import Message, ModelRequest, request_hash, request_to_builtins

SYSTEM = "You are the actor. " + "Rules of the contract. " * 200
SCHEMA = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(50)}}


def request(history: list[str]) -> dict[str, Any]:
    user = "Task: rename fetch.\n" + "".join(f"step {i}: {h}\n" for i, h in enumerate(history))
    user += "Repository map:\n" + "".join(f"webtool/m{i}.py: def f{i}()\n" for i in range(80))
    return request_to_builtins(
        ModelRequest(
            role="actor",
            messages=[Message(role="system", content=SYSTEM), Message(role="user", content=user)],
            schema=SCHEMA,
        )
    )


def called(i: int, req: dict[str, Any], stored: dict[str, Any]) -> ev.ModelCalled:
    return ev.ModelCalled(
        id=f"call-{i}",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        aggregate_id="s",
        correlation_id="s",
        actor="actor/0",
        role="actor",
        backend="scripted",
        request_hash=request_hash(req),
        request=stored,
        response="{}",
    )


async def test_a_chain_of_calls_rebuilds_exactly_and_stores_only_new_content(nc: Any) -> None:
    blobs = BlobStore(nc)
    history: list[str] = []
    events, wholes = [], []
    base_id, base = None, None
    for i in range(12):
        history.append(f"applied action {i} to webtool/m{i}.py")
        whole = request(history)
        stored = await store_request(blobs, whole, base_id, base)
        assert is_stored(stored)
        events.append(called(i, whole, stored))
        wholes.append(whole)
        base_id, base = f"call-{i}", whole
    rebuilt = await expand(blobs, events)
    assert [e.request for e in rebuilt] == wholes
    # The first call names blobs (system prompt, head); later ones are deltas whose inserted
    # text is the new history line, not the whole prompt again.
    first, later = events[0].request, events[-1].request
    assert len(prompt_refs(events[0])) == 3 and later["base"] == "call-10"
    assert later["messages"][0] == {"same": 0} and "head" not in later  # as in the base
    inserted = [op for op in later["messages"][1]["ops"] if isinstance(op, str)]
    assert inserted == ["step 11: applied action 11 to webtool/m11.py\n"]
    whole_bytes = len(msgspec.json.encode(wholes[-1]))
    assert len(msgspec.json.encode(later)) < whole_bytes / 20
    assert first["head"] and prompt_refs(events[-1]) == []  # the schema is stored once


async def test_a_missing_base_or_altered_delta_is_refused(nc: Any) -> None:
    blobs = BlobStore(nc)
    a, b = request(["one"]), request(["one", "two"])
    sa = await store_request(blobs, a, None, None)
    sb = await store_request(blobs, b, "call-0", a)
    with pytest.raises(PromptError, match="base call call-0 is not before it"):
        await expand(blobs, [called(1, b, sb)])
    ops = sb["messages"][1]["ops"]
    forged = {**sb, "messages": [sb["messages"][0], {**sb["messages"][1], "ops": [*ops, "x\n"]}]}
    with pytest.raises(PromptError, match="does not rebuild"):
        await expand(blobs, [called(0, a, sa), called(1, b, forged)])
