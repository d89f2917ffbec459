"""The flywheel: a policy trained on the loop's own sessions acts in the loop (issue 25).

    python bench/flywheel.py [--short] [--tasks 200] [--heldout 100] [--steps 300] [--gen2]

- **Generation 0**: synthetic codemod tasks on the standard library (renames of functions,
  methods, attributes), each a one-file repository with a test that passes only when the file
  has the expected code; solved by ``synth:`` from the task's example through the real loop
  (NATS, handlers, sandbox, verifier: real sessions).
- **Generation 1**: a fresh policy trained (SFT, ``--steps`` steps: a step budget, not seconds)
  on the learner's export of those sessions with the compact profile (``--profile compact``:
  the prompts the loop sends a local ``hf:`` policy), then run through the real loop as
  ``hf:<checkpoint>`` on held-out tasks **without examples**: session success (the test
  passes), valid (the first answer parses) and exact (its rule gives the expected code), with
  Wilson 95% intervals.
- **Generation 2** (``--gen2``): generation 1 retrained for the same steps on generation 0's
  data plus its own verified sessions; the control is generation 1 trained for those steps on
  generation 0's data only; both run on a second held-out set.

Targets (2 cores): generation 1 >= 50% success; generation 2 >= generation 1 + 10 points while
the control gains <= 2. Wall time and load are printed. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FAMILIES = ("rename_call", "rename_method", "rename_attr")
CHECK = """import ast, pathlib, sys
got = pathlib.Path("mod.py").read_text()
want = {post!r}
sys.exit(0 if ast.dump(ast.parse(got)) == ast.dump(ast.parse(want)) else 1)
"""


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def rate(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / max(n, 1):5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({k}/{n})"


def make_repo(root: Path, task: Any) -> Path:
    repo = root / task.id[:12]
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "mod.py").write_text(task.pre)
    (repo / "check_mod.py").write_text(CHECK.format(post=task.post))
    return repo


def body(task: Any, repo: Path, model: str, examples: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "instruction": task.instruction,
        "repo": str(repo),
        "model": model,
        "test_command": ["python", "check_mod.py"],
        "budgets": {"retries_per_phase": 2, "iterations": 6},
        # Nobody answers a bench: where the loop would ask a person the session ends at once
        # (escalation: abort); the deadline and the watchdog stay as a second guard.
        "policy": {"escalation": "abort", "human_deadline_s": 30.0},
    }
    if examples:
        out["examples"] = [{"path": "mod.py", "before": task.pre, "after": task.post}]
    return out


async def run_sessions(url: str, data: Path, bodies: list[dict[str, Any]]) -> list[Any]:
    """Submit every body to the real loop (all handlers in this process); the final states."""
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers, submit_task, wait_session

    settings = Settings(nats_url=url, data_dir=data)
    async with open_bus(settings, name="bench-flywheel") as bus:
        stop, ready = asyncio.Event(), asyncio.Event()
        runner = asyncio.create_task(
            run_handlers(
                bus,
                stop,
                ports=Ports(settings=settings),
                # The projection feeds the watchdog, which enforces every deadline (with
                # projection=False nothing ended a session waiting on a person).
                projection=True,
                ready=ready,
                signals=False,
            )
        )
        await ready.wait()
        states = []
        try:
            for b in bodies:  # one at a time: 2 cores, and a step budget per session
                reply = await submit_task(bus, b, timeout=60)
                if "session_id" not in reply:
                    raise SystemExit(f"submission refused: {reply}")
                states.append(await wait_session(bus, reply["session_id"], 600))
        finally:
            stop.set()
            await asyncio.wait_for(runner, 60)
        return states


async def first_answers(url: str, sids: list[str]) -> list[str]:
    from oopav.bus.store import EventStore, connect

    nc = await connect(url, name="bench-flywheel-read")
    try:
        store = EventStore(nc)
        out = []
        for sid in sids:
            calls = [
                e
                for _, e in await store.read("session", sid)
                if e.type == "model_called" and e.role == "actor"
            ]
            out.append(calls[0].response if calls else "")
        return out
    finally:
        await nc.close()


async def export_compact(url: str, out: Path, sids: set[str] | None = None) -> int:
    from oopav.bus.store import EventStore, connect
    from oopav.trainer.datasets import Filters, write_dataset
    from oopav.trainer.stream import completed_sessions, records_of

    filters = Filters(successful_only=True, roles=("actor",), profile="compact")
    nc = await connect(url, name="bench-flywheel-export")
    try:
        store = EventStore(nc)
        sessions = [
            await records_of(store, sid, filters, ("sft",))
            async for _, sid in completed_sessions(store)
            if sids is None or sid in sids
        ]
        return write_dataset(out, "sft", sessions, filters, parquet=False).count
    finally:
        await nc.close()


def merge(out: Path, *dirs: Path) -> int:
    from oopav.trainer.datasets import encode_jsonl, read_records

    recs = [r for d in dirs for r in read_records(d)]
    out.mkdir(parents=True, exist_ok=True)
    data = encode_jsonl(recs)
    (out / "sft-00000.jsonl").write_bytes(data)
    import hashlib

    manifest = {
        "format": "sft",
        "count": len(recs),
        "duplicates": 0,
        "sessions": [],
        "filters": {},
        "shards": [{"path": "sft-00000.jsonl", "count": len(recs)}],
        "content_hash": hashlib.sha256(data).hexdigest(),
        "stream_sequences": {},
        "version": 1,
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return len(recs)


def train(out: Path, dataset: Path, steps: int, model: str = "new", seed: int = 0) -> str:
    from oopav.trainer.sft import SFTRecipe, train_sft

    cfg = SFTRecipe(
        output_dir=str(out),
        model=model,
        dataset=str(dataset),
        max_steps=steps,
        batch_size=8,
        learning_rate=2e-3 if model == "new" else 5e-4,
        max_length=768,  # a compact prompt (<= 512 tokens) and its answer
        eval_n=0,
        threads=1,
        seed=seed,
        logging_steps=max(1, steps // 5),
    )
    return str(train_sft(cfg, lambda *_: None)["checkpoint"])


async def evaluate(url: str, work: Path, name: str, tasks: list[Any], checkpoint: str) -> dict:
    from oopav.trainer.rewards import score_env

    repos = work / f"repos-{name}"
    bodies = [body(t, make_repo(repos, t), f"hf:{checkpoint}", False) for t in tasks]
    t0 = time.perf_counter()
    states = await run_sessions(url, work / "data", bodies)
    answers = await first_answers(url, [s.session_id for s in states])
    scores = [score_env(a, t.pre, t.post) for a, t in zip(answers, tasks, strict=True)]
    n = len(tasks)
    res = {
        "n": n,
        "success": sum(s.outcome == "success" for s in states),
        "valid": sum(s.valid for s in scores),
        "exact": sum(s.exact for s in scores),
        "seconds": time.perf_counter() - t0,
        "sids": [s.session_id for s in states if s.outcome == "success"],
    }
    print(
        f"{name:8} success {rate(res['success'], n)}  valid {rate(res['valid'], n)}  "
        f"exact {rate(res['exact'], n)}  {res['seconds']:.0f} s",
        flush=True,
    )
    return res


async def main_async(args: argparse.Namespace) -> None:
    from oopav.bus.server import EmbeddedServer
    from oopav.trainer.tasks import generate

    work = Path(args.workdir or tempfile.mkdtemp(prefix="oopav-flywheel-"))
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    got = generate(
        (args.tasks + 2 * args.heldout) * 4, seed=args.seed, holdout=0.5, families=FAMILIES
    )
    train_tasks = [t for t in got.tasks if t.split == "train"][: args.tasks]
    held = [t for t in got.tasks if t.split == "test"]
    held_a, held_b = held[: args.heldout], held[args.heldout : 2 * args.heldout]
    print(
        f"tasks: gen0 {len(train_tasks)}  held-out {len(held_a)} + {len(held_b)}  "
        f"families {','.join(FAMILIES)}  work {work}",
        flush=True,
    )
    server = EmbeddedServer(work / "nats", write_info=False)
    url = server.start()
    try:
        t0 = time.perf_counter()
        bodies = [body(t, make_repo(work / "repos-gen0", t), "synth:", True) for t in train_tasks]
        states = await run_sessions(url, work / "data", bodies)
        ok = sum(s.outcome == "success" for s in states)
        print(f"gen0     synth: success {rate(ok, len(states))}  {time.perf_counter() - t0:.0f} s")
        gen0_data = work / "data-gen0"
        count = await export_compact(url, gen0_data, {s.session_id for s in states})
        print(f"gen0     compact SFT records: {count}", flush=True)
        t0 = time.perf_counter()
        ck1 = train(work / "gen1", gen0_data, args.steps, seed=args.seed)
        print(f"gen1     trained {args.steps} steps in {time.perf_counter() - t0:.0f} s")
        r1 = await evaluate(url, work, "gen1", held_a, ck1)
        if args.gen2:
            own = work / "data-gen1"
            await export_compact(url, own, set(r1["sids"]))
            mixed = work / "data-gen2"
            merge(mixed, gen0_data, own)
            ck2 = train(work / "gen2", mixed, args.steps, model=ck1, seed=args.seed)
            ckc = train(work / "control", gen0_data, args.steps, model=ck1, seed=args.seed)
            base = await evaluate(url, work, "gen1-B", held_b, ck1)
            r2 = await evaluate(url, work, "gen2", held_b, ck2)
            rc = await evaluate(url, work, "control", held_b, ckc)
            d2 = 100 * (r2["success"] - base["success"]) / max(1, base["n"])
            dc = 100 * (rc["success"] - base["success"]) / max(1, base["n"])
            print(f"gen2 - gen1 {d2:+.1f} points (target >= +10); control {dc:+.1f} (<= +2)")
        n1 = r1["n"]
        verdict = "PASS" if r1["success"] >= 0.5 * n1 else "MISS"
        print(f"gen1 success {100 * r1['success'] / max(1, n1):.1f}% target >= 50%: {verdict}")
    finally:
        server.stop()
    print(
        f"wall {time.perf_counter() - t_start:.0f} s  load {load0:.1f} -> "
        f"{os.getloadavg()[0]:.1f} (cores {os.cpu_count()})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true", help="CI form: 24 tasks, 12 held out")
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--heldout", type=int, default=100)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--gen2", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if args.short:
        args.tasks, args.heldout, args.steps = 24, 12, 60
    sys.setrecursionlimit(10000)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
