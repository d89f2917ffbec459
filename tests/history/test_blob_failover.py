"""Blob calls wait out a cluster failover (CI: a reader right after the stream leader's
SIGKILL timed out on the bucket's STREAM.INFO while the meta group re-elected, and the
session it read had succeeded). Retried: timeouts, no responders, JetStream unavailable;
never a missing object or a closed connection, and never past the deadline."""

from __future__ import annotations

import asyncio
from typing import Any

import nats.errors
import pytest
from nats.js.errors import ObjectNotFoundError, ServiceUnavailableError

from oopav.history.blobs import BlobStore, digest_of, through_failover


def _flaky(errors: list[BaseException], value: Any = "ok") -> tuple[list[int], Any]:
    calls: list[int] = []

    async def call() -> Any:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return value

    return calls, call


async def test_a_call_is_repeated_while_the_server_elects() -> None:
    calls, call = _flaky(
        [nats.errors.TimeoutError(), ServiceUnavailableError(), nats.errors.NoRespondersError()]
    )
    assert await through_failover(call, deadline=10.0) == "ok"
    assert len(calls) == 4


async def test_past_the_deadline_the_last_error_is_raised() -> None:
    calls, call = _flaky([nats.errors.TimeoutError()] * 100)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(nats.errors.TimeoutError):
        await through_failover(call, deadline=1.0)
    assert 2 <= len(calls) < 100
    assert loop.time() - began < 5.0


async def test_an_answer_that_is_an_error_is_not_retried() -> None:
    calls, call = _flaky([ObjectNotFoundError()])
    with pytest.raises(ObjectNotFoundError):
        await through_failover(call, deadline=10.0)
    assert len(calls) == 1


async def test_a_store_whose_server_stops_answering_gives_up_with_the_servers_error(
    nc: Any, monkeypatch: Any
) -> None:
    """Against the real server: JetStream behind an API prefix nobody serves answers nothing,
    as during an election; the bucket lookup retries until the deadline, then says so."""
    store = BlobStore(nc)
    store.js = nc.jetstream(prefix="$JS.NOBODY.API", timeout=0.2)
    import oopav.history.blobs as blobs

    monkeypatch.setattr(blobs, "FAILOVER_DEADLINE", 1.0)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(ServiceUnavailableError):  # nats-py's name for "no responders"
        await store.bucket()
    assert loop.time() - began >= 0.5  # retried (0.25 s, then 0.5 s), not failed at once
    # The same server through the real API: the blob goes in and comes back.
    fresh = BlobStore(nc)
    digest = await fresh.put(b"after the election")
    assert digest == digest_of(b"after the election")
    assert await BlobStore(nc).get(digest) == b"after the election"
