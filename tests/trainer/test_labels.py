"""Labels that tell the truth: undone and refused answers are negatives, never SFT targets."""

from __future__ import annotations

from trainer_sessions import numbered, rolled_back_session, session

from oopav.events.ids import derive_id
from oopav.trainer.datasets import Filters, build, session_records

S1, S2 = (derive_id(f"label{i}", "test", 0) for i in (1, 2))


def _records(fmt: str, filters: Filters = Filters()) -> list[dict]:
    return session_records(numbered(rolled_back_session(S1)), filters).records[fmt]


def test_rolled_back_and_failed_gate_answers_are_not_sft_targets() -> None:
    sft = _records("sft")
    answers = [r["completion"][0]["content"] for r in sft]
    # Only the second rule (kept) and the last finish (verified) are demonstrations.
    assert [r["status"] for r in sft] == ["applied", "applied"]
    assert "fetch_page($A)" in answers[0] and "TODO" not in "".join(answers)
    assert "tests pass" in answers[1]
    everything = _records("sft", Filters(require_parsed=False, require_applied=False))
    assert [r["status"] for r in everything] == [
        "rolled_back",
        "rolled_back",
        "failed_gate",
        "applied",
        "applied",
    ]


def test_srl_keeps_only_kept_steps_and_history_says_what_was_undone() -> None:
    srl = _records("srl")
    assert [r["action"]["pattern"] for r in srl if r["action_type"] == "ast_grep"] == ["fetch($A)"]
    last = srl[-1]
    assert [h["status"] for h in last["history"]] == [
        "rolled_back",
        "rolled_back",
        "failed_gate",
        "applied",
    ]


def test_negatives_dataset_says_why() -> None:
    neg = _records("negatives")
    assert [(r["status"], r["why"]) for r in neg] == [
        ("rolled_back", "rolled back: rule 4: 1 stubs introduced"),
        ("rolled_back", "rolled back: gate tests failed"),
        ("failed_gate", "verification failed at gate tests"),
    ]
    assert "TODO($$$A)" in neg[0]["rejected"]
    assert neg[0]["prompt"][-1]["role"] == "user"
    # The classic session: the garbled answer and the rejected rule.
    classic = session_records(numbered(session(S2)), Filters()).records["negatives"]
    assert [r["status"] for r in classic] == ["unparsed", "rejected"]
    assert classic[1]["why"].startswith("rejected (rule_invalid)")


def test_preference_pairs_where_a_later_attempt_at_the_step_was_kept() -> None:
    pairs = _records("pairs")
    # Both rolled-back rules are paired with the kept one at the same step.
    assert len(pairs) == 2
    for p in pairs:
        assert "fetch_page($A)" in p["chosen"][0]["content"]
        assert p["chosen"][0]["content"] != p["rejected"][0]["content"]
        assert p["step"] == 1
    assert "TODO" in pairs[0]["rejected"][0]["content"]
    # The classic session: the rejected rule, then the applied one.
    classic = session_records(numbered(session(S2)), Filters()).records["pairs"]
    assert len(classic) == 1 and "fetch(" in classic[0]["rejected"][0]["content"]
    recs, manifest = build("pairs", [session_records(numbered(session(S2)), Filters())], Filters())
    assert manifest.count == 1 and recs[0]["id"]
