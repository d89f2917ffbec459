"""Benchmarks of oopav.context: the repo map of a generated 1k-file repository (cold build,
warm tags, cached lookup) and the session memory with 10k finished sessions (rebuild from the
stream, query latency against a brute-force numpy baseline, save and load).

    python bench/context.py [--runs 5] [--quick]   # prints the figures
    from bench.context import run      # the same figures as a dict
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, conclude, parser, repeat, report, runs_of
from oopav.context.memory import SessionMemory
from oopav.context.repomap import build_repo_map
from oopav.context.synthetic import generate_repo, session_events
from oopav.logging import configure

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@oopav.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@oopav.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _median(fn: Callable[[], object], repeat: int) -> float:
    return statistics.median(_timed(fn) for _ in range(repeat))


def _git_snapshot(root: Path) -> None:
    env = {**os.environ, **_GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "gen"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def bench_repomap(work: Path, n_files: int = 1000) -> dict[str, float]:
    repo = work / "repo"
    generate_repo(repo, n_files, seed=1)
    plain = work / "plain"
    shutil.copytree(repo, plain)
    _git_snapshot(repo)
    cache = work / "cache"

    t_cold = _timed(lambda: build_repo_map(repo, cache_dir=cache))
    m = build_repo_map(repo, cache_dir=cache)
    assert m.from_cache
    t_cached = _median(lambda: build_repo_map(repo, cache_dir=cache), 9)
    # Another task on the same tree: the map is rebuilt, the tags come from the cache.
    t_warm = _median(
        lambda: build_repo_map(
            repo, cache_dir=cache, mentioned_idents=[f"x{time.perf_counter_ns()}"]
        ),
        3,
    )
    t_nocache = _timed(lambda: build_repo_map(repo))
    fs_cache = work / "fs-cache"
    build_repo_map(plain, cache_dir=fs_cache)
    t_cached_fs = _median(lambda: build_repo_map(plain, cache_dir=fs_cache), 9)
    return {
        "repomap_files": float(n_files),
        "repomap_tokens": float(m.tokens),
        "repomap_cold_build_s": t_cold,
        "repomap_build_no_cache_s": t_nocache,
        "repomap_warm_tags_build_s": t_warm,
        "repomap_cached_lookup_git_s": t_cached,
        "repomap_cached_lookup_fs_s": t_cached_fs,
        "repomap_cold_over_cached_ratio": t_cold / t_cached,
        "repomap_cold_over_warm_tags_ratio": t_cold / t_warm,
    }


def bench_memory(work: Path, n_sessions: int = 10_000, n_queries: int = 200) -> dict[str, float]:
    events = session_events(n_sessions, seed=5)
    t0 = time.perf_counter()
    memory = SessionMemory.rebuild(events)
    t_fold = time.perf_counter() - t0
    t_index = _timed(lambda: memory.query("warm up", 1))  # embeds and indexes in one batch
    queries = [
        ev.instruction
        for _, ev in events[:: max(1, len(events) // n_queries)]
        if hasattr(ev, "instruction")
    ]
    queries = (queries * (n_queries // max(1, len(queries)) + 1))[:n_queries]
    lat = [_timed(lambda q=q: memory.query(q, 5)) for q in queries]
    lat_ok = [_timed(lambda q=q: memory.query(q, 5, only_successful=True)) for q in queries]

    # Baseline: the same exact search with numpy (matrix-vector product and a full sort).
    vecs = memory.embedder.embed([r.instruction for r in memory.records])
    ids = np.array([r.session_id for r in memory.records])

    def brute(q: str) -> list[str]:
        s = vecs @ memory.embedder.embed([q])[0]
        order = np.lexsort((ids, -np.round(s, 6)))[:5]
        return list(ids[order])

    lat_np = [_timed(lambda q=q: brute(q)) for q in queries]
    assert brute(queries[0]) == [h.session_id for h in memory.query(queries[0], 5)]

    t_save = _timed(lambda: memory.save(work / "memory"))
    t_load = _timed(lambda: SessionMemory.load(work / "memory"))
    return {
        "memory_sessions": float(len(memory)),
        "memory_fold_events_s": t_fold,
        "memory_embed_and_index_s": t_index,
        "memory_build_total_s": t_fold + t_index,
        "memory_query_p50_ms": 1000 * statistics.median(lat),
        "memory_query_p95_ms": 1000 * float(np.percentile(lat, 95)),
        "memory_query_successful_p50_ms": 1000 * statistics.median(lat_ok),
        "memory_query_numpy_baseline_p50_ms": 1000 * statistics.median(lat_np),
        "memory_query_numpy_over_faiss_ratio": statistics.median(lat_np) / statistics.median(lat),
        "memory_save_s": t_save,
        "memory_load_s": t_load,
    }


def run(n_files: int = 1000, n_sessions: int = 10_000) -> dict[str, float]:
    configure(level="WARNING")
    with tempfile.TemporaryDirectory(prefix="oopav-bench-context-") as tmp:
        work = Path(tmp)
        (work / "map").mkdir()
        (work / "mem").mkdir()
        out = bench_repomap(work / "map", n_files)
        out.update(bench_memory(work / "mem", n_sessions))
    return out


FIGURES = [
    Figure("repomap_files", "repo map: files", "", fmt=",.0f"),
    Figure("repomap_cold_build_s", "repo map: cold build", "s", fmt=".3f"),
    Figure("repomap_build_no_cache_s", "repo map: build without cache", "s", fmt=".3f"),
    Figure("repomap_warm_tags_build_s", "repo map: other mentions, tags cached", "s", fmt=".3f"),
    Figure("repomap_cached_lookup_git_ms", "repo map: cached lookup, clean git", "ms"),
    Figure("repomap_cached_lookup_fs_ms", "repo map: cached lookup, plain directory", "ms"),
    Figure("repomap_cold_over_cached_ratio", "repo map: cold build / cached lookup", "x"),
    Figure(
        "repomap_tokens", "repo map: size (budget 2,048)", "tok", 2048, higher=False, fmt=",.0f"
    ),
    Figure("memory_sessions", "memory: sessions", "", fmt=",.0f"),
    Figure("memory_fold_events_s", "memory: fold the events", "s", fmt=".3f"),
    Figure("memory_embed_and_index_s", "memory: embed and index", "s", fmt=".3f"),
    Figure("memory_query_p50_ms", "memory: query k=5, p50", "ms"),
    Figure("memory_query_p95_ms", "memory: query k=5, p95", "ms"),
    Figure("memory_query_numpy_baseline_p50_ms", "numpy brute force, same query, p50", "ms"),
    Figure("memory_query_numpy_over_faiss_ratio", "faiss vs numpy brute force", "x", 1.0),
    Figure("memory_save_s", "memory: save", "s", fmt=".3f"),
    Figure("memory_load_s", "memory: load", "s", fmt=".3f"),
]


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000, help="files in the generated repository")
    ap.add_argument("--sessions", type=int, default=10_000, help="finished sessions in memory")
    args = ap.parse_args()
    if args.quick:
        args.files, args.sessions = 100, 500
    runs = runs_of(args)

    def measure(_: int) -> dict[str, float]:
        out = run(args.files, args.sessions)
        out["repomap_cached_lookup_git_ms"] = out["repomap_cached_lookup_git_s"] * 1000
        out["repomap_cached_lookup_fs_ms"] = out["repomap_cached_lookup_fs_s"] * 1000
        return out

    print(f"context: repo map of {args.files:,} files, memory of {args.sessions:,} sessions")
    conclude(report("context", FIGURES, repeat(measure, runs, label="context run")))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
