"""Chaos: sessions driven by handler processes while handlers are SIGKILLed and restarted,
the server stops and comes back on the same port and store, a poison message lands on a live
session and hostile submissions hit the intake. Used by tests/chaos (short form) and
bench/chaos.py (long form).

What must hold afterwards: every session ended (success, or an abort that names its reason),
exactly one terminal event each, no duplicated event ids, every event caused by an earlier one
of its session, and ``replay --verify`` reproduces the sessions it is asked to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "loop"))

from loop_harness import finish as finish_answer  # noqa: E402
from loop_harness import make_repo, plan_answer, rename_all, task  # noqa: E402

PROCESS_HANDLERS = ("intake", "grants", "observer", "orient", "planner", "actor", "verifier")
KILLABLE = ("observer", "orient", "planner", "actor", "verifier")

HOSTILE: list[bytes] = [
    b"{not json",
    b"[1, 2, 3]",
    b'"just a string"',
    b'{"instruction": 42, "repo": "/tmp"}',
    b'{"instruction": "x", "repo": "/tmp", "surprise": true}',
    b'{"instruction": "x"}',
    b'{"instruction": "x", "repo": "/definitely/not/here"}',
    b"\xff\xfe invalid utf-8",
    b'{"instruction": "' + b"A" * 70_000 + b'", "repo": "/tmp"}',
    b"",
]


@dataclass
class ChaosReport:
    sessions: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    kills: list[str] = field(default_factory=list)
    restarts: int = 0
    outage_s: float = 0.0
    hostile_answered: int = 0
    hostile_sent: int = 0
    poison_parked: int = 0
    problems: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def describe(self) -> str:
        counts: dict[str, int] = {}
        for o in self.outcomes.values():
            counts[o] = counts.get(o, 0) + 1
        return (
            f"{len(self.sessions)} sessions {counts}, {len(self.kills)} kills, "
            f"{self.restarts} server restarts ({self.outage_s:.0f} s down), "
            f"hostile {self.hostile_answered}/{self.hostile_sent} answered, "
            f"poison parked {self.poison_parked}, replay-verified {len(self.verified)}, "
            f"{len(self.problems)} problems, {self.wall_s:.0f} s"
        )


class Cluster:
    """An embedded server on a fixed port and store, and one process per handler."""

    def __init__(self, root: Path) -> None:
        from oopav.bus.server import EmbeddedServer, free_port

        self.root = root
        self.store = root / "nats"
        self.port = free_port()
        self.server = EmbeddedServer(self.store, port=self.port, write_info=False)
        self.data_dir = root / "data"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start_server(self) -> None:
        from oopav.bus.server import EmbeddedServer

        self.server = EmbeddedServer(self.store, port=self.port, write_info=False)
        self.server.start()

    def stop_server(self) -> None:
        self.server.stop()

    def spawn(self, name: str) -> None:
        env = {
            **os.environ,
            "OOPAV_DATA_DIR": str(self.data_dir),
            "OOPAV_LOG_LEVEL": "WARNING",
        }
        env.pop("OOPAV_NATS_URL", None)
        log = open(self.root / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "oopav.cli", "--nats-url", self.url, "handler", name],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.server.stop()


async def _connect(url: str) -> Any:
    from oopav.bus.store import connect

    return await connect(url, name="chaos", give_up_after=float("inf"))


async def _until_intake(nc: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            msg = await nc.request("oopav.tasks.submit", b"{}", timeout=2)
            if b"error" in msg.data:
                return
        await asyncio.sleep(0.3)
    raise AssertionError("the intake process did not start answering")


async def _read(nc: Any, sid: str) -> list[tuple[int, Any]]:
    from oopav.bus.store import EventStore

    return await EventStore(nc).read("session", sid, skip_undecodable=True)


async def _wait_all(nc: Any, sids: list[str], timeout: float) -> dict[str, str]:
    """Poll until every session has a terminal event; reads during an outage just retry."""
    done: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(done) < len(sids):
        for sid in sids:
            if sid in done:
                continue
            try:
                events = await _read(nc, sid)
            except Exception:
                await asyncio.sleep(0.5)
                continue
            for _, e in events:
                if e.type == "session_completed":
                    done[sid] = f"{e.outcome}" + (f":{e.reason}" if e.outcome != "success" else "")
                    break
        await asyncio.sleep(0.5)
    return done


async def run_chaos(
    root: Path,
    *,
    sessions: int = 4,
    kills: int = 2,
    outage_s: float = 3.0,
    hostile: int = 10,
    poison: bool = True,
    verify: int = 1,
    seed: int = 7,
    timeout: float = 400.0,
) -> ChaosReport:
    rng = random.Random(seed)
    report = ChaosReport()
    t0 = time.monotonic()
    cluster = Cluster(root)
    cluster.start_server()
    nc = await _connect(cluster.url)
    try:
        from oopav.bus.streams import ensure_streams

        await ensure_streams(nc.jetstream())
        for name in PROCESS_HANDLERS:
            cluster.spawn(name)
        await _until_intake(nc)
        repo = make_repo(root / "repo", pytest_suite=False, git_repo=False)
        script_file = root / "script.yaml"
        script_file.write_text(
            yaml.safe_dump({"planner": [plan_answer()], "actor": [rename_all(), finish_answer()]})
        )
        for _ in range(sessions):
            body = task(repo, model=f"scripted:{script_file}")
            body["instruction"] += f" (chaos {uuid.uuid4().hex[:8]})"
            msg = await nc.request("oopav.tasks.submit", json.dumps(body).encode(), timeout=30)
            reply = json.loads(msg.data)
            assert "session_id" in reply, reply
            report.sessions.append(reply["session_id"])

        # Hostile submissions: each is answered with an error, and the intake goes on.
        for i in range(hostile):
            payload = HOSTILE[i % len(HOSTILE)]
            report.hostile_sent += 1
            try:
                msg = await nc.request("oopav.tasks.submit", payload, timeout=10)
                if b"error" in msg.data:
                    report.hostile_answered += 1
            except Exception as exc:
                report.problems.append(f"hostile submission {payload[:30]!r}: {exc!r}")

        # A poison message on a live session's subject, in the middle of its work.
        if poison and report.sessions:
            victim = report.sessions[0]
            js = nc.jetstream()
            await js.publish(f"oopav.ev.session.{victim}.observation_recorded", b"\x00poison")
            await js.publish(
                f"oopav.ev.session.{victim}.observation_recorded",
                b'{"type": "observation_recorded", "schema": 1, "id": "x"}',
            )

        # Kills spread over the sessions' lifetime, then the outage.
        for _ in range(kills):
            await asyncio.sleep(rng.uniform(0.5, 2.5))
            name = rng.choice(KILLABLE)
            await asyncio.to_thread(cluster.kill, name)
            report.kills.append(name)
            cluster.spawn(name)
        if outage_s > 0:
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            await asyncio.to_thread(cluster.stop_server)
            await asyncio.sleep(outage_s)
            await asyncio.to_thread(cluster.start_server)
            report.restarts += 1
            report.outage_s += outage_s

        report.outcomes = await _wait_all(nc, report.sessions, timeout)
        for sid in report.sessions:
            if sid not in report.outcomes:
                events = await _read(nc, sid)
                report.problems.append(f"{sid} never ended: {[e.type for _, e in events]}")
                continue
            events = [e for _, e in await _read(nc, sid)]
            ids = [e.id for e in events]
            if len(ids) != len(set(ids)):
                report.problems.append(f"{sid}: duplicated events")
            terminal = [e for e in events if e.type == "session_completed"]
            if len(terminal) != 1 or events[-1].type != "session_completed":
                report.problems.append(f"{sid}: {len(terminal)} terminal events")
            seen: set[str] = set()
            for e in events:
                if e.type not in ("task_submitted", "permission_granted", "permission_denied"):
                    if e.causation_id not in seen:
                        report.problems.append(f"{sid}: {e.type} caused by an unknown event")
                seen.add(e.id)
            if report.outcomes[sid] != "success" and ":" not in report.outcomes[sid]:
                report.problems.append(f"{sid}: an abort without a reason")
        if poison and report.sessions:
            report.poison_parked = await _dead_letters(nc, report.sessions[0])

        from oopav.replay import verify_session

        for sid in report.sessions[:verify]:
            if not report.outcomes.get(sid, "").startswith("success"):
                continue
            result = await verify_session(cluster.url, sid, idle_timeout=10.0, total_timeout=180.0)
            if result.ok and result.replayed == result.recorded:
                report.verified.append(sid)
            else:
                report.problems.append(f"{sid}: replay --verify: {result.describe()}")
    finally:
        await nc.close()
        await asyncio.to_thread(cluster.stop_all)
    report.wall_s = time.monotonic() - t0
    return report


async def _dead_letters(nc: Any, sid: str) -> int:
    """Dead letters whose original subject is on the session ``sid``."""
    import nats
    from nats.js.api import ConsumerConfig, DeliverPolicy

    sub = await nc.jetstream().subscribe(
        "oopav.dlq.>",
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
        config=ConsumerConfig(),
    )
    count = 0
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=1)
            except nats.errors.TimeoutError:
                return count
            if f".{sid}." in (msg.headers or {}).get("Oopav-Original-Subject", ""):
                count += 1
    finally:
        await sub.unsubscribe()
