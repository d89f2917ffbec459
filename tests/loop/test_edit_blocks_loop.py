"""SEARCH/REPLACE text blocks through the real loop: a block written against an older text of
its file (a stale context hash) is refused, the model sees why with the current text quoted in
its next prompt, and the block with the hash its context shows applies."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    DEF_FETCH,
    assert_replays,
    finish,
    of,
    plan_answer,
    rename_all,
    run_session,
    task,
)

from oopav.sandbox.patch import context_hash


def blocks_answer(blocks: str, note: str) -> str:
    return (
        f"<think>{note}</think>\n<action>\n{blocks}\n</action>\n<state_update>{{}}</state_update>"
    )


def comment_block(digest: str) -> str:
    # A comment above the definition: a change that keeps the tests green on its own.
    new = "# Fetch one page of the site.\n" + DEF_FETCH
    return f"webtool/client.py@{digest}\n<<<<<<< SEARCH\n{DEF_FETCH}=======\n{new}>>>>>>> REPLACE"


async def test_a_stale_text_block_is_refused_and_the_fresh_one_applies(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    current = context_hash((repo / "webtool/client.py").read_text())
    script = {
        "planner": [plan_answer()],
        "actor": [
            blocks_answer(comment_block("0badc0de"), "an old view of the file"),
            blocks_answer(comment_block(current), "the hash the context shows"),
            rename_all(),
            finish(),
        ],
    }
    sid, state, events = await run_session(nats_url, script, task(repo))
    assert state.outcome == "success", state.summary
    stale = of(events, "action_rejected")[0]
    assert stale.reason == "stale_context"
    assert "context 0badc0de" in stale.message and current in stale.message
    assert "Your SEARCH still matches lines" in stale.message
    applied = [a for a in of(events, "action_proposed") if a.action.type == "search_replace"]
    assert [a.action.edits[0].context_hash for a in applied] == ["0badc0de", current]
    ok = {a.action_id: a for a in of(events, "action_applied")}[applied[1].id]
    assert ok.ok and ok.files_changed == ["webtool/client.py"]
    # The model's next prompt says why, and its context shows the hash a block must name.
    # events_of expands stored prompts: the requests are whole.
    second = [c for c in of(events, "model_called") if c.role == "actor"][1]
    prompt = "\n".join(m["content"] for m in second.request["messages"])
    assert "stale_context" in prompt and "0badc0de" in prompt
    assert f"(context {current})" in prompt
    await assert_replays(nats_url, sid)
