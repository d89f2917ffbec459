"""The critic's configuration, its bounded and redacted view, and what each verdict does."""

from __future__ import annotations

import pytest

from oopav.reflection.critique import (
    CriticConfig,
    GateLine,
    build_pack,
    critic_config,
    effect,
    prepare,
)


def test_config_forms() -> None:
    assert critic_config(None) is None
    assert critic_config({"critic": False}) is None
    assert critic_config({"critic": True}) == CriticConfig()
    cfg = critic_config({"critic": {"model": "openai:http://h/v1#m", "redaction": "strict"}})
    assert cfg is not None and cfg.redaction == "strict" and cfg.max_calls == 3
    assert critic_config({"critic": {"enabled": False}}) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("yes", "must be true, false or a table"),
        ({"redaction": "lenient"}, "policy.critic.redaction"),
        ({"max_calls": -1}, "policy.critic.max_calls"),
        ({"unknown": 1}, "policy.critic.unknown"),
    ],
)
def test_bad_config_names_the_field(raw: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        critic_config({"critic": raw})


def test_pack_is_bounded_and_redacted() -> None:
    diff = "+API_KEY = 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'\n" + "+x = 1\n" * 20_000
    pack = build_pack(
        "Rename fetch",
        ["1. rename the definition", "2. rename the calls"],
        diff,
        [GateLine("tests", True, evidence="3 passed"), GateLine("lint", False, evidence="E501")],
    )
    assert "### Task\nRename fetch" in pack and "- lint: FAILED — E501" in pack
    assert "more bytes not shown" in pack and len(pack.encode()) < 45_000
    sent = prepare(pack, CriticConfig())
    assert "sk-proj-" not in sent.text and "[REDACTED:" in sent.text
    assert sent.sha256 == prepare(pack, CriticConfig()).sha256


def test_verdict_policy_table() -> None:
    assert effect("approve") == "proceed"
    assert effect("block") == "replan"
    for v in ("caution", "refused", "unavailable", "something-new"):
        assert effect(v) == "warn"
