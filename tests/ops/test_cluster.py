"""A 3-node JetStream cluster: sessions survive the loss of the stream leader, a restarted node
catches up, and handlers connected to different nodes run one session together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from loop_harness import (
    TEST_COMMAND,
    assert_causal,
    assert_replays,
    assert_unique_ids,
    finish_session,
    loop,
    rename_script,
    start,
    task,
    wait_for,
)

from helpers.waits import until
from oopav.bus.cluster import LocalCluster, _monitor
from oopav.bus.store import connect
from oopav.bus.streams import EVENTS_STREAM, ensure_streams

pytestmark = pytest.mark.cluster

SCRIPT = rename_script()


async def _streams(url: str) -> None:
    nc = await connect(url, name="test-setup")
    try:
        done = await ensure_streams(nc.jetstream(), replicas=3)
        assert all(line.endswith("created") for line in done), done
        info = await nc.jetstream().stream_info(EVENTS_STREAM)
        assert info.config.num_replicas == 3
        # Created streams have a leader when ensure_streams returns: a core publish that
        # reached a leaderless stream would not be stored (a lost `nats pub` submission).
        intake = await nc.jetstream().stream_info("OOPAV_INTAKE")
        assert info.cluster is not None and info.cluster.leader
        assert intake.cluster is not None and intake.cluster.leader
        # The blobs (starting trees, prompts) and the notary's anchors live as long as the
        # events: an R1 bucket on a killed node would stop every session.
        from oopav.history.signing import notary_kv

        blobs = await nc.jetstream().stream_info("OBJ_OOPAV_BLOBS")
        assert blobs.config.num_replicas == 3
        await notary_kv(nc.jetstream())
        notary = await nc.jetstream().stream_info("KV_OOPAV_NOTARY")
        assert notary.config.num_replicas == 3
    finally:
        await nc.close()


def _stored(cluster: LocalCluster, node: str) -> int:
    data = _monitor(cluster.spec(node), "jsz?streams=true") or {}
    for account in data.get("account_details", []) or []:
        for s in account.get("stream_detail", []) or []:
            if s.get("name") == EVENTS_STREAM:
                return int((s.get("state") or {}).get("messages", 0))
    return -1


async def _until(pred: Any, timeout: float = 30.0) -> None:
    await until(pred, timeout, interval=0.2, what="condition not reached in time")


async def test_session_survives_killing_the_stream_leader(
    cluster: LocalCluster, repo: Path, data_dir: Path
) -> None:
    await _streams(cluster.url)
    async with loop(cluster.url, SCRIPT) as bus:
        sid = await start(bus, task(repo, test_command=TEST_COMMAND), timeout=90)
        await wait_for(bus, sid, "plan_proposed", timeout=60)
        leader = cluster.stream_leader(EVENTS_STREAM)
        assert leader is not None
        cluster.kill(leader)  # SIGKILL, mid-session
        state, events = await finish_session(bus, sid, timeout=120)
    assert state.outcome == "success", state.summary
    assert_unique_ids(events)
    assert_causal(events)
    assert [e.type for e in events].count("session_completed") == 1
    new_leader = cluster.stream_leader(EVENTS_STREAM)
    assert new_leader is not None and new_leader != leader
    await assert_replays(cluster.url, sid)
    # The killed node comes back and catches up with what was written without it.
    cluster.restart(leader)
    others = [s.name for s in cluster.specs if s.name != leader]
    await _until(lambda: _stored(cluster, leader) == _stored(cluster, others[0]) > 0, 60)


async def test_handlers_on_different_nodes_share_one_session(
    cluster: LocalCluster, repo: Path, data_dir: Path
) -> None:
    await _streams(cluster.url)
    first, second, third = cluster.urls
    async with (
        loop(first, SCRIPT, names=("intake", "observer", "orient", "planner")) as bus,
        loop(second, SCRIPT, names=("actor", "verifier")),
    ):
        sid = await start(bus, task(repo, test_command=TEST_COMMAND), timeout=90)
        state, events = await finish_session(bus, sid, timeout=120)
    assert state.outcome == "success", state.summary
    assert_unique_ids(events)
    actors = {e.actor.split("/")[0] for e in events}
    assert {"observer", "planner", "actor", "verifier"} <= actors
    # A reader on the third node sees the same session.
    nc = await connect(third, name="test-reader")
    try:
        from oopav.bus.store import EventStore

        seen = await EventStore(nc).read("session", sid)
        assert [e.id for _, e in seen] == [e.id for e in events]
    finally:
        await nc.close()


def test_shipped_cluster_configs_are_current(tmp_path: Path) -> None:
    """ops/cluster/ is what `oopav cluster config` writes (regenerate with `make docs`)."""
    from click.testing import CliRunner

    from oopav.cli import cli

    shipped = Path(__file__).resolve().parents[2] / "ops" / "cluster"
    result = CliRunner().invoke(cli, ["cluster", "config", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made == sorted(p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file())
    for rel in made:
        assert (tmp_path / rel).read_text() == (shipped / rel).read_text(), rel
    assert '"num_replicas": 3' in (shipped / "streams" / "OOPAV_EVENTS.json").read_text()


def test_a_port_taken_before_a_node_binds_it_is_chosen_again(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Free ports are chosen, released, then bound by the node: another process (a cluster
    test beside this one) can take one in between. The cluster re-plans its ports and starts;
    a fixed plan that collides still fails with the server's own reason."""
    import socket

    import oopav.bus.cluster as cluster_mod

    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    taken = holder.getsockname()[1]
    real_plan = cluster_mod.plan_nodes
    plans: list[list[Any]] = []

    def plan(base: Path, nodes: int = 3, host: str = "127.0.0.1") -> list[Any]:
        specs = real_plan(base, nodes, host)
        if not plans:  # the first plan collides, as if another process took the port
            specs[1].port = taken
        plans.append(specs)
        return specs

    monkeypatch.setattr(cluster_mod, "plan_nodes", plan)
    try:
        cluster = LocalCluster(tmp_path / "c", nodes=3)
        try:
            urls = cluster.start()
            assert len(plans) == 2
            assert f":{taken}" not in ",".join(urls)
        finally:
            cluster.stop()
        fixed = LocalCluster(tmp_path / "d", nodes=1, specs=real_plan(tmp_path / "d", 1))
        fixed.specs[0].port = taken
        with pytest.raises(Exception, match="address already in use"):
            fixed.start(timeout=10)
        assert not fixed.procs
    finally:
        holder.close()
