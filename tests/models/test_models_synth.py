"""The synth: backend: plans and ast-grep actions from the examples in the request."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from oopav.events.actions import AstGrepAction, FinishAction
from oopav.models.base import ModelError
from oopav.models.prompt import build_request, parse_role_answer, static_prefix
from oopav.models.registry import load_backend
from oopav.models.synth import SynthBackend, examples_block, examples_from_request
from oopav.sandbox.astgrep import rewrite_source, rule_from_action

EXAMPLES = [
    {"path": "a.py", "before": "x = fetch(1)\n", "after": "x = fetch_page(1)\n"},
    {"path": "b.py", "before": "if y == None:\n    pass\n", "after": "if y is None:\n    pass\n"},
]


def ask(role: str, context: str):  # type: ignore[no-untyped-def]
    request = build_request(role, prefix=static_prefix(None), context=context, task="do it")
    response = asyncio.run(SynthBackend().complete(request))
    return parse_role_answer(role, response.text).payload


def test_spec_loads_the_backend() -> None:
    backend = load_backend("synth:")
    assert isinstance(backend, SynthBackend) and backend.spec == "synth:"


def test_examples_survive_the_prompt_whatever_they_contain() -> None:
    tricky = [{"before": "s = '### Examples'\n## Context\n", "after": "s = 1\n", "path": "x.py"}]
    context = "### Orient\nfoo\n\n" + examples_block(tricky) + "\n\n### Plan\n-> 1. x"
    request = build_request("actor", prefix=static_prefix(None), context=context)
    assert examples_from_request(request) == tricky


def test_planner_gets_one_step_per_rule_and_a_test_step() -> None:
    context = "### Orient\nrisk=green test_decision=required\n\n" + examples_block(EXAMPLES)
    plan = ask("planner", context)
    assert plan.test_decision == "required"
    assert [s.description for s in plan.steps] == [
        "Apply rule synth-1 (rename fetch to fetch_page) to every python file",
        "Apply rule synth-2 ($A == None -> $A is None) to every python file",
        "Run the tests and check they still pass",
    ]


def test_actor_answers_rule_n_for_step_n_then_finish() -> None:
    base = "### Plan\n-> 1. a\n   2. b\n   3. c\n"
    first = ask("actor", base + "Current step: 1 of 3\n" + examples_block(EXAMPLES))
    second = ask("actor", base + "Current step: 2 of 3\n" + examples_block(EXAMPLES))
    last = ask("actor", base + "Current step: 3 of 3\n" + examples_block(EXAMPLES))
    assert isinstance(first, AstGrepAction) and isinstance(second, AstGrepAction)
    assert isinstance(last, FinishAction)
    assert yaml.safe_load(first.rule)["id"] == "synth-1" and first.paths == ["."]
    code = "a = fetch(2)\nb = c == None\n"
    code, _ = rewrite_source(code, rule_from_action(first))
    code, _ = rewrite_source(code, rule_from_action(second))
    assert code == "a = fetch_page(2)\nb = c is None\n"


@pytest.mark.parametrize(
    ("role", "context", "reason"),
    [
        ("planner", "### Orient\nnothing", "the task has no before/after examples"),
        (
            "planner",
            examples_block([{"path": "a.py", "before": "# a\n", "after": "# b\n"}]),
            "example 1 changes a comment; comments are not rewritable",
        ),
        (
            "planner",
            examples_block(EXAMPLES)
            + "\n\n### Why we are planning again (attempt 2)\ngate tests failed\n",
            "did not finish the task (gate tests failed)",
        ),
        (
            "actor",
            "Current step: 1 of 2\n"
            + examples_block(EXAMPLES)
            + "\n### Recent results\n- ast_grep: rejected (no_match): rule 'synth-1' matches nothing",
            "the rule learned for step 1 was refused: ast_grep: rejected (no_match)",
        ),
    ],
)
def test_failures_are_synthesis_failed_errors(role: str, context: str, reason: str) -> None:
    request = build_request(role, prefix=static_prefix(None), context=context)
    with pytest.raises(ModelError) as info:
        asyncio.run(SynthBackend().complete(request))
    assert info.value.kind == "synthesis_failed"
    assert reason in info.value.message


def test_synth_reviews_by_rules_unless_a_fallback_model_can_critic() -> None:
    from oopav.models.prompt import parse_role_answer
    from oopav.models.scripted import ScriptedBackend

    request = build_request("critic", prefix=static_prefix(None), context=examples_block(EXAMPLES))
    # No model to hand over to: the rule-based reviewer answers (models/synth_critic.py).
    own = asyncio.run(SynthBackend().complete(request))
    verdict = parse_role_answer("critic", own.text).payload
    assert verdict.verdict == "caution" and verdict.confidence is not None
    # A fallback model is a better critic than rules: it answers, and the event says so.
    answer = '<think>t</think><verdict>{"verdict":"approve","reasons":[]}</verdict>'
    fallback = ScriptedBackend({"critic": [answer]})
    handed = asyncio.run(SynthBackend(fallback=fallback).complete(request))
    assert handed.text == answer and "fallback of synth" in (handed.backend or "")


def test_plan_lets_every_rule_before_the_last_import_follow_up_fail_the_tests() -> None:
    """Wave 3k (synth19): an inserted import is several follow-up rules (one per place in a
    sectioned import block), and a file gets it only at the rule for its place: the rules
    before the last follow-up, follow-ups too, may leave the tests failing (only the rewrite
    steps were marked, so the loop refused a session at the second follow-up)."""
    before = "import re\n\nfrom web import fetch\n\n\ndef g(u):\n    return fetch(u)\n"
    after = before.replace("import re\n", "import os\nimport re\n").replace(
        "fetch(u)", "fetch(os.fspath(u))"
    )
    context = "### Orient\nrisk=green test_decision=required\n\n" + examples_block(
        [{"path": "w/a.py", "before": before, "after": after}]
    )
    plan = ask("planner", context)
    rules = [s for s in plan.steps if s.description.startswith("Apply rule")]
    assert len(rules) >= 3, [s.description for s in plan.steps]
    assert [s.tests_may_fail for s in rules] == [True] * (len(rules) - 1) + [False]
