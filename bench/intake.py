"""Intake and tamper-evidence benchmark: how fast hostile submissions are answered, and what the
hash chain costs a projection rebuild.

    python bench/intake.py [--random 300] [--events 50000]

Starts its own embedded nats-server in a temp dir and an intake handler in this process, then:

1. sends each hostile case of docs/operations.md ("Limits") with ``nats req`` semantics and a
   valid submission after each: reply latency per case (target: every answer < 1 s, and the
   valid submission after it is answered);
2. sends ``--random`` seeded junk payloads (random bytes, random JSON, deep nesting, long
   numbers, control characters): answered count, p50/max latency;
3. rebuilds the session projection from ``--events`` events spread over 100 sessions, once
   unchained and once hash-chained (prev_hash), same run (target: chained >= 0.8x unchained).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bus import make_events
from oopav.bus.server import EmbeddedServer
from oopav.bus.store import EventStore, connect
from oopav.bus.streams import INTAKE_SUBJECT, ensure_streams, stream_definitions
from oopav.events.chain import GENESIS, event_hash
from oopav.handlers.intake import Intake
from oopav.projections.runner import SESSIONS, ProjectionRunner
from oopav.projections.store import SnapshotStore


def hostile(repo: str) -> dict[str, bytes]:
    def task(**extra: Any) -> bytes:
        return json.dumps({"instruction": "x", "repo": repo, **extra}).encode()

    r = repo.encode()
    return {
        "10,000-deep JSON": b'{"instruction": "x", "repo": "'
        + r
        + b'", "policy": '
        + b"[" * 10_000
        + b"]" * 10_000
        + b"}",
        "5,000-digit integer": b'{"instruction": "x", "repo": "'
        + r
        + b'", "budgets": {"iterations": '
        + b"9" * 5000
        + b"}}",
        "5,000-char path": json.dumps({"instruction": "x", "repo": "/" + "a" * 5000}).encode(),
        "300-char component": json.dumps(
            {"instruction": "x", "repo": repo + "/" + "b" * 300}
        ).encode(),
        "lone surrogate": b'{"instruction": "x\\ud800", "repo": "' + r + b'"}',
        "NUL in test_command": task(test_command="py\u0000test"),
        "NUL in model": task(model="a\u0000b"),
        "NUL in example path": task(examples=[{"before": "a", "after": "b", "path": "a\u0000"}]),
        "NUL in policy": task(policy={"allow": ["exec:a\u0000"]}),
        "10,000 arguments": task(test_command=["a"] * 10_000),
        "repo=/proc": json.dumps({"instruction": "x", "repo": "/proc"}).encode(),
        'ask_unknown: "no"': task(policy={"ask_unknown": "no"}),
    }


def junk(rng: random.Random, repo: str) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 300))
    if kind == 1:
        n = rng.randrange(1, 5000)
        return b"[" * n + b"]" * n
    if kind == 2:
        return (
            b'{"instruction": "x", "repo": "'
            + repo.encode()
            + b'", "mission": '
            + b"7" * rng.randrange(1, 9000)
            + b"}"
        )
    if kind == 3:
        chars = "".join(chr(rng.randrange(0, 0x2FFF)) for _ in range(rng.randrange(1, 60)))
        field = rng.choice(["instruction", "model", "mission", "test_command", "repo"])
        return json.dumps({"instruction": "x", "repo": repo, field: chars}).encode()
    if kind == 4:
        return json.dumps([rng.random() for _ in range(rng.randrange(1, 50))]).encode()
    return json.dumps(
        {"instruction": "x", "repo": repo, "budgets": {"iterations": rng.randrange(-5, 900)}}
    ).encode()


async def ask(nc: Any, payload: bytes) -> tuple[dict[str, Any], float]:
    t = time.perf_counter()
    msg = await nc.request(INTAKE_SUBJECT, payload, timeout=30)
    return json.loads(msg.data), time.perf_counter() - t


async def reset(js: Any) -> None:
    for name in stream_definitions():
        try:
            await js.delete_stream(name)
        except Exception:
            pass
    await ensure_streams(js)


def chain(events: list[Any]) -> list[Any]:
    prev: dict[str, str] = {}
    out = []
    for e in events:
        linked = msgspec.structs.replace(e, prev_hash=prev.get(e.aggregate_id, GENESIS))
        prev[e.aggregate_id] = event_hash(linked)
        out.append(linked)
    return out


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="oopav-bench-intake-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        server = EmbeddedServer(Path(tmp) / "nats", write_info=False)
        url = server.start()
        try:
            nc = await connect(url, name="bench-intake")
            js = nc.jetstream()
            await reset(js)
            intake = Intake(nc)
            task = asyncio.create_task(intake.run())
            await asyncio.wait_for(intake.ready.wait(), 10)
            good = json.dumps({"instruction": "x", "repo": str(repo)}).encode()

            print("hostile submissions (reply latency; target < 1000 ms each)")
            worst = 0.0
            served = True
            for name, payload in hostile(str(repo)).items():
                reply, dt = await ask(nc, payload)
                after, _ = await ask(nc, good)
                served = served and "error" not in after
                worst = max(worst, dt)
                print(f"  {name:24} {dt * 1000:7.1f} ms  {reply.get('code')}: {reply.get('field')}")
            print(
                f"  worst {worst * 1000:.1f} ms: {'PASS' if worst < 1 else 'MISS'}; "
                f"next valid task served every time: {'PASS' if served else 'MISS'}"
            )

            rng = random.Random(1)
            times = []
            answered = 0
            t0 = time.perf_counter()
            for _ in range(args.random):
                reply, dt = await ask(nc, junk(rng, str(repo)))
                answered += "session_id" in reply
                times.append(dt)
            total = time.perf_counter() - t0
            print(
                f"\n{args.random} seeded junk payloads: {answered} answered, "
                f"{args.random / total:,.0f}/s, p50 {statistics.median(times) * 1000:.1f} ms, "
                f"max {max(times) * 1000:.1f} ms ({'PASS' if max(times) < 1 else 'MISS'} < 1000 ms)"
            )
            intake.stop()
            await asyncio.wait_for(task, 10)

            print(
                f"\nprojection rebuild, {args.events:,} events over 100 sessions (alternated, best of 3)"
            )
            base = make_events(args.events, 100, "bench-chain")
            variants = {"unchained": base, "hash-chained": chain(base)}
            rates = dict.fromkeys(variants, 0.0)
            # Alternated rounds, best of each: the machine is shared, and noise hits both.
            for r in range(3):
                for name, events in variants.items():
                    await reset(js)
                    await EventStore(nc).append_many_async(events)
                    runner = ProjectionRunner(
                        nc, SnapshotStore(Path(tmp) / f"snap-{name}-{r}"), SESSIONS
                    )
                    t = time.perf_counter()
                    await runner.catch_up()
                    rates[name] = max(rates[name], args.events / (time.perf_counter() - t))
                    state = runner.get(base[0].aggregate_id)
                    assert state is not None and state.chain_break is None
                    assert state.chained == (name == "hash-chained")
                    runner.snapshots.store.close()
            for name, rate in rates.items():
                print(f"  {name:14} {rate:10,.0f} ev/s")
            ratio = rates["hash-chained"] / rates["unchained"]
            print(f"  ratio {ratio:.2f}x (target >= 0.8x): {'PASS' if ratio >= 0.8 else 'MISS'}")
            await nc.close()
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=300)
    parser.add_argument("--events", type=int, default=50_000)
    asyncio.run(main(parser.parse_args()))
