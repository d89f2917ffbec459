"""Atomic batches of the embedded server staged in memory (bus/staging.py), against a real
nats-server: linked on start and on stream creation, back after a kill -9 and restart, left
on disk whenever anything is unexpected, and the batches themselves unchanged."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from oopav.bus import staging
from oopav.bus.server import EmbeddedServer
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import EVENTS_STREAM, ensure_streams
from oopav.events import catalog as ev

pytestmark = pytest.mark.skipif(not staging.SHM.is_dir(), reason="no /dev/shm on this system")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    """An embedded server of its own (this process registers and links its store)."""
    embedded = EmbeddedServer(tmp_path / "nats", write_info=False)
    embedded.start()
    yield embedded
    embedded.stop()


def _events(sid: str, n: int) -> list[ev.Event]:
    return [
        ev.CriticVerdict(
            id=f"{sid}-{i}",
            aggregate_id=sid,
            correlation_id=sid,
            actor="t/0",
            ts=datetime(2026, 1, 1, tzinfo=UTC),
            verdict="reject",
            reasons=[f"r{i}"],
        )
        for i in range(n)
    ]


def _events_dir(store: Path) -> Path:
    dirs = [d for d in staging.stream_dirs(store) if d.name == EVENTS_STREAM]
    assert len(dirs) == 1, staging.stream_dirs(store)
    return dirs[0]


async def _unlinked_streams(server: EmbeddedServer, url: str) -> Path:
    """Create the streams without linking them (this process forgets the store first);
    returns the events stream's directory."""
    staging.forget(server.store_dir)
    nc = await connect(url)
    try:
        await ensure_streams(nc.jetstream())
    finally:
        await nc.close()
    return _events_dir(server.store_dir)


async def _batch_round(url: str, sid: str) -> list[int]:
    nc = await connect(url)
    try:
        await ensure_streams(nc.jetstream())
        store = EventStore(nc)
        done = await store.append_batch(_events(sid, 3), expected=0)
        got = [e for _, e in await store.read("session", sid)]
        assert [e.id for e in got] == [f"{sid}-{i}" for i in range(3)]
        return [a.sequence for a in done]
    finally:
        await nc.close()


async def test_new_stream_stages_in_memory_and_batches_commit(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "nats", write_info=False)
    url = server.start()
    try:
        seqs = await _batch_round(url, "s1")  # creates the streams: linked on creation
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        link = _events_dir(server.store_dir) / "batches"
        assert link.is_symlink()
        target = Path(os.readlink(link))
        assert target == staging.target_for(link.parent)
        assert target.parent == staging.SHM
        assert oct(target.stat().st_mode & 0o777) == oct(0o700)
        # The staged store of a committed batch is gone: nothing accumulates in memory.
        assert [c.name for c in target.iterdir()] == [staging.OWNER]
    finally:
        server.stop()
    assert not target.exists(), "stop removes the empty memory directory"


async def test_link_is_back_after_kill_and_restart(tmp_path: Path) -> None:
    store = tmp_path / "nats"
    server = EmbeddedServer(store, write_info=False)
    url = server.start()
    await _batch_round(url, "s1")
    link = _events_dir(store) / "batches"
    assert link.is_symlink()
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()
    server.proc = None

    again = EmbeddedServer(store, write_info=False)
    url2 = again.start()
    try:
        # The server's recovery removes `batches`; the start puts the link back.
        assert link.is_symlink()
        await _batch_round(url2, "s2")
        nc = await connect(url2)
        try:
            assert len(await EventStore(nc).read("session", "s1")) == 3
        finally:
            await nc.close()
    finally:
        again.stop()


async def test_disk_staging_when_asked(
    server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OOPAV_NATS_BATCH_STAGING", "disk")
    url = server.url
    await _batch_round(url, "s1")
    assert not (_events_dir(server.store_dir) / "batches").is_symlink()


async def test_a_target_open_to_others_is_refused(server: EmbeddedServer) -> None:
    url = server.url
    sdir = await _unlinked_streams(server, url)
    target = staging.target_for(sdir)
    target.mkdir(mode=0o777)
    os.chmod(target, 0o777)  # as if someone else had made it: never used
    try:
        assert staging.stage(server.store_dir) < len(staging.stream_dirs(server.store_dir))
        assert not (sdir / "batches").is_symlink()
        await _batch_round(url, "s1")  # still works, staged on disk
        assert list(target.iterdir()) == []
    finally:
        target.rmdir()


async def test_a_batch_in_flight_keeps_its_disk_directory(server: EmbeddedServer) -> None:
    url = server.url
    sdir = await _unlinked_streams(server, url)
    busy = sdir / "batches" / "inflight"
    busy.mkdir(parents=True)
    assert staging.stage(server.store_dir) < len(staging.stream_dirs(server.store_dir))
    assert busy.is_dir() and not (sdir / "batches").is_symlink()
    busy.rmdir()
    assert staging.stage(server.store_dir) == len(staging.stream_dirs(server.store_dir))
    assert (sdir / "batches").is_symlink()
    await _batch_round(url, "s1")


def test_doctor_says_where_batches_are_staged(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from oopav.cli import cli

    result = CliRunner().invoke(cli, ["doctor"])
    assert "batch staging" in result.output
    assert f"atomic batches staged in memory ({staging.SHM})" in result.output
    monkeypatch.setenv("OOPAV_NATS_BATCH_STAGING", "disk")
    result = CliRunner().invoke(cli, ["doctor"])
    assert "on disk (OOPAV_NATS_BATCH_STAGING=disk)" in result.output


async def test_memory_directory_removed_under_a_running_server(server: EmbeddedServer) -> None:
    """systemd's RemoveIPC (at logout) or a /dev/shm cleaner can remove the directory while
    the server runs: the next batch puts it back instead of failing."""
    url = server.url
    await _batch_round(url, "s1")
    target = staging.target_for(_events_dir(server.store_dir))
    shutil.rmtree(target)
    await _batch_round(url, "s2")  # healed and committed
    assert target.is_dir()
    assert (_events_dir(server.store_dir) / "batches").is_symlink()
    assert staging.heal() is False  # nothing left to repair


async def test_memory_directories_of_a_deleted_store_are_swept(tmp_path: Path) -> None:
    """A server killed without `stop` leaves its memory directories; once its store is gone
    (a test's temporary directory, a deleted data dir) the next start removes them, and
    never those of a store still on disk."""
    gone, kept = tmp_path / "gone" / "nats", tmp_path / "kept" / "nats"
    targets = {}
    for store in (gone, kept):
        server = EmbeddedServer(store, write_info=False)
        await _batch_round(server.start(), "s1")
        targets[store] = staging.target_for(_events_dir(store))
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGKILL)  # no stop: nothing released
        server.proc.wait()
        server.proc = None
        assert targets[store].is_dir()
    shutil.rmtree(gone.parent)
    other = EmbeddedServer(tmp_path / "other" / "nats", write_info=False)
    other.start()
    try:
        assert not targets[gone].exists()
        assert targets[kept].is_dir()
    finally:
        other.stop()
    again = EmbeddedServer(kept, write_info=False)
    await _batch_round(again.start(), "s2")
    again.stop()
    assert not targets[kept].exists()  # stopped properly: released
