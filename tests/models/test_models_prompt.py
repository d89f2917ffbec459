from __future__ import annotations

import msgspec
import pytest

from oopav.events import FinishAction, SearchReplaceAction, action_json_schema
from oopav.models import (
    AgentState,
    AnswerError,
    CriticOutput,
    PlanOutput,
    StateUpdate,
    build_request,
    merge_state,
    output_schema,
    parse_answer,
    parse_role_answer,
    render_answer,
    retry_messages,
    static_prefix,
)
from oopav.models.base import estimate_tokens
from oopav.models.prompt import HISTORY_KEEP, render_guidance, render_state

POLICY = {"network": False, "allowed_commands": ["pytest", "ruff"], "write": ["src/"]}


# --- prefix stability ---------------------------------------------------------------------


def test_static_prefix_is_byte_identical_across_calls_of_a_session() -> None:
    prefix = static_prefix(POLICY)
    reordered = dict(reversed(list(POLICY.items())))
    assert static_prefix(reordered).encode() == prefix.encode()
    state1 = AgentState(goals=["rename fetch"])
    state2 = merge_state(state1, StateUpdate(history="applied step 1", next_focus="tests"))
    calls = [
        build_request("planner", prefix=prefix, guidance=["keep tests green"], state=state1),
        build_request("actor", prefix=prefix, context="file a.py", state=state2),
        build_request("actor", prefix=static_prefix(POLICY), guidance=[("G7", "x")], seed=9),
        build_request("critic", prefix=prefix, context="diff"),
    ]
    firsts = {req.messages[0].content.encode() for req in calls}
    assert len(firsts) == 1
    assert all(req.messages[0].role == "system" for req in calls)
    # The variable parts differ: they live after the prefix.
    assert len({req.messages[1].content for req in calls}) == 4


def test_prefix_carries_schemas_and_policy_and_changes_with_policy() -> None:
    prefix = static_prefix(POLICY)
    assert '"allowed_commands":["pytest","ruff"]' in prefix
    assert msgspec.json.encode(action_json_schema(), order="sorted").decode()[
        :40
    ] in prefix.replace(", ", ",").replace(": ", ":")
    assert "## Plan schema" in prefix and "## Verdict schema" in prefix
    assert static_prefix({"network": True}) != prefix


def test_schemas_come_from_the_structs() -> None:
    assert output_schema("actor") == action_json_schema()
    assert output_schema("planner") == msgspec.json.schema(PlanOutput)
    assert output_schema("critic") == msgspec.json.schema(CriticOutput)
    req = build_request("planner", prefix="p")
    assert (req.envelope, req.state_update) == ("plan", True)
    assert build_request("critic", prefix="p").state_update is False
    with pytest.raises(ValueError, match="unknown role"):
        build_request("poet", prefix="p")


def test_guidance_renders_as_numbered_ids() -> None:
    assert (
        render_guidance(["first rule", "second\n  rule"]) == "[G0]. first rule\n[G1]. second rule"
    )
    assert render_guidance([("G4", "kept id")]) == "[G4]. kept id"
    assert render_guidance([]) == "(no guidance yet)"
    req = build_request("actor", prefix="p", guidance=["use ast_grep for renames"])
    assert "[G0]. use ast_grep for renames" in req.messages[1].content
    assert "<state>" in req.messages[1].content


# --- state merge ---------------------------------------------------------------------------


def test_merge_adds_dedupes_resolves_and_keeps_last_three_history_items() -> None:
    s = AgentState(goals=["g"], open_issues=["tests fail"], hypotheses=["import cycle"])
    for i in range(5):
        s = merge_state(
            s,
            StateUpdate(
                goals=["g"], decisions=[f"d{i}"], history=f"step {i}", next_focus=f"focus {i}"
            ),
        )
    assert s.goals == ["g"]
    assert s.history == ["step 2", "step 3", "step 4"]
    assert len(s.history) == HISTORY_KEEP
    assert s.decisions == [f"d{i}" for i in range(5)]
    assert s.next_focus == "focus 4"
    s = merge_state(s, StateUpdate(resolved=["tests fail", "import cycle"], open_issues=["lint"]))
    assert s.open_issues == ["lint"] and s.hypotheses == []


def test_merge_keeps_the_state_block_under_budget_and_drops_least_durable_first() -> None:
    s = AgentState(goals=["rename fetch to fetch_page everywhere"], constraints=["no new deps"])
    for i in range(40):
        s = merge_state(
            s,
            StateUpdate(
                hypotheses=[f"hypothesis number {i} " + "x" * 100],
                decisions=[f"decision {i} " + "y" * 100],
                open_issues=[f"issue {i}"],
                history="h" * 1000,
            ),
            budget_tokens=300,
        )
        assert estimate_tokens(render_state(s)) <= 300
    assert s.goals == ["rename fetch to fetch_page everywhere"]
    assert s.constraints == ["no new deps"]
    assert s.hypotheses == []  # evicted before decisions
    assert all(len(h) <= 240 for h in s.history)


def test_merge_caps_items_per_list() -> None:
    s = merge_state(
        AgentState(), StateUpdate(open_issues=[f"i{i}" for i in range(50)]), max_items=5
    )
    assert s.open_issues == ["i45", "i46", "i47", "i48", "i49"]


# --- strict parsing ---------------------------------------------------------------------------

GOOD_ACTION = {"type": "search_replace", "edits": [{"path": "a.py", "search": "x", "replace": "y"}]}


def test_parse_good_action_answer_keeps_think_and_state_update() -> None:
    text = render_answer(
        "action", GOOD_ACTION, think="swap x", state_update={"history": "edited a.py"}
    )
    parsed = parse_role_answer("actor", text)
    assert isinstance(parsed.payload, SearchReplaceAction)
    assert parsed.payload.edits[0].replace == "y"
    assert parsed.think == "swap x"
    assert parsed.state_update == StateUpdate(history="edited a.py")


def test_parse_tolerates_whitespace_and_closing_tags_inside_json_strings() -> None:
    action = {"type": "write_file", "path": "x.html", "content": "</action><state_update>"}
    text = (
        "\n <think>a</think>\n\n<action>\n"
        + msgspec.json.encode(action).decode()
        + "\n</action>\n<state_update>{}</state_update>\n"
    )
    parsed = parse_role_answer("actor", text)
    assert parsed.payload.content == "</action><state_update>"


def test_parse_is_generic_over_tag_and_struct() -> None:
    plan = {
        "steps": [{"id": 1, "description": "rename", "files": ["a.py"]}],
        "files": ["a.py"],
        "test_decision": "required",
        "rationale": "security word",
    }
    parsed = parse_answer(render_answer("plan", plan, state_update={}), "plan", PlanOutput)
    assert parsed.payload.steps[0].files == ["a.py"]
    verdict = parse_role_answer(
        "critic", render_answer("verdict", {"verdict": "reject", "reasons": ["no tests"]})
    )
    assert verdict.payload == CriticOutput(verdict="reject", reasons=["no tests"])
    assert verdict.state_update is None
    finish = parse_answer(
        render_answer("action", {"type": "finish", "summary": "s"}),
        "action",
        FinishAction,
        state_update=False,
    )
    assert finish.payload.summary == "s"


@pytest.mark.parametrize(
    ("text", "finish_reason", "reason", "hint"),
    [
        ("", None, "empty", "empty"),
        ("   ", "length", "truncated", "empty"),
        ('{"type": "finish"}', None, "missing_tag", "Expected <think>"),
        ("<think>thinking and thinking", "length", "truncated", "never closed"),
        ("<think>t</think><plan>{}</plan>", None, "missing_tag", "Expected <action>"),
        ('<think>t</think><action>{"type": "finish", "summ', "length", "truncated", "incomplete"),
        ('<think>t</think><action>{"type": "finish",}</action>', None, "invalid_json", "line 1"),
        ("<think>t</think><action>{'type': 'finish'}</action>", None, "invalid_json", "invalid"),
        (
            '<think>t</think><action>{"type": "finish", "summary": 3}</action><state_update>{}</state_update>',
            None,
            "schema_mismatch",
            "$.summary",
        ),
        (
            '<think>t</think><action>{"type": "teleport"}</action><state_update>{}</state_update>',
            None,
            "schema_mismatch",
            "teleport",
        ),
        (
            '<think>t</think><action>{"type": "finish", "summary": "s"}</action>',
            None,
            "missing_tag",
            "<state_update>",
        ),
        (
            '<think>t</think><action>{"type": "finish", "summary": "s"}</action><state_update>{"goals": ["a"]',
            "length",
            "truncated",
            "incomplete",
        ),
        (
            '<think>t</think><action>{"type": "finish", "summary": "s"} trailing</action>',
            None,
            "unexpected_text",
            "</action>",
        ),
        (
            '<think>t</think><action>{"type": "finish", "summary": "s"}</action><state_update>{}</state_update> PS: hi',
            None,
            "unexpected_text",
            "PS: hi",
        ),
        (
            '<think>t</think><action>{"type": "finish", "summary": "s"}</action><state_update>{"mood": "ok"}</state_update>',
            None,
            "schema_mismatch",
            "mood",
        ),
    ],
)
def test_parse_failures_are_structured(
    text: str, finish_reason: str | None, reason: str, hint: str
) -> None:
    with pytest.raises(AnswerError) as info:
        parse_role_answer("actor", text, finish_reason=finish_reason)
    assert info.value.reason == reason
    assert hint in info.value.message


def test_retry_messages_carry_the_rejection_for_the_model() -> None:
    with pytest.raises(AnswerError) as info:
        parse_role_answer("actor", "<think>x</think><action>{nope}</action>")
    msgs = retry_messages("<think>x</think><action>{nope}</action>", info.value)
    assert [m.role for m in msgs] == ["assistant", "user"]
    assert "invalid_json" in msgs[1].content
    req = build_request("actor", prefix="p", extra=msgs)
    assert req.messages[-1] == msgs[-1]
