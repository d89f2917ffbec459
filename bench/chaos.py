"""Chaos, long form: the scenario of tests/chaos at full size.

    python bench/chaos.py [--sessions 20] [--kills 10] [--outage 30] [--hostile 50] [--verify 20]

One process per handler (`oopav handler <name>`) against an embedded nats-server on a fixed
port and store; while the sessions run: random SIGKILLs of handler processes (each restarted),
a poison message on a live session, hostile submissions, then the server stopped for
``--outage`` seconds and started again on the same port and store. Afterwards every session
must have ended (success or a named abort) with exactly one terminal event, no duplicated ids,
causation intact, and ``replay --verify`` must reproduce the first ``--verify`` sessions.
Exit status 0 only when all of that holds.

    python bench/chaos.py --fault server-kill --fault disk-full ...   (or --fault all)

The faults of issue 29 (tests/chaos/faults.py), each with the same figures — submissions
answered, sessions ended, events lost (must be 0) — and what it needs: ``server-kill``
(SIGKILL of the embedded server under ``oopav up``, restarted by its supervisor),
``disk-full`` (the data directory on a small tmpfs filled under ``oopav up``; needs root to
mount it), ``flip-byte`` (bytes flipped in the store's message blocks, found by fsck),
``env-race`` (processes building one uv environment), ``big-output`` (a test command writing
2 GB) and ``memory-hog`` (a test command allocating past the task's memory limit).
``--fault classic`` is the scenario above; ``all`` runs every one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chaos"))

from chaos_harness import run_chaos

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "loop"))
from faults import FAULTS


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--outage", type=float, default=30.0, help="seconds the server is down")
    ap.add_argument("--hostile", type=int, default=50)
    ap.add_argument("--verify", type=int, default=20, help="sessions to replay --verify")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--fault",
        action="append",
        choices=["classic", *FAULTS, "all"],
        help="which scenario (repeatable; default: classic)",
    )
    args = ap.parse_args()
    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    from oopav.logging import configure

    configure("WARNING")
    chosen = args.fault or ["classic"]
    if "all" in chosen:
        chosen = ["classic", *FAULTS]
    ok = True
    for name in dict.fromkeys(chosen):
        if name == "classic":
            ok = await classic(args) and ok
            continue
        root = Path(tempfile.mkdtemp(prefix=f"oopav-chaos-{name}-"))
        report = await FAULTS[name](root)
        print(report.describe())
        for problem in report.problems:
            print("  problem:", problem)
        print(f"  (logs under {root})")
        ok = report.ok and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


async def classic(args: argparse.Namespace) -> bool:
    root = Path(tempfile.mkdtemp(prefix="oopav-chaos-"))
    report = await run_chaos(
        root,
        sessions=args.sessions,
        kills=args.kills,
        outage_s=args.outage,
        hostile=args.hostile,
        poison=True,
        verify=args.verify,
        seed=args.seed,
        timeout=900.0 + args.outage,
    )
    print(report.describe())
    for problem in report.problems:
        print("  problem:", problem)
    ok = (
        not report.problems
        and len(report.outcomes) == len(report.sessions)
        and report.hostile_answered == report.hostile_sent
    )
    print("classic    ", "PASS" if ok else "FAIL", f"(logs under {root})")
    return ok


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
