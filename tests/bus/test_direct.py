"""bus.direct: the response inbox that awaited appends use, on a real nats-server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_event_store import verdict

from oopav.bus import direct
from oopav.bus.store import EventStore

HDR = b"NATS/1.0\r\nX-Test: 1\r\n\r\n"


async def _echo(nc: Any, subject: str) -> Any:
    async def answer(msg: Any) -> None:
        # The request's header reached the responder; the answer names it and the payload.
        await msg.respond(msg.headers["X-Test"].encode() + b":" + msg.data[::-1])

    return await nc.subscribe(subject, cb=answer)


async def test_concurrent_requests_each_get_their_own_answer(nc: Any) -> None:
    await _echo(nc, "svc.echo")
    await nc.flush()
    # Made concurrently on a fresh connection: one inbox, one subscription.
    made = await asyncio.gather(*(direct.Responses.of(nc) for _ in range(5)))
    assert all(r is made[0] for r in made)
    responses = made[0]
    answers = await asyncio.gather(
        *(responses.request(b"svc.echo", HDR, f"p{i}".encode(), timeout=5.0) for i in range(50))
    )
    assert [data for data, _ in answers] == [b"1:" + f"p{i}".encode()[::-1] for i in range(50)]
    assert not responses._waiting  # nothing left behind


async def test_a_request_nobody_answers_times_out_and_leaves_nothing(nc: Any) -> None:
    async def ignore(msg: Any) -> None:
        pass

    await nc.subscribe("svc.silent", cb=ignore)
    await nc.flush()
    responses = await direct.Responses.of(nc)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(TimeoutError):
        await responses.request(b"svc.silent", HDR, b"x", timeout=0.2)
    assert 0.15 < loop.time() - start < 2.0
    assert not responses._waiting


async def test_no_responders_comes_back_as_a_status(nc: Any) -> None:
    responses = await direct.Responses.of(nc)
    data, headers = await responses.request(b"svc.nobody.here", HDR, b"x", timeout=5.0)
    assert data == b"" and direct.status_of(headers) == "503"
    assert direct.status_of(b"NATS/1.0\r\n\r\n") == ""


async def test_other_subscriptions_on_the_connection_are_untouched(nc: Any) -> None:
    got: list[bytes] = []

    async def take(msg: Any) -> None:
        got.append(msg.data)

    await nc.subscribe("plain.sub", cb=take)
    store = EventStore(nc)
    await store.append(verdict("d1", 0), expected=0)  # routes the store's inbox
    await nc.publish("plain.sub", b"still nats-py")
    await nc.flush()
    for _ in range(50):
        if got:
            break
        await asyncio.sleep(0.02)
    assert got == [b"still nats-py"]
    assert (await store.append(verdict("d1", 1), expected=1)).sequence == 2


def test_a_client_with_another_dispatch_keeps_the_public_path() -> None:
    from oopav.bus import direct

    class Changed:
        _subs = ()

        async def _process_msg(self, sid: int, subject: bytes, reply: bytes, data: bytes) -> None:
            return None

    class Same:
        _subs = ()

        async def _process_msg(
            self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes
        ) -> None:
            return None

    assert direct.available(Changed()) is False
    assert direct.available(Same()) is True
