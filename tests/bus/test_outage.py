"""NATS outages: a handler reconnects and resumes from its durable consumer; one that gives up
exits non-zero with one line; a too-old server is refused; the embedded server fsyncs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helpers import waits
from helpers.cli import oopav_env, reaped, spawn_oopav
from helpers.events import task_submitted as task
from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.server import EmbeddedServer
from oopav.bus.store import EventStore, connect, server_version_problem
from oopav.bus.streams import ensure_streams
from oopav.events import catalog as ev
from oopav.events.factory import caused_event


async def until(cond: Any) -> None:
    await waits.until(cond, timeout=30.0, interval=0.05)


async def test_a_handler_survives_a_server_restart_and_loses_nothing(tmp_path: Path) -> None:
    store_dir = tmp_path / "nats"
    server = EmbeddedServer(store_dir, write_info=False)
    url = server.start()
    port = server.port
    nc = await connect(url, name="outage", give_up_after=float("inf"))
    handled: list[str] = []
    try:
        await ensure_streams(nc.jetstream())
        store = EventStore(nc)

        async def handle(event: ev.Event, d: Delivery) -> None:
            out = caused_event(ev.CriticVerdict, event, handler="critic", verdict="approve")
            await store.append(out)
            handled.append(event.id)

        c = HandlerConsumer(
            nc, "critic", ["oopav.ev.session.*.task_submitted"], handle, ConsumerOptions()
        )
        t = asyncio.create_task(c.run())
        await store.append(task("before"))
        await until(lambda: handled == ["before"])

        await asyncio.to_thread(server.stop)  # the outage
        await asyncio.sleep(3)
        assert not t.done()
        server = EmbeddedServer(store_dir, port=port, write_info=False)
        await asyncio.to_thread(server.start)
        await until(lambda: nc.is_connected)
        await store.append(task("after"))
        await until(lambda: handled == ["before", "after"])
        assert not t.done()
        c.stop()
        await asyncio.wait_for(t, 15)
        # Nothing lost, nothing doubled: each input has exactly one output.
        for sid in ("before", "after"):
            kinds = [e.type for _, e in await store.read("session", sid)]
            assert kinds == ["task_submitted", "critic_verdict"]
    finally:
        await nc.close()
        server.stop()


async def test_a_handler_that_gives_up_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    url = server.start()
    env = oopav_env(OOPAV_LOG_LEVEL="ERROR", OOPAV_DATA_DIR=str(tmp_path / "data"))
    proc = await spawn_oopav("handler", "orient", "--give-up-after", "2", url=url, env=env)
    try:
        async with reaped(proc):
            assert proc.stderr is not None
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            assert b"handler orient: NATS at" in line
            await asyncio.to_thread(server.stop)
            _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        server.stop()
    assert proc.returncode == 1
    lines = [ln for ln in err.decode().splitlines() if ln.strip()]
    assert lines[-1].startswith("error: lost the connection to NATS at"), lines
    assert "gave up" in lines[-1] and "Traceback" not in err.decode()


class _FakeClient:
    def __init__(self, version: str) -> None:
        self._server_info = {"version": version}


def test_a_server_too_old_is_refused_naming_both_versions() -> None:
    problem = server_version_problem(_FakeClient("2.9.10"), "nats://h:4222")  # type: ignore[arg-type]
    assert problem is not None
    assert "2.9.10" in problem and "2.12.0" in problem and "nats://h:4222" in problem
    assert server_version_problem(_FakeClient("2.12.1"), "u") is None  # type: ignore[arg-type]
    assert server_version_problem(_FakeClient("2.14.0-beta.2"), "u") is None  # type: ignore[arg-type]


def test_the_embedded_server_syncs_every_write_unless_opted_out(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "a", write_info=False)
    server.start()
    try:
        assert "sync_interval: always" in (tmp_path / "a" / "nats-server.conf").read_text()
    finally:
        server.stop()
    fast = EmbeddedServer(tmp_path / "b", write_info=False, sync="default")
    fast.start()
    try:
        assert "sync_interval" not in (tmp_path / "b" / "nats-server.conf").read_text()
    finally:
        fast.stop()


async def test_a_crashed_service_is_restarted_with_backoff_and_a_given_up_one_is_not() -> None:
    from oopav.bus.consumer import run_until_signalled
    from oopav.bus.errors import ConnectionLost

    class Flaky:
        def __init__(self) -> None:
            self.runs = 0

        def stop(self) -> None:
            pass

        async def run(self) -> None:
            self.runs += 1
            if self.runs < 3:
                raise RuntimeError("a bad moment")

    flaky = Flaky()
    await asyncio.wait_for(run_until_signalled([flaky], signals=False), 30)
    assert flaky.runs == 3  # crashed twice, restarted twice (after 1 s, then 2 s)

    class GivesUp:
        stopped = False

        def stop(self) -> None:
            self.stopped = True

        async def run(self) -> None:
            raise ConnectionLost("nats://x:1", "test")

    class Other:
        def __init__(self) -> None:
            self.stopping = asyncio.Event()
            self.stopped = False

        def stop(self) -> None:
            self.stopped = True
            self.stopping.set()

        async def run(self) -> None:
            await self.stopping.wait()

    other = Other()
    try:
        await asyncio.wait_for(run_until_signalled([GivesUp(), other], signals=False), 10)
        raise AssertionError("ConnectionLost was swallowed")
    except ConnectionLost:
        pass
    assert other.stopped  # the rest was stopped before the error surfaced


async def test_a_server_that_stays_away_is_warned_about_once_not_per_reconnect(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Every reconnect attempt fails the same way while the server is down: one warning,
    not one JSON line per attempt on a one-shot command's terminal (`oopav submit` while
    `oopav up` stopped printed six)."""
    import oopav.bus.store as store

    logs: list[tuple[str, str, dict[str, Any]]] = []

    class Recorder:  # the module's logger (structlog caches loggers: capture_logs misses it)
        def warning(self, event: str, **kw: Any) -> None:
            logs.append(("warning", event, kw))

        def debug(self, event: str, **kw: Any) -> None:
            logs.append(("debug", event, kw))

        def info(self, event: str, **kw: Any) -> None:
            logs.append(("info", event, kw))

    monkeypatch.setattr(store, "log", Recorder())
    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    url = server.start()
    nc = await connect(url, give_up_after=30.0)
    try:
        await asyncio.to_thread(server.stop)
        # nats-py retries every 2 s: several attempts fail while it is down.
        await waits.until(
            lambda: sum(1 for _, e, _ in logs if e == "nats_error") >= 4,
            timeout=30.0,
            interval=0.1,
        )
        warned = [kw for level, e, kw in logs if e == "nats_error" and level == "warning"]
        kinds = {kw["error"].split(":")[0] for kw in warned}
        assert len(warned) == len(kinds), warned  # each kind of failure once
    finally:
        server.stop()
        await nc.close()
