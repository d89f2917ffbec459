"""The observer action rules (oopav.decide.observer)."""

from __future__ import annotations

import pytest

from oopav.decide import ObserverFacts, decide_observer_action, is_secret_path
from oopav.events.catalog import Finding

PARSE = Finding(path="a.py", line=3, kind="parse_error", message="syntax error at column 1")
STUB = Finding(path="a.py", line=4, kind="stub", message="empty body (pass) in `f`")


def decide(**kw: object) -> tuple[str, list[str]]:
    d = decide_observer_action(ObserverFacts(**kw))  # type: ignore[arg-type]
    return d.action, d.reasons


def test_clean_change_continues() -> None:
    action, reasons = decide(
        changed_files=["a.py"], expected_change=True, tests_before=True, tests_after=True
    )
    assert action == "continue"
    assert reasons == ["rule 7: no rule fired"]


@pytest.mark.parametrize(
    ("facts", "action", "rule"),
    [
        ({"touched_paths": [".env"]}, "escalate", "rule 1"),
        ({"changed_files": ["deploy/id_rsa"]}, "escalate", "rule 1"),
        ({"consecutive_failures": 3}, "escalate", "rule 2"),
        ({"new_parse_errors": [PARSE], "changed_files": ["a.py"]}, "negative_example", "rule 3"),
        ({"new_stubs": [STUB], "changed_files": ["a.py"]}, "negative_example", "rule 4"),
        (
            {"tests_before": True, "tests_after": False, "changed_files": ["a.py"]},
            "replan",
            "rule 5",
        ),
        ({"expected_change": True}, "more_evidence", "rule 6"),
    ],
)
def test_each_rule_alone(facts: dict[str, object], action: str, rule: str) -> None:
    got, reasons = decide(**facts)
    assert got == action
    assert len(reasons) == 1 and reasons[0].startswith(rule + ":")


def test_rule_thresholds_and_non_triggers() -> None:
    assert decide(consecutive_failures=2)[0] == "continue"
    assert decide_observer_action(
        ObserverFacts(consecutive_failures=2), failure_limit=2
    ).action == ("escalate")
    # Failing before and after, or unknown before, is not a regression caused by the change.
    assert decide(tests_before=False, tests_after=False, changed_files=["a.py"])[0] == "continue"
    assert decide(tests_before=None, tests_after=False, changed_files=["a.py"])[0] == "continue"
    # A command that is not expected to edit files changing nothing is fine.
    assert decide(expected_change=False)[0] == "continue"
    assert decide(touched_paths=[".env.example", "keys/id_rsa.pub"])[0] == "continue"


def test_most_severe_wins_and_every_fired_rule_is_listed() -> None:
    action, reasons = decide(
        new_parse_errors=[PARSE],
        new_stubs=[STUB],
        tests_before=True,
        tests_after=False,
        changed_files=["a.py"],
    )
    assert action == "negative_example"
    assert [r.split(":")[0] for r in reasons] == ["rule 3", "rule 4", "rule 5"]

    action, reasons = decide(
        touched_paths=["~/.ssh/config"], new_stubs=[STUB], changed_files=["a.py"]
    )
    assert action == "escalate"
    assert [r.split(":")[0] for r in reasons] == ["rule 1", "rule 4"]

    action, _ = decide(tests_before=True, tests_after=False, expected_change=True)
    assert action == "replan"


def test_baseline_only_checks_secrets_and_failures() -> None:
    assert decide(phase="baseline", new_parse_errors=[PARSE], expected_change=True)[0] == "continue"
    assert decide(phase="baseline", touched_paths=["secrets.yaml"])[0] == "escalate"


def test_reasons_name_locations_and_stay_bounded() -> None:
    many = [Finding(path=f"m{i}.py", line=i, kind="stub", message="x") for i in range(10)]
    _, reasons = decide(new_stubs=many, changed_files=["m0.py"])
    assert reasons == ["rule 4: 10 (m0.py:0, m1.py:1, m2.py:2, …) stubs introduced"]


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "app/.env.production",
        "/home/u/.ssh/id_ed25519",
        "id_rsa",
        "certs/server.pem",
        "tls/private.key",
        ".netrc",
        "~/.aws/config",
        "~/.pypirc",
        "secrets.json",
        "config\\credentials",
        ".git-credentials",
    ],
)
def test_secret_paths(path: str) -> None:
    assert is_secret_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "",
        "src/env.py",
        ".env.example",
        "id_rsa.pub",
        "docs/secrets-management.md",
        "keys.py",
        "environment.yml",
    ],
)
def test_not_secret_paths(path: str) -> None:
    assert not is_secret_path(path)
