"""The shortest rule that makes the same rewrite (trainer/minrule.py): a constraint the task's
own files do not need is dropped from a training target, one they need is kept — decided by
the sandbox's ast-grep path on those files, byte for byte."""

from __future__ import annotations

from typing import Any

import yaml

from oopav.events.actions import AstGrepAction
from oopav.models.profiles import compact_answer
from oopav.sandbox.astgrep import rewrite_source, rule_from_action
from oopav.trainer.minrule import minimal_answer, minimal_rule, minimize_records

# synth:'s attribute rename since wave 3d: the identifier, inside an attribute's name field.
RULE = """id: synth-1
language: python
rule:
  kind: identifier
  regex: ^get$
  inside:
    kind: attribute
    field: attribute
    stopBy: neighbor
fix: get_v2
"""
# `get` only as an attribute: the context changes nothing here.
ONLY_ATTRIBUTE = "x = d.get(1)\ny = cache.get\n"
# `get` also a plain name: without the context that name would be renamed too.
ALSO_A_NAME = "x = d.get(1)\nget = 3\nprint(get)\n"


def rewrite(rule_yaml: str, source: str) -> str:
    return rewrite_source(source, rule_from_action(AstGrepAction(rule=rule_yaml)))[0]


def test_a_redundant_inside_is_dropped() -> None:
    short = minimal_rule(RULE, {"mod.py": ONLY_ATTRIBUTE})
    rule = yaml.safe_load(short)["rule"]
    assert rule == {"kind": "identifier", "regex": "^get$"}  # the name stays, the context goes
    assert len(short) < len(RULE)
    assert rewrite(short, ONLY_ATTRIBUTE) == rewrite(RULE, ONLY_ATTRIBUTE) != ONLY_ATTRIBUTE


def test_a_needed_inside_is_kept() -> None:
    short = minimal_rule(RULE, {"mod.py": ALSO_A_NAME})
    rule = yaml.safe_load(short)["rule"]
    assert "inside" in rule and rule["regex"] == "^get$"
    assert rewrite(short, ALSO_A_NAME) == rewrite(RULE, ALSO_A_NAME)
    assert rewrite(short, ALSO_A_NAME) == "x = d.get_v2(1)\nget = 3\nprint(get)\n"


def test_every_file_of_the_task_decides() -> None:
    # The attribute-only file alone would let the context go; the second file needs it.
    short = minimal_rule(RULE, {"mod.py": ONLY_ATTRIBUTE, "other.py": ALSO_A_NAME})
    assert "inside" in yaml.safe_load(short)["rule"]


def test_a_rule_that_changes_nothing_is_left_as_it_is() -> None:
    # Nothing to decide by: every removal would "agree" on an unchanged file.
    assert minimal_rule(RULE, {"mod.py": "x = 1\n"}) == RULE
    assert minimal_rule("not: [valid", {"mod.py": ONLY_ATTRIBUTE}) == "not: [valid"


def answer(rule_yaml: str) -> str:
    return compact_answer({"type": "ast_grep", "rule": rule_yaml})


def test_records_are_minimized_against_their_own_sessions_files() -> None:
    recs: list[dict[str, Any]] = [
        {
            "session_id": sid,
            "seq": 1,
            "completion": [{"role": "assistant", "content": answer(RULE)}],
        }
        for sid in ("a", "b", "held")
    ]
    files = {"a": {"mod.py": ONLY_ATTRIBUTE}, "b": {"mod.py": ALSO_A_NAME}}
    out, counts = minimize_records(recs, files.get)
    texts = [r["completion"][0]["content"] for r in out]
    assert texts[0] == minimal_answer(answer(RULE), files["a"]) != answer(RULE)
    assert "inside" in texts[1]  # needed on b's file
    assert texts[2] == answer(RULE)  # no files given: left as recorded
    assert recs[0]["completion"][0]["content"] == answer(RULE)  # the input is not modified
    assert counts["records"] == 3 and counts["shorter"] == 2
    assert counts["mean_chars_after"] < counts["mean_chars_before"]
