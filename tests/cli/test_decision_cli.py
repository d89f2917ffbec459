"""The decision core's CLI: task options that shape the policy, `oopav answer`, deployment caps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import oopav
from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events.factory import caused_event
from oopav.handlers.intake import Intake
from oopav.handlers.support.submission import Accepted, Rejected, parse_submission


async def _task(nc: Any, sid: str) -> ev.TaskSubmitted:
    events = [e for _, e in await EventStore(nc).read("session", sid)]
    assert isinstance(events[0], ev.TaskSubmitted)
    return events[0]


async def test_policy_critic_grant_and_tier_options_shape_the_submission(
    nc: Any, intake: Intake, nats_url: str, repo: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("rollback: build_on\nreplans: {cap: 1}\nallow: ['exec:pytest']\n")
    args = [
        "submit",
        "--repo",
        str(repo),
        "--policy",
        str(policy),
        "--critic-instructions",
        "check the docstrings",
        "--grant",
        "exec:make test",
        "--tier",
        "tests",
        "rename fetch",
    ]
    rc, out, err = await oopav(nats_url, tmp_path / "data", *args)
    assert rc == 0, err
    task = await _task(nc, out.strip())
    assert task.policy == {
        "rollback": "build_on",
        "replans": {"cap": 1},
        "allow": ["exec:pytest", "exec:make test"],
        "critic": True,
        "critic_instructions": "check the docstrings",
        "tier": "tests",
    }


async def test_a_bad_loop_policy_is_rejected_with_the_field(
    nc: Any, intake: Intake, nats_url: str, repo: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"tier": "everything"}))
    rc, _, err = await oopav(
        nats_url, tmp_path / "data", "submit", "--repo", str(repo), "--policy", str(policy), "x y"
    )
    assert rc == 2 and "policy.tier" in err


async def test_answer_refuses_a_session_that_asks_nothing_then_answers_one_that_does(
    nc: Any, intake: Intake, nats_url: str, repo: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    rc, out, err = await oopav(nats_url, data, "submit", "--repo", str(repo), "rename fetch")
    sid = out.strip()
    rc, _, err = await oopav(nats_url, data, "answer", sid, "proceed")
    assert rc == 2 and "not waiting for an answer" in err
    store = EventStore(nc)
    task = await _task(nc, sid)
    asked = caused_event(
        ev.HumanInputRequested,
        task,
        handler="orient",
        question="Proceed?",
        options=["abort", "proceed"],
        kind="black_risk",
    )
    await store.append(asked)
    rc, _, err = await oopav(nats_url, data, "answer", sid, "sure")
    assert rc == 2 and "answer one of abort, proceed" in err
    rc, out, err = await oopav(nats_url, data, "answer", sid[:13], "proceed", "--by", "ann")
    assert rc == 0, err
    last = [e for _, e in await store.read("session", sid)][-1]
    assert isinstance(last, ev.HumanInputProvided)
    assert (last.answer, last.answered_by, last.request_id) == ("proceed", "ann", asked.id)
    assert last.id == out.strip()


def test_deployment_caps_bound_what_a_submission_may_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"instruction": "x", "repo": str(tmp_path), "budgets": {"iterations": 300}}
    raw = json.dumps(body).encode()
    plain = parse_submission(raw)
    assert isinstance(plain, Accepted) and plain.budgets.iterations == 300
    deployment = tmp_path / "deployment.yaml"
    deployment.write_text("budget_caps: {iterations: 50, bounces: 1}\n")
    monkeypatch.setenv("OOPAV_DEPLOYMENT", str(deployment))
    capped = parse_submission(raw)
    assert isinstance(capped, Accepted)
    assert capped.budgets.iterations == 50 and capped.budgets.bounces == 1
    lower = parse_submission(json.dumps({**body, "budgets": {"iterations": 7}}).encode())
    assert isinstance(lower, Accepted) and lower.budgets.iterations == 7
    zero = parse_submission(json.dumps({**body, "budgets": {"bounces": 0}}).encode())
    assert isinstance(zero, Accepted) and zero.budgets.bounces == 0
    monkeypatch.setenv("OOPAV_DEPLOYMENT", str(tmp_path / "missing.yaml"))
    broken = parse_submission(raw)
    assert isinstance(broken, Rejected) and broken.field == "budgets"
    assert "cannot read OOPAV_DEPLOYMENT" in broken.error
