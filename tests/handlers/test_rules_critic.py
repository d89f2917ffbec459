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


# -- the structured report: what the critic is shown, the synth reviewer, the confidence tier


def _pack(gates: list[tuple[str, bool, bool]], diff: str, **kw: object) -> str:
    from oopav.reflection.critique import GateLine, build_pack

    lines = [GateLine(g, passed, skipped, "why") for g, passed, skipped in gates]
    return build_pack("rename fetch", ["1. rename"], diff, lines, **kw)  # type: ignore[arg-type]  # test kwargs: shown


DIFF = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-fetch()\n+fetch_page()\n"


def test_the_pack_holds_only_the_allowed_sections_and_names_the_rest() -> None:
    from oopav.reflection.critique import critic_config

    pack = _pack([("tests", True, False)], DIFF, shown=["task", "diff"])
    assert "### Task" in pack and "### Diff" in pack
    assert "### Plan" not in pack and "### Gates" not in pack
    assert "### Withheld by policy\nplan, gates (not shown to the reviewer)" in pack
    assert "### Withheld" not in _pack([], DIFF)
    cfg = critic_config({"critic": {"allowed_artifact_fields": ["diff"], "min_confidence": 0.7}})
    assert cfg is not None and cfg.allowed_artifact_fields == ["diff"] and cfg.min_confidence == 0.7
    for bad, field in (
        ({"allowed_artifact_fields": ["env"]}, "allowed_artifact_fields"),
        ({"allowed_artifact_fields": []}, "allowed_artifact_fields"),
        ({"min_confidence": 1.5}, "min_confidence"),
    ):
        try:
            critic_config({"critic": bad})
        except ValueError as exc:
            assert f"policy.critic.{field}" in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


def test_the_synth_reviewer_blocks_a_failed_gate_and_asks_for_missing_tests() -> None:
    from oopav.models.synth_critic import review

    failed = review(_pack([("parse", True, False), ("tests", False, False)], DIFF))
    assert failed["verdict"] == "block" and failed["top_risks"] == ["tests: why"]
    assert failed["confidence"] == 0.9
    untested = review(_pack([("parse", True, False), ("tests", True, True)], DIFF))
    assert untested["verdict"] == "caution"
    assert untested["missing_tests"] == ["no test covers the change to src/app.py"]
    assert untested["top_risks"] == ["not checked (skipped): tests"]
    assert untested["confidence"] == 0.75
    passed = review(_pack([("parse", True, False), ("tests", True, False)], DIFF))
    assert passed["verdict"] == "approve" and passed["missing_tests"] == []
    assert passed["confidence"] == 1.0
    blind = review(_pack([("tests", True, False)], DIFF, shown=["task", "gates"]))
    assert blind["top_risks"] == ["no diff to review (withheld)"] and blind["confidence"] == 0.8


async def test_synth_answers_the_critic_under_the_prompt_contract() -> None:
    from oopav.models.prompt import build_request, parse_role_answer, static_prefix
    from oopav.models.synth import SynthBackend

    request = build_request(
        "critic", prefix=static_prefix(), context=_pack([("tests", False, False)], DIFF)
    )
    response = await SynthBackend().complete(request)
    parsed = parse_role_answer("critic", response.text).payload
    assert parsed.verdict == "block" and parsed.confidence == 0.9


def test_the_confidence_tier() -> None:
    from oopav.decide.gates import GateOutcome, confidence_outcome

    def critic(confidence: float | None, verdict: str | None = "approve") -> GateOutcome:
        return GateOutcome(
            "critic", True, verdict=verdict, confidence=confidence, missing_tests=["t1"]
        )

    assert confidence_outcome(None, 0.5).skipped
    off = GateOutcome("critic", True, skipped=True, evidence="no critic configured")
    assert confidence_outcome(off, 0.5).evidence == (
        "no critic verdict in this verification (no critic configured)"
    )
    assert "gives no confidence" in confidence_outcome(critic(None), 0.5).evidence
    assert "no threshold set" in confidence_outcome(critic(0.2), None).evidence
    assert confidence_outcome(critic(0.5), 0.5).passed
    low = confidence_outcome(critic(0.4, "caution"), 0.5)
    assert not low.passed and not low.skipped
    assert low.evidence.splitlines() == [
        "the critic is 0.40 sure of its caution verdict, below policy.critic.min_confidence 0.50",
        "- missing test: t1",
    ]
