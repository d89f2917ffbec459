"""Name-permutation augmentation (issue 25): the names an answer copies from its prompt are
replaced by made-up ones consistently in prompt and answer; nothing else changes; the copies
are seeded and recorded in ``training_started.data_order``. Tiny locally built tasks and
policy; the real stream."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from tiny_policy import Recipe, policy_fixtures, train

from oopav.trainer.augment import augment_names, augment_record, copied_names, replace_names

tasks_dir, base_model = policy_fixtures(40, seed=5)

PROMPT = (
    "Rename the method `clear` to `clear_safe` at every call site.\n"
    "Answer with one ast_grep action that makes the change.\n"
    "```python\n"
    "def reset(self, A):\n"
    "    self.clear()\n"
    "    clear_all = A.clear\n"
    "    return clear_all\n"
    "```"
)
ANSWER = (
    '<think></think>\n<action>{"type":"ast_grep","rule":"id: synth-1\\nlanguage: python\\n'
    'rule:\\n  kind: identifier\\n  regex: ^clear$\\nfix: clear_safe\\n"}</action>\n'
    "<state_update>{}</state_update>"
)


def _messages(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_the_copied_names_are_rewritten_consistently_in_prompt_and_answer() -> None:
    assert copied_names(PROMPT, ANSWER) == ["clear", "clear_safe"]
    got = augment_record(_messages(PROMPT), ANSWER, random.Random(1))
    assert got is not None
    old, new = got.mapping["clear"], got.mapping["clear_safe"]
    # The relation between the names stays (the same made-up word, then the suffix's word).
    assert new.startswith(old + "_") and new != old + "_safe"
    assert re.fullmatch(r"[a-z]+", old) and old not in {"clear", "self", "reset"}
    prompt, answer = got.messages[0]["content"], got.completion
    assert f"`{old}` to `{new}`" in prompt and f"self.{old}()" in prompt
    assert f"regex: ^{old}$\\nfix: {new}\\n" in answer
    # Only whole copied identifiers change: `clear_all` and the metavariable-like `A` stay,
    # and so does every word the answer does not copy (the rule's keys, the instruction).
    assert "clear_all = A." in prompt and f"A.{old}\n" in prompt
    assert "def reset(self, A):" in prompt and "Rename the method" in prompt
    assert "id: synth-1\\nlanguage: python\\nrule:\\n  kind: identifier\\n  regex: ^" in answer
    # Undoing the mapping gives the record back, byte for byte.
    back = {v: k for k, v in got.mapping.items()}
    assert replace_names(prompt, back) == PROMPT and replace_names(answer, back) == ANSWER


def test_metavariables_keywords_and_answers_that_copy_nothing_are_left_alone() -> None:
    prompt = "Accesses like `x.encode` should become `x.encode_new`.\n```python\nA = x.encode\n```"
    answer = '{"type":"ast_grep","rule":"rule:\\n  pattern: $A.encode\\nfix: $A.encode_new\\n"}'
    got = augment_record(_messages(prompt), answer, random.Random(0))
    assert got is not None and set(got.mapping) == {"encode", "encode_new"}  # not x, not A
    assert (
        "$A." + got.mapping["encode"] in got.completion and "A = x." in got.messages[0]["content"]
    )
    # No backticked name in the answer: nothing to permute, no copy.
    assert (
        augment_record(_messages("Add a docstring to `f`."), '{"type":"noop"}', random.Random(0))
        is None
    )
    assert copied_names("Make `if` and `None` `log` go", "if None log") == ["log"]  # no keyword


def test_case_shape_is_kept_and_made_up_names_never_collide() -> None:
    prompt = "`ValueError` is now `ValueError_v2`; `_handlerList` is now `_handlerList_v2`."
    answer = "ValueError ValueError_v2 _handlerList _handlerList_v2"
    for seed in range(20):
        got = augment_record(_messages(prompt), answer, random.Random(seed))
        assert got is not None
        m = got.mapping
        assert re.fullmatch(r"[A-Z][a-z]+[A-Z][a-z]+", m["ValueError"]), m
        assert re.fullmatch(r"_[a-z]+[A-Z][a-z]+", m["_handlerList"]), m
        assert re.fullmatch(re.escape(m["ValueError"]) + r"_[a-z]+[0-9]", m["ValueError_v2"]), m
        assert len(set(m.values())) == 4 and not set(m.values()) & set(m)


def test_shared_parts_keep_the_suffix_only_the_new_name_has() -> None:
    got = augment_record(_messages(PROMPT), ANSWER, random.Random(3), parts="shared")
    assert got is not None
    stem = got.mapping["clear"]
    assert got.mapping["clear_safe"] == stem + "_safe" and stem != "clear"
    assert f"regex: ^{stem}$\\nfix: {stem}_safe\\n" in got.completion
    # Names that share nothing are made up whole, as with "all".
    other = augment_record(
        _messages("Rename `foo` to `bar`."), "foo bar", random.Random(3), "shared"
    )
    assert other is not None and set(other.mapping) == {"foo", "bar"}
    assert "foo" not in other.completion and "bar" not in other.completion
    with pytest.raises(ValueError, match="augment_parts must be one of all, shared"):
        augment_record(_messages(PROMPT), ANSWER, random.Random(3), parts="some")


def test_copies_are_seeded_counted_and_only_for_records_with_names() -> None:
    records = [(_messages(PROMPT), ANSWER), (_messages("Say hi to `f`."), "<action>{}</action>")]
    rows, record = augment_names(records, copies=3, seed=7)
    assert rows[:2] == records and len(rows) == 2 + 3  # the second record copies no name
    assert record == {
        "kind": "names",
        "parts": "all",
        "copies": 3,
        "seed": 7,
        "records": 2,
        "records_with_names": 1,
        "rows": 5,
    }
    assert len({r[1] for r in rows[2:]}) == 3  # three different permutations
    assert augment_names(records, copies=3, seed=7)[0] == rows  # deterministic by seed
    assert augment_names(records, copies=3, seed=8)[0][2:] != rows[2:]
    assert (
        augment_names(records, copies=1, seed=7)[0][2] == rows[2]
    )  # copy k does not depend on the count
    with pytest.raises(ValueError, match="augment_copies must be >= 0"):
        augment_names(records, copies=-1, seed=0)


def test_an_augmented_run_records_its_copies_and_its_tokenizer_sees_them(
    nats_url: str, tmp_path: Path, recipe: Recipe, tasks_dir: Path
) -> None:
    from oopav.trainer.sft import SFTRecipe, corpus_texts, training_rows_augmented

    cfg = recipe(
        "aug", max_steps=2, batch_size=4, logging_steps=1, eval_n=0, augment="names",
        augment_copies=2, families=["rename_call"],
    )  # fmt: skip
    result, events = train(nats_url, tmp_path, "sft", cfg)
    assert result["status"] == "completed"
    started = events[0]
    aug = started.data_order["augment"]
    assert aug["kind"] == "names" and aug["copies"] == 2 and aug["seed"] == 0
    assert aug["records_with_names"] == aug["records"] > 0  # every rename copies its names
    assert started.dataset_records == aug["rows"] == 3 * aug["records"]
    assert started.config["augment"] == "names"

    recipe_cfg = SFTRecipe(**cfg)
    texts = corpus_texts(recipe_cfg)
    assert len(texts) == 3 * aug["records"]  # the tokenizer is trained on the copies too
    from transformers import AutoTokenizer

    rows, *_ = training_rows_augmented(recipe_cfg, AutoTokenizer.from_pretrained(cfg["model"]))
    assert len(rows) == aug["rows"]
    with pytest.raises(ValueError, match="augment must be one of '', 'names', not 'nmaes'"):
        training_rows_augmented(
            SFTRecipe(**{**cfg, "augment": "nmaes"}), AutoTokenizer.from_pretrained(cfg["model"])
        )
