"""Shared fixtures: one real nats-server per test session, fresh streams per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from oopav.bus.server import EmbeddedServer


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    store = tmp_path_factory.mktemp("nats")
    server = EmbeddedServer(store, write_info=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def nats_url(nats_server: EmbeddedServer) -> str:
    return nats_server.url


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    monkeypatch.setenv("OOPAV_DATA_DIR", str(d))
    return d


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[object]:
    """A connection with freshly created (empty) oopav streams."""
    from oopav.bus.store import connect
    from oopav.bus.streams import ensure_streams, stream_definitions

    conn = await connect(nats_url, name="test")
    js = conn.jetstream()
    for name in stream_definitions():
        try:
            await js.delete_stream(name)
        except Exception:
            pass
    await ensure_streams(js)
    yield conn
    await conn.close()


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    # The storage watermark (default 512M free) is the tests' subject only where they set it:
    # a CI machine with a nearly full disk must not refuse every task of every other test.
    os.environ.setdefault("OOPAV_MIN_FREE", "16M")
