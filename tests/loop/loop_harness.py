"""Helpers for the loop tests: the example repository, scripted answers, running the loop.

The loop end to end: real nats-server, real bwrap sandbox, real git workspaces, scripted
models. Each test gets a fresh git repository (a copy of ``examples/rename_fetch``) and runs
every handler in this process (or, for the crash test, some in child processes)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from oopav.models.prompt import render_answer

# helpers/ sits in tests/, which bench/ scripts importing this harness do not put on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.handlers import handlers_on

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rename_fetch"
FILES = ["webtool/client.py", "webtool/crawler.py", "webtool/report.py", "tests/test_webtool.py"]
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
# The same checks with unittest: a sandboxed pytest start costs ~2 s (the sandbox keeps no
# bytecode cache), unittest ~0.2 s, and most scenarios run the tests twice or more.
TEST_COMMAND = ["python", "-m", "unittest", "discover", "-q", "-s", "tests", "-t", "."]
UNITTESTS = """import unittest

from webtool.client import PageNotFound, fetch
from webtool.crawler import crawl
from webtool.report import summary


class WebtoolTest(unittest.TestCase):
    def test_fetch(self) -> None:
        self.assertEqual(fetch("x", {"x": "<h1>X</h1>"}), "<h1>X</h1>")
        with self.assertRaises(PageNotFound):
            fetch("https://example.test/nope")

    def test_crawl(self) -> None:
        visited, broken = crawl("https://example.test/")
        self.assertEqual(broken, ["https://example.test/missing"])
        self.assertEqual(len(visited), 3)

    def test_summary(self) -> None:
        pages = ["https://example.test/about"]
        self.assertEqual(summary(pages), ["https://example.test/about: About"])
"""
INSTRUCTION = (
    "Rename the function `fetch` to `fetch_page` everywhere in the repository and keep the "
    "tests green."
)

DEF_FETCH = "def fetch(url: str, site: dict[str, str] | None = None) -> str:\n"
RENAME_RULE = (
    "id: rename-fetch\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^fetch$\n"
    "fix: fetch_page\n"
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def make_repo(dest: Path, *, pytest_suite: bool, git_repo: bool = True) -> Path:
    """A git repository holding the example project (one commit); its tests either the
    example's pytest suite or the same checks for unittest."""
    dest.mkdir()
    for name in ("webtool", "tests", "pyproject.toml", "README.md"):
        src = EXAMPLE / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    if not pytest_suite:
        (dest / "tests" / "test_webtool.py").write_text(UNITTESTS)
        (dest / "tests" / "__init__.py").write_text("")
    if not git_repo:
        return dest
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(
        dest,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "-m",
        "base",
    )
    return dest


# -- scripted answers -----------------------------------------------------------------------


def plan_answer(note: str = "rename fetch", files: list[str] | None = None, steps: int = 2) -> str:
    edits = [
        {"id": i + 1, "description": f"{note}: edit part {i + 1}", "files": files or FILES}
        for i in range(steps - 1)
    ]
    return render_answer(
        "plan",
        {
            "steps": [
                *edits,
                {"id": steps, "description": "Run the tests and check they pass", "files": []},
            ],
            "files": files or FILES,
            "test_decision": "required",
            "rationale": note,
        },
        think=f"planning: {note}",
        state_update={"goals": ["fetch is called fetch_page"], "next_focus": note},
    )


def action_answer(action: dict[str, Any], note: str = "act") -> str:
    return render_answer("action", action, think=note, state_update={"history": note})


def rename_all() -> str:
    return action_answer({"type": "ast_grep", "rule": RENAME_RULE, "paths": ["."]}, "rename all")


def finish(summary: str = "renamed fetch to fetch_page") -> str:
    return action_answer({"type": "finish", "summary": summary}, "finish")


# A change that breaks the tests: fetch's body becomes a stub.
def rename_script() -> dict[str, list[str]]:
    """The scripted models of a plain session: one plan, the rename, finish (a fresh copy:
    a scripted backend consumes its answers)."""
    return {"planner": [plan_answer()], "actor": [rename_all(), finish()]}


STUB = action_answer(
    {
        "type": "search_replace",
        "edits": [
            {
                "path": "webtool/client.py",
                "search": "    pages = SITE if site is None else site\n",
                "replace": "    raise NotImplementedError\n",
            }
        ],
    },
    "stub the body",
)


def rename_definition_only() -> str:
    return action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/client.py",
                    "search": DEF_FETCH,
                    "replace": DEF_FETCH.replace("fetch(", "fetch_page("),
                }
            ],
        },
        "rename the definition only",
    )


def never_matches() -> str:
    return action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/client.py",
                    "search": "def this_does_not_exist(",
                    "replace": "def fetch_page(",
                }
            ],
        },
        "a patch whose SEARCH never matches",
    )


def verdict(v: str, *reasons: str, **report: Any) -> str:
    """A critic's answer; ``report``: its structured fields (top_risks, missing_tests,
    confidence)."""
    return render_answer(
        "verdict", {"verdict": v, "reasons": list(reasons), **report}, think="reviewing"
    )


# -- running the loop -------------------------------------------------------------------------


def task(repo: Path, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "instruction": INSTRUCTION,
        "repo": str(repo),
        "test_command": TEST_COMMAND,
        "model": "scripted:test",
    }
    body.update(extra)
    if "pytest" in " ".join(body.get("test_command") or []):
        # The project's env must have pytest (oopav's own env is never used implicitly):
        # name this interpreter's env explicitly, as a user names their project's venv.
        body.setdefault("environment", {"python": sys.executable})
    return body


@contextlib.asynccontextmanager
async def loop(
    nats_url: str,
    script: Any = None,
    *,
    names: tuple[str, ...] | None = None,
    sandbox: Any = None,
) -> AsyncIterator[Any]:
    """Every handler (or ``names``) of this process on the shared server, serving ``script``
    (a role-keyed dict) from one ScriptedBackend. Yields the Bus."""
    from oopav.models.scripted import ScriptedBackend

    factory = None
    if script is not None:
        backend = ScriptedBackend(script)
        factory = lambda spec: backend  # noqa: E731
    async with handlers_on(nats_url, names=names, model_factory=factory, sandbox=sandbox) as bus:
        yield bus


async def run_session(
    nats_url: str, script: Any, body: dict[str, Any], **loop_options: Any
) -> tuple[str, Any, list[Any]]:
    """One session through the loop: the handlers serve ``script``, ``body`` is submitted and
    the session runs to completion. (session id, final state, events in stream order)."""
    async with loop(nats_url, script, **loop_options) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    return sid, state, events


async def start(bus: Any, body: dict[str, Any], timeout: float = 30.0) -> str:
    from oopav.services import submit_task

    # Longer than the CLI's 10 s: on a loaded CI machine a fresh cluster's intake consumer
    # took longer than that to answer its first request (the submission was stored: "queued").
    loop_ = asyncio.get_running_loop()
    deadline = loop_.time() + timeout
    reply = await submit_task(bus, body, timeout=timeout)
    if reply.get("code") in ("timeout", "queued"):
        # The submission is stored but its answer came late (the intake's reply window is
        # 30 s; a loaded CI machine's fresh cluster once took longer): it still becomes a
        # session, found here by its instruction. A lost submission still fails below.
        # Its own grace: a reply that timed out used up the deadline (on a loaded machine a
        # fresh cluster's intake once answered after 90 s; the session came later).
        grace = max(deadline, loop_.time() + 60.0)
        sid = await _session_for(bus, str(body.get("instruction", "")), grace)
        if sid is not None:
            return sid
    assert "session_id" in reply, reply
    return str(reply["session_id"])


async def _session_for(bus: Any, instruction: str, deadline: float) -> str | None:
    from oopav.services import list_sessions

    loop_ = asyncio.get_running_loop()
    want = instruction.replace("\n", " ")
    while loop_.time() < deadline:
        rows = [r for r in await list_sessions(bus) if r["instruction"] == want]
        if rows:
            return str(rows[0]["session_id"])
        await asyncio.sleep(0.5)
    return None


async def finish_session(bus: Any, sid: str, timeout: float = 90.0) -> tuple[Any, list[Any]]:
    """Wait for the session to complete; return (state, events in stream order)."""
    from oopav.services import wait_session

    state = await wait_session(bus, sid, timeout)
    assert state.phase == "completed", (state.phase, [e.type for e in await events_of(bus, sid)])
    return state, await events_of(bus, sid)


async def events_of(bus: Any, sid: str) -> list[Any]:
    """The session's events, model calls with their whole prompts (stored as blobs and
    deltas: history/prompts.py), as `oopav show --json` shows them."""
    from oopav.history.blobs import BlobStore
    from oopav.history.prompts import expand

    return [e for _, e in await expand(BlobStore(bus.nc), await bus.events.read("session", sid))]


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def of(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def assert_unique_ids(events: list[Any]) -> None:
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]


def assert_causal(events: list[Any]) -> None:
    """Every event but the submission is caused by an earlier event of the session (or by a
    grant, which is a root event of its own)."""
    seen: set[str] = set()
    for e in events:
        if e.type not in ("task_submitted", "permission_granted", "permission_denied"):
            assert e.causation_id in seen, (e.type, e.causation_id)
        seen.add(e.id)


async def wait_for(
    bus: Any, sid: str, kind: str, count: int = 1, timeout: float = 60.0
) -> list[Any]:
    """The session's events once ``count`` events of type ``kind`` are stored."""
    loop_ = asyncio.get_running_loop()
    deadline = loop_.time() + timeout
    arrived = asyncio.Event()

    async def on_msg(_: Any) -> None:
        arrived.set()

    sub = await bus.nc.subscribe(f"oopav.ev.session.{sid}.>", cb=on_msg)
    try:
        while True:
            events = await events_of(bus, sid)
            if len(of(events, kind)) >= count:
                return events
            remaining = deadline - loop_.time()
            assert remaining > 0, f"no {count}x {kind} in {types(events)}"
            arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), min(remaining, 0.5))
    finally:
        await sub.unsubscribe()


async def assert_replays(nats_url: str, sid: str) -> Any:
    """``replay --verify``: the handlers re-run on a fresh server with the recorded model
    answers, executions and times reproduce the session's events exactly."""
    from oopav.replay import verify_session

    report = await verify_session(nats_url, sid, idle_timeout=10.0, total_timeout=120.0)
    assert report.ok, (report.describe(), report.first_divergence, report.replay_misses)
    assert report.replayed == report.recorded
    # The workspace started from the starting tree in the blob store, not the repository
    # (when the session got as far as preparing one).
    from oopav.app import open_bus
    from oopav.config import Settings

    async with open_bus(Settings(nats_url=nats_url), name="test-replay") as bus:
        prepared = "workspace_prepared" in types(await events_of(bus, sid))
    assert report.started_from == ("store" if prepared else "repository")
    return report
