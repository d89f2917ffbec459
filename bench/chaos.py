"""Chaos, long form: the scenario of tests/chaos at full size.

    python bench/chaos.py [--sessions 20] [--kills 10] [--outage 30] [--hostile 50] [--verify 20]

One process per handler (`oopav handler <name>`) against an embedded nats-server on a fixed
port and store; while the sessions run: random SIGKILLs of handler processes (each restarted),
a poison message on a live session, hostile submissions, then the server stopped for
``--outage`` seconds and started again on the same port and store. Afterwards every session
must have ended (success or a named abort) with exactly one terminal event, no duplicated ids,
causation intact, and ``replay --verify`` must reproduce the first ``--verify`` sessions.
Exit status 0 only when all of that holds.
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


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--outage", type=float, default=30.0, help="seconds the server is down")
    ap.add_argument("--hostile", type=int, default=50)
    ap.add_argument("--verify", type=int, default=20, help="sessions to replay --verify")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    from oopav.logging import configure

    configure("WARNING")
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
    print("PASS" if ok else "FAIL", f"(logs under {root})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
