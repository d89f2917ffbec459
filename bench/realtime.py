"""Time to a verified change on real projects (issue 28 §5), beside running the tests by hand.

    pip download --no-deps --no-binary :all: itsdangerous==2.2.0 idna==3.20 markupsafe==3.0.4
    (untar them)
    uv venv /tmp/projenv && uv pip install --python /tmp/projenv/bin/python pytest freezegun
    python bench/realtime.py --env /tmp/projenv/bin/python itsdangerous-2.2.0 idna-3.20 markupsafe-3.0.4

Each argument is an unpacked source distribution (fetched code is never committed); the
project's tests run in ``--env``, a Python with pytest (the project's environment, never
oopav's). For each project, in one run, with a fresh data directory (empty caches):

1. **by hand, before**: the project's test command, run directly (``subprocess``, the
   package on ``PYTHONPATH``), wall time;
2. **session 1, a competent change** (a scripted model proposes one search/replace that keeps
   the tests green): oopav's wall time from submit to ``session_completed``; the share of it
   spent in test runs; its overhead against what a person running the tests by hand before
   and after the change would spend (``wall - 2 x hand``, in % of ``2 x hand``);
3. **session 2, a breaking change on the same commit** (the baseline is reused): its wall time
   against session 1's, and the time to catch the break — from the change being applied to
   the tests gate failing — against the whole suite by hand (affected tests first);
4. **by hand, after**: the test command again (and once between the two sessions); "hand" is
   the median of the three hand runs.

``--runs N`` repeats the whole for each project; the verdicts are the medians of the runs. The
load average is printed with every run: the machine may be shared.

Targets: overhead ≤ 10% of the hand-run test time; the second session ≤ 0.6x the first; the
break caught in ≤ 0.5x the full-suite time where affected tests exist (fewer test files than
the whole suite; otherwise "n/a: every test file is affected").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Project:
    package: str
    path: str  # the file both changes edit
    search: str
    competent: str
    breaking: str
    test_command: tuple[str, ...]
    note: str


PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
PROJECTS = {
    "itsdangerous": Project(
        "itsdangerous",
        "src/itsdangerous/timed.py",
        "        return int(time.time())\n",
        "        now = time.time()\n        return int(now)\n",
        "        return int(time.time()) - 10_000_000\n",
        (*PYTEST, "tests"),
        "TimestampSigner.get_timestamp",
    ),
    "idna": Project(
        "idna",
        "idna/cli.py",
        '    prefix = _alabel_prefix.decode("ascii")\n',
        '    prefix = _alabel_prefix.decode("ascii")  # the ACE prefix, "xn--"\n',
        '    prefix = _alabel_prefix.decode("ascii").upper()\n',
        # The property/fuzz tests need hypothesis and atheris; the rest is the suite.
        (
            *PYTEST,
            "tests",
            "--ignore=tests/test_idna_properties.py",
            "--ignore=tests/test_idna_fuzz_targets.py",
        ),
        "cli._looks_like_alabel",
    ),
    "markupsafe": Project(
        "markupsafe",
        "src/markupsafe/_native.py",
        '        .replace("\'", "&#39;")\n',
        '        .replace("\'", "&#39;")  # HTML 4 has no &apos;\n',
        '        .replace("\'", "&#40;")\n',
        (*PYTEST, "tests"),
        "_native._escape_inner",
    ),
}


def which(src: Path) -> Project:
    for name, project in PROJECTS.items():
        if src.name.lower().startswith(name):
            return project
    raise SystemExit(f"{src}: not one of the known projects ({', '.join(PROJECTS)})")


def prepare(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@e.invalid", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return dest


def by_hand(repo: Path, project: Project, python: str) -> float:
    """The test command as a person runs it: the package on PYTHONPATH, the project's env."""
    argv = [python if a == "python" else a for a in project.test_command]
    src = "src" if (repo / "src").is_dir() else "."
    env = {**os.environ, "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    t, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t
    HAND_CPU.append(children_cpu() - cpu)
    if proc.returncode != 0:
        raise SystemExit(f"{repo.name}: the tests fail by hand:\n{proc.stdout[-2000:]}")
    return took


# CPU seconds (user + sys): what the machine's load cannot inflate. The hand runs' CPU, and
# per session the bench process's own (every handler runs in it).
HAND_CPU: list[float] = []


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def script(project: Project, replace: str) -> dict[str, list[str]]:
    from oopav.models.prompt import render_answer

    plan = render_answer(
        "plan",
        {
            "steps": [
                {"id": 1, "description": f"edit {project.note}", "files": [project.path]},
                {"id": 2, "description": "run the tests", "files": []},
            ],
            "files": [project.path],
            "test_decision": "required",
            "rationale": "one edit",
        },
        state_update={},
    )
    edit = render_answer(
        "action",
        {
            "type": "search_replace",
            "edits": [{"path": project.path, "search": project.search, "replace": replace}],
        },
        state_update={},
    )
    done = render_answer("action", {"type": "finish", "summary": "edited"}, state_update={})
    return {"planner": [plan], "actor": [edit, done]}


async def session(
    bus: Any, root: Path, repo: Path, project: Project, replace: str, python: str
) -> dict[str, Any]:
    from oopav.services import submit_task, wait_session

    script_file = root / f"script-{uuid.uuid4().hex[:8]}.yaml"
    script_file.write_text(yaml.safe_dump(script(project, replace)))
    body = {
        "instruction": f"Edit {project.note} in {project.path} ({uuid.uuid4().hex[:8]}).",
        "repo": str(repo),
        "model": f"scripted:{script_file}",
        "test_command": list(project.test_command),
        "environment": {"python": python},
        "budgets": {"bounces": 0},
        # The comparison is with the test command by hand: no type check (mypy is configured
        # by some projects but not in their test env; the compile gate would fail on it).
        "policy": {"lint": False, "tests_per_action": False, "compile_command": ["true"]},
    }
    t, cpu_own = time.perf_counter(), own_cpu()
    reply = await submit_task(bus, body, timeout=120)
    if "session_id" not in reply:
        raise SystemExit(f"refused: {reply}")
    sid = reply["session_id"]
    state = await wait_session(bus, sid, 1800)
    wall = time.perf_counter() - t
    cpu_own = own_cpu() - cpu_own
    events = [e for _, e in await bus.events.read("session", sid)]
    tests_ms = sum(
        r.duration_ms
        for e in events
        for r in (getattr(e, "execs", None) or [])
        if "tests" in r.purpose and r.reused_from is None and e.type != "baseline_reused"
    )
    reused = any(e.type == "baseline_reused" for e in events)
    if reused:  # the baseline's execs are the earlier session's: not run here
        tests_ms -= sum(
            r.duration_ms
            for e in events
            if e.type == "observation_recorded" and e.phase == "baseline"
            for r in e.execs
            if "tests" in r.purpose
        )
    applied = next((e for e in events if e.type == "action_applied"), None)
    gate = next((e for e in events if e.type == "gate_evaluated" and e.gate == "tests"), None)
    catch = (gate.ts - applied.ts).total_seconds() if gate and applied else float("nan")
    if os.environ.get("REALTIME_TIMELINE"):
        t0 = events[0].ts
        for e in events:
            runs = [(r.purpose, round(r.duration_ms)) for r in (getattr(e, "execs", None) or [])]
            print(f"  {(e.ts - t0).total_seconds():7.2f} {e.type:24} {runs}")
    return {
        "summary": f"{state.summary} [{', '.join(e.type for e in events)}]",
        "outcome": state.outcome,
        "wall": wall,
        "cpu_own": cpu_own,
        "tests_s": tests_ms / 1000,
        "reused": reused,
        "catch": catch,
        "gate_passed": bool(gate and gate.passed),
        "stages": [r.purpose for r in (gate.execs if gate else [])],
        "evidence": gate.evidence if gate else "",
    }


async def one_project(src: Path, python: str) -> dict[str, Any]:
    from oopav.app import open_bus
    from oopav.bus.server import EmbeddedServer
    from oopav.config import Settings
    from oopav.context.affected import affected_tests
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers

    project = which(src)
    HAND_CPU.clear()
    root = Path(tempfile.mkdtemp(prefix=f"oopav-realtime-{project.package}-"))
    repo = prepare(src, root / project.package)
    affected = affected_tests(repo, [project.path])
    hand1 = by_hand(repo, project, python)
    server = EmbeddedServer(root / "nats", write_info=False)
    settings = Settings(data_dir=root / "data", nats_url=server.start())
    try:
        async with open_bus(settings, name="bench-realtime") as bus:
            stop, ready = asyncio.Event(), asyncio.Event()
            handlers = asyncio.create_task(
                run_handlers(bus, stop, ports=Ports(settings=settings), ready=ready, signals=False)
            )
            await ready.wait()
            first = await session(bus, root, repo, project, project.competent, python)
            # Once more by hand between the sessions (the workspace is a copy: the repo is
            # untouched): with a busy machine, three hand runs give a steadier median.
            hand_mid = await asyncio.to_thread(by_hand, repo, project, python)
            second = await session(bus, root, repo, project, project.breaking, python)
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 60)
    finally:
        server.stop()
    hand2 = by_hand(repo, project, python)
    shutil.rmtree(root, ignore_errors=True)
    hand = statistics.median([hand1, hand_mid, hand2])
    return {
        "project": src.name,
        "hand1": hand1,
        "hand_mid": hand_mid,
        "hand2": hand2,
        "hand": hand,
        "hand_cpu": statistics.median(HAND_CPU),
        "first": first,
        "second": second,
        "affected": (len(affected.tests), affected.total) if affected else None,
    }


def figures(r: dict[str, Any]) -> dict[str, float]:
    f, s, hand = r["first"], r["second"], r["hand"]
    return {
        "hand": hand,
        "first": f["wall"],
        "in_tests": f["tests_s"] / f["wall"],
        # oopav's own time: the session less its test runs (what the sandbox adds to a run
        # is in the runs; this is the loop, the workspace, the scans, the other gates).
        "own": f["wall"] - f["tests_s"],
        "overhead": (f["wall"] - 2 * hand) / (2 * hand),
        "ratio2": s["wall"] / f["wall"],
        # oopav's own CPU (the bench process runs every handler), against a hand run's: what
        # the load does not inflate. The sandboxed commands' CPU is not in it (bwrap's
        # processes are not all reaped into this process's children).
        "cpu_own": f["cpu_own"],
        "hand_cpu": r["hand_cpu"],
        "catch": s["catch"],
        "catch_ratio": s["catch"] / hand,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("projects", nargs="+", type=Path, help="unpacked sdists")
    ap.add_argument("--env", required=True, help="a Python with pytest (the projects' env)")
    ap.add_argument(
        "--runs", type=int, default=1, help="runs per project; the verdict is the median"
    )
    args = ap.parse_args()
    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    from oopav.logging import configure

    configure("WARNING")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"Python {platform.python_version()}; project env {args.env}"
    )
    verdicts: list[tuple[str, bool | None]] = []
    for src in args.projects:
        runs: list[dict[str, float]] = []
        split = False
        for n in range(args.runs):
            load = os.getloadavg()[0]
            r = asyncio.run(one_project(src.resolve(), args.env))
            f, s, hand = r["first"], r["second"], r["hand"]
            fig = figures(r)
            fig["load"] = (load + os.getloadavg()[0]) / 2
            runs.append(fig)
            aff = r["affected"]
            split = aff is not None and aff[0] * 2 <= aff[1]
            aff_text = f"{aff[0]} of {aff[1]}" if aff else "cannot tell"
            print(f"\n== {r['project']} run {n + 1}/{args.runs} (load {fig['load']:.1f})")
            print(
                f"by hand: {r['hand1']:.1f} s before, {r['hand_mid']:.1f} s between the "
                f"sessions, {r['hand2']:.1f} s after (median {hand:.1f} s)"
            )
            print(
                f"session 1 (competent): {f['outcome']}, {f['wall']:.1f} s; in tests "
                f"{f['tests_s']:.1f} s ({100 * fig['in_tests']:.0f}%); overhead vs 2x hand "
                f"{100 * fig['overhead']:+.0f}%; gate {f['stages']}"
            )
            print(
                f"CPU (user+sys): by hand {r['hand_cpu']:.2f} s a run; oopav's process "
                f"{f['cpu_own']:.2f} s in session 1 ({100 * f['cpu_own'] / (2 * r['hand_cpu']):.0f}%"
                f" of 2x hand), {s['cpu_own']:.2f} s in session 2"
            )
            print(
                f"session 2 (breaking, same commit): {s['outcome']}, {s['wall']:.1f} s "
                f"({fig['ratio2']:.2f}x session 1), baseline reused: {s['reused']}; caught "
                f"{s['catch']:.1f} s after the change ({fig['catch_ratio']:.2f}x the suite by "
                f"hand); gate {s['stages']}; affected test files {aff_text}"
            )
            if f["outcome"] != "success" or s["gate_passed"] or s["outcome"] == "success":
                print(
                    f"!! unexpected outcomes: {f['outcome']}: {f['summary'][:1500]}\n"
                    f"{s['outcome']}: {s['summary'][:1500]}\n{s['evidence'][:800]}"
                )
        med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
        name = src.name
        print(
            f"\n== {name}: median of {len(runs)} (load {min(x['load'] for x in runs):.1f}-"
            f"{max(x['load'] for x in runs):.1f}): hand {med['hand']:.1f} s, session 1 "
            f"{med['first']:.1f} s ({100 * med['in_tests']:.0f}% in tests, {med['own']:.1f} s "
            f"outside them), overhead "
            f"{100 * med['overhead']:+.0f}% (oopav's process {med['cpu_own']:.2f} s CPU, a hand "
            f"run {med['hand_cpu']:.2f} s), session 2 {med['ratio2']:.2f}x, caught "
            f"{med['catch']:.1f} s ({med['catch_ratio']:.2f}x the suite by hand)"
        )
        verdicts += [
            (f"{name} overhead <= 10% of hand-run test time", med["overhead"] <= 0.10),
            (f"{name} second session <= 0.6x the first", med["ratio2"] <= 0.6),
            (
                f"{name} break caught <= 0.5x the full suite",
                (med["catch_ratio"] <= 0.5) if split else None,
            ),
        ]
    print()
    for label, ok in verdicts:
        print(
            f"target {label}: {'n/a (every test file affected)' if ok is None else 'PASS' if ok else 'MISS'}"
        )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
