"""Issue 16 §3 end to end: what the actor sees (plan step, numbered files in focus, repo map,
the last change) and hears (feedback that names the fix), and one static prefix for every
role."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    assert_replays,
    finish,
    make_repo,
    never_matches,
    of,
    plan_answer,
    rename_all,
    run_session,
    task,
    verdict,
)


def _user(call) -> str:  # type: ignore[no-untyped-def]
    return next(m["content"] for m in call.request["messages"] if m["role"] == "user")


def _system(call) -> str:  # type: ignore[no-untyped-def]
    return next(m["content"] for m in call.request["messages"] if m["role"] == "system")


async def test_the_actor_sees_what_it_edits_and_hears_the_fix(
    nats_url: str, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", pytest_suite=False)
    script = {
        # A narrow plan on purpose (the file in focus): the adequacy gate is off for it.
        "planner": [plan_answer(files=["webtool/client.py", "tests/test_webtool.py"])],
        "actor": [never_matches(), rename_all(), finish()],
        "critic": [verdict("approve", "complete rename")],
    }
    policy = {"critic": True, "plan_adequacy": {"min_score": 0}}
    sid, state, events = await run_session(nats_url, script, task(repo, policy=policy))
    assert state.outcome == "success", state.summary
    calls = of(events, "model_called")
    actor_calls = [c for c in calls if c.role == "actor"]
    first = _user(actor_calls[0])
    # The current step, the file in focus with line numbers, the repo map.
    assert "-> 1. rename fetch: edit part 1" in first and "Do now:" in first
    assert "### File webtool/client.py" in first
    assert "22 | def fetch(url: str, site: dict[str, str] | None = None) -> str:" in first
    assert "### Repository map" in first
    # The missed SEARCH block: the nearest lines verbatim with their numbers, and a diff.
    rejected = of(events, "action_rejected")[0]
    assert rejected.reason == "no_match"
    assert "Nearest candidate, lines 22-22" in rejected.message
    assert "22 | def fetch(url: str, site: dict[str, str] | None = None) -> str:" in (
        rejected.message
    )
    assert "--- your SEARCH" in rejected.message and "-def this_does_not_exist(" in (
        rejected.message
    )
    second = _user(actor_calls[1])
    assert "Nearest candidate, lines 22-22" in second
    # After the rename: the change per file and a diff preview.
    third = _user(actor_calls[2])
    assert "### Last applied change" in third
    assert "- webtool/client.py: +" in third and "+def fetch_page(" in third
    assert (
        "rule matched 8 site(s) in 4 file(s): tests/test_webtool.py 3, webtool/client.py 1" in third
    )
    # Every role, the critic included, shares one byte-identical static prefix.
    roles = {c.role for c in calls}
    assert roles == {"planner", "actor", "critic"}
    assert len({_system(c) for c in calls}) == 1
    await assert_replays(nats_url, sid)
