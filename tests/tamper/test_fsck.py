"""A corrupted store (issue 29, item 2): one flipped byte in a message block makes nats-server
drop the message silently. `oopav fsck` names the missing sequences, broken links, undecodable
entries and snapshot drift; `sessions` and `show` mark the damaged sessions; `replay --verify`
names the damaged sequence."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from test_chain import build, completed

from oopav.bus.server import EmbeddedServer
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import ensure_streams
from oopav.cli import cli


def _flip(store: Path, needle: bytes) -> None:
    """Flip one byte of the stored message that contains ``needle`` (the server is stopped)."""
    for blk in store.rglob("OOPAV_EVENTS/msgs/*.blk"):
        data = bytearray(blk.read_bytes())
        at = data.find(needle)
        if at >= 0:
            data[at + 3] ^= 0x01
            blk.write_bytes(bytes(data))
            return
    raise AssertionError(f"{needle!r} not found in any message block")


async def _populate(url: str) -> dict[str, Any]:
    nc = await connect(url, name="test")
    try:
        await ensure_streams(nc.jetstream())
        store = EventStore(nc)
        ids = {name: str(uuid.uuid4()) for name in ("intact", "mid", "end", "junk")}
        seqs: dict[str, int] = {}
        for name, sid in ids.items():
            await build(store, sid, n=3)
            done = await store.append(completed(sid, 9))
            seqs[f"{name}.end"] = done.sequence
        mid = await store.read("session", ids["mid"])
        seqs["mid.victim"] = mid[2][0]  # the second critic_verdict
        ids["mid.victim_id"] = mid[2][1].id
        ids["end.victim_id"] = (await store.read("session", ids["end"]))[-1][1].id
        ack = await nc.jetstream().publish(
            f"oopav.ev.session.{ids['junk']}.critic_verdict", b"\x00not an event"
        )
        seqs["junk"] = ack.seq
        return {"ids": ids, "seqs": seqs}
    finally:
        await nc.close()


def _cli(url: str, data: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--nats-url", url, "--data-dir", str(data), *args])


def test_fsck_names_every_kind_of_damage(tmp_path: Path) -> None:
    store = tmp_path / "nats"
    data = tmp_path / "data"
    server = EmbeddedServer(store, write_info=False)
    url = server.start()
    try:
        made = asyncio.run(_populate(url))
        ids, seqs = made["ids"], made["seqs"]
        # The projection's snapshot records every session as completed.
        r = _cli(url, data, "sessions", "--json")
        assert r.exit_code == 0, r.output
        assert {row["outcome"] for row in json.loads(r.stdout)} == {"success"}
        # Before the flips only the junk is damage.
        r = _cli(url, data, "fsck", "--json")
        assert r.exit_code == 1 and json.loads(r.stdout)["damaged"] == [ids["junk"]], r.output
        r = _cli(url, data, "fsck", "--session", ids["intact"])
        assert r.exit_code == 0 and "OK: no damage found" in r.output, r.output
    finally:
        server.stop()
    _flip(store, ids["mid.victim_id"].encode())
    _flip(store, ids["end.victim_id"].encode())
    server = EmbeddedServer(store, port=server.port, write_info=False)
    server.start()
    try:
        r = _cli(url, data, "fsck", "--json")
        assert r.exit_code == 1, r.output
        report = json.loads(r.stdout)
        assert report["missing"] == sorted([seqs["mid.victim"], seqs["end.end"]])
        found = {(f["session_id"], f["kind"], f["sequence"]) for f in report["findings"]}
        assert (ids["mid"], "missing_sequence", seqs["mid.victim"]) in found
        assert (ids["mid"], "broken_link", seqs["mid.victim"] + 4) in found or any(
            s == ids["mid"] and k == "broken_link" for s, k, _ in found
        )
        assert (ids["end"], "no_end", seqs["end.end"]) in found
        assert (ids["end"], "snapshot_drift", seqs["end.end"]) in found
        assert (ids["junk"], "undecodable", seqs["junk"]) in found
        assert sorted(report["damaged"]) == sorted([ids["mid"], ids["end"], ids["junk"]])
        assert not any(s == ids["intact"] for s, _, _ in found)

        # `sessions` marks them; the lost end is noticed even without the fsck record.
        (data / "fsck.json").unlink()
        r = _cli(url, data, "sessions")
        line = next(x for x in r.output.splitlines() if x.startswith(ids["end"]))
        assert f"DAMAGED (its last event (seq {seqs['end.end']}) is gone" in line, r.output
        assert "DAMAGED" not in next(
            x for x in r.output.splitlines() if x.startswith(ids["intact"])
        )
        _cli(url, data, "fsck")
        r = _cli(url, data, "sessions", "--json")
        rows = {row["session_id"]: row for row in json.loads(r.stdout)}
        assert rows[ids["mid"]]["damaged"] and rows[ids["junk"]]["damaged"]
        assert rows[ids["intact"]]["damaged"] == []

        # `show` says what is wrong, by sequence.
        r = _cli(url, data, "show", ids["end"])
        damaged = [x for x in r.output.splitlines() if x.startswith("DAMAGED:")]
        assert any(f"seq {seqs['end.end']}" in x for x in damaged), r.output
        r = _cli(url, data, "show", ids["mid"])
        assert f"DAMAGED: missing sequence at seq {seqs['mid.victim']}" in r.output, r.output
        r = _cli(url, data, "show", ids["junk"])
        assert f"DAMAGED: undecodable at seq {seqs['junk']}" in r.output, r.output

        # `replay --verify` fails naming the sequence, not only "a projection mismatch".
        for name, expected in (
            ("junk", f"damaged: undecodable at seq {seqs['junk']}"),
            ("end", f"damaged: missing sequence at seq {seqs['end.end']}"),
        ):
            r = _cli(url, data, "replay", ids[name], "--verify")
            assert r.exit_code == 1 and expected in r.output, (name, r.output)
    finally:
        server.stop()
