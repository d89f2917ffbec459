"""A full disk (issue 29, item 1): the free-space watermark refuses new tasks with
storage_full and every submission is answered; a handler whose write fails for lack of space
pauses and resumes, or dead-letters with reason `storage`; a dead letter the server cannot
store is spooled locally and stored later."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_consumer import dead_letters, stop_and_wait, task, until

from helpers.handlers import running
from oopav.bus import spool, storage
from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.store import EventStore
from oopav.bus.streams import DLQ_STREAM, INTAKE_SUBJECT, ensure_streams
from oopav.events import catalog as ev
from oopav.events.clock import SYSTEM_CLOCK
from oopav.handlers.intake import STORAGE_FULL, Intake, decide_all

INPUT = "oopav.ev.session.*.task_submitted"
GiB = 1 << 30


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process's data directory (watermark off) and its dead-letter spool, reset after."""
    monkeypatch.setenv("OOPAV_MIN_FREE", "off")
    storage.configure(tmp_path)
    yield tmp_path
    storage._configured = None
    storage._spool = None
    storage.set_probe(None)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    d = tmp_path / "repo"
    d.mkdir()
    (d / "main.py").write_text("def fetch():\n    return 1\n")
    return d


def _task(repo: Path, n: int = 0) -> bytes:
    return json.dumps({"instruction": f"rename fetch {n}", "repo": str(repo)}).encode()


# -- the watermark ----------------------------------------------------------------------------


def test_the_watermark_reads_the_injected_probe(tmp_path: Path, configured: Path) -> None:
    free = {"bytes": 10 * GiB}
    storage.set_probe(lambda _p: free["bytes"])
    mark = storage.Watermark(tmp_path, min_free=1 * GiB)
    assert not mark.read().full
    assert mark.read().describe().startswith("ok: 10.0 GiB free")
    free["bytes"] = 100 << 20
    reading = mark.read()
    assert reading.full
    assert reading.describe().startswith("FULL: new tasks are refused (storage_full): 100.0 MiB")
    assert "under the watermark of 1.0 GiB" in reading.refusal()
    assert not storage.Watermark(tmp_path, min_free=0).read().full  # off


def test_watermark_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OOPAV_MIN_FREE", "2G")
    assert storage.min_free_from_env() == 2 * GiB
    monkeypatch.setenv("OOPAV_MIN_FREE", "off")
    assert storage.min_free_from_env() == 0
    monkeypatch.setenv("OOPAV_MIN_FREE", "plenty")
    with pytest.raises(ValueError, match="OOPAV_MIN_FREE: 'plenty' is not a size"):
        storage.min_free_from_env()
    monkeypatch.delenv("OOPAV_MIN_FREE")
    assert storage.min_free_from_env() == storage.DEFAULT_MIN_FREE


def test_storage_errors_are_recognised() -> None:
    assert storage.is_storage_error(OSError(28, "No space left on device"))
    assert storage.is_storage_error(RuntimeError("nats: insufficient resources (10047)"))
    assert not storage.is_storage_error(RuntimeError("boom"))


def test_intake_decides_storage_full_whatever_the_payload(repo: Path) -> None:
    [event] = decide_all(b"{not even json", 7, 1_700_000_000_000, SYSTEM_CLOCK, storage_full="x")
    assert isinstance(event, ev.TaskRejected) and event.code == STORAGE_FULL


# -- through a real intake --------------------------------------------------------------------


@pytest.fixture
async def full_intake(nc: Any, tmp_path: Path) -> AsyncIterator[Intake]:
    # A watermark above the real free space: the disk is "full" for real, nothing injected.
    mark = storage.Watermark(tmp_path, min_free=1 << 60)
    assert mark.read().full
    async with running(Intake(nc, check_repo=True, watermark=mark)) as handler:
        yield handler


async def test_every_submission_is_answered_storage_full_then_accepted(
    nc: Any, full_intake: Intake, repo: Path
) -> None:
    replies = await asyncio.gather(
        *(nc.request(INTAKE_SUBJECT, _task(repo, i), timeout=10) for i in range(30))
    )
    bodies = [json.loads(r.data) for r in replies]
    assert [b["code"] for b in bodies] == [STORAGE_FULL] * 30, bodies[:3]
    assert "storage is full" in bodies[0]["error"] and "OOPAV_MIN_FREE" in bodies[0]["error"]
    # The stored copies are refused too (never a session the submitter was told is refused).
    store = EventStore(nc)

    async def rejected() -> int:
        info = await nc.jetstream().stream_info(
            "OOPAV_EVENTS", subjects_filter="oopav.ev.session.*.task_rejected"
        )
        return sum((info.state.subjects or {}).values())

    await until(lambda: rejected(), timeout=20)
    await until(lambda: _count(rejected, 30), timeout=20)
    submitted = await nc.jetstream().stream_info(
        "OOPAV_EVENTS", subjects_filter="oopav.ev.session.*.task_submitted"
    )
    assert not submitted.state.subjects
    # Space comes back: the next submission is a session.
    full_intake.watermark.min_free = 0
    ok = json.loads((await nc.request(INTAKE_SUBJECT, _task(repo, 99), timeout=10)).data)
    assert "error" not in ok, ok
    [(_, first)] = (await store.read("session", ok["session_id"]))[:1]
    assert isinstance(first, ev.TaskSubmitted)


async def _count(fn: Any, n: int) -> bool:
    return bool(await fn() >= n)


# -- handlers under a full disk ---------------------------------------------------------------


async def test_a_handler_pauses_on_a_full_disk_and_resumes(nc: Any, configured: Path) -> None:
    failures = {"left": 3}
    done: list[str] = []

    async def handle(event: ev.Event, d: Delivery) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise OSError(28, "No space left on device")
        done.append(event.id)

    opts = ConsumerOptions(max_deliver=2, backoff=(0.05,), ack_wait=2.0)
    c = HandlerConsumer(nc, "planner", [INPUT], handle, options=opts)
    t = asyncio.create_task(c.run())
    await EventStore(nc).append(task("s1"))
    await until(lambda: done == ["s1"], timeout=30)
    await stop_and_wait(c, t)
    # Three failed writes, one delivery used: held in place, not redelivered nor parked.
    assert c.parked == 0 and failures["left"] == 0
    assert await dead_letters(nc, "planner") == []


async def test_no_space_for_too_long_ends_with_reason_storage(
    nc: Any, configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OOPAV_STORAGE_PAUSE", "1")
    letters: list[Any] = []

    async def handle(event: ev.Event, d: Delivery) -> None:
        raise RuntimeError("nats: insufficient resources")

    async def outcome(letter: Any) -> None:
        letters.append(letter)

    c = HandlerConsumer(nc, "verifier", [INPUT], handle, on_dead_letter=outcome)
    t = asyncio.create_task(c.run())
    await EventStore(nc).append(task("s2"))
    await until(lambda: c.parked == 1, timeout=30)
    await stop_and_wait(c, t)
    [letter] = await dead_letters(nc, "verifier")
    assert letter.headers["Oopav-Dlq-Reason"] == "storage"
    assert [x.reason for x in letters] == ["storage"] and letters[0].event.id == "s2"


async def test_a_dead_letter_the_server_cannot_store_is_spooled_then_stored(
    nc: Any, configured: Path
) -> None:
    js = nc.jetstream()
    outcomes: list[str] = []

    async def handle(event: ev.Event, d: Delivery) -> None:
        pass

    async def outcome(letter: Any) -> None:
        outcomes.append(letter.reason)

    await js.delete_stream(DLQ_STREAM)  # the server cannot store a dead letter now
    c = HandlerConsumer(nc, "orient", [INPUT], handle, on_dead_letter=outcome)
    t = asyncio.create_task(c.run())
    await js.publish("oopav.ev.session.bad.task_submitted", b"{not json")
    await until(lambda: c.parked == 1, timeout=20)
    [(path, letter)] = list(spool.pending("orient"))
    assert path.parent == configured / "dlq-spool" and letter.data == b"{not json"
    assert letter.reason == "undecodable" and not letter.published

    # The original is settled (terminated): it is kept by the spool, not redelivered. The
    # parked count rises as the handler sends `term`; the server's count follows a moment later.
    async def settled() -> bool:
        info = await js.consumer_info("OOPAV_EVENTS", "orient")
        return info.num_ack_pending == 0 and info.num_pending == 0

    await until(settled, timeout=10, what="the spooled original was never settled")
    await ensure_streams(js)  # storable again
    await until(lambda: not list(spool.pending("orient")), timeout=30)
    await stop_and_wait(c, t)
    [stored] = await dead_letters(nc, "orient")
    assert stored.data == b"{not json" and stored.headers["Oopav-Dlq-Reason"] == "undecodable"
    assert outcomes == ["undecodable", "undecodable"]  # tried at once, then after storing


def test_doctor_and_status_show_storage_in_one_line(
    nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from oopav.cli import cli

    data = tmp_path / "d"
    monkeypatch.setenv("OOPAV_MIN_FREE", "1P")  # more than any disk here has free
    r = CliRunner().invoke(cli, ["--data-dir", str(data), "doctor"])
    [line] = [x for x in r.output.splitlines() if " storage " in x]
    assert line.startswith("FAIL  storage") and "FULL: new tasks are refused" in line, r.output
    assert r.exit_code == 1
    r = CliRunner().invoke(cli, ["--data-dir", str(data), "--nats-url", nats_url, "status"])
    assert r.exit_code == 0, r.output
    [line] = [x for x in r.output.splitlines() if x.startswith("storage ")]
    assert "FULL" in line and "watermark 1024.0 TiB" in line
    monkeypatch.setenv("OOPAV_MIN_FREE", "1M")
    spooled = data / "dlq-spool"
    spooled.mkdir(parents=True)
    letter = spool.Letter("orient", "s", 3, "undecodable", "d", "", {}, b"x")
    (spooled / "orient--OOPAV_EVENTS--3.json").write_bytes(letter.to_json())
    r = CliRunner().invoke(cli, ["--data-dir", str(data), "doctor"])
    [line] = [x for x in r.output.splitlines() if " storage " in x]
    assert line.startswith("warn  storage") and "1 dead letter(s) spooled" in line, r.output


def test_up_refuses_a_bad_watermark_setting_at_start(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from oopav.cli import cli

    r = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "up"], env={"OOPAV_MIN_FREE": "lots"})
    assert r.exit_code == 1 and "OOPAV_MIN_FREE: 'lots' is not a size" in r.output
