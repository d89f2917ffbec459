"""The real-project matrix (issue 24): real packages set up the ways users set them up, and the
loop judged on whether it is trustworthy there — no false failures, no breaking change passed,
every session replayable, every incomplete rename reported.

    python bench/realprojects.py --tomli-repo DIR [--cache DIR] [--only itsdangerous,idna] [--json]

Projects (PyPI sdists downloaded once with ``pip download`` into ``--cache``, unpacked and
committed to a fresh git repository in a temporary directory; tomli's sdist has no tests, so
it comes from a checkout of its repository given as ``--tomli-repo``, a fetched dir that is
never committed here):

- itsdangerous 2.2.0: its own ``.venv`` holding only the package, pytest and freezegun (no
  mypy, no ruff, though pyproject configures both), and ruff with ``fix = true``;
- markupsafe 2.1.5: a C extension that is not built in the workspace (its tests are skipped
  before and after), own ``.venv`` with pytest only;
- tomli (its repository): src layout, mypy configured, no venv at all: oopav builds one with
  uv (``environment: {build: uv}``);
- idna 3.10: own ``.venv`` with pytest; ruff configured;
- six 1.17.0: one module and a setup.py, no venv: built with uv.

Per project, three sessions through the whole loop (embedded NATS, every handler in this
process, the real bwrap sandbox, the project's own test command, tests after every action),
a competent model's answers scripted:

- a rename (an ast-grep identifier rule over the repository: it changes Python code, not C,
  docs or strings, so where the old name lives on elsewhere the residuals gate must say so);
- a call-pattern change (an ast-grep pattern rule adding an argument equal to its default);
- a breaking change (the definition renamed, its users not), which must end ``failed``.

itsdangerous sets ``policy.format`` to the project's own fixer and formatter (ruff with
``fix = true`` and ruff-format in its pre-commit): they run as a recorded action when the actor
finishes, before the tests and the (read-only) lint gate.

Reported per project and in total: competent changes that succeeded; breaking changes caught;
false failures (a gate failed on a competent change: the change is good, so any failing gate
is false); incomplete renames and how many were reported; ``replay --verify`` over every
session; oopav's own overhead per session (wall time minus the time the project's own
commands ran in that session: tests, type check, doc tests, lint; a reused baseline or a
verdict reused from an identical run is not a command run, so it is not subtracted).
Targets: 0 false failures, 0 breaking changes passed, 100 % replay verify, every incomplete
rename reported.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.models.prompt import render_answer

PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
# The project's own commands: their time is the project's, the rest is oopav's overhead.
PROJECT_PURPOSES = (
    "baseline_tests",
    "action_tests",
    "gate_tests",
    "gate_compile",
    "gate_compile_base",
    "gate_doctest",
    "gate_doctest_base",
    "gate_lint",
    "gate_lint_base",
)


@dataclass
class Change:
    kind: str  # rename | call | break
    expect: str  # success | failed
    old: str = ""
    new: str = ""
    pattern: str = ""
    fix: str = ""
    path: str = ""  # break: the file whose definition line is renamed
    search: str = ""
    paths: list[str] = field(default_factory=lambda: ["."])
    # A competent rename also fixes what the identifier rule cannot reach and a gate checks
    # (a doc test naming the old function): (path, search, replace) edits, one more action.
    also: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.kind == "call":
            return f"call: {self.pattern} → {self.fix}"
        if self.kind == "break":
            return f"break: rename the definition {self.old} only"
        return f"rename {self.old} → {self.new}"


@dataclass
class Project:
    name: str
    source: str  # pip requirement of the sdist, or "repo:<option>" for a checkout
    dirname: str
    setup: str  # venv | uv
    packages: list[str]
    install_self: bool
    changes: list[Change]
    what: str
    policy: dict[str, Any] = field(default_factory=dict)


def rename(old: str, new: str, def_path: str, def_line: str) -> list[Change]:
    """The rename and its breaking twin (the definition line only)."""
    return [
        Change("rename", "success", old=old, new=new),
        Change(
            "break",
            "failed",
            old=old,
            new=new,
            path=def_path,
            search=def_line,
        ),
    ]


PROJECTS = [
    Project(
        "itsdangerous",
        "itsdangerous==2.2.0",
        "itsdangerous-2.2.0",
        "venv",
        ["pytest", "freezegun"],
        True,
        [
            *rename("want_bytes", "as_bytes", "src/itsdangerous/encoding.py", "def want_bytes(\n")[
                :1
            ],
            Change(
                "call",
                "success",
                pattern="want_bytes($A)",
                fix='want_bytes($A, encoding="utf-8")',
            ),
            *rename("want_bytes", "as_bytes", "src/itsdangerous/encoding.py", "def want_bytes(\n")[
                1:
            ],
        ],
        "own .venv (package, pytest, freezegun; mypy and ruff configured, not installed); "
        "ruff fix = true",
        # The project fixes and formats with ruff (fix = true, pre-commit's ruff-format): as
        # a recorded action before the tests, never by the lint gate.
        {"format": ["sh", "-c", "ruff check --fix-only --quiet . ; ruff format --quiet ."]},
    ),
    Project(
        "markupsafe",
        "markupsafe==2.1.5",
        "MarkupSafe-2.1.5",
        "venv",
        ["pytest"],
        False,
        [
            Change(
                "rename",
                "success",
                old="soft_str",
                new="soft_text",
                also=[
                    (
                        "src/markupsafe/_native.py",
                        "    >>> escape(soft_str(value))\n",
                        "    >>> escape(soft_text(value))\n",
                    )
                ],
            ),
            Change("call", "success", pattern="Markup($A)", fix="Markup($A, encoding=None)"),
            *rename(
                "soft_str",
                "soft_text",
                "src/markupsafe/_native.py",
                "def soft_str(s: t.Any) -> str:\n",
            )[1:],
        ],
        "C extension not built in the workspace; own .venv with pytest only",
    ),
    Project(
        "tomli",
        "repo:tomli_repo",
        "tomli",
        "uv",
        ["pytest"],
        False,
        [
            *rename(
                "skip_comment",
                "skip_comment_line",
                "src/tomli/_parser.py",
                "def skip_comment(src: str, pos: Pos) -> Pos:\n",
            )[:1],
            Change(
                "call",
                "success",
                pattern="tomllib.loads($S)",
                fix="tomllib.loads($S, parse_float=float)",
            ),
            *rename(
                "skip_comment",
                "skip_comment_line",
                "src/tomli/_parser.py",
                "def skip_comment(src: str, pos: Pos) -> Pos:\n",
            )[1:],
        ],
        "its repository; src layout, mypy configured; no venv (built with uv)",
    ),
    Project(
        "idna",
        "idna==3.10",
        "idna-3.10",
        "venv",
        ["pytest"],
        False,
        [
            # Its __all__ names the function in a string the identifier rule cannot reach (the
            # lint gate's F401 caught that in a first run): a competent rename edits it too.
            Change(
                "rename",
                "success",
                old="check_bidi",
                new="check_bidi_rules",
                also=[("idna/__init__.py", '    "check_bidi",\n', '    "check_bidi_rules",\n')],
            ),
            Change(
                "call",
                "success",
                pattern="valid_contexto($L, $P)",
                fix="valid_contexto($L, $P, exception=False)",
            ),
            *rename(
                "check_bidi",
                "check_bidi_rules",
                "idna/core.py",
                "def check_bidi(label: str, check_ltr: bool = False) -> bool:\n",
            )[1:],
        ],
        "own .venv with pytest; ruff configured",
    ),
    Project(
        "six",
        "six==1.17.0",
        "six-1.17.0",
        "uv",
        ["pytest"],
        False,
        [
            *rename(
                "ensure_text",
                "ensure_unicode_text",
                "six.py",
                "def ensure_text(s, encoding='utf-8', errors='strict'):\n",
            )[:1],
            Change(
                "call",
                "success",
                pattern="six.ensure_str($S)",
                fix='six.ensure_str($S, encoding="utf-8")',
            ),
            # six's tests never collect test_ensure_text (its class is not a test class), so
            # the breaking change renames what they do exercise.
            *rename("add_metaclass", "with_meta", "six.py", "def add_metaclass(metaclass):\n")[1:],
        ],
        "one module, setup.py, no venv (built with uv)",
    ),
]


# -- setting the projects up as users do ------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def sdist(requirement: str, cache: Path) -> Path:
    """The sdist, downloaded once with pip (the package index is the only network use)."""
    name, version = requirement.split("==")
    cache.mkdir(parents=True, exist_ok=True)
    for pattern in (f"{name}-{version}.tar.gz", f"{name.capitalize()}-{version}.tar.gz"):
        found = sorted(cache.glob(pattern), key=str)
        if found:
            return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary"]
    cmd += [":all:", requirement, "-d", str(cache)]
    subprocess.run(cmd, check=True, timeout=300, capture_output=True)
    found = [p for p in cache.glob("*.tar.gz") if p.name.lower() == f"{name}-{version}.tar.gz"]
    return found[0]


def unpack(project: Project, args: argparse.Namespace, dest: Path) -> Path:
    """The project's files in a fresh git repository (one commit), ``.venv`` ignored."""
    repo = dest / project.dirname
    if project.source.startswith("repo:"):
        src = getattr(args, project.source.removeprefix("repo:"))
        if src is None:
            raise SystemExit(f"{project.name}: pass --{project.source[5:].replace('_', '-')}")
        src = Path(src)
        if (src / "HEAD").is_file() and (src / "objects").is_dir():
            # A bare mirror (what the fetch tool gives): its HEAD's tree, not its git files.
            repo.mkdir(parents=True)
            archive = subprocess.run(
                ["git", "--git-dir", str(src), "archive", "HEAD"], capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(repo)], input=archive, check=True)
        elif not (src / "pyproject.toml").is_file() and not (src / "setup.py").is_file():
            raise SystemExit(f"{project.name}: {src} is neither a checkout nor a bare git mirror")
        else:
            shutil.copytree(
                src, repo, ignore=shutil.ignore_patterns(".git", "__pycache__", ".venv")
            )
    else:
        with tarfile.open(sdist(project.source, args.cache)) as tf:
            tf.extractall(dest, filter="data")
    ignore = repo / ".gitignore"
    ignore.write_text((ignore.read_text() if ignore.exists() else "") + "\n.venv/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=b@x.invalid", "commit", "-qm", "sdist")
    return repo


def uv() -> str:
    return shutil.which("uv") or str(Path(sys.executable).with_name("uv"))


def make_venv(project: Project, repo: Path) -> None:
    """The project's own ``.venv``: only the test requirements (and the package itself when
    the user would install it), nothing of oopav's, no type checker, no linter."""
    from oopav.sandbox.environment import host_interpreter

    venv = repo / ".venv"
    subprocess.run(
        [uv(), "venv", "-q", "--python", str(host_interpreter()), str(venv)],
        check=True,
        capture_output=True,
    )
    py = str(venv / "bin" / "python")
    subprocess.run(
        [uv(), "pip", "install", "-q", "--python", py, *project.packages],
        check=True,
        capture_output=True,
    )
    if project.install_self:
        subprocess.run(
            [uv(), "pip", "install", "-q", "--no-deps", "--python", py, str(repo)],
            check=True,
            capture_output=True,
        )


def environment(project: Project) -> dict[str, Any] | None:
    if project.setup == "uv":
        return {"build": "uv", "packages": project.packages}
    return None  # the repository's own .venv, found by oopav


# -- the competent model's answers -------------------------------------------------------------


def script(change: Change, files: list[str]) -> dict[str, list[str]]:
    if change.kind == "rename":
        rule = (
            f"id: rename\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^{change.old}$\n"
            f"fix: {change.new}\n"
        )
        act: dict[str, Any] = {"type": "ast_grep", "rule": rule, "paths": change.paths}
        what = f"Rename {change.old} to {change.new} with one ast-grep rule"
    elif change.kind == "call":
        rule = (
            f"id: call\nlanguage: python\nrule:\n  pattern: {json.dumps(change.pattern)}\n"
            f"fix: {json.dumps(change.fix)}\n"
        )
        act = {"type": "ast_grep", "rule": rule, "paths": change.paths}
        what = f"Rewrite the calls {change.pattern} as {change.fix}"
    else:
        act = {
            "type": "search_replace",
            "edits": [
                {
                    "path": change.path,
                    "search": change.search,
                    "replace": change.search.replace(change.old, change.new, 1),
                }
            ],
        }
        what = f"Rename the definition {change.old} to {change.new}"
    steps = [{"id": 1, "description": what, "files": files}]
    actions = [act]
    if change.also:
        steps.append(
            {
                "id": 2,
                "description": "Update what names it in strings (doc tests, __all__)",
                "files": files,
            }
        )
        edits = [{"path": p, "search": s, "replace": r} for p, s, r in change.also]
        actions.append({"type": "search_replace", "edits": edits})
    steps.append({"id": len(steps) + 1, "description": "Run the tests", "files": []})
    plan = render_answer(
        "plan",
        {
            "steps": steps,
            "files": files,
            "test_decision": "required",
            "rationale": "one structural change, then the project's own tests",
        },
        think="a mechanical change",
        state_update={"goals": [what]},
    )
    answers = [
        render_answer("action", a, think="one change", state_update={"history": "done"})
        for a in actions
    ]
    done = render_answer(
        "action",
        {"type": "finish", "summary": what},
        think="done",
        state_update={"history": "finished"},
    )
    return {"planner": [plan], "actor": [*answers, done]}


def files_naming(repo: Path, word: str) -> list[str]:
    """Tracked Python files that name ``word`` (the plan's manifest)."""
    out = git(repo, "grep", "-l", "-w", word, "--", "*.py")
    return [line for line in out.splitlines() if line]


def left_elsewhere(repo: Path, word: str) -> list[str]:
    """Tracked files other than Python sources that name ``word``: where an identifier rule
    cannot reach, so a rename is incomplete and must be reported."""
    proc = subprocess.run(
        ["git", "grep", "-l", "-w", word], cwd=repo, capture_output=True, text=True, check=False
    )
    return [f for f in proc.stdout.splitlines() if f and not f.endswith(".py")]


# -- running and measuring ------------------------------------------------------------------------


async def run_project(project: Project, repo: Path, data: Path) -> list[dict[str, Any]]:
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.models.scripted import ScriptedBackend
    from oopav.replay import verify_session
    from oopav.services import run_handlers, submit_task, wait_session

    settings = Settings(data_dir=data)
    scripts = {}
    for i, c in enumerate(project.changes):
        word = c.old or c.pattern.split("(")[0].split(".")[-1]
        scripts[f"scripted:{project.name}-{i}"] = script(c, files_naming(repo, word)[:20])
    ports = Ports(settings=settings, model_factory=lambda spec: ScriptedBackend(scripts[spec]))
    rows = []
    async with open_bus(settings, embedded=True, name="bench-realprojects") as bus:
        stop = asyncio.Event()
        ready = asyncio.Event()
        runner = asyncio.create_task(run_handlers(bus, stop, ports=ports, ready=ready))
        await asyncio.wait_for(ready.wait(), 120)
        sids = []
        try:
            for i, change in enumerate(project.changes):
                body: dict[str, Any] = {
                    "instruction": change.name,
                    "repo": str(repo),
                    "test_command": PYTEST,
                    "model": f"scripted:{project.name}-{i}",
                    "budgets": {"bounces": 0, "wall_seconds_per_phase": 900},
                    # Tests after every action for the good changes; a breaking change is left
                    # to the gates, which must end it `failed` (no bounce).
                    "policy": {"tests_per_action": change.expect == "success", **project.policy},
                }
                env = environment(project)
                if env is not None:
                    body["environment"] = env
                t0 = time.monotonic()
                reply = await submit_task(bus, body)
                sid = reply["session_id"]
                state = await wait_session(bus, sid, 1800)
                wall = time.monotonic() - t0
                events = [e for _, e in await bus.events.read("session", sid)]
                rows.append(measure(project, change, repo, state, events, wall))
                sids.append(sid)
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(runner, 60)
        for row, sid in zip(rows, sids, strict=True):
            t0 = time.monotonic()
            report = await verify_session(bus.url, sid, idle_timeout=60, total_timeout=900)
            row["replay_ok"] = report.ok
            row["replay_s"] = round(time.monotonic() - t0, 2)
            if not report.ok:
                row["replay"] = report.describe()[:300]
    return rows


def ran_here_ms(events: list[Any], purposes: tuple[str, ...]) -> float:
    """The time of the project's commands this session ran itself, each once: not the records
    it reused (issue 28), whose durations are another run's — an observation that follows
    ``baseline_reused`` carries the earlier session's baseline execs, and a record with
    ``reused_from`` was served from an identical run. Counting those made the overhead
    (wall time less this) negative."""
    seen: set[str] = set()
    total = 0.0
    reused_baseline = False
    for e in events:
        if e.type == "baseline_reused":
            reused_baseline = True
            continue
        execs = getattr(e, "execs", None) or []
        if reused_baseline and e.type == "observation_recorded" and e.phase == "baseline":
            reused_baseline = False  # this observation is the reuse: its execs ran elsewhere
            continue
        for rec in execs:
            if rec.purpose in purposes and rec.reused_from is None and rec.key not in seen:
                seen.add(rec.key)
                total += rec.duration_ms
    return total


def measure(
    project: Project, change: Change, repo: Path, state: Any, events: list[Any], wall: float
) -> dict[str, Any]:
    own_ms = ran_here_ms(events, PROJECT_PURPOSES)
    gates = [e for e in events if e.type == "gate_evaluated"]
    failed_gates = [g for g in gates if not g.passed]
    competent = change.expect == "success"
    residual = next((g for g in gates if g.gate == "residuals"), None)
    elsewhere = left_elsewhere(repo, change.old) if change.kind == "rename" else []
    reported = bool(residual is not None and "still appears" in residual.evidence)
    return {
        "project": project.name,
        "change": change.name,
        "kind": change.kind,
        "expect": change.expect,
        "outcome": state.outcome,
        "ok": state.outcome == change.expect,
        # The change is good: any gate failing on it is a false failure.
        "false_failures": [f"{g.gate}: {g.evidence[:400]!r}" for g in failed_gates]
        if competent
        else [],
        "breaking_passed": change.expect == "failed" and state.outcome == "success",
        "incomplete_rename": bool(elsewhere),
        "left_in": elsewhere[:6],
        "residuals_reported": reported,
        "skipped_gates": [
            f"{g.gate}: {g.evidence.splitlines()[0][:120]}"
            for g in gates
            if g.skipped and g.evidence.startswith(("skipped:", "error:"))
        ],
        "wall_s": round(wall, 2),
        "project_s": round(own_ms / 1000, 2),
        "overhead_s": round(wall - own_ms / 1000, 2),
        "summary": state.summary[:300],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/oopav/bench-sdists")
    ap.add_argument(
        "--tomli-repo",
        type=Path,
        help="a checkout of github.com/hukkin/tomli, or its bare git mirror",
    )
    ap.add_argument("--only", default="", help="comma-separated project names")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from oopav.logging import configure

    configure(os.environ.get("OOPAV_LOG_LEVEL", "WARNING"))
    chosen = [p for p in PROJECTS if not args.only or p.name in args.only.split(",")]
    if args.tomli_repo is None:
        print("note: no --tomli-repo: tomli is left out of the matrix", file=sys.stderr)
        chosen = [p for p in chosen if p.name != "tomli"]
    rows: list[dict[str, Any]] = []
    setup_s: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="oopav-realprojects-") as tmp:
        data = Path(tmp) / "data"
        for project in chosen:
            t0 = time.monotonic()
            repo = unpack(project, args, Path(tmp))
            if project.setup == "venv":
                make_venv(project, repo)
            else:
                from oopav.sandbox.environment import resolve

                resolve(environment(project), repo, cache_root=data / "envs")  # type: ignore[arg-type]
            setup_s[project.name] = round(time.monotonic() - t0, 2)
            rows += asyncio.run(run_project(project, repo, data))
    report(rows, setup_s, args.json)


def report(rows: list[dict[str, Any]], setup_s: dict[str, float], as_json: bool) -> None:
    def totals(rs: list[dict[str, Any]]) -> dict[str, Any]:
        competent = [r for r in rs if r["expect"] == "success"]
        breaking = [r for r in rs if r["expect"] == "failed"]
        incomplete = [r for r in rs if r["incomplete_rename"]]
        return {
            "competent_succeeded": f"{sum(r['ok'] for r in competent)}/{len(competent)}",
            "breaking_caught": f"{sum(r['ok'] for r in breaking)}/{len(breaking)}",
            "breaking_passed": sum(r["breaking_passed"] for r in rs),
            "false_failures": sum(len(r["false_failures"]) for r in rs),
            "incomplete_renames_reported": f"{sum(r['residuals_reported'] for r in incomplete)}"
            f"/{len(incomplete)}",
            "replay_verify": f"{sum(r.get('replay_ok', False) for r in rs)}/{len(rs)}",
            "overhead_median_s": round(statistics.median(r["overhead_s"] for r in rs), 2)
            if rs
            else 0.0,
            "overhead_max_s": max((r["overhead_s"] for r in rs), default=0.0),
        }

    projects = sorted({r["project"] for r in rows}, key=[r["project"] for r in rows].index)
    per = {p: totals([r for r in rows if r["project"] == p]) for p in projects}
    total = totals(rows)
    host = f"{platform.machine()} {os.cpu_count()} cpu, python {platform.python_version()}"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if as_json:
        print(
            json.dumps(
                {"host": host, "load": load, "setup_s": setup_s, "total": total,
                 "projects": per, "sessions": rows},
                indent=2,
            )
        )  # fmt: skip
        return
    print(f"host: {host}; load {load:.1f}; set-up (s): {setup_s}")
    print(
        f"{'project':13} {'change':52} {'outcome':9} {'ok':3} {'replay':6} {'wall':>6} "
        f"{'project':>7} {'overhead':>8}  notes"
    )
    for r in rows:
        notes = [*r["false_failures"], *r["skipped_gates"]]
        if r["incomplete_rename"]:
            notes.append(
                f"residuals {'reported' if r['residuals_reported'] else 'NOT reported'} "
                f"({', '.join(r['left_in'])})"
            )
        if r.get("replay"):
            notes.append(r["replay"])
        print(
            f"{r['project']:13} {r['change'][:52]:52} {r['outcome'] or '-':9} "
            f"{'yes' if r['ok'] else 'NO':3} {'ok' if r.get('replay_ok') else 'NO':6} "
            f"{r['wall_s']:6.1f} {r['project_s']:7.1f} {r['overhead_s']:8.2f}  " + "; ".join(notes)
        )
    print()
    for p, t in [*per.items(), ("TOTAL", total)]:
        print(f"{p:13} {json.dumps(t)}")

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    n_inc = total["incomplete_renames_reported"].split("/")
    print(
        f"false failures {total['false_failures']} (target 0: {verdict(total['false_failures'] == 0)}); "
        f"breaking passed {total['breaking_passed']} (target 0: "
        f"{verdict(total['breaking_passed'] == 0)}); replay verify {total['replay_verify']} "
        f"(target 100 %: {verdict(len(set(total['replay_verify'].split('/'))) == 1)}); "
        f"incomplete renames reported {total['incomplete_renames_reported']} (target all: "
        f"{verdict(n_inc[0] == n_inc[1])}); competent succeeded {total['competent_succeeded']}; "
        f"overhead per session median {total['overhead_median_s']} s, max "
        f"{total['overhead_max_s']} s (info)"
    )


if __name__ == "__main__":
    main()
