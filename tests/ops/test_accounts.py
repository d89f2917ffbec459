"""Least privilege: one NATS user per handler, cut from the handler contracts, enforced by a
real nats-server. A whole session runs with each handler on its own credential."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loop_harness import (
    TEST_COMMAND,
    assert_unique_ids,
    finish_session,
    loop,
    rename_script,
    start,
    task,
)

from helpers.cli import run_oopav_sync
from oopav.app import open_bus
from oopav.bus.accounts import generate, user_permissions
from oopav.bus.cluster import LocalCluster
from oopav.bus.contracts import EMITS
from oopav.bus.errors import NatsUnavailable
from oopav.bus.store import connect
from oopav.bus.streams import ensure_streams
from oopav.config import Settings

SCRIPT = rename_script()


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[LocalCluster, Path]]:
    out = tmp_path / "accounts"
    generate(out)
    server = LocalCluster(tmp_path / "srv", 1, extra_config=(out / "accounts.conf").read_text())
    server.start()
    try:
        yield server, out / "creds"
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def as_user(url: str, creds: Path, user: str):  # type: ignore[no-untyped-def]
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    old = os.environ.get("OOPAV_NATS_CREDS")
    os.environ["OOPAV_NATS_CREDS"] = str(creds / f"{user}.json")
    try:
        nc = await connect(url, name=f"test-{user}", error_cb=on_error)
    finally:
        if old is None:
            os.environ.pop("OOPAV_NATS_CREDS", None)
        else:
            os.environ["OOPAV_NATS_CREDS"] = old
    try:
        nc.test_errors = errors  # type: ignore[attr-defined]
        yield nc
    finally:
        await nc.close()


async def _denied(nc: Any, subject: str) -> bool:
    """Publishing ``subject`` is refused by the server (a permissions violation arrives)."""
    errors = nc.test_errors
    before = len(errors)
    await nc.publish(subject, b"{}")
    await nc.flush()
    for _ in range(50):
        if any("permissions violation" in str(e).lower() for e in errors[before:]):
            return True
        await asyncio.sleep(0.02)
    return False


def test_contracts_cover_every_handler() -> None:
    from oopav.bus.contracts import SUBSCRIBES
    from oopav.handlers.registry import LOOP_HANDLERS, build_loop_handler

    # The contract is declared beside the credentials; it must say what each handler reads.
    for name in LOOP_HANDLERS:
        assert SUBSCRIBES[name] == tuple(build_loop_handler(name).subscribes), name
    perms = user_permissions()
    for handler in ("intake", "grants", "observer", "orient", "planner", "actor", "verifier"):
        assert handler in perms
    assert "oopav.ev.session.*.plan_proposed" in perms["planner"]["publish"]["allow"]
    assert "oopav.ev.session.*.action_applied" not in perms["planner"]["publish"]["allow"]
    # No handler may create, delete, purge or update a stream.
    for user, p in perms.items():
        if user == "admin":
            continue
        for subject in p["publish"]["allow"]:
            assert not subject.startswith(("$JS.API.STREAM.DELETE", "$JS.API.STREAM.PURGE")), user
            assert subject not in (">", "$JS.API.>"), user


async def test_permissions_are_enforced(secured: tuple[LocalCluster, Path]) -> None:
    server, creds = secured
    async with as_user(server.url, creds, "admin") as admin:
        await ensure_streams(admin.jetstream())
    async with as_user(server.url, creds, "planner") as planner:
        ack = await planner.jetstream().publish("oopav.ev.session.s1.plan_proposed", b"{}")
        assert ack.seq >= 1
        assert await _denied(planner, "oopav.ev.session.s1.action_applied")
        assert await _denied(planner, "$JS.API.STREAM.DELETE.OOPAV_EVENTS")
    async with as_user(server.url, creds, "client") as client:
        for event_type in ("task_submitted", "session_completed", "plan_proposed"):
            assert await _denied(client, f"oopav.ev.session.s1.{event_type}")
        assert not await _denied(client, "oopav.tasks.submit")
    async with as_user(server.url, creds, "learner") as learner:
        assert await _denied(learner, "oopav.tasks.submit")
        assert await _denied(learner, "oopav.ev.run.r1.training_started")


async def test_a_handler_credential_is_refused_the_notary_at_once(
    secured: tuple[LocalCluster, Path],
) -> None:
    """A handler may not register keys (the notary does): the server's refusal arrives as an
    asynchronous error while the write waits for its reply; the registration gives up on the
    refusal instead of waiting out the request's timeout (10 s per handler at start-up)."""
    from oopav.history.signing import _register_unless_refused

    server, creds = secured
    async with as_user(server.url, creds, "admin") as admin:
        await ensure_streams(admin.jetstream())
    async with as_user(server.url, creds, "actor") as actor:
        with pytest.raises(PermissionError, match="may not write the notary"):
            await asyncio.wait_for(
                _register_unless_refused(actor, actor.jetstream(), {"actor": "UKEY"}), 30
            )


async def test_wrong_password_is_a_clear_error(
    secured: tuple[LocalCluster, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = secured
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"user": "planner", "password": "not-it"}))
    monkeypatch.setenv("OOPAV_NATS_CREDS", str(bad))
    with pytest.raises(NatsUnavailable, match="refused the credentials of user 'planner'"):
        await asyncio.wait_for(connect(server.url, name="test-bad"), 15)


def test_handler_with_another_handlers_credential_exits_with_one_line(
    secured: tuple[LocalCluster, Path], data_dir: Path
) -> None:
    server, creds = secured
    env = dict(os.environ, OOPAV_NATS_CREDS=str(creds / "planner.json"))
    proc = run_oopav_sync("handler", "actor", url=server.url, env=env)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "credential is for user 'planner'" in last and "'actor'" in last


async def test_a_session_runs_with_one_credential_per_handler(
    secured: tuple[LocalCluster, Path], repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, creds = secured
    async with as_user(server.url, creds, "admin") as admin:
        await ensure_streams(admin.jetstream())
    async with contextlib.AsyncExitStack() as stack:
        buses = {}
        for name in ("intake", "grants", "observer", "orient", "planner", "actor", "verifier"):
            # Each handler connects with its own user (credentials are read at connect time).
            monkeypatch.setenv("OOPAV_NATS_CREDS", str(creds / f"{name}.json"))
            buses[name] = await stack.enter_async_context(loop(server.url, SCRIPT, names=(name,)))
        monkeypatch.setenv("OOPAV_NATS_CREDS", str(creds / "client.json"))
        reader = await stack.enter_async_context(
            open_bus(Settings(nats_url=server.url), setup=False, name="test-client")
        )
        sid = await start(reader, task(repo, test_command=TEST_COMMAND))
        state, events = await finish_session(reader, sid, timeout=120)
    assert state.outcome == "success", state.summary
    assert_unique_ids(events)
    # Every event was published by the handler allowed to emit it.
    for e in events:
        assert e.type in EMITS[e.actor.split("/")[0]], (e.actor, e.type)


def test_the_cli_takes_a_creds_file_as_an_option(
    secured: tuple[LocalCluster, Path], data_dir: Path
) -> None:
    """`--creds FILE` is the flag form of OOPAV_NATS_CREDS: the planner's file is refused
    for the actor's handler with the same one line."""
    server, creds = secured
    env = {k: v for k, v in os.environ.items() if k != "OOPAV_NATS_CREDS"}
    proc = run_oopav_sync(
        "handler", "actor", "--creds", str(creds / "planner.json"), url=server.url, env=env
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "credential is for user 'planner'" in last and "'actor'" in last
