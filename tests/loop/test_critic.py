"""The external critic through the real loop: it sees only a redacted, bounded pack (30
secrets planted in the change never reach the critic's server), its verdict follows the policy
table, an identical payload is never sent twice, and its budget holds."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from loop_harness import (
    FILES,
    TEST_COMMAND,
    action_answer,
    assert_replays,
    finish,
    finish_session,
    of,
    plan_answer,
    rename_all,
    rename_script,
    start,
    task,
    verdict,
)

from helpers.handlers import handlers_on
from helpers.openai_api import completion, send_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from test_redact import FILE, KEY, SECRETS


class CriticServer:
    """An OpenAI-compatible chat-completions server that records every request it receives
    and answers with the next verdict of its script."""

    def __init__(self, verdicts: list[str]) -> None:
        self.verdicts = list(verdicts)
        self.bodies: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def spec(self) -> str:
        assert self._server is not None
        return f"openai:http://127.0.0.1:{self._server.server_address[1]}/v1#critic"

    def __enter__(self) -> CriticServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.bodies.append(raw.decode())
                text = server.verdicts.pop(0) if server.verdicts else verdict("approve", "ok")
                usage = {"prompt_tokens": 100, "completion_tokens": 10}
                send_json(self, 200, json.dumps(completion(text, usage, id="c")).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()


@pytest.fixture
def critic_server() -> Iterator[CriticServer]:
    with CriticServer([]) as server:
        yield server


@contextlib.asynccontextmanager
async def loop_with_critic(nats_url: str, script: dict[str, Any]) -> AsyncIterator[Any]:
    """Every handler in this process: the planner and actor answer from ``script``; any
    ``openai:`` spec (the critic's) is a real OpenAI-compatible backend."""
    from oopav.models.registry import load_backend
    from oopav.models.scripted import ScriptedBackend

    scripted = ScriptedBackend(script)
    factory = lambda spec: load_backend(spec) if spec.startswith("openai:") else scripted  # noqa: E731
    async with handlers_on(nats_url, name="test-critic", model_factory=factory) as bus:
        yield bus


# The two .env values are secrets only inside a .env file, and writing one makes the observer
# stop and ask a person (a secret path), so the loop plants the other 28; the redactor's unit
# tests cover .env files and diffs.
PLANTED = {k: v for k, v in SECRETS.items() if not k.startswith("env_value")}


def plant_secrets() -> str:
    """One action that writes the secrets into the change: credentials of every shape and a
    private key (the diff the critic reviews then holds them all)."""
    return action_answer(
        {"type": "write_file", "path": "deploy/settings.txt", "content": FILE + "\n" + KEY},
        "plant",
    )


def _no_secret_in(bodies: list[str]) -> None:
    assert bodies
    for body in bodies:
        text = json.loads(body)["messages"]
        flat = json.dumps(text)
        leaked = [name for name, s in PLANTED.items() if s in flat or json.dumps(s)[1:-1] in flat]
        assert leaked == [], leaked
        assert "[REDACTED:" in flat


async def test_the_critic_never_sees_a_secret(
    nc: Any, nats_url: str, repo: Path, data_dir: Path, critic_server: CriticServer
) -> None:
    critic_server.verdicts = [verdict("caution", "a config file with credentials was added")]
    settings_file = plant_secrets()
    script = {
        "planner": [plan_answer(steps=3, files=[*FILES, "deploy/settings.txt"])],
        # (A .env file is a secret path: the observer would stop and ask a person first.)
        "actor": [rename_all(), settings_file, finish()],
    }
    body = task(
        repo,
        test_command=TEST_COMMAND,
        instruction=f"Rename fetch to fetch_page; the deploy key is {SECRETS['github_pat']}.",
        policy={"critic": {"model": critic_server.spec, "redaction": "standard"}},
    )
    async with loop_with_critic(nats_url, script) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    assert len(critic_server.bodies) == 1
    _no_secret_in(critic_server.bodies)
    [v] = of(events, "critic_verdict")
    assert v.verdict == "caution" and not v.cached
    assert v.payload_sha256 and len(v.payload_sha256) == 64
    assert v.redactions.get("private_key") == 1
    assert len(PLANTED) == 28 and sum(v.redactions.values()) >= 28
    [gate] = [g for g in of(events, "gate_evaluated") if g.gate == "critic"]
    assert gate.passed and "caution (warning)" in gate.evidence
    # Replay serves the recorded verdict (no call to the server) and reproduces the events.
    await assert_replays(nats_url, sid)
    assert len(critic_server.bodies) == 1


async def test_block_replans_and_an_identical_payload_is_not_sent_twice(
    nc: Any, nats_url: str, repo: Path, data_dir: Path, critic_server: CriticServer
) -> None:
    critic_server.verdicts = [verdict("block", "do not ship this")]
    script = {
        "planner": [plan_answer(), plan_answer()],
        "actor": [rename_all(), finish(), rename_all(), finish()],
    }
    body = task(
        repo,
        test_command=TEST_COMMAND,
        policy={"critic": {"model": critic_server.spec}},
    )
    async with loop_with_critic(nats_url, script) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    verdicts = of(events, "critic_verdict")
    assert [v.verdict for v in verdicts] == ["block", "block"], verdicts
    # The second review would send the same payload: the first verdict is reused, no call.
    assert verdicts[1].cached and verdicts[1].payload_sha256 == verdicts[0].payload_sha256
    assert len(critic_server.bodies) == 1
    assert of(events, "replan_triggered")
    assert state.outcome != "success"


async def test_the_critic_budget_holds(
    nc: Any, nats_url: str, repo: Path, data_dir: Path, critic_server: CriticServer
) -> None:
    script = rename_script()
    body = task(
        repo,
        test_command=TEST_COMMAND,
        policy={"critic": {"model": critic_server.spec, "max_calls": 0}},
    )
    async with loop_with_critic(nats_url, script) as bus:
        sid = await start(bus, body)
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    [v] = of(events, "critic_verdict")
    assert v.verdict == "unavailable" and "critic budget spent (0/0 calls" in v.reasons[0]
    assert critic_server.bodies == []


async def test_auto_reviews_only_a_change_an_automatic_trigger_fires_on(
    nc: Any, nats_url: str, repo: Path, data_dir: Path, critic_server: CriticServer
) -> None:
    """``critic.on: [auto]``: a plain rename is not reviewed; the same rename plus a change to
    the project's build manifest is, and the critic is told why."""
    manifest = action_answer(
        {
            "type": "write_file",
            "path": "pyproject.toml",
            "content": '[project]\nname = "webtool"\n',
        },
        "declare the project",
    )
    policy = {"critic": {"model": critic_server.spec, "on": ["auto"]}}
    # A scripted model serves each session from the start of its script: one loop per session.
    plain = {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    async with loop_with_critic(nats_url, plain) as bus:
        sid = await start(bus, task(repo, test_command=TEST_COMMAND, policy=policy))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success"
    gate = next(g for g in of(events, "gate_evaluated") if g.gate == "critic")
    assert gate.skipped and "no automatic critic trigger fired" in gate.evidence
    assert critic_server.bodies == []
    risky = {"planner": [plan_answer()], "actor": [rename_all(), manifest, finish()]}
    async with loop_with_critic(nats_url, risky) as bus:
        sid = await start(bus, task(repo, test_command=TEST_COMMAND, policy=policy))
        state, events = await finish_session(bus, sid)
    gate = next(g for g in of(events, "gate_evaluated") if g.gate == "critic")
    assert not gate.skipped
    assert "automatic triggers: dependency manifests or build files changed: pyproject.toml" in (
        gate.evidence
    )
    assert len(critic_server.bodies) == 1
    assert "Reviewed automatically because" in critic_server.bodies[0]
    assert state.outcome == "success"
