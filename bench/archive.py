"""Session archives and the replay corpus (issue 27): export / import time per session, and
replaying the committed corpus (tests/corpus/sessions) with the current code, in process on
an embedded nats-server. A same-run baseline: reading each session's events back (what any
`oopav show` costs), so the figures can be compared across machines.

    python bench/archive.py [--runs 3] [--quick]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, arepeat, conclude, parser, report, runs_of

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "tests" / "corpus" / "sessions").glob("*.tar.gz"))

FIGURES = [
    Figure("read_ms", "baseline: read a session's events", "ms", fmt=",.1f"),
    Figure("import_ms", "import one archive (events, blobs, trust)", "ms", fmt=",.1f"),
    Figure("export_ms", "export one session (events, blobs, signatures)", "ms", fmt=",.1f"),
    Figure("archive_kb", "archive size (gzip)", "KiB", fmt=",.1f"),
    Figure("projection_ms", "replay --all: projections, per session", "ms", fmt=",.1f"),
    Figure("verify_s", "replay --all --verify: per session", "s", fmt=",.2f"),
]


async def measure(workdir: Path, verify: bool) -> dict[str, float]:
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.corpus import replay_all
    from oopav.history.archive import export_session, import_session

    settings = Settings(data_dir=workdir / "data", nats_url=None)
    out: dict[str, float] = {}
    async with open_bus(settings, embedded=True, name="bench-archive") as bus:
        t = time.perf_counter()
        sids = [(await import_session(bus.nc, a))["session_id"] for a in CORPUS]
        out["import_ms"] = (time.perf_counter() - t) * 1000 / len(sids)
        t = time.perf_counter()
        for sid in sids:
            await bus.events.read("session", sid)
        out["read_ms"] = (time.perf_counter() - t) * 1000 / len(sids)
        t = time.perf_counter()
        sizes = [
            (await export_session(bus.nc, sid, workdir / f"{sid}.tar.gz"))["archive_bytes"]
            for sid in sids
        ]
        out["export_ms"] = (time.perf_counter() - t) * 1000 / len(sids)
        out["archive_kb"] = sum(sizes) / len(sizes) / 1024
        t = time.perf_counter()
        rep = await replay_all(bus, verify=False)
        out["projection_ms"] = (time.perf_counter() - t) * 1000 / len(sids)
        assert rep.ok, rep.lines()
        if verify:
            t = time.perf_counter()
            rep = await replay_all(bus, verify=True)
            out["verify_s"] = (time.perf_counter() - t) / len(sids)
            if not rep.ok:
                raise SystemExit("FAIL: the corpus does not replay: " + "; ".join(rep.lines()))
    return out


async def main() -> None:
    args = parser(__doc__, runs=3).parse_args()
    print(f"archive bench: {len(CORPUS)} corpus sessions, load {os.getloadavg()[0]:.2f}")

    async def one(_: int) -> dict[str, float]:
        with tempfile.TemporaryDirectory(prefix="oopav-bench-archive-") as t:
            return await measure(Path(t), verify=not args.quick)

    results = await arepeat(one, runs_of(args))
    conclude(report("session archives and the replay corpus", FIGURES, results))


if __name__ == "__main__":
    asyncio.run(main())
