"""SEARCH/REPLACE text blocks as an actor answer (models/blocks.py): parsed into a
``search_replace`` action, accepted by the xgrammar decoding grammar, and a block written
against an older text of its file refused as ``stale_context`` with the nearest match quoted."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from oopav.events.actions import SearchReplaceAction, SearchReplaceEdit, decode_action
from oopav.models import Message, ModelRequest, output_schema
from oopav.models.blocks import render_blocks
from oopav.models.prompt import AnswerError, parse_role_answer, static_prefix
from oopav.sandbox.apply import ActionPlan, Rejection, plan_action
from oopav.sandbox.patch import context_hash

SOURCE = "def fetch(url):\n    return get(url)\n\n\ndef other():\n    return 1\n"


def answer(blocks: str) -> str:
    return f"<think>edit</think>\n<action>\n{blocks}\n</action>\n<state_update>{{}}</state_update>"


def test_text_blocks_parse_into_a_search_replace_action() -> None:
    text = answer(
        "pkg/a.py@1a2b3c4d\n<<<<<<< SEARCH\ndef fetch(url):\n=======\ndef fetch_page(url):\n"
        ">>>>>>> REPLACE\n\npkg/b.py\n<<<<<<< SEARCH\nx = '</action>'\n=======\n>>>>>>> REPLACE"
    )
    action = parse_role_answer("actor", text).payload
    assert isinstance(action, SearchReplaceAction)
    assert action.edits == [
        SearchReplaceEdit(
            path="pkg/a.py",
            search="def fetch(url):\n",
            replace="def fetch_page(url):\n",
            context_hash="1a2b3c4d",
        ),
        SearchReplaceEdit(path="pkg/b.py", search="x = '</action>'\n", replace=""),
    ]
    # the rendering reads back as the same action
    assert parse_role_answer("actor", answer(render_blocks(action))).payload == action


@pytest.mark.parametrize(
    ("blocks", "reason", "says"),
    [
        ("a.py\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE", "truncated", "no '=======' line"),
        ("a.py@zz\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE", "schema_mismatch", "context hash"),
        ("a b.py\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE", "schema_mismatch", "path"),
        (
            "a.py\nSEARCH\nx\n=======\n>>>>>>> REPLACE",
            "schema_mismatch",
            "expected '<<<<<<< SEARCH'",
        ),
    ],
)
def test_malformed_blocks_are_refused_with_what_is_wrong(
    blocks: str, reason: str, says: str
) -> None:
    with pytest.raises(AnswerError) as info:
        parse_role_answer("actor", answer(blocks))
    assert info.value.reason == reason
    assert says in info.value.message and "block 1" in info.value.message


def test_the_prompt_contract_describes_the_blocks() -> None:
    prefix = static_prefix(None)
    assert "## Text edit blocks (actor)" in prefix and "<<<<<<< SEARCH" in prefix
    assert '"ask"' in prefix  # the ask action is in the action schema


def test_old_search_replace_events_decode_and_encode_as_before() -> None:
    old = b'{"type":"search_replace","edits":[{"path":"a.py","search":"x","replace":"y"}]}'
    action = decode_action(old)
    assert msgspec.json.encode(action) == old  # no context_hash key: the same bytes and hash


def test_the_xgrammar_decoding_grammar_accepts_blocks_and_json() -> None:
    xgr = pytest.importorskip("xgrammar")
    from oopav.models.grammar import request_grammar

    req = ModelRequest(
        role="actor",
        messages=[Message(role="user", content="x")],
        schema=output_schema("actor"),
        envelope="action",
    )
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(
        request_grammar(req)
    )

    def accepts(text: str) -> bool:
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return bool(m.accept_string(text)) and m.is_terminated()

    blocks = "<think>a</think>\n<action>a.py@1a2b3c4d\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE</action>\n<state_update>{}</state_update>"
    assert accepts(blocks)
    assert parse_role_answer("actor", blocks).payload.edits[0].context_hash == "1a2b3c4d"
    json_answer = '<think>a</think>\n<action>{"summary": "s", "type": "finish"}</action>\n<state_update>{}</state_update>'
    assert accepts(json_answer)
    assert not accepts(blocks.replace("=======\n", ""))


def test_a_stale_block_is_refused_with_the_nearest_match_quoted(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SOURCE)
    seen = context_hash(SOURCE)
    edit = SearchReplaceEdit(
        path="a.py", search="def fetch(url):\n", replace="def fetch_page(url):\n", context_hash=seen
    )
    assert isinstance(plan_action(tmp_path, SearchReplaceAction(edits=[edit])), ActionPlan)
    # The file changes after the model saw it: the same block is now stale.
    changed = SOURCE.replace("def fetch(url):", "def fetch(url, timeout=5):")
    (tmp_path / "a.py").write_text(changed)
    out = plan_action(tmp_path, SearchReplaceAction(edits=[edit]))
    assert isinstance(out, Rejection) and out.reason == "stale_context"
    assert f"context {seen}" in out.message and context_hash(changed) in out.message
    assert "1 | def fetch(url, timeout=5):" in out.message  # the nearest match, verbatim
    assert out.details["current"] == context_hash(changed)
    # Without a hash the same block is an ordinary miss; with the current hash it applies.
    plain = msgspec.structs.replace(edit, context_hash=None)
    missed = plan_action(tmp_path, SearchReplaceAction(edits=[plain]))
    assert isinstance(missed, Rejection) and missed.reason == "no_match"
    fresh = SearchReplaceEdit(
        path="a.py",
        search="def fetch(url, timeout=5):\n",
        replace="def fetch_page(url, timeout=5):\n",
        context_hash=context_hash(changed),
    )
    assert isinstance(plan_action(tmp_path, SearchReplaceAction(edits=[fresh])), ActionPlan)


def test_a_stale_block_whose_search_still_matches_says_where(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SOURCE + "X = 1\n")
    edit = SearchReplaceEdit(
        path="a.py",
        search="def other():\n",
        replace="def another():\n",
        context_hash=context_hash(SOURCE),
    )
    out = plan_action(tmp_path, SearchReplaceAction(edits=[edit]))
    assert isinstance(out, Rejection) and out.reason == "stale_context"
    assert "still matches lines 5-5" in out.message and "5 | def other():" in out.message
