"""The loop's decision policy: the switches and thresholds a task (``policy`` in the submission,
or ``--policy FILE``) may set for the decision core, validated in one place.

The capability policy (``allow``, ``deny``, ...) lives beside these keys in the same mapping;
``LOOP_POLICY_KEYS`` are the keys that belong to the loop and are stripped before the sandbox
policy is parsed."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from oopav.projections.session import SessionState

Tier = Literal["compile_only", "tests", "full"]


class TestPolicy(BaseModel):
    """The test-decision rules' vocabulary and thresholds (``rules.orient.decide_tests``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    __test__: ClassVar[bool] = False  # not a pytest class, despite the name

    required_words: list[str] = Field(
        default_factory=list,
        description="extra words that make tests required (beside security/auth/schema words)",
    )
    skip_suffixes: list[str] = Field(
        default_factory=lambda: [".md", ".rst", ".txt", ".adoc"],
        description="a change touching only files with these suffixes may skip tests",
    )
    large_change_lines: int = Field(20, ge=1, description="more changed lines → recommended")
    required_complexity: int = Field(7, ge=1, le=10)
    required_files: int = Field(2, ge=0)
    detect: bool = Field(True, description="detect a test command when the task gives none")
    # The default here is what sessions recorded before `split` existed did (two runs), so
    # they replay unchanged; intake records today's default ("auto") on every new task
    # (``STAMPED_DEFAULTS``).
    split: Literal["auto", "always"] = Field(
        "always",
        description="affected_first: one run of the whole command with the affected tests "
        "first, stopping after them when one fails (auto, the default of new tasks), or two "
        "runs, the affected test files then the rest (always)",
    )
    scope: Literal["affected_first", "full", "affected"] = Field(
        "affected_first",
        description="after a change: the tests that import the changed files first (fail fast), "
        "then the rest of the suite (affected_first); only those (affected); or the whole "
        "command at once (full). `tests: affected` is short for {scope: affected}",
    )


class ReplanPolicy(BaseModel):
    """Observer-triggered replans: how many, and how many actions apart at least."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cap: int = Field(3, ge=0, le=50)
    cooldown_actions: int = Field(1, ge=0, le=50)


class ModelCapabilitiesPolicy(BaseModel):
    """A task's word on its model backend's capabilities (a URL does not say what serves it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grammar: bool | None = None
    logprobs: bool | None = None
    tools: bool | None = None
    context_tokens: int | None = Field(None, ge=256, le=10_000_000)


class PlanAdequacyPolicy(BaseModel):
    """The plan adequacy gate (decide/plans.adequacy): a plan scoring below ``min_score`` is
    replanned before acting, at most ``replans`` times a session (then it goes ahead, its
    score on record). ``min_score: 0`` turns the gate off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_score: float = Field(0.75, ge=0.0, le=1.0)
    replans: int = Field(1, ge=0, le=10)
    # A plan that names no file where the task names none (rules applied to every file):
    # "neutral" (new tasks, STAMPED_DEFAULTS) judges it grounded; "fail", what sessions
    # recorded before did, scores it 0 (it replanned, and `synth:`, with one plan, aborted).
    unnamed: Literal["fail", "neutral"] = "fail"


class LoopPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    critic: bool | dict[str, Any] = False  # a table configures it (reflection/critique.py)
    critic_instructions: str | None = Field(None, max_length=4000)
    lint: bool = True
    tier: Tier | None = Field(None, description="victory tier; default from orient")
    rollback: Literal["restart", "build_on"] = Field(
        "restart",
        description="after a failed gate, restart from the last good checkpoint or build on",
    )
    tests_per_action: bool | None = Field(
        None, description="run the tests after every file change (default: when risk is red)"
    )
    fresh_baseline: bool = Field(
        False,
        description="measure the baseline even when the same tree, environment and command "
        "were measured before (default: reuse it, `baseline_reused`)",
    )
    evidence_rounds: int = Field(2, ge=1, le=10, description="red: rounds before escalating")
    human_deadline_s: float = Field(3600.0, gt=0, le=7 * 24 * 3600)
    escalation: Literal["ask", "abort"] = Field(
        "ask",
        description="where the loop would ask a person (human_input_requested): ask and wait "
        "up to human_deadline_s, or end the session aborted at once (unattended runs: benches, "
        "batch jobs nobody watches)",
    )
    replans: ReplanPolicy = Field(default_factory=ReplanPolicy)
    plan_adequacy: PlanAdequacyPolicy = Field(default_factory=PlanAdequacyPolicy)
    tests: TestPolicy = Field(default_factory=TestPolicy)

    @field_validator("tests", mode="before")
    @classmethod
    def _tests_scope(cls, value: Any) -> Any:
        # `tests: affected` (or full, affected_first): the scope alone.
        return {"scope": value} if isinstance(value, str) else value

    compile_command: list[str] | None = None
    format: list[str] | None = Field(
        None,
        description="the project's formatter (an argv): run as a recorded action when the "
        "actor finishes, before the verifier's tests judge the change",
    )
    doctest: bool = True
    harness: bool = Field(
        True, description="the harness contract tier: the project's declared check commands"
    )
    # Off by default: pyright costs seconds per verification (issue 28's overhead target is
    # 10% of the tests' own time), and whether a checker is installed is found live, not
    # recorded, so a replay on a machine without it would skip the gate and diverge.
    diagnostics: bool = Field(
        False,
        description="the per-file diagnostics tier: pyright / gopls on the changed files "
        "(opt in: a few seconds per verification)",
    )
    residuals: Literal["report", "fail", "off"] = Field(
        "report",
        description="after a rename, the old name's remaining occurrences: reported in the "
        "outcome, or failing the gate",
    )
    candidates: int = Field(
        1, ge=1, le=8, description="competing actions sampled and graded per step (1: off)"
    )
    plan_candidates: int = Field(
        1, ge=1, le=8, description="competing plans sampled and graded per planning (1: off)"
    )
    # A greedy policy answers a retry with the same action it just saw fail (a compact prompt
    # differs by one feedback line it was never trained on), so a session's later attempts add
    # nothing; sampled, the session's attempts become independent tries the verifier judges.
    retry_temperature: float | None = Field(
        None,
        gt=0,
        le=2,
        description="the actor's calls after its first in a session (retries, later "
        "iterations, candidates after the first) sample at this temperature, each with its "
        "own seed (the task's seed + the number of earlier actor calls); None: as the first",
    )
    # A small policy trained on first attempts never saw a feedback line: on a retry the
    # unseen line puts its answer out of distribution (measured: garbage rules), so such a
    # policy is better asked the first prompt again, sampled (retry_temperature).
    compact_feedback: bool = Field(
        True,
        description="the compact prompt carries the last attempt's refusal as a feedback line "
        "(off: a retry sends the first prompt again; for a policy never trained on feedback)",
    )
    # A small policy's failing answers are mostly a name copied wrong (`^stripch$` for
    # `strip`): restricting the answer's words to words it can copy, plus the words it was
    # trained to write from memory, makes the copy exact by construction (models/copying.py).
    copy_names: Literal["instruction", "prompt"] | None = Field(
        None,
        description="copy-constrained decoding of the actor's answers (hf: backends): every "
        "word of the action is a word of the instruction (or of the whole prompt) or of the "
        "checkpoint's answer vocabulary; the words go into the request (copy_words). None: off",
    )
    # How the actor's prompt is rendered (models/profiles.py); None: by backend (hf: compact).
    prompt_profile: Literal["full", "compact"] | None = None
    model_capabilities: ModelCapabilitiesPolicy | None = Field(
        None,
        description="what the model backend can do, over what its spec declares "
        "(models/capabilities.py): grammar, logprobs, tools, context_tokens",
    )
    context_caps: dict[str, int] = Field(
        default_factory=lambda: {"planner": 48_000, "actor": 32_000, "critic": 32_000},
        description="bytes of context per role; a larger context is summarised",
    )
    caution_at: int = Field(
        3, ge=1, le=100, description="failures before caution (level 1); twice that: level 2"
    )


LOOP_POLICY_KEYS: tuple[str, ...] = tuple(LoopPolicy.model_fields)


def loop_policy_problem(policy: dict[str, Any]) -> str | None:
    """Why the loop part of a submitted policy cannot be used, or None."""
    try:
        LoopPolicy.model_validate({k: v for k, v in policy.items() if k in LOOP_POLICY_KEYS})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        return f"policy.{loc}: {err['msg']}"
    return None


# Defaults that changed after sessions were recorded with the old behaviour: intake records
# today's values on the task (``task_submitted.policy_defaults``) and the model's default stays
# the old one, so a recorded session replays under the defaults it ran with. Keys are dotted
# paths into the loop policy.
STAMPED_DEFAULTS: dict[str, Any] = {"tests.split": "auto", "plan_adequacy.unnamed": "neutral"}


def with_defaults(policy: dict[str, Any] | None, defaults: dict[str, Any] | None) -> dict[str, Any]:
    """``policy`` with ``defaults`` (dotted keys) filled in where it gives no value."""
    out = dict(policy or {})
    for dotted, value in (defaults or {}).items():
        section, _, key = dotted.partition(".")
        current = out.get(section)
        if isinstance(current, str) and section == "tests":  # `tests: affected` shorthand
            current = {"scope": current}
        if current is None:
            current = {}
        if not key:
            out.setdefault(section, value)
        elif isinstance(current, dict) and key not in current:
            out[section] = {**current, key: value}
    return out


def parse_loop_policy(policy: dict[str, Any] | None) -> LoopPolicy:
    """The loop policy of a task. Intake validated it, so an invalid one (an old event) falls
    back to the defaults rather than crashing a handler."""
    raw = {k: v for k, v in (policy or {}).items() if k in LOOP_POLICY_KEYS}
    try:
        return LoopPolicy.model_validate(raw)
    except ValidationError:
        return LoopPolicy()


def loop_policy(state: SessionState) -> dict[str, object]:
    policy = (state.task.policy if state.task else None) or {}
    return {k: policy[k] for k in LOOP_POLICY_KEYS if k in policy}


def decision_policy(state: SessionState) -> LoopPolicy:
    """The task's loop policy (tiers, rollback, test policy, replans), defaults filled in."""
    task = state.task
    if task is None:
        return parse_loop_policy(None)
    return parse_loop_policy(with_defaults(task.policy, task.policy_defaults))
