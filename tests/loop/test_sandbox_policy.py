"""The policy's sandbox section and network scopes through the real loop (issue 30): a command
runs with the host's network only when it holds an allowed network scope; bad sections and
scopes are refused at intake. Real nats-server, real bubblewrap, scripted models."""

from __future__ import annotations

import json
import os
from pathlib import Path

from loop_harness import (
    action_answer,
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_all,
    start,
    task,
)

NETNS = ["python", "-c", "import os; print(os.readlink('/proc/self/ns/net'))"]


async def test_only_a_command_holding_a_network_scope_shares_the_network(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    read = action_answer(
        {"type": "run_command", "argv": NETNS, "scopes": ["net.http.read:pypi.org"]}, "online"
    )
    plain = action_answer({"type": "run_command", "argv": NETNS}, "offline")
    script = {"planner": [plan_answer()], "actor": [read, plain, rename_all(), finish()]}
    policy = {"allow": ["exec:python -c", "net.http.read:pypi.org"]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        state, events = await finish_session(bus, sid)
    host = os.readlink("/proc/self/ns/net")
    applied = [a for a in of(events, "action_applied") if a.execs]
    online, offline = applied[0], applied[1]
    assert online.ok and online.stdout_tail.strip() == host, online
    assert offline.ok and offline.stdout_tail.strip() not in ("", host), offline
    assert state.outcome == "success", state.summary


async def test_bad_sandbox_sections_and_scopes_are_refused_at_intake(
    nc, nats_url: str, repo: Path
) -> None:
    from oopav.services import submit_task

    async with loop(nats_url, {"planner": [], "actor": []}) as bus:
        bad_scope = await submit_task(bus, task(repo, policy={"allow": ["git.fetch:../up"]}))
        bad_timeout = await submit_task(bus, task(repo, policy={"sandbox": {"read_timeout_s": 30}}))
        bad_backend = await submit_task(bus, task(repo, policy={"sandbox": {"backend": "vm"}}))
    assert "git.fetch needs a remote name" in json.dumps(bad_scope), bad_scope
    assert "policy.sandbox.read_timeout_s" in json.dumps(bad_timeout), bad_timeout
    assert "policy.sandbox.backend" in json.dumps(bad_backend), bad_backend
