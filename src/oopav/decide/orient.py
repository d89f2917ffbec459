"""The orient report by explicit rules: category, complexity, evidence gap, risk band and the
test decision, each with the reasons that produced it.

Everything here is a pure function of the instruction and the baseline facts, so the report in
``orient_reported`` can be re-derived and audited. Keyword rules are deliberately simple and
listed in the order they are tried; the reasons name every rule that fired.

Precedence, written down once:

* **category**: first matching rule of ``CATEGORY RULES`` (``classify_category``).
* **complexity**: a sum of independent contributions, clamped to 1..10.
* **evidence gap**: a sum of independent contributions minus the memory credit, clamped to 0..1.
* **risk band**: the most severe band whose rule fires: black > red > yellow > green.
* **test decision**: first matching rule of ``TEST RULES`` (``decide_tests``), so a
  required-rule always beats skip, e.g. a docs-only change with security words is required.
* **gate**: black → ``stop`` (the session halts and asks a person); red → ``gather_evidence``
  until at least one round of new, targeted evidence is recorded, then ``proceed`` once the
  evidence gap is at most 0.4, another round while rounds remain, else ``stop`` (ask a person);
  otherwise ``proceed``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

import msgspec

from oopav.decide.policy import TestPolicy
from oopav.decide.tests import build_manifests
from oopav.decide.vocabulary import (  # noqa: F401  (re-exported: the rules' words)
    _CLAUSE,
    _CRED_STORE,
    _LEAK_VERBS,
    _PATH_RE,
    _PATH_SUFFIXES,
    _READ_VERBS,
    _SECRET_OBJ,
    ANCHOR_RE,
    AUTH_RE,
    BLACK_RULES,
    BUGFIX_RE,
    CONFIG_NAMES,
    CONFIG_RE,
    CONFIG_SUFFIXES,
    DOC_NAMES,
    DOC_SUFFIXES,
    DOCS_RE,
    EXPLICIT_TESTS_RE,
    FEATURE_RE,
    FEATURE_VERBS,
    MIGRATION_RE,
    NEW_SYMBOL_RE,
    REFACTOR_RE,
    SCHEMA_RE,
    SCOPE_RE,
    SECURITY_RE,
    TESTS_RE,
    VAGUE_RE,
    _file_class,
    _words,
    mentioned_paths,
)
from oopav.events.catalog import RiskBand, TestDecision

Category = Literal["refactor", "bugfix", "feature", "docs", "config", "tests", "security", "other"]
TestsBaseline = Literal["pass", "fail", "unknown"]
Gate = Literal["proceed", "gather_evidence", "stop"]

GAP_HIGH = 0.4
"""Above this evidence gap tests are deferred, and a broken baseline is red."""
STRONG_MEMORY = 0.8
MODERATE_MEMORY = 0.6
LARGE_CHANGE_LINES = 20


# --- inputs and outputs --------------------------------------------------------------------


class OrientInput(msgspec.Struct, kw_only=True, frozen=True):
    """What orient knows: the instruction and the baseline observation.

    ``expected_files`` / ``expected_changed_lines``: estimates when a caller has them (e.g. the
    number of files a symbol occurs in); without them the mentioned files and the complexity
    stand in. ``evidence_rounds``: how many evidence-gathering rounds a red session has done.
    """

    instruction: str
    files_total: int = 0
    parse_errors: int = 0
    stubs: int = 0
    tests_baseline: TestsBaseline = "unknown"
    languages: dict[str, int] = msgspec.field(default_factory=dict)
    mentioned_existing: list[str] = msgspec.field(default_factory=list)
    mentioned_missing: list[str] = msgspec.field(default_factory=list)
    memory_hits: list[tuple[str, float]] = msgspec.field(default_factory=list)
    expected_files: int | None = None
    expected_changed_lines: int | None = None
    evidence_rounds: int = 0
    symbols_missing: list[str] = msgspec.field(default_factory=list)
    """Identifiers the instruction names that targeted evidence found nowhere in the tree."""
    max_evidence_rounds: int = 2


class OrientReport(msgspec.Struct, kw_only=True, frozen=True):
    """Every field of ``OrientReported`` plus the gate that follows from the risk band."""

    risk_band: RiskBand
    evidence_gap: float
    category: Category
    complexity: int
    test_decision: TestDecision
    reasons: list[str]
    memory_hits: list[tuple[str, float]]
    gate: Gate
    missing_namespaces: list[str] = msgspec.field(default_factory=list)
    """What the instruction names that the tree does not have: files, then symbols."""
    recommended_retrieval: list[str] = msgspec.field(default_factory=list)
    """What to read or search before acting, most useful first (``read:``, ``search:``,
    ``tests:``, ``map:``)."""
    scaling: float = 1.0
    """How much more than the task's base budgets this task is expected to need (1.0-3.0)."""


# --- the rules -----------------------------------------------------------------------------


def classify_category(instruction: str, mentioned: list[str] | None = None) -> tuple[Category, str]:
    """The task category and the rule that chose it. CATEGORY RULES, first match wins:

    1. security/auth/crypto words → ``security`` (they matter whatever else the task is);
    2. every mentioned file is documentation → ``docs``; every one is documentation or
       configuration with at least one configuration file → ``config``;
    3. rename/refactor words → ``refactor`` (before tests and bugfix: "rename X and keep the
       tests green" is a rename);
    4. writing or extending tests ("add tests for", "test coverage"), or every mentioned file is
       a test → ``tests``;
    5. documentation words (README, docs, docstring, changelog) → ``docs``;
    6. configuration files or settings (pyproject, CI workflow, Dockerfile, lint rules) → ``config``;
    7. the instruction starts with a feature verb (add, implement, create, …) → ``feature``;
    8. bug words (fix, bug, crash, error, fails, wrong, …) → ``bugfix``;
    9. feature words anywhere (add, implement, support, new, …) → ``feature``;
    10. otherwise ``other``.
    """
    text = instruction.strip()
    files = mentioned or []
    classes = {_file_class(f) for f in files}
    if SECURITY_RE.search(text) or AUTH_RE.search(text):
        return "security", "category rule 1: security/auth words"
    if files and classes == {"doc"}:
        return "docs", "category rule 2: only documentation files mentioned"
    if files and classes <= {"doc", "config"}:
        return "config", "category rule 2: only configuration/documentation files mentioned"
    if REFACTOR_RE.search(text):
        return "refactor", "category rule 3: rename/refactor words"
    if TESTS_RE.search(text) or (files and classes == {"test"}):
        return "tests", "category rule 4: the task is about tests"
    if DOCS_RE.search(text):
        return "docs", "category rule 5: documentation words"
    if CONFIG_RE.search(text):
        return "config", "category rule 6: configuration words"
    first = text.split(maxsplit=1)[0].lower().strip(".,:;") if text else ""
    if first in FEATURE_VERBS:
        return "feature", f"category rule 7: starts with the feature verb '{first}'"
    if BUGFIX_RE.search(text):
        return "bugfix", "category rule 8: bug words"
    if FEATURE_RE.search(text):
        return "feature", "category rule 9: feature words"
    return "other", "category rule 10: no category words"


_CATEGORY_WEIGHT: dict[str, int] = {
    "docs": 0,
    "config": 0,
    "tests": 1,
    "refactor": 1,
    "other": 1,
    "bugfix": 2,
    "feature": 3,
    "security": 3,
}


def score_complexity(inp: OrientInput, category: Category) -> tuple[int, list[str]]:
    """Complexity 1..10 = 1 + the contributions below, clamped:

    - instruction length: +1 above 12 words, +2 above 40, +3 above 100;
    - files mentioned: +1 for 2–3, +2 for 4–7, +3 for 8 or more; +1 when the instruction's scope
      is the whole repository ("everywhere", "across", "all callers", …);
    - category: docs/config +0, tests/refactor/other +1, bugfix +2, feature/security +3;
    - baseline problems: +1 with parse errors, +1 with failing tests.
    """
    reasons: list[str] = []
    score = 1
    words = len(inp.instruction.split())
    length = 3 if words > 100 else 2 if words > 40 else 1 if words > 12 else 0
    if length:
        score += length
        reasons.append(f"complexity +{length}: instruction has {words} words")
    n_files = len(inp.mentioned_existing) + len(inp.mentioned_missing)
    spread = 3 if n_files >= 8 else 2 if n_files >= 4 else 1 if n_files >= 2 else 0
    if spread:
        score += spread
        reasons.append(f"complexity +{spread}: {n_files} files mentioned")
    if SCOPE_RE.search(inp.instruction):
        score += 1
        reasons.append("complexity +1: repository-wide scope")
    weight = _CATEGORY_WEIGHT[category]
    if weight:
        score += weight
        reasons.append(f"complexity +{weight}: category {category}")
    if inp.parse_errors > 0:
        score += 1
        reasons.append(f"complexity +1: {inp.parse_errors} parse errors at baseline")
    if inp.tests_baseline == "fail":
        score += 1
        reasons.append("complexity +1: tests fail at baseline")
    clamped = max(1, min(10, score))
    reasons.append(f"complexity = {clamped}")
    return clamped, reasons


def score_evidence_gap(inp: OrientInput) -> tuple[float, list[str]]:
    """Evidence gap 0..1 = the contributions below, minus the memory credit, clamped:

    - mentioned files that do not exist: +0.4 × (missing / mentioned);
    - no test result at baseline: +0.2;
    - parse errors at baseline: +0.15;
    - vague instruction: +0.2 under 5 words, +0.15 with no concrete anchor (no quoted or
      backticked name, path or identifier), +0.1 with vague words ("somehow", "better", …);
      at most +0.3 together;
    - symbols the instruction names that evidence found nowhere: +0.15 each, at most +0.3;
    - an empty repository (no files observed): +0.3;
    - memory: the best similar successful session lowers the gap by 0.2 when its score is at
      least 0.8 (strong), by 0.1 when at least 0.6.
    """
    reasons: list[str] = []
    gap = 0.0
    mentioned = len(inp.mentioned_existing) + len(inp.mentioned_missing)
    if inp.mentioned_missing:
        add = 0.4 * len(inp.mentioned_missing) / mentioned
        gap += add
        reasons.append(
            f"gap +{add:.2f}: mentioned files missing: {', '.join(inp.mentioned_missing)}"
        )
    if inp.tests_baseline == "unknown":
        gap += 0.2
        reasons.append("gap +0.20: no test result at baseline")
    if inp.parse_errors > 0:
        gap += 0.15
        reasons.append("gap +0.15: parse errors at baseline")
    vague = 0.0
    vague_why: list[str] = []
    if len(inp.instruction.split()) < 5:
        vague += 0.2
        vague_why.append("under 5 words")
    if not ANCHOR_RE.search(inp.instruction):
        vague += 0.15
        vague_why.append("no concrete name or path")
    if VAGUE_RE.search(inp.instruction):
        vague += 0.1
        vague_why.append("vague words")
    if vague:
        vague = min(vague, 0.3)
        gap += vague
        reasons.append(f"gap +{vague:.2f}: vague instruction ({', '.join(vague_why)})")
    if inp.symbols_missing:
        add = min(0.3, 0.15 * len(inp.symbols_missing))
        gap += add
        reasons.append(
            f"gap +{add:.2f}: named symbols found nowhere: {', '.join(inp.symbols_missing[:5])}"
        )
    if inp.files_total == 0:
        gap += 0.3
        reasons.append("gap +0.30: no files observed")
    best = max((score for _, score in inp.memory_hits), default=0.0)
    credit = 0.2 if best >= STRONG_MEMORY else 0.1 if best >= MODERATE_MEMORY else 0.0
    if credit:
        gap -= credit
        reasons.append(f"gap -{credit:.2f}: similar successful session (score {best:.2f})")
    # Rounded so that the value in the event is stable across platforms' float sums.
    clamped = round(max(0.0, min(1.0, gap)), 2)
    reasons.append(f"evidence_gap = {clamped:.2f}")
    return clamped, reasons


def decide_risk(
    inp: OrientInput, complexity: int, evidence_gap: float
) -> tuple[RiskBand, list[str]]:
    """Risk band; the most severe firing band wins (black > red > yellow > green):

    - black: the instruction asks to delete the repository or the file system, to read or
      exfiltrate credentials, to disable the sandbox or capability checks, or to force-push /
      rewrite published history;
    - red: security/auth/crypto words; migrations or database schema changes; a broken
      baseline (parse errors or failing tests) together with an evidence gap above 0.4;
    - yellow: tests failing at baseline; parse errors at baseline; complexity 6 or more;
    - green: none of the above.
    """
    text = inp.instruction
    reasons: list[str] = []
    black = [label for label, rule in BLACK_RULES if rule.search(text)]
    reasons += [f"risk black: the instruction {label}" for label in black]
    red: list[str] = []
    if SECURITY_RE.search(text) or AUTH_RE.search(text):
        red.append("risk red: security/auth/crypto words")
    if MIGRATION_RE.search(text):
        red.append("risk red: migration or database schema change")
    broken = inp.parse_errors > 0 or inp.tests_baseline == "fail"
    if broken and evidence_gap > GAP_HIGH:
        red.append(f"risk red: broken baseline with evidence gap {evidence_gap:.2f} > {GAP_HIGH}")
    reasons += red
    yellow: list[str] = []
    if inp.tests_baseline == "fail":
        yellow.append("risk yellow: tests fail at baseline")
    if inp.parse_errors > 0:
        yellow.append("risk yellow: parse errors at baseline")
    if complexity >= 6:
        yellow.append(f"risk yellow: complexity {complexity} >= 6")
    reasons += yellow
    band: RiskBand = "black" if black else "red" if red else "yellow" if yellow else "green"
    if band == "green":
        reasons.append("risk green: no risk rule fired")
    return band, reasons


def decide_tests(
    inp: OrientInput,
    *,
    category: Category,
    complexity: int,
    evidence_gap: float,
    risk_band: RiskBand,
    policy: TestPolicy | None = None,
) -> tuple[TestDecision, str]:
    """The test decision. TEST RULES, first match wins (the issue's order, plus rule 4):

    1. security, auth or schema words in the instruction → required; so does a mentioned
       language manifest or build file (``pyproject.toml``, ``package.json``, ``Cargo.toml``,
       ``go.mod``, ``Makefile``, …: a change there can break every test without touching code);
    2. complexity ≥ 7 with more than 2 files (``expected_files``, else the mentioned files)
       → required;
    3. red (or black) risk → required;
    4. the instruction itself asks for passing tests ("keep the tests green") → required;
    5. a new function or type, or more than about 20 changed lines expected
       (``expected_changed_lines``, else complexity ≥ 5 stands in for it) → recommended;
    6. documentation or configuration only (category docs/config and no code or test file
       mentioned) → skip;
    7. evidence gap above 0.4 → deferred;
    8. otherwise optional.

    ``policy`` (the task's ``policy.tests``) adds required words and sets the thresholds
    (``required_complexity``, ``required_files``, ``large_change_lines``, ``skip_suffixes``).
    """
    pol = policy or TestPolicy()
    text = inp.instruction
    files = inp.expected_files
    if files is None:
        files = len(inp.mentioned_existing) + len(inp.mentioned_missing)
    if SECURITY_RE.search(text) or AUTH_RE.search(text) or SCHEMA_RE.search(text):
        return "required", "tests required (rule 1): security, auth or schema words"
    manifests = build_manifests([*inp.mentioned_existing, *inp.mentioned_missing])
    if manifests:
        return "required", f"tests required (rule 1): build files {', '.join(manifests[:3])}"
    extra = [w for w in pol.required_words if re.search(rf"\b{re.escape(w)}\b", text, re.I)]
    if extra:
        return "required", f"tests required (rule 1): policy words {', '.join(extra)}"
    if complexity >= pol.required_complexity and files > pol.required_files:
        return "required", f"tests required (rule 2): complexity {complexity} with {files} files"
    if risk_band in ("red", "black"):
        return "required", f"tests required (rule 3): {risk_band} risk"
    if EXPLICIT_TESTS_RE.search(text):
        return "required", "tests required (rule 4): the instruction asks for passing tests"
    if NEW_SYMBOL_RE.search(text):
        return "recommended", "tests recommended (rule 5): a new function or type"
    lines = inp.expected_changed_lines
    if (lines is not None and lines > pol.large_change_lines) or (
        lines is None and complexity >= 5
    ):
        why = f"{lines} changed lines expected" if lines is not None else f"complexity {complexity}"
        return "recommended", f"tests recommended (rule 5): large change ({why})"
    mentioned = [*inp.mentioned_existing, *inp.mentioned_missing]
    skip_suffixes = {x.lower() for x in pol.skip_suffixes}
    if category in ("docs", "config") and all(
        _file_class(f) in ("doc", "config") or PurePosixPath(f).suffix.lower() in skip_suffixes
        for f in mentioned
    ):
        return "skip", f"tests skipped (rule 6): {category} only"
    if evidence_gap > GAP_HIGH:
        return "deferred", f"tests deferred (rule 7): evidence gap {evidence_gap:.2f} > {GAP_HIGH}"
    return "optional", "tests optional (rule 8): no other rule fired"


def decide_gate(band: RiskBand, gap: float, rounds: int, max_rounds: int) -> tuple[Gate, str]:
    """What the band lets the session do next:

    - black → ``stop``: halt and ask a person;
    - red, no evidence round yet → ``gather_evidence``: acting waits for new, targeted evidence;
    - red, gap ≤ 0.4 after a round → ``proceed``: the evidence closed the gap;
    - red, gap still > 0.4 and fewer than ``max_rounds`` rounds → ``gather_evidence`` again;
    - red, gap still open after ``max_rounds`` → ``stop``: escalate to a person;
    - green / yellow with a gap above 0.4 and no round yet → ``gather_evidence``: one round of
      targeted evidence before planning (it never stops a green or yellow task);
    - green / yellow otherwise → ``proceed``.
    """
    if band == "black":
        return "stop", "gate stop: black risk halts the session and asks a person"
    if band != "red":
        if gap > GAP_HIGH and rounds < 1 and max_rounds > 0:
            return "gather_evidence", (
                f"gate gather_evidence: evidence gap {gap:.2f} > {GAP_HIGH} ({band} risk: one round)"
            )
        return "proceed", "gate proceed"
    if rounds < 1:
        return "gather_evidence", "gate gather_evidence: red risk waits for new evidence"
    if gap <= GAP_HIGH:
        return "proceed", (
            f"gate proceed: evidence gap {gap:.2f} <= {GAP_HIGH} after {rounds} evidence round(s)"
        )
    if rounds < max_rounds:
        return "gather_evidence", (
            f"gate gather_evidence: evidence gap {gap:.2f} > {GAP_HIGH} after round {rounds}"
        )
    return "stop", (
        f"gate stop: evidence gap {gap:.2f} did not close within {max_rounds} rounds; "
        "a person decides"
    )


def orient(inp: OrientInput, policy: TestPolicy | None = None) -> OrientReport:
    """The orient report: category → complexity → evidence gap → risk → test decision → gate,
    with the reasons of every step in that order."""
    mentioned = [*inp.mentioned_existing, *inp.mentioned_missing]
    category, why_category = classify_category(inp.instruction, mentioned)
    complexity, why_complexity = score_complexity(inp, category)
    gap, why_gap = score_evidence_gap(inp)
    band, why_risk = decide_risk(inp, complexity, gap)
    decision, why_tests = decide_tests(
        inp,
        category=category,
        complexity=complexity,
        evidence_gap=gap,
        risk_band=band,
        policy=policy,
    )
    gate, why_gate = decide_gate(band, gap, inp.evidence_rounds, inp.max_evidence_rounds)
    missing = [*inp.mentioned_missing, *inp.symbols_missing]
    return OrientReport(
        risk_band=band,
        evidence_gap=gap,
        category=category,
        complexity=complexity,
        test_decision=decision,
        reasons=[why_category, *why_complexity, *why_gap, *why_risk, why_tests, why_gate],
        memory_hits=sorted(inp.memory_hits, key=lambda h: (-h[1], h[0])),
        gate=gate,
        missing_namespaces=missing,
        recommended_retrieval=recommend_retrieval(inp, gap),
        scaling=scaling_multiplier(band, complexity, gap),
    )


def recommend_retrieval(inp: OrientInput, gap: float) -> list[str]:
    """What to look at before acting, most useful first: the mentioned files that exist
    (``read:``), the names nothing was found for (``search:``), the tests when the baseline gave
    no result (``tests:``), the repository map when the task names nothing concrete (``map:``)."""
    out = [f"read:{p}" for p in inp.mentioned_existing[:5]]
    out += [f"search:{name}" for name in [*inp.mentioned_missing, *inp.symbols_missing][:5]]
    if inp.tests_baseline == "unknown":
        out.append("tests:baseline")
    if gap > GAP_HIGH or not (inp.mentioned_existing or inp.mentioned_missing):
        out.append("map:repository")
    return out


def scaling_multiplier(band: RiskBand, complexity: int, gap: float) -> float:
    """Budget scaling: 1.0 for a simple, well-evidenced green task; +0.1 per complexity point
    above 1, +0.5 x the evidence gap, +0.25 yellow / +0.5 red or black; at most 3.0. Rounded so
    the recorded value is stable."""
    risk = {"green": 0.0, "yellow": 0.25, "red": 0.5, "black": 0.5}[band]
    return round(min(3.0, 1.0 + 0.1 * (complexity - 1) + 0.5 * gap + risk), 2)
