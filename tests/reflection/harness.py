"""Helpers for the reflector tests: a repository, scripted critic/consolidator files, running
every handler (reflector included) against the real server, and waiting on a mission."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml
from policy_server import INSTRUCTION, TEST_COMMAND

from oopav.events import mission as mev

# helpers/ sits in tests/, which bench/reflection.py (importing this harness) does not put on
# the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.handlers import handlers_on


def make_repo(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# answers\n\nanswer.txt holds the answer.\n")
    return dest


def critic_json(summary: str = "wrote 41", op_text: str | None = None) -> str:
    doc: dict[str, Any] = {
        "summary": summary,
        "critique": "The attempt wrote the wrong value into answer.txt; the tests expect 42.",
        "root_cause": "the agent guessed the value",
        "issues": ["wrong value"],
    }
    if op_text:
        doc["candidate_ops"] = [{"op": "upsert", "text": op_text, "rationale": "tests expect it"}]
    return json.dumps(doc)


def consolidator_json(
    operations: list[dict[str, Any]],
    *,
    action: str = "refine",
    uncertainty: str | None = None,
) -> str:
    return json.dumps(
        {
            "action": action,
            "summary": "add the rule the tests encode",
            "critique": "every attempt guessed the value",
            "operations": operations,
            "evidence_group_ids": [],
            "uncertainty_note": uncertainty,
        }
    )


def write_script(path: Path, critic: list[str], consolidator: list[str]) -> str:
    path.write_text(
        yaml.safe_dump({"reflection_critic": critic, "reflection_consolidator": consolidator})
    )
    return f"scripted:{path}"


def group_task(
    repo: Path, policy_spec: str, mission: str, k: int, seeds: list[int], **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "instruction": INSTRUCTION,
        "repo": str(repo),
        "mission": mission,
        "model": policy_spec,
        "test_command": TEST_COMMAND,
        "budgets": {"bounces": 0, "retries_per_phase": 1, "iterations": 6},
        "group": {
            "k": k,
            "grid": [{"temperature": 0.7, "top_p": 1.0, "seed": s} for s in seeds],
            "expected": "pass",
        },
    }
    body.update(extra)
    return body


@contextlib.asynccontextmanager
async def running(nats_url: str, config: Any) -> AsyncIterator[Any]:
    """Every handler, the reflector with ``config``, on the shared server. Yields the Bus."""
    async with handlers_on(nats_url, name="test-reflector", reflector_config=config) as bus:
        yield bus


async def submit(bus: Any, body: dict[str, Any]) -> dict[str, Any]:
    from oopav.services import submit_task

    reply = await submit_task(bus, body)
    assert "session_ids" in reply, reply
    return reply


async def mission_events(bus: Any, mission: str) -> list[Any]:
    return [e for _, e in await bus.events.read("mission", mev.mission_aggregate_id(mission))]


async def wait_mission(
    bus: Any, mission: str, types: set[str], timeout: float = 180.0
) -> list[Any]:
    """The mission's events once one of ``types`` is among them (fails after ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        events = await mission_events(bus, mission)
        if any(e.type in types for e in events):
            return events
        if loop.time() > deadline:
            raise AssertionError(
                f"mission {mission}: none of {types} within {timeout}s; got {[e.type for e in events]}"
            )
        await asyncio.sleep(0.2)


async def session_events(bus: Any, sid: str) -> list[Any]:
    """The session's events with whole prompts (history/prompts.py)."""
    from oopav.history.blobs import BlobStore
    from oopav.history.prompts import expand

    return [e for _, e in await expand(BlobStore(bus.nc), await bus.events.read("session", sid))]


async def seed(bus: Any, mission: str, lines: list[str]) -> None:
    from oopav.cli.guidance import seed_event
    from oopav.projections.guidance import fold

    state = fold(await bus.events.read("mission", mev.mission_aggregate_id(mission)), mission)
    entries = [mev.GuidanceEntry(key="", text=t) for t in lines]
    event = seed_event(state, mission, entries, source="test", replace=False, by="test")
    await bus.events.append(event, expected=state.last_sequence)
