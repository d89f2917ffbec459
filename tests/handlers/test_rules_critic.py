"""The critic's automatic triggers (oopav.decide.critic): pure rules over the change's facts."""

from __future__ import annotations

from oopav.decide.critic import critic_triggers, sensitive_paths, stalled_actions


def test_a_plain_small_change_fires_nothing() -> None:
    assert critic_triggers(["src/app/views.py", "tests/test_views.py"], 40, 0) == []


def test_each_trigger_fires_with_its_reason() -> None:
    why = critic_triggers(
        ["src/auth/tokens.py", ".env", "package.json", *[f"m{i}.py" for i in range(10)]],
        900,
        3,
    )
    assert why[0] == "security-sensitive files changed: src/auth/tokens.py, .env"
    assert why[1] == "dependency manifests or build files changed: package.json"
    assert why[2] == "large scope: 13 files changed (> 10)"
    assert why[3] == "large scope: 900 changed lines (> 400)"
    assert why[4] == "no progress: 3 actions in a row rolled back or rejected"


def test_thresholds_come_from_the_policy() -> None:
    files = [f"m{i}.py" for i in range(4)]
    assert critic_triggers(files, 10, 0, max_files=3) == ["large scope: 4 files changed (> 3)"]
    assert critic_triggers(files, 10, 1, stalled_steps=1) == [
        "no progress: 1 actions in a row rolled back or rejected"
    ]


def test_sensitive_names_are_whole_words_not_substrings() -> None:
    assert sensitive_paths(
        ["lib/crypto/aes.py", "app/login.py", "authors.txt", "tokenizer.py"]
    ) == [
        "lib/crypto/aes.py",
        "app/login.py",
    ]


def test_stalled_counts_back_to_the_last_applied_action() -> None:
    assert stalled_actions(["applied", "rolled_back", "rejected"]) == 2
    assert stalled_actions(["rejected", "applied"]) == 0
    assert stalled_actions([]) == 0
