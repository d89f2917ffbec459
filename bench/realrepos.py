"""Real packages as a benchmark (issue 16 §5): refactors of click, attrs and packaging from
their PyPI sdists, in their own environments, with a competent model's answers scripted.

    python bench/realrepos.py [--cache DIR] [--only click,attrs] [--json]

For each package: the sdist is downloaded once with ``pip download`` (cached under
``--cache``, default ``~/.cache/oopav/bench-sdists``), unpacked into a fresh git repository,
and its environment built by oopav itself (``environment: {build: uv}``, the test
dependencies as ``packages``; built before the sessions and timed apart). Then three sessions
run through the whole loop (embedded NATS, every handler in this process, the real bwrap
sandbox, the project's own test command):

- two refactors a competent model would make (ast-grep identifier renames across the source
  and the tests), which must end ``success``;
- one deliberately breaking change (the definition renamed, its importers not), which must end
  ``failed`` (no bounce: the first failing gate ends it).

Reported per session: outcome, wall time, test time (the baseline and gate test runs as the
sandbox measured them), oopav's overhead (wall minus test time), and the largest prompt per
role (tokens, estimated at four bytes a token). Target: every refactor succeeds, every breaking
change is caught, overhead ≤ 3 s per session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.models.prompt import render_answer

TEST_COMMAND = ["python", "-m", "pytest", "-q"]


@dataclass
class Change:
    name: str
    old: str
    new: str
    paths: list[str]
    files: list[str]
    expect: str  # success | failed


@dataclass
class Package:
    name: str
    version: str
    packages: list[str]
    changes: list[Change] = field(default_factory=list)

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


PACKAGES = [
    Package(
        "click",
        "8.1.7",
        ["pytest==8.3.5"],
        [
            Change(
                "rename make_default_short_help",
                "make_default_short_help",
                "make_short_help",
                ["."],
                ["src/click/utils.py", "src/click/core.py", "tests/test_utils.py"],
                "success",
            ),
            Change(
                "rename _join_param_hints",
                "_join_param_hints",
                "_format_param_hints",
                ["src"],
                ["src/click/exceptions.py"],
                "success",
            ),
            Change(
                "break: rename the definition only",
                "make_default_short_help",
                "make_short_help",
                ["src/click/utils.py"],
                ["src/click/utils.py"],
                "failed",
            ),
        ],
    ),
    Package(
        "attrs",
        "24.2.0",
        ["pytest==8.3.5", "hypothesis"],
        [
            Change(
                "rename _split_what",
                "_split_what",
                "_split_filters",
                ["."],
                ["src/attr/filters.py", "tests/test_filters.py"],
                "success",
            ),
            Change(
                "rename _compile_and_eval",
                "_compile_and_eval",
                "_compile_and_exec",
                ["src"],
                ["src/attr/_make.py"],
                "success",
            ),
            Change(
                "break: rename the definition only",
                "_split_what",
                "_split_filters",
                ["src/attr/filters.py"],
                ["src/attr/filters.py"],
                "failed",
            ),
        ],
    ),
    Package(
        "packaging",
        "21.3",
        ["pytest==8.3.5", "pretend"],
        [
            Change(
                "rename _parse_letter_version",
                "_parse_letter_version",
                "_parse_letter",
                ["."],
                ["packaging/version.py"],
                "success",
            ),
            Change(
                "rename _normalize_string",
                "_normalize_string",
                "_normalize_tag_part",
                ["."],
                ["packaging/tags.py"],
                "success",
            ),
            Change(
                "break: rename the definition only",
                "canonicalize_name",
                "canonical_name",
                ["packaging/utils.py"],
                ["packaging/utils.py"],
                "failed",
            ),
        ],
    ),
]


def sdist(pkg: Package, cache: Path) -> Path:
    """The sdist, downloaded once with pip (the package index is the only network use)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{pkg.name}-{pkg.version}.tar.gz"))
    if found:
        return found[0]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{pkg.name}=={pkg.version}",
            "-d",
            str(cache),
        ],
        check=True,
        timeout=300,
    )
    return next(cache.glob(f"{pkg.name}-{pkg.version}.tar.gz"))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def unpack(archive: Path, dest: Path, name: str) -> Path:
    with tarfile.open(archive) as tf:
        tf.extractall(dest, filter="data")
    repo = dest / name
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=b@x.invalid", "commit", "-qm", "sdist")
    return repo


def script(change: Change) -> dict[str, list[str]]:
    rule = (
        f"id: rename\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^{change.old}$\n"
        f"fix: {change.new}\n"
    )
    plan = render_answer(
        "plan",
        {
            "steps": [
                {
                    "id": 1,
                    "description": f"Rename {change.old} to {change.new} with one ast-grep rule",
                    "files": change.files,
                },
                {"id": 2, "description": "Run the tests", "files": []},
            ],
            "files": change.files,
            "test_decision": "required",
            "rationale": "an identifier rename: ast-grep changes code, not strings",
        },
        think=f"{change.old} is defined once and used in {len(change.files)} file(s)",
        state_update={"goals": [f"{change.old} is called {change.new}"]},
    )
    act = render_answer(
        "action",
        {"type": "ast_grep", "rule": rule, "paths": change.paths},
        think="one structural rule",
        state_update={"history": "renamed"},
    )
    done = render_answer(
        "action",
        {"type": "finish", "summary": f"renamed {change.old} to {change.new}"},
        think="done",
        state_update={"history": "finished"},
    )
    return {"planner": [plan], "actor": [act, done]}


async def run_package(pkg: Package, repo: Path, data: Path) -> list[dict[str, Any]]:
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.models.scripted import ScriptedBackend
    from oopav.services import run_handlers, submit_task, wait_session

    settings = Settings(data_dir=data)
    scripts = {f"scripted:{pkg.name}-{i}": script(c) for i, c in enumerate(pkg.changes)}
    ports = Ports(settings=settings, model_factory=lambda spec: ScriptedBackend(scripts[spec]))
    env = {"build": "uv", "packages": pkg.packages}
    rows = []
    async with open_bus(settings, embedded=True, name="bench-realrepos") as bus:
        stop = asyncio.Event()
        ready = asyncio.Event()
        runner = asyncio.create_task(run_handlers(bus, stop, ports=ports, ready=ready))
        await asyncio.wait_for(ready.wait(), 60)
        try:
            for i, change in enumerate(pkg.changes):
                body = {
                    "instruction": f"Rename `{change.old}` to `{change.new}`",
                    "repo": str(repo),
                    "test_command": TEST_COMMAND,
                    "model": f"scripted:{pkg.name}-{i}",
                    "environment": env,
                    "budgets": {"bounces": 0, "wall_seconds_per_phase": 900},
                }
                t0 = time.monotonic()
                reply = await submit_task(bus, body)
                sid = reply["session_id"]
                state = await wait_session(bus, sid, 1200)
                wall = time.monotonic() - t0
                events = [e for _, e in await bus.events.read("session", sid)]
                rows.append(measure(pkg, change, state, events, wall))
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(runner, 30)
    return rows


def measure(pkg: Package, change: Change, state: Any, events: list[Any], wall: float) -> dict:
    test_ms = 0.0
    probe_ms = 0.0
    for e in events:
        for rec in getattr(e, "execs", None) or []:
            if rec.purpose in ("baseline_tests", "gate_tests"):
                test_ms += rec.duration_ms
            elif rec.purpose == "env_probe":
                probe_ms += rec.duration_ms
    prompts: dict[str, int] = {}
    for e in events:
        if e.type == "model_called":
            size = sum(len(m["content"].encode()) for m in e.request["messages"]) // 4
            prompts[e.role] = max(prompts.get(e.role, 0), size)
    gate = next((e for e in events if e.type == "gate_evaluated" and e.gate == "tests"), None)
    return {
        "package": pkg.dirname,
        "change": change.name,
        "expect": change.expect,
        "outcome": state.outcome,
        "ok": state.outcome == change.expect,
        "wall_s": round(wall, 2),
        "test_s": round(test_ms / 1000, 2),
        "probe_s": round(probe_ms / 1000, 2),
        "overhead_s": round(wall - test_ms / 1000, 2),
        "prompt_tokens": prompts,
        "tests_gate": (gate.evidence.split("\n")[0][:160] if gate is not None else state.summary),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/oopav/bench-sdists")
    ap.add_argument("--only", default="", help="comma-separated package names")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from oopav.logging import configure

    configure(os.environ.get("OOPAV_LOG_LEVEL", "WARNING"))
    chosen = [p for p in PACKAGES if not args.only or p.name in args.only.split(",")]
    from oopav.sandbox.environment import resolve

    rows: list[dict[str, Any]] = []
    builds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="oopav-realrepos-") as tmp:
        data = Path(tmp) / "data"
        for pkg in chosen:
            repo = unpack(sdist(pkg, args.cache), Path(tmp), pkg.dirname)
            t0 = time.monotonic()
            resolve(
                {"build": "uv", "packages": pkg.packages}, repo, cache_root=data / "envs"
            )  # built once, apart from the sessions (cached by dependency-file hash)
            builds[pkg.dirname] = round(time.monotonic() - t0, 2)
            rows += asyncio.run(run_package(pkg, repo, data))
    report(rows, builds, args.json)


def report(rows: list[dict[str, Any]], builds: dict[str, float], as_json: bool) -> None:
    refactors = [r for r in rows if r["expect"] == "success"]
    breaks = [r for r in rows if r["expect"] == "failed"]
    summary = {
        "host": f"{platform.machine()} {os.cpu_count()} cpu, python {platform.python_version()}",
        "env_build_s": builds,
        "refactors_succeeded": f"{sum(r['ok'] for r in refactors)}/{len(refactors)}",
        "breaks_caught": f"{sum(r['ok'] for r in breaks)}/{len(breaks)}",
        "max_overhead_s": max((r["overhead_s"] for r in rows), default=0.0),
    }
    if as_json:
        print(json.dumps({"summary": summary, "sessions": rows}, indent=2))
        return
    print(f"host: {summary['host']}; env builds (s): {builds}")
    print(
        f"{'package':16} {'change':38} {'outcome':8} {'ok':3} {'wall':>6} {'tests':>6} "
        f"{'overhead':>8}  prompt tokens (max per role)"
    )
    for r in rows:
        toks = ", ".join(f"{k} {v}" for k, v in sorted(r["prompt_tokens"].items()))
        print(
            f"{r['package']:16} {r['change'][:38]:38} {r['outcome'] or '-':8} "
            f"{'yes' if r['ok'] else 'NO':3} {r['wall_s']:6.1f} {r['test_s']:6.1f} "
            f"{r['overhead_s']:8.2f}  {toks}"
        )
    ok_all = all(r["ok"] for r in rows)
    over = summary["max_overhead_s"]
    print(
        f"refactors succeeded {summary['refactors_succeeded']}, breaking changes caught "
        f"{summary['breaks_caught']} ({'PASS' if ok_all else 'MISS'}); max overhead {over:.2f} s "
        f"(target ≤ 3 s: {'PASS' if over <= 3.0 else 'MISS'})"
    )


if __name__ == "__main__":
    main()
