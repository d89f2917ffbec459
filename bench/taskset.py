"""A benchmark task set beyond renames (issue 30): a rename, a bug fix, adding a test and an API
migration, each built at run time from the project's example repository
(``examples/rename_fetch``), run through the whole loop with the scripted and the synth
policies; per task and policy: success and the number of human interventions.

    python bench/taskset.py [--runs 3] [--quick]

Starts its own embedded nats-server and every handler in this process, with the real sandbox
(bubblewrap) and the example's tests (pytest in this interpreter's environment). The person is
played by the bench: a ``permission_requested`` is granted once, a ``human_input_requested``
is answered with its first option; each is one intervention. Tasks:

- **rename**: ``fetch`` → ``fetch_page`` everywhere (the example task; the baseline row);
- **bugfix**: ``title`` returns the whole ``<h1>`` tag (``match.group(0)``): the tests fail at
  the baseline, the fix makes them pass;
- **add_test**: a test file for ``links``; the policy write-protects ``tests/**``, so writing it
  needs a person's grant (``fs.write``): one intervention by design;
- **migration**: calls pass ``site`` by keyword and ``fetch`` makes it keyword-only.

The scripted policy is a fixed correct plan and actions per task (what a competent model would
answer); synth learns an ast-grep rule from a before/after example and has none for adding a
test. Targets: every scripted task succeeds; interventions as designed (add_test 1, others 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Summary, conclude, parser, runs_of
from oopav.models.prompt import render_answer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "rename_fetch"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
SIG = "def fetch(url: str, site: dict[str, str] | None = None) -> str:"
SIG_KW = "def fetch(url: str, *, site: dict[str, str] | None = None) -> str:"
LINKS_TEST = """from webtool.crawler import links


def test_links_lists_the_targets_in_order() -> None:
    html = '<a href="https://a.test/">A</a> text <a href="/b">B</a>'
    assert links(html) == ["https://a.test/", "/b"]


def test_links_of_a_page_without_links() -> None:
    assert links("<h1>Nothing</h1>") == []
"""
SITE_RULE = """id: site-by-keyword
language: python
rule:
  pattern: fetch($URL, $SITE)
constraints:
  SITE:
    not:
      kind: keyword_argument
fix: fetch($URL, site=$SITE)
"""
RENAME_RULE = (
    "id: rename-fetch\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^fetch$\n"
    "fix: fetch_page\n"
)


def plan(note: str, files: list[str]) -> str:
    return render_answer(
        "plan",
        {
            "steps": [
                {"id": 1, "description": note, "files": files},
                {"id": 2, "description": "Run the tests and check they pass", "files": []},
            ],
            "files": files,
            "test_decision": "required",
            "rationale": note,
        },
        think=note,
        state_update={"goals": [note], "next_focus": note},
    )


def act(action: dict[str, Any], note: str) -> str:
    return render_answer("action", action, think=note, state_update={"history": note})


def finish(summary: str) -> str:
    return act({"type": "finish", "summary": summary}, "finish")


@dataclass
class Task:
    name: str
    instruction: str
    scripted: dict[str, list[str]]
    setup: dict[str, tuple[str, str]] = field(default_factory=dict)  # path: (old, new)
    examples: list[dict[str, str]] = field(default_factory=list)  # for synth; none: no synth
    policy: dict[str, Any] = field(default_factory=dict)
    expected_interventions: int = 0


def tasks() -> list[Task]:
    files = [
        "webtool/client.py",
        "webtool/crawler.py",
        "webtool/report.py",
        "tests/test_webtool.py",
    ]
    example = json.loads((EXAMPLE / "task.json").read_text())
    return [
        Task(
            "rename",
            example["instruction"],
            {
                "planner": [plan("rename fetch to fetch_page with one ast-grep rule", files)],
                "actor": [
                    act({"type": "ast_grep", "rule": RENAME_RULE, "paths": ["."]}, "rename"),
                    finish("renamed fetch to fetch_page"),
                ],
            },
            examples=example["examples"],
        ),
        Task(
            "bugfix",
            "Fix the bug in `title` (webtool/report.py): it returns the whole `<h1>` tag instead "
            "of the heading's text, so test_summary_lists_titles fails.",
            {
                "planner": [plan("return the heading's text: group 1, not group 0", files[2:3])],
                "actor": [
                    act(
                        {
                            "type": "search_replace",
                            "edits": [
                                {
                                    "path": "webtool/report.py",
                                    "search": "match.group(0)",
                                    "replace": "match.group(1)",
                                }
                            ],
                        },
                        "use the captured group",
                    ),
                    finish("title returns the heading's text"),
                ],
            },
            setup={"webtool/report.py": ("match.group(1)", "match.group(0)")},
            examples=[
                {
                    "path": f"webtool/example{i}.py",
                    "before": f"import re\n\n\ndef {fn}(html):\n    {var} = re.search('{pat}', html)\n"
                    f'    return {var}.group(0) if {var} else ""\n',
                    "after": f"import re\n\n\ndef {fn}(html):\n    {var} = re.search('{pat}', html)\n"
                    f'    return {var}.group(1) if {var} else ""\n',
                }
                for i, (fn, var, pat) in enumerate(
                    [("bold", "found", "<b>(.*)</b>"), ("code", "hit", "<code>(.*)</code>")]
                )
            ],
        ),
        Task(
            "add_test",
            "Add a test file tests/test_links.py for `links` in webtool/crawler.py: it returns "
            "the href targets of a page in order, and nothing for a page without links.",
            {
                "planner": [plan("write tests/test_links.py", ["tests/test_links.py"])],
                "actor": [
                    act(
                        {
                            "type": "write_file",
                            "path": "tests/test_links.py",
                            "content": LINKS_TEST,
                        },
                        "the new tests",
                    ),
                    finish("added tests for links"),
                ],
            },
            policy={"write_protected": ["tests/**"]},
            expected_interventions=1,
        ),
        Task(
            "migration",
            "Migrate the calls of `fetch(url, site)` to pass `site` by keyword "
            "(`fetch(url, site=site)`), then make `site` keyword-only in fetch's signature "
            "(webtool/client.py).",
            {
                "planner": [plan("calls by keyword, then a keyword-only signature", files)],
                "actor": [
                    act({"type": "ast_grep", "rule": SITE_RULE, "paths": ["."]}, "calls"),
                    act(
                        {
                            "type": "search_replace",
                            "edits": [
                                {"path": "webtool/client.py", "search": SIG, "replace": SIG_KW}
                            ],
                        },
                        "signature",
                    ),
                    finish("site is keyword-only and passed by keyword"),
                ],
            },
            examples=[
                {
                    "path": f"webtool/example{i}.py",
                    "before": f"from webtool.client import fetch\n\n{lhs} = fetch({url}, {site})\n",
                    "after": f"from webtool.client import fetch\n\n{lhs} = fetch({url}, site={site})\n",
                }
                for i, (lhs, url, site) in enumerate(
                    [("page", "'https://a.test/'", "pages"), ("home", "start", "SITE")]
                )
            ],
        ),
    ]


def build_repo(task: Task, dest: Path) -> Path:
    """The example repository with the task's setup applied, committed."""
    dest.mkdir(parents=True)
    for name in ("webtool", "tests", "pyproject.toml", "README.md"):
        src = EXAMPLE / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    for rel, (old, new) in task.setup.items():
        text = (dest / rel).read_text()
        if old not in text:
            raise SystemExit(f"setup of {task.name}: {old!r} not in {rel}")
        (dest / rel).write_text(text.replace(old, new, 1))

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "base")
    return dest


async def play_the_person(bus: Any, sid: str, seen: set[str]) -> int:
    """Answer what the session asks a person for; the number of answers given now."""
    from oopav.events import catalog as ev
    from oopav.sandbox.capabilities import build_grant
    from oopav.services import publish_answer

    given = 0
    for _, e in await bus.events.read("session", sid):
        if e.id in seen:
            continue
        if isinstance(e, ev.PermissionRequested):
            seen.add(e.id)
            await bus.events.append(build_grant(sid, e.scope, uses=1, granted_by="bench-person"))
            given += 1
        elif isinstance(e, ev.HumanInputRequested):
            seen.add(e.id)
            options = list(e.options or [])
            await publish_answer(bus, sid, options[0] if options else "go on", "bench-person")
            given += 1
    return given


async def one(bus: Any, root: Path, task: Task, policy: str, n: int) -> dict[str, Any]:
    from oopav.services import session_state, submit_task

    repo = build_repo(task, root / f"{task.name}-{policy}-{n}")
    body: dict[str, Any] = {
        "instruction": task.instruction,
        "repo": str(repo),
        "test_command": PYTEST,
        "environment": {"python": sys.executable},
        "budgets": {"bounces": 1},
        "policy": {"lint": False, **task.policy},
    }
    if policy == "scripted":
        script = root / f"{task.name}-{n}.yaml"
        script.write_text(yaml.safe_dump(task.scripted))
        body["model"] = f"scripted:{script}"
    else:
        body["model"] = "synth:"
        body["examples"] = task.examples
    t = time.perf_counter()
    reply = await submit_task(bus, body, timeout=60)
    if "session_id" not in reply:
        raise SystemExit(f"{task.name}/{policy} refused: {reply}")
    sid = str(reply["session_id"])
    seen: set[str] = set()
    interventions = 0
    deadline = time.monotonic() + 600
    while True:
        interventions += await play_the_person(bus, sid, seen)
        state = await session_state(bus, sid)
        if state.phase == "completed":
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{task.name}/{policy}: no end after 600 s (phase {state.phase})")
        await asyncio.sleep(0.2)
    events = [e for _, e in await bus.events.read("session", sid)]
    return {
        "outcome": state.outcome,
        "success": 1.0 if state.outcome == "success" else 0.0,
        "interventions": interventions,
        "model_calls": sum(1 for e in events if e.type == "model_called"),
        "wall_s": time.perf_counter() - t,
        "summary": state.summary,
    }


async def run(runs: int) -> dict[tuple[str, str], list[dict[str, Any]]]:
    from oopav.app import open_bus
    from oopav.bus.server import EmbeddedServer
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers

    root = Path(tempfile.mkdtemp(prefix="oopav-taskset-"))
    server = EmbeddedServer(root / "nats", write_info=False)
    settings = Settings(data_dir=root / "data", nats_url=server.start())
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        async with open_bus(settings, name="bench-taskset") as bus:
            stop, ready = asyncio.Event(), asyncio.Event()
            handlers = asyncio.create_task(
                run_handlers(bus, stop, ports=Ports(settings=settings), ready=ready, signals=False)
            )
            await asyncio.wait_for(ready.wait(), 60)
            for n in range(runs):
                for task in tasks():
                    for policy in ("scripted", "synth"):
                        if policy == "synth" and not task.examples:
                            continue
                        r = await one(bus, root, task, policy, n)
                        results.setdefault((task.name, policy), []).append(r)
                        print(
                            f"  [{task.name}/{policy} run {n + 1}/{runs}: {r['outcome']}, "
                            f"{r['interventions']} intervention(s), {r['wall_s']:.1f} s]",
                            flush=True,
                        )
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 60)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return results


def main() -> None:
    import os

    ap = parser(__doc__, runs=3)
    args = ap.parse_args()
    runs = runs_of(args)
    load = os.getloadavg()[0]
    print(
        f"task set: {runs} run(s) per task and policy; load average {load:.2f} on {os.cpu_count()} cores"
    )
    results = asyncio.run(run(runs))
    expected = {t.name: t.expected_interventions for t in tasks()}
    summary = Summary()
    print(
        f"\n{'task':<10} {'policy':<9} {'success':>8} {'interventions':>14} {'model calls':>12} "
        f"{'wall s (median)':>16}  target"
    )
    for (name, policy), rs in results.items():
        success = statistics.mean(r["success"] for r in rs)
        inter = statistics.median(r["interventions"] for r in rs)
        calls = statistics.median(r["model_calls"] for r in rs)
        wall = statistics.median(r["wall_s"] for r in rs)
        if policy == "scripted":
            ok = success == 1.0 and inter == expected[name]
            verdict = "PASS" if ok else "MISS"
            target = f"success 1.0, {expected[name]} intervention(s)"
            (summary.passed if ok else summary.missed).append(f"{name}/{policy}")
        else:
            verdict, target = "info", "-"
        print(
            f"{name:<10} {policy:<9} {success:>8.2f} {inter:>14g} {calls:>12g} {wall:>16.1f}  "
            f"{target} {verdict}"
        )
        failed = [r["summary"] for r in rs if not r["success"]]
        if failed:
            print(f"           not success: {failed[0][:200]}")
    conclude(summary)


if __name__ == "__main__":
    main()
