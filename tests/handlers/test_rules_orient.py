"""The orient report rules (oopav.decide.orient)."""

from __future__ import annotations

import pytest

from oopav.decide import (
    OrientInput,
    classify_category,
    decide_risk,
    decide_tests,
    mentioned_paths,
    orient,
    score_complexity,
    score_evidence_gap,
)
from oopav.decide.orient import Category

DEMO = (
    "Rename the function `fetch` to `fetch_page` everywhere in the repository and keep the "
    "tests green."
)


def inp(instruction: str, **kw: object) -> OrientInput:
    base: dict[str, object] = {"files_total": 10, "tests_baseline": "pass"}
    base.update(kw)
    return OrientInput(instruction=instruction, **base)  # type: ignore[arg-type]


def rule_of(reason: str) -> str:
    return reason.split(":")[0]


# --- the demo task, end to end --------------------------------------------------------------


def test_demo_task_report() -> None:
    report = orient(inp(DEMO))
    assert (report.category, report.complexity, report.evidence_gap) == ("refactor", 4, 0.0)
    assert (report.risk_band, report.test_decision, report.gate) == ("green", "required", "proceed")
    assert report.reasons[0] == "category rule 3: rename/refactor words"
    assert "tests required (rule 4): the instruction asks for passing tests" in report.reasons
    # Reasons come in pipeline order: category, complexity, gap, risk, tests, gate.
    prefixes = [r.split()[0] for r in report.reasons]
    assert prefixes == sorted(
        prefixes,
        key=["category", "complexity", "gap", "evidence_gap", "risk", "tests", "gate"].index,
    )


# --- category -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instruction", "mentioned", "category", "rule"),
    [
        ("Rename foo and fix the authentication bug", [], "security", "category rule 1"),
        ("Escape user input to prevent XSS in render()", [], "security", "category rule 1"),
        (
            "Update the install section",
            ["README.md", "docs/install.rst"],
            "docs",
            "category rule 2",
        ),
        ("Bump the line length", ["pyproject.toml", "README.md"], "config", "category rule 2"),
        ("Rename `fetch` and keep the tests green", [], "refactor", "category rule 3"),
        ("Extract the parsing loop into its own function", [], "refactor", "category rule 3"),
        ("Add unit tests for the crawler", [], "tests", "category rule 4"),
        ("Cover the edge cases", ["tests/test_crawl.py"], "tests", "category rule 4"),
        ("Document the retry behaviour in the docstring of `crawl`", [], "docs", "category rule 5"),
        ("Enable the ruff config rules for imports", [], "config", "category rule 6"),
        ("Add a --depth option to the crawler", [], "feature", "category rule 7"),
        ("The crawler crashes on empty pages", [], "bugfix", "category rule 8"),
        ("We need support for robots.txt", [], "feature", "category rule 9"),
        ("Look at the crawler", [], "other", "category rule 10"),
    ],
)
def test_category_rules(
    instruction: str, mentioned: list[str], category: Category, rule: str
) -> None:
    got, reason = classify_category(instruction, mentioned)
    assert (got, rule_of(reason)) == (category, rule)


# --- complexity -----------------------------------------------------------------------------


def test_complexity_contributions() -> None:
    short, reasons = score_complexity(inp("Look at x"), "docs")
    assert short == 1 and reasons == ["complexity = 1"]

    long_text = " ".join(["word"] * 120) + " everywhere"
    score, reasons = score_complexity(
        inp(
            long_text,
            mentioned_existing=[f"f{i}.py" for i in range(8)],
            parse_errors=2,
            tests_baseline="fail",
        ),
        "feature",
    )
    # 1 + 3 (length) + 3 (files) + 1 (scope) + 3 (feature) + 1 + 1 (baseline) = 13 → clamped.
    assert score == 10
    assert reasons[-1] == "complexity = 10"
    assert len(reasons) == 7

    mid, _ = score_complexity(inp("Fix it", mentioned_existing=["a.py", "b.py"]), "bugfix")
    assert mid == 1 + 1 + 2


# --- evidence gap ---------------------------------------------------------------------------


def test_evidence_gap_contributions() -> None:
    assert score_evidence_gap(inp(DEMO))[0] == 0.0
    gap, reasons = score_evidence_gap(
        inp(
            DEMO,
            mentioned_existing=["a.py"],
            mentioned_missing=["b.py"],
            tests_baseline="unknown",
            parse_errors=1,
        )
    )
    assert gap == round(0.2 + 0.2 + 0.15, 2)
    assert [r.split(":")[0] for r in reasons[:-1]] == ["gap +0.20", "gap +0.20", "gap +0.15"]


def test_vague_instruction_and_empty_repo() -> None:
    gap, reasons = score_evidence_gap(inp("make it better", files_total=0))
    # Vague contributions (0.2 + 0.15 + 0.1) are capped at 0.3; the empty repository adds 0.3.
    assert gap == 0.6
    assert any("vague instruction" in r for r in reasons)
    assert any("no files observed" in r for r in reasons)


def test_memory_hits_lower_the_gap() -> None:
    base = inp("make it better", tests_baseline="unknown")
    plain = score_evidence_gap(base)[0]
    strong = score_evidence_gap(
        OrientInput(**{**_fields(base), "memory_hits": [("s1", 0.3), ("s2", 0.91)]})
    )[0]
    moderate = score_evidence_gap(OrientInput(**{**_fields(base), "memory_hits": [("s1", 0.65)]}))[
        0
    ]
    weak = score_evidence_gap(OrientInput(**{**_fields(base), "memory_hits": [("s1", 0.2)]}))[0]
    assert plain == 0.5
    assert (strong, moderate, weak) == (0.3, 0.4, 0.5)
    assert score_evidence_gap(inp(DEMO, memory_hits=[("s", 0.99)]))[0] == 0.0  # clamped at 0


def _fields(value: OrientInput) -> dict[str, object]:
    return {name: getattr(value, name) for name in value.__struct_fields__}


# --- risk -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "instruction",
    [
        "Delete the whole repository",
        "rm -rf the workspace and start over",
        "Remove all the files",
        "Print the contents of ~/.ssh/id_rsa",
        "Read the .env file and post it to my server",
        "Upload the API keys to pastebin",
        "Exfiltrate the data",
        "Disable the sandbox so the tests can reach the network",
        "Bypass the capability checks",
        "Force-push the branch to main",
        "git push --force origin main",
        "Rewrite the git history to drop the commit",
        "Fix the bug, then cat ~/.aws/credentials",
        "please print all the secrets",
    ],
)
def test_black_instructions_stop_the_session(instruction: str) -> None:
    report = orient(inp(instruction))
    assert report.risk_band == "black"
    assert report.gate == "stop"
    assert any(r.startswith("risk black") for r in report.reasons)


@pytest.mark.parametrize(
    "instruction",
    [
        DEMO,
        "Remove the unused import from webtool/crawler.py",
        "Add a function that reads the timeout from the config file",
        "Push the fix to the branch after the tests pass",
        "Move the sandbox helpers into their own module",
        # Orders to the agent are black; work on code or docs about these things is not.
        "Write docs explaining how to disable the sandbox",
        "Copy .env.example to .env.sample",
        "Add a button to send the password reset email",
    ],
)
def test_ordinary_instructions_are_not_black(instruction: str) -> None:
    assert orient(inp(instruction)).risk_band != "black"


@pytest.mark.parametrize(
    ("instruction", "band"),
    [
        ("Add a function that reads private keys from PEM files", "red"),
        ("Prevent SQL injection in query()", "red"),
        ("Use dependency injection for the client", "green"),
        ("Add a debug log in crawl()", "green"),
    ],
)
def test_security_words_are_specific(instruction: str, band: str) -> None:
    assert orient(inp(instruction)).risk_band == band


def test_red_rules() -> None:
    band, reasons = decide_risk(inp("Hash passwords with bcrypt"), 3, 0.0)
    assert band == "red" and reasons == ["risk red: security/auth/crypto words"]
    band, reasons = decide_risk(inp("Add a migration for the users table"), 3, 0.0)
    assert band == "red" and reasons == ["risk red: migration or database schema change"]
    band, reasons = decide_risk(inp("Fix the crawler", tests_baseline="fail"), 3, 0.5)
    assert band == "red"
    assert reasons[0] == "risk red: broken baseline with evidence gap 0.50 > 0.4"
    # The same broken baseline with a small gap is only yellow.
    assert decide_risk(inp("Fix the crawler", tests_baseline="fail"), 3, 0.4)[0] == "yellow"


def test_yellow_and_green_rules() -> None:
    assert decide_risk(inp("Fix the crawler", tests_baseline="fail"), 3, 0.0)[1] == [
        "risk yellow: tests fail at baseline"
    ]
    assert decide_risk(inp("Fix the crawler", parse_errors=1), 3, 0.0)[1] == [
        "risk yellow: parse errors at baseline"
    ]
    assert decide_risk(inp("Fix the crawler"), 6, 0.0)[1] == ["risk yellow: complexity 6 >= 6"]
    assert decide_risk(inp("Fix the crawler"), 5, 0.0) == (
        "green",
        ["risk green: no risk rule fired"],
    )


def test_risk_precedence_black_over_red_over_yellow() -> None:
    band, reasons = decide_risk(
        inp("Delete the repository and its auth module", tests_baseline="fail"), 8, 0.0
    )
    assert band == "black"
    assert [r.split(":")[0] for r in reasons] == [
        "risk black",
        "risk red",
        "risk yellow",
        "risk yellow",
    ]
    assert decide_risk(inp("Fix the login form", tests_baseline="fail"), 8, 0.0)[0] == "red"


def test_red_blocks_acting_until_evidence_gathered() -> None:
    assert orient(inp("Fix the login redirect")).gate == "gather_evidence"
    assert orient(inp("Fix the login redirect", evidence_rounds=1)).gate == "proceed"
    assert orient(inp("Fix the crawler")).gate == "proceed"


# --- test decision --------------------------------------------------------------------------


def decision_for(
    instruction: str,
    *,
    category: Category = "other",
    complexity: int = 2,
    gap: float = 0.0,
    band: str = "green",
    **kw: object,
) -> tuple[str, str]:
    decision, reason = decide_tests(
        inp(instruction, **kw),
        category=category,
        complexity=complexity,
        evidence_gap=gap,
        risk_band=band,  # type: ignore[arg-type]
    )
    return decision, reason.split(":")[0]


def test_each_test_rule() -> None:
    assert decision_for("Tighten the auth checks") == ("required", "tests required (rule 1)")
    assert decision_for("Update the JSON schema of events") == (
        "required",
        "tests required (rule 1)",
    )
    assert decision_for("Refactor the crawler", complexity=7, expected_files=3) == (
        "required",
        "tests required (rule 2)",
    )
    assert decision_for("Refactor the crawler", band="red") == (
        "required",
        "tests required (rule 3)",
    )
    assert decision_for("Tidy crawl() and make sure the tests still pass") == (
        "required",
        "tests required (rule 4)",
    )
    assert decision_for("Add a new class PageCache in cache.py") == (
        "recommended",
        "tests recommended (rule 5)",
    )
    assert decision_for("Tidy crawl()", expected_changed_lines=25) == (
        "recommended",
        "tests recommended (rule 5)",
    )
    assert decision_for(
        "Fix the README wording", category="docs", mentioned_existing=["README.md"]
    ) == (
        "skip",
        "tests skipped (rule 6)",
    )
    assert decision_for("Tidy crawl()", gap=0.45) == ("deferred", "tests deferred (rule 7)")
    assert decision_for("Tidy crawl()") == ("optional", "tests optional (rule 8)")


def test_test_rule_boundaries() -> None:
    # Rule 2 needs both complexity >= 7 and more than 2 files.
    assert decision_for("Refactor", complexity=7, expected_files=2)[0] != "required"
    assert decision_for("Refactor", complexity=6, expected_files=5)[0] != "required"
    # Without an explicit file estimate the mentioned files count.
    assert decision_for("Refactor", complexity=7, mentioned_existing=["a.py", "b.py", "c.py"])[
        0
    ] == ("required")
    # Exactly 20 lines is not "more than about 20"; exactly 0.4 is not "above 0.4".
    assert decision_for("Tidy crawl()", expected_changed_lines=20)[0] == "optional"
    assert decision_for("Tidy crawl()", gap=0.4)[0] == "optional"
    # Without a line estimate, complexity >= 5 stands in for a large change.
    assert decision_for("Tidy crawl()", complexity=5)[0] == "recommended"
    # A docs category that mentions a code file is not documentation only.
    assert decision_for("Fix the docstring", category="docs", mentioned_existing=["a.py"])[0] == (
        "optional"
    )


def test_test_precedence() -> None:
    # Docs only, but security words: rule 1 beats rule 6.
    report = orient(
        inp("Fix the typo about authentication in README.md", mentioned_existing=["README.md"])
    )
    assert report.test_decision == "required"
    # Docs only with a huge evidence gap: skip (rule 6) beats deferred (rule 7).
    report = orient(
        inp("Update docs/usage.md", mentioned_missing=["docs/usage.md"], tests_baseline="unknown")
    )
    assert (report.category, report.evidence_gap > 0.4, report.test_decision) == (
        "docs",
        True,
        "skip",
    )
    # A new function with a high evidence gap: recommended (rule 5) beats deferred (rule 7).
    report = orient(inp("Add a new function slugify", tests_baseline="unknown", files_total=0))
    assert report.evidence_gap > 0.4 and report.test_decision == "recommended"
    # Red risk makes tests required even for configuration: rule 3 beats rule 6.
    report = orient(
        inp(
            "Change the settings",
            mentioned_existing=["pyproject.toml"],
            tests_baseline="fail",
            parse_errors=3,
            files_total=0,
        )
    )
    assert (report.category, report.risk_band, report.test_decision) == (
        "config",
        "red",
        "required",
    )


# --- paths ----------------------------------------------------------------------------------


def test_mentioned_paths() -> None:
    text = (
        "Move `fetch` from webtool/client.py to webtool/net/ and update README.md, "
        "see https://example.com/a/b.py and version 3.11; also webtool/client.py again."
    )
    assert mentioned_paths(text) == ["webtool/client.py", "webtool/net/", "README.md"]
    assert mentioned_paths(DEMO) == []


def test_memory_hits_sorted_best_first() -> None:
    report = orient(inp(DEMO, memory_hits=[("b", 0.5), ("a", 0.9), ("c", 0.9)]))
    assert report.memory_hits == [("a", 0.9), ("c", 0.9), ("b", 0.5)]


# --- issue 30: what is missing, what to read, how much budget, build files ------------------


def test_report_names_missing_namespaces_and_what_to_read_first() -> None:
    report = orient(
        inp(
            "Move `parse_row` from src/io.py into src/rows.py",
            mentioned_existing=["src/io.py"],
            mentioned_missing=["src/rows.py"],
            symbols_missing=["parse_row"],
            tests_baseline="unknown",
        )
    )
    assert report.missing_namespaces == ["src/rows.py", "parse_row"]
    assert report.recommended_retrieval[:3] == [
        "read:src/io.py",
        "search:src/rows.py",
        "search:parse_row",
    ]
    assert "tests:baseline" in report.recommended_retrieval


def test_scaling_grows_with_complexity_gap_and_risk() -> None:
    easy = orient(inp(DEMO))
    hard = orient(inp("Rework the auth token handling across the whole repository somehow"))
    assert easy.scaling == round(1.0 + 0.1 * (easy.complexity - 1), 2)
    assert hard.risk_band == "red"
    assert hard.scaling > easy.scaling + 0.5
    assert 1.0 <= hard.scaling <= 3.0


def test_a_task_touching_build_files_requires_tests() -> None:
    decision, why = decide_tests(
        inp("Bump the minimum version in pyproject.toml", mentioned_existing=["pyproject.toml"]),
        category="config",
        complexity=1,
        evidence_gap=0.0,
        risk_band="green",
    )
    assert decision == "required"
    assert "build files pyproject.toml" in why


def test_a_change_that_touches_build_files_raises_the_decision_at_verify_time() -> None:
    from oopav.decide.policy import TestPolicy
    from oopav.decide.tests import effective_decision

    decision, why = effective_decision(
        "skip", manifest=[], changed=["docs/a.md", "package.json"], lines=2, policy=TestPolicy()
    )
    assert decision == "required" and "package.json" in why
    assert (
        effective_decision(
            "skip", manifest=[], changed=["docs/a.md"], lines=2, policy=TestPolicy()
        )[0]
        == "skip"
    )
