"""Datasets off the stream: the pure projection, export from a real stream, the learner."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from trainer_sessions import numbered, session

from helpers.handlers import in_background
from helpers.waits import until
from oopav.bus.store import EventStore
from oopav.events.ids import derive_id
from oopav.trainer.datasets import (
    Filters,
    read_manifest,
    read_records,
    session_records,
    write_dataset,
)

S1, S2, S3 = (derive_id(f"s{i}", "test", 0) for i in (1, 2, 3))
# pyarrow and datasets come with `.[train]`; under `.[dev]` alone the shards are JSONL only
# (parquet twins are written when pyarrow is there) and loading them with datasets is skipped.
TRAIN_ONLY = "needs the datasets library: pip install -e '.[train]'"
HAVE_PYARROW = importlib.util.find_spec("pyarrow") is not None
SHARDS = ["manifest.json", "sft-00000.jsonl"] + (["sft-00000.parquet"] if HAVE_PYARROW else [])


def test_sft_keeps_only_parsed_answers_whose_action_succeeded() -> None:
    recs = session_records(numbered(session(S1)), Filters()).records["sft"]
    roles = [(r["role"], r["status"]) for r in recs]
    # planner, the applied rule and the finish; not the garbled answer, not the rejected rule.
    assert roles == [("planner", "proposed"), ("actor", "applied"), ("actor", "applied")]
    assert all(r["parsed"] for r in recs)
    actor = recs[1]
    assert actor["prompt"][0]["role"] == "system" and actor["prompt"][1]["role"] == "user"
    assert "fetch_page($$$A)" in actor["completion"][0]["content"]


def test_sft_filters_are_configurable() -> None:
    everything = Filters(require_parsed=False, require_applied=False)
    recs = session_records(numbered(session(S1)), everything).records["sft"]
    statuses = sorted(r["status"] for r in recs)
    assert statuses == ["applied", "applied", "proposed", "rejected", "unparsed"]
    actor_only = Filters(roles=("actor",))
    assert {
        r["role"] for r in session_records(numbered(session(S1)), actor_only).records["sft"]
    } == {"actor"}


def test_session_filters_outcome_mission_since() -> None:
    failed = numbered(session(S2, outcome="failed"))
    assert session_records(failed, Filters(successful_only=True)).source is None
    assert session_records(failed, Filters()).source is not None
    assert session_records(numbered(session(S1)), Filters(mission="other")).source is None
    since = Filters(since=datetime(2026, 1, 5, tzinfo=UTC))
    assert session_records(numbered(session(S1, day=1)), since).source is None
    assert session_records(numbered(session(S1, day=9)), since).source is not None


def test_srl_and_grpo_records() -> None:
    recs = session_records(numbered(session(S1)), Filters(require_applied=False)).records
    srl = recs["srl"]
    assert [r["status"] for r in srl] == ["rejected", "applied", "applied"]
    assert srl[1]["action"]["pattern"] == "fetch($$$A)"
    assert srl[1]["history"] == [{"action_type": "ast_grep", "status": "rejected"}]
    assert srl[1]["diff"].startswith("-fetch(u)")
    (g,) = recs["grpo"]
    assert g["pre"] == "fetch(u)\n" and g["post"] == "fetch_page(u)\n"
    assert g["test_command"] == ["pytest", "-q"] and g["prompt"][0]["role"] == "system"
    assert g["reference_diff"]


def test_written_dataset_is_deduplicated_rebuildable_and_loadable(tmp_path: Path) -> None:
    sessions = [
        session_records(numbered(session(S1), 1), Filters()),
        # Same answers in another session: duplicates, dropped.
        session_records(numbered(session(S2), 100), Filters()),
    ]
    m1 = write_dataset(tmp_path / "a", "sft", sessions, Filters())
    m2 = write_dataset(tmp_path / "b", "sft", list(reversed(sessions)), Filters())
    assert m1.count == 3 and m1.duplicates == 3
    a = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert a == SHARDS
    for name in a:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    manifest = read_manifest(tmp_path / "a")
    assert manifest["content_hash"] == m2.content_hash
    assert [s["session_id"] for s in manifest["sessions"]] == [S1, S2]
    assert manifest["stream_sequences"] == {"first": 1, "last": 100 + len(session(S2)) - 1}
    datasets = pytest.importorskip("datasets", reason=TRAIN_ONLY)

    ds = datasets.load_dataset(
        "json", data_files=str(tmp_path / "a" / "sft-00000.jsonl"), split="train"
    )
    assert ds.num_rows == 3 and ds[1]["completion"][0]["role"] == "assistant"
    pq = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "a" / "sft-00000.parquet"), split="train"
    )
    assert pq.num_rows == 3
    assert [r["id"] for r in read_records(tmp_path / "a")] == ds["id"]


def test_two_writers_of_one_dataset_directory_do_not_collide(tmp_path: Path) -> None:
    # Two `oopav run` (or `oopav up`) on one data directory each run a learner that rebuilds
    # <data>/datasets: a shared temporary file name made one writer rename the other's file
    # away (FileNotFoundError, the learner crashed and restarted).
    import threading

    sessions = [
        session_records(numbered(session(S1), 1), Filters()),
        session_records(numbered(session(S2), 100), Filters()),
    ]
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer() -> None:
        start.wait()
        for _ in range(15):
            try:
                write_dataset(tmp_path / "d", "sft", sessions, Filters())
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    names = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert names == SHARDS
    assert len(read_records(tmp_path / "d")) == 3


async def _append(nc: object, *sessions: list) -> None:
    store = EventStore(nc)  # type: ignore[arg-type]
    for events in sessions:
        await store.append_batch(events, expected=0)


async def test_export_from_the_stream_is_byte_for_byte(nc, tmp_path: Path) -> None:
    from oopav.trainer.stream import export

    await _append(nc, session(S1), session(S2, outcome="failed", mission="m2"))
    store = EventStore(nc)
    m = await export(store, "sft", tmp_path / "x", Filters())
    await export(store, "sft", tmp_path / "y", Filters())
    assert m.count == 3 and len(m.sessions) == 2
    assert (tmp_path / "x" / "sft-00000.jsonl").read_bytes() == (
        tmp_path / "y" / "sft-00000.jsonl"
    ).read_bytes()
    ok = await export(store, "grpo", tmp_path / "g", Filters(successful_only=True))
    assert [s["session_id"] for s in ok.sessions] == [S1]
    assert ok.sessions[0]["completed_seq"] == len(session(S1))
    m2 = await export(store, "srl", tmp_path / "s", Filters(mission="m2"))
    assert [s["session_id"] for s in m2.sessions] == [S2]


def _shard_bytes(directory: Path) -> bytes:
    """A dataset's JSONL shards concatenated in its manifest's order."""
    return b"".join(
        (directory / shard["path"]).read_bytes() for shard in read_manifest(directory)["shards"]
    )


async def _until(pred, timeout: float = 20.0) -> None:
    await until(pred, timeout, interval=0.05, what="timed out")


async def test_learner_catches_up_follows_and_rebuilds_after_deletion(nc, tmp_path: Path) -> None:
    import shutil

    from oopav.handlers.learner import Learner
    from oopav.trainer.stream import export

    await _append(nc, session(S1))
    root = tmp_path / "datasets"
    learner = Learner(nc, root, rebuild_every=0.05)
    async with in_background(learner, 10):
        await _until(lambda: learner.sessions_seen == 1)
        # Follows: a session finished after the learner started.
        await _append(nc, session(S3, instruction="Rename get to get_page"))
        await _until(lambda: learner.sessions_seen == 2)
        await _until(
            lambda: (
                (root / "sft" / "manifest.json").exists()
                and read_manifest(root / "sft")["count"] == 6
            )
        )
    # The learner appended each session as a shard (no rebuild after the start) and its
    # dataset is the bytes `oopav export` writes from the same stream: the same records in the
    # same order, the same content hash, only other shard boundaries.
    assert learner.appends >= 1 and learner.rebuilds == 1
    exported = await export(EventStore(nc), "sft", tmp_path / "exp", Filters())
    learned = read_manifest(root / "sft")
    assert _shard_bytes(root / "sft") == (tmp_path / "exp" / "sft-00000.jsonl").read_bytes()
    assert learned["content_hash"] == exported.content_hash
    assert learned["sessions"] == exported.sessions and learned["count"] == exported.count
    before = _shard_bytes(root / "grpo")
    assert len(before.splitlines()) == 2
    # Delete the projection: a new learner reads the stream again from its start.
    shutil.rmtree(root)
    learner = Learner(nc, root, rebuild_every=0.05)
    async with in_background(learner, 10):
        await _until(lambda: learner.sessions_seen == 2)
    assert _shard_bytes(root / "grpo") == before
    # A restart compacts: rebuilt from the stored sessions in the export's own layout.
    learner = Learner(nc, root, rebuild_every=0.05)
    async with in_background(learner, 10):
        await _until(lambda: learner.rebuilds == 1)
    assert (root / "grpo" / "grpo-00000.jsonl").read_bytes() == before
    assert [s["path"] for s in read_manifest(root / "grpo")["shards"]] == ["grpo-00000.jsonl"]
    assert json.loads((root / "sft" / "manifest.json").read_text())["count"] == 6


def test_export_cli_needs_a_format(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from oopav.cli import cli

    r = CliRunner().invoke(cli, ["export", "--out", str(tmp_path)])
    assert r.exit_code != 0 and "--format" in r.output
    with pytest.raises(click.BadParameter):
        from oopav.cli.train import parse_since

        parse_since("yesterday-ish")


async def test_learner_runs_as_a_named_handler(nc, nats_url: str, tmp_path: Path) -> None:
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.services import run_handlers

    await _append(nc, session(S1))
    settings = Settings(nats_url=nats_url, data_dir=tmp_path)
    stop = asyncio.Event()
    async with open_bus(settings) as bus:
        task = asyncio.create_task(run_handlers(bus, stop, names=("learner",), projection=False))
        manifest = tmp_path / "datasets" / "sft" / "manifest.json"
        try:
            await _until(
                lambda: manifest.exists() and json.loads(manifest.read_text())["count"] == 3
            )
        finally:
            stop.set()
            await asyncio.wait_for(task, 15)
    assert [s["session_id"] for s in json.loads(manifest.read_text())["sessions"]] == [S1]


def test_export_cli_writes_a_dataset(nats_url: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from oopav.bus.store import connect
    from oopav.cli import cli

    async def seed() -> None:
        nc = await connect(nats_url, name="test")
        try:
            from oopav.bus.streams import ensure_streams

            await ensure_streams(nc.jetstream())
            await _append(nc, session(derive_id("cli", "test", 0), mission="cli-mission"))
        finally:
            await nc.close()

    asyncio.run(seed())
    out = tmp_path / "out"
    args = ["--nats-url", nats_url, "--data-dir", str(tmp_path), "export", "--format", "srl"]
    r = CliRunner().invoke(
        cli, [*args, "--mission", "cli-mission", "--since", "3650d", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "srl: 2 records from 1 sessions" in r.output
    assert read_manifest(out)["filters"]["mission"] == "cli-mission"


def _session_files(root: Path) -> None:
    """Session files as the learner writes them, for three finished sessions."""
    (root / "sessions").mkdir(parents=True)
    for i, sid in enumerate((S1, S2, S3)):
        recs = session_records(numbered(session(sid), start=1 + 100 * i), Filters())
        assert recs.source is not None
        data = {"source": recs.source.to_json(), "records": recs.records}
        (root / "sessions" / f"{sid}.json").write_text(json.dumps(data, sort_keys=True))


async def test_learner_rebuilds_in_a_child_process_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `oopav up` the rebuild (every session in memory at once) runs in a child process
    so the long-running process does not keep its peak; the files are the in-process bytes,
    filters included. A child that cannot start falls back to rebuilding in process."""
    import oopav.handlers.learner as learner_mod
    from oopav.handlers.learner import Learner

    filters = Filters(require_applied=False, roles=("actor",))
    built = {}
    for name, out_of_process in (("child", True), ("here", False)):
        root = tmp_path / name
        _session_files(root)
        learner = Learner.__new__(Learner)  # no connection needed: only the files are used
        learner.root, learner.filters, learner.parquet = root, filters, False
        learner.out_of_process, learner.rebuilds, learner.last_rebuild_s = out_of_process, 0, 0.0
        await learner._rebuild()
        assert learner.rebuilds == 1
        built[name] = {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.parent.name != "sessions"
        }
    assert built["child"] == built["here"]
    assert "sft/sft-00000.jsonl" in built["child"]
    manifest = json.loads(built["child"]["sft/manifest.json"])
    assert manifest["filters"]["roles"] == ["actor"] and manifest["count"] > 0

    root = tmp_path / "fallback"
    _session_files(root)
    monkeypatch.setattr(learner_mod.sys, "executable", str(tmp_path / "no-such-python"))
    learner = Learner.__new__(Learner)
    learner.root, learner.filters, learner.parquet = root, filters, False
    learner.out_of_process, learner.rebuilds, learner.last_rebuild_s = True, 0, 0.0
    await learner._rebuild()
    assert (root / "sft" / "sft-00000.jsonl").read_bytes() == built["here"]["sft/sft-00000.jsonl"]


def test_a_recipe_with_no_data_is_told_what_to_set() -> None:
    # A recipe with neither `tasks` nor `dataset` reads dataset None: a clear refusal, not
    # Path(None)'s TypeError.
    for read in (read_manifest, read_records):
        with pytest.raises(ValueError, match="set `tasks` or `dataset`"):
            read(None)


def test_appending_gives_the_records_and_hash_of_a_full_rebuild(tmp_path: Path) -> None:
    from oopav.trainer.datasets import append_dataset, can_append, load_append_state

    def recs(sid: str, offset: int, **kw: object) -> object:
        numbered_events = [(seq + offset, e) for seq, e in numbered(session(sid, **kw))]
        return session_records(numbered_events, Filters())

    s1, s2, s3 = recs(S1, 0), recs(S2, 100), recs(S3, 200, instruction="Rename get to get_page")
    for fmt in ("sft", "srl", "grpo"):
        full = write_dataset(tmp_path / "full" / fmt, fmt, [s1, s2, s3], Filters())
        write_dataset(tmp_path / "app" / fmt, fmt, [s1], Filters(), parquet=False)
        state = load_append_state(tmp_path / "app" / fmt, Filters())
        assert state is not None and can_append(state, [s2])
        append_dataset(tmp_path / "app" / fmt, fmt, [s2], state)
        append_dataset(tmp_path / "app" / fmt, fmt, [s3, s2], state)  # s2 again: skipped
        manifest = read_manifest(tmp_path / "app" / fmt)
        assert read_records(tmp_path / "app" / fmt) == read_records(tmp_path / "full" / fmt)
        assert manifest["content_hash"] == full.content_hash
        assert manifest["count"] == full.count and manifest["duplicates"] == full.duplicates
        assert manifest["sessions"] == full.to_json()["sessions"]
        # The manifest's bytes are json.dumps' (its sessions serialised once, then joined).
        assert (tmp_path / "app" / fmt / "manifest.json").read_bytes() == json.dumps(
            manifest, sort_keys=True, indent=1
        ).encode() + b"\n"
        # The state read back from the files is the one kept in memory.
        again = load_append_state(tmp_path / "app" / fmt, Filters())
        assert again is not None and again.seen == state.seen
        assert again.digest.hexdigest() == full.content_hash
    # An older session than the last one appended cannot be appended: a rebuild is needed.
    assert not can_append(again, [recs(derive_id("old", "t", 0), -50)])
    assert load_append_state(tmp_path / "app" / "sft", Filters(successful_only=True)) is None
