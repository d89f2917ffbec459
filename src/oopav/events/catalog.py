"""The event catalog: the envelope and every event type, as msgspec Structs tagged on ``type``.

Events are immutable facts in the past tense (DESIGN invariant 2). Each type declares:

- ``schema``: its current version; older stored versions are upcast on read (see ``codec``);
- ``volatile``: fields that legitimately differ between a run and its replay (timestamps,
  latencies), which replay comparison ignores.

Adding a field to a type later means bumping ``schema`` and registering an upcaster, never
breaking events already on the stream.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

import msgspec

from oopav.events.actions import Action

Aggregate = Literal["session", "mission", "run"]
RiskBand = Literal["green", "yellow", "red", "black"]
TestDecision = Literal["required", "recommended", "optional", "deferred", "skip"]
Outcome = Literal["success", "failed", "aborted", "success_unverified"]
"""``success_unverified``: every gate that ran passed, but the tests the task needed could not
be run (no test command given and none detected); the session says so instead of claiming
success."""

# prev_hash covers the previous event's volatile fields too, so it differs in a replay.
ENVELOPE_VOLATILE: frozenset[str] = frozenset({"ts", "prev_hash"})


# ``dict=True``: a decoded event remembers the hash of the bytes it was read from
# (``events.codec``), so the hash chain checks what was stored, not a re-encoding that a newer
# schema (a field added with a default, an upcaster) would change.
class Event(
    msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=False, dict=True
):
    """The envelope shared by every event (DESIGN invariant 3)."""

    id: str
    schema: int = 1
    aggregate: Aggregate = "session"
    aggregate_id: str
    causation_id: str | None = None
    correlation_id: str
    actor: str
    ts: datetime
    # The hash of the previous event of the aggregate (``events.chain``): "" on a session's
    # first event, None on events written before the field existed. Set by the event store.
    prev_hash: str | None = None

    SCHEMA: ClassVar[int] = 1
    VOLATILE: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def type_name(cls) -> str:
        return cls.__struct_config__.tag  # type: ignore[return-value]  # every event class sets a str tag

    @property
    def type(self) -> str:
        return self.__struct_config__.tag  # type: ignore[return-value]  # every event class sets a str tag

    @classmethod
    def volatile_fields(cls) -> frozenset[str]:
        return ENVELOPE_VOLATILE | cls.VOLATILE

    @property
    def subject(self) -> str:
        return f"oopav.ev.{self.aggregate}.{self.aggregate_id}.{self.type}"


# --- shared value types -------------------------------------------------------------------


class Budgets(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """Hard budgets (DESIGN invariant 8). Every limit is finite."""

    retries_per_phase: int = 3
    iterations: int = 30
    model_tokens: int = 200_000
    wall_seconds_per_phase: float = 600.0
    prompt_output_bytes: int = 8_192
    bounces: int = 3


class Example(
    msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True, omit_defaults=True
):
    """A before/after pair that shows the intended change."""

    before: str
    after: str
    path: str | None = None
    # Partial (wave 3h): the user edited some sites of the file and left the others of the
    # same shape for the rule; its unchanged code is not a negative (docs/synth.md).
    # omit_defaults: an example that is not partial encodes as before this field existed.
    partial: bool = False
    # With ``partial``: 1-based lines of ``before`` the rule must leave as ``after`` has them.
    keep: list[int] = msgspec.field(default_factory=list)


class PlanStep(msgspec.Struct, kw_only=True, frozen=True):
    id: int
    description: str
    files: list[str] = msgspec.field(default_factory=list)
    kind: str = "edit"
    # The step leaves the tests failing on purpose (a signature changed before its call
    # sites): the observer's "passed before, fail after" rule waits for a later step.
    tests_may_fail: bool = False


class Finding(msgspec.Struct, kw_only=True, frozen=True):
    """One observed fact about a file: a parse error, a stub marker, a failing test."""

    path: str
    line: int = 0
    kind: str = ""
    message: str = ""


class TestReport(msgspec.Struct, kw_only=True, frozen=True):
    """Per-test results of a pytest run (from its junit XML): the ids that did not pass, so a
    gate can compare with the baseline. Lists are capped; ``truncated`` says when."""

    total: int = 0
    passed: int = 0
    skipped: int = 0
    failed: list[str] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    truncated: bool = False
    skipped_ids: list[str] = msgspec.field(default_factory=list)
    # The test session's own time (junit <testsuite time>: collection and the tests), without
    # the interpreter's and the runner's start-up: what running fewer test files can save.
    time_s: float = 0.0


class ExecRecord(msgspec.Struct, kw_only=True, frozen=True):
    """One sandbox execution as recorded, so replay can serve it back instead of running it.
    ``key`` is derived from the causing event, the purpose and the argv."""

    key: str
    purpose: str
    argv: list[str]
    exit_code: int | None
    signal: int | None = None
    timed_out: bool = False
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    duration_ms: float = 0.0
    artifact: str | None = None
    report: TestReport | None = None
    # A check that must not edit (a gate) did: the paths it changed, already restored. Kept in
    # the record so replay, which serves the record instead of running it, decides the same.
    workspace_changed: list[str] = msgspec.field(default_factory=list)
    # What a command action changed in the workspace (a binary git patch), recorded so replay,
    # which serves the record without running the command, re-applies the same change.
    patch: str = ""
    # Not run again: the verdict of an identical run (same tree content, environment and
    # argv) is reused, "<session id>/<key>" of the run that measured it (issue 28).
    reused_from: str | None = None


class TestRun(msgspec.Struct, kw_only=True, frozen=True):
    argv: list[str]
    exit_code: int
    passed: bool
    timed_out: bool = False
    output_tail: str = ""
    duration_ms: float = 0.0


# --- session events ----------------------------------------------------------------------


class IntakeSource(msgspec.Struct, kw_only=True, frozen=True):
    """Where a submission came from: its position in ``OOPAV_INTAKE`` and a digest of the raw
    payload, which lets the intake answer a ``nats req`` with the session it created."""

    stream_sequence: int
    digest: str
    size: int = 0


class GroupInfo(msgspec.Struct, kw_only=True, frozen=True):
    """One rollout of a group: K sessions of one submission share ``group_id`` (members are
    listed, ordered by session id) and differ in sampling. ``purpose`` ``holdout`` marks a
    session the reflector runs to judge ``proposal_id`` (with the previewed library when
    ``preview``, else the library at ``guidance_step``)."""

    group_id: str
    index: int = 0
    members: list[str] = msgspec.field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    expected: Literal["pass", "fail"] | None = None
    purpose: Literal["rollout", "holdout"] = "rollout"
    proposal_id: str | None = None
    preview: bool = False
    guidance_step: int | None = None


class TaskSubmitted(Event, tag="task_submitted", frozen=True):
    """A valid submission: a session starts. Its id is the session id."""

    SCHEMA: ClassVar[int] = 2  # 2: group

    instruction: str
    repo: str
    mission: str | None = None
    budgets: Budgets = msgspec.field(default_factory=Budgets)
    policy: dict[str, Any] | None = None
    model: str | None = None
    test_command: list[str] | None = None
    examples: list[Example] = msgspec.field(default_factory=list)
    source: IntakeSource | None = None
    parent_session: str | None = None
    fork_sequence: int | None = None
    group: GroupInfo | None = None
    # The project's environment (docs/sandbox.md): python / build / env / pythonpath / ...
    environment: dict[str, Any] | None = None
    # Today's values of loop-policy defaults that changed since older sessions were recorded
    # (dotted keys, ``decide.policy.STAMPED_DEFAULTS``), set by intake: a session recorded
    # without them replays under the defaults it ran with.
    policy_defaults: dict[str, Any] | None = None


class TaskRejected(Event, tag="task_rejected", frozen=True):
    """An invalid submission, with the specific reason and the offending field."""

    error: str
    field: str | None = None
    code: str = "invalid"
    excerpt: str = ""
    source: IntakeSource | None = None


class WorkspacePrepared(Event, tag="workspace_prepared", frozen=True):
    """The session's workspace (git worktree or copy) and the base commit it starts from."""

    path: str
    base_commit: str
    branch: str
    kind: Literal["worktree", "copy"] = "worktree"
    repo: str = ""
    # Uncommitted or untracked (not ignored) files of the user's working tree included in the
    # base on top of HEAD; a copy is always the directory as it is.
    uncommitted: list[str] = msgspec.field(default_factory=list)
    # The starting tree, content-addressed in the blob store (history/blobs.py): what replay
    # and forks start from, so they need nothing but the store. None: not stored (a session
    # recorded before trees were, or a store that refused the blobs).
    tree: str | None = None

    # A replay prepares its own workspace elsewhere (from the recorded base, so it has no
    # uncommitted files of its own); a copy's base commit has a fresh timestamp. ``tree``:
    # a session recorded before trees were stored has none, and its replay stores one.
    VOLATILE: ClassVar[frozenset[str]] = frozenset({"path", "base_commit", "uncommitted", "tree"})


class ObservationRecorded(Event, tag="observation_recorded", frozen=True):
    """What the observer saw: the baseline, or what changed after an action, and its rule-based next step."""

    phase: Literal["baseline", "change"] = "baseline"
    files_total: int = 0
    parse_errors: list[Finding] = msgspec.field(default_factory=list)
    stubs: list[Finding] = msgspec.field(default_factory=list)
    tests: TestRun | None = None
    changed_files: list[str] = msgspec.field(default_factory=list)
    languages: dict[str, int] = msgspec.field(default_factory=dict)
    observer_action: Literal[
        "continue", "more_evidence", "replan", "escalate", "negative_example"
    ] = "continue"
    reasons: list[str] = msgspec.field(default_factory=list)
    source_event: str | None = None
    execs: list[ExecRecord] = msgspec.field(default_factory=list)


class BaselineReused(Event, tag="baseline_reused", frozen=True):
    """The baseline was not measured again: an earlier session measured the same starting tree
    (content hash), in the same project environment (hash), with the same commands, and its
    verdict (tests with per-test results, the environment probe, stubs and parse errors) is
    reused. The ``observation_recorded`` that follows carries that verdict, so nothing
    downstream changes; replay serves this event back instead of looking at the cache."""

    key: str
    from_session: str
    from_event: str = ""
    tree: str = ""
    environment: str = ""
    command: list[str] = msgspec.field(default_factory=list)
    saved_ms: float = 0.0
    """What measuring it again would have cost (the original runs' durations)."""


class OrientReported(Event, tag="orient_reported", frozen=True):
    """Risk band, evidence gap, category, complexity and the test decision, with the rules that fired."""

    risk_band: RiskBand
    evidence_gap: float
    category: str
    complexity: int
    test_decision: TestDecision
    reasons: list[str] = msgspec.field(default_factory=list)
    memory_hits: list[tuple[str, float]] = msgspec.field(default_factory=list)
    gate: Literal["proceed", "gather_evidence", "stop"] = "proceed"
    evidence_rounds: int = 0
    # What the planner may show as similar successful sessions (recorded, so replay is exact).
    memory_examples: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # What the instruction names that the tree lacks, what to read first, and the budget
    # scaling the task is expected to need (decide/orient.py); empty in older events.
    missing_namespaces: list[str] = msgspec.field(default_factory=list)
    recommended_retrieval: list[str] = msgspec.field(default_factory=list)
    scaling: float = 1.0


class PlanProposed(Event, tag="plan_proposed", frozen=True):
    """The planner's plan: steps, file manifest and the test decision it honours."""

    steps: list[PlanStep]
    files: list[str] = msgspec.field(default_factory=list)
    test_decision: TestDecision = "optional"
    attempt: int = 1
    model_call_id: str | None = None
    rationale: str = ""
    repo_map_hash: str | None = None
    state_update: dict[str, Any] | None = None
    think: str = ""
    adequacy: float | None = None
    """The plan's adequacy score (decide/plans.adequacy) where the gate judged it."""


# ``omit_defaults``: a session stores one model_called per call, so its history grows with them
# (issue 27 §4); the optional metadata (error, guidance_step, notes, profile, prompt_state, a
# missing causation or prev_hash) is left out of the stored JSON while at its default and decodes
# back to it. ``aggregate`` and ``finish_reason`` are kept on the wire (a default_factory is never
# omitted) because people filter on them with `nats sub` and jq. Older stored events keep their
# bytes and their chain links (the chain hashes stored bytes).
class ModelCalled(Event, tag="model_called", frozen=True, kw_only=True, omit_defaults=True):
    """One model call, recorded in full so replay can serve it back (request, response, tokens)."""

    aggregate: Aggregate = msgspec.field(default_factory=lambda: "session")
    role: str
    backend: str
    request_hash: str
    request: dict[str, Any]
    response: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    finish_reason: str = msgspec.field(default_factory=lambda: "stop")
    error: str | None = None
    # The mission library step rendered into the prompt, so a replay renders the same one.
    guidance_step: int | None = None
    # What happened on the way, e.g. an out-of-memory retry with a smaller request
    # (models/gpu.py). Like latency, a fact about the device, not the decision: replay serves
    # the answer without it.
    notes: list[str] = msgspec.field(default_factory=list)
    # The prompt profile the request was rendered with ("full", "compact"; None: full) and, for
    # the actor, the state a compact prompt renders from (models/profiles.py PromptState), so
    # `oopav export --profile` renders any profile's records from the stream.
    profile: str | None = None
    prompt_state: dict[str, Any] | None = None

    SCHEMA: ClassVar[int] = 2  # 2: guidance_step
    # notes, profile and prompt_state describe how the request was made and served; the request
    # itself (and its hash) is what replay checks, so older sessions replay unchanged.
    VOLATILE: ClassVar[frozenset[str]] = frozenset(
        {"latency_ms", "notes", "profile", "prompt_state"}
    )


class ActionProposed(Event, tag="action_proposed", frozen=True):
    """One action the actor's model proposed, with its canonical hash for stuck detection."""

    action: Action
    action_hash: str
    step: int = 0
    iteration: int = 0
    model_call_id: str | None = None
    think: str = ""
    state_update: dict[str, Any] | None = None


class ActionRejected(Event, tag="action_rejected", frozen=True):
    """Pre-emit validation or the capability check refused an action; nothing was written."""

    action_id: str
    reason: str
    message: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class PermissionRequested(Event, tag="permission_requested", frozen=True):
    """An action needs a scope that no grant or policy covers."""

    scope: str
    reason: str = ""
    action_id: str | None = None


class PermissionGranted(Event, tag="permission_granted", frozen=True):
    """A scope granted, by whom, until when or for how many uses."""

    scope: str
    granted_by: str
    expires_at: datetime | None = None
    max_uses: int | None = None
    request_id: str | None = None


class PermissionDenied(Event, tag="permission_denied", frozen=True):
    """A scope refused, by whom and why."""

    scope: str
    denied_by: str
    reason: str = ""
    request_id: str | None = None
    action_id: str | None = None


class ActionApplied(Event, tag="action_applied", frozen=True):
    """An action executed in the sandbox: exit status, diff, output tails, checkpoint."""

    action_id: str
    ok: bool = True
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    diff: str = ""
    files_changed: list[str] = msgspec.field(default_factory=list)
    stdout_tail: str = ""
    stderr_tail: str = ""
    output_bytes: int = 0
    checkpoint: str | None = None
    artifact: str | None = None
    duration_ms: float = 0.0
    grants_used: list[str] = msgspec.field(default_factory=list)
    execs: list[ExecRecord] = msgspec.field(default_factory=list)

    # Checkpoint commits carry commit timestamps; the diff is the deterministic record.
    VOLATILE: ClassVar[frozenset[str]] = frozenset(
        {"duration_ms", "artifact", "checkpoint", "execs"}
    )


class GateEvaluated(Event, tag="gate_evaluated", frozen=True):
    """One done-gate of the verifier (stubs, parse, tests, lint, critic) and its evidence."""

    gate: str
    passed: bool
    skipped: bool = False
    evidence: str = ""
    findings: list[Finding] = msgspec.field(default_factory=list)
    bounce: int = 0
    duration_ms: float = 0.0
    execs: list[ExecRecord] = msgspec.field(default_factory=list)

    VOLATILE: ClassVar[frozenset[str]] = frozenset({"duration_ms", "execs"})


class VerificationCompleted(Event, tag="verification_completed", frozen=True):
    """The outcome of the done-gate chain."""

    passed: bool
    gates: list[str] = msgspec.field(default_factory=list)
    failed_gate: str | None = None
    bounce: int = 0


class ReplanTriggered(Event, tag="replan_triggered", frozen=True):
    """A reason to plan again, with the failure evidence."""

    source: str
    reason: str
    evidence: str = ""
    attempt: int = 1
    perturbation: str | None = None


class BudgetExceeded(Event, tag="budget_exceeded", frozen=True):
    """A hard budget ran out; the session ends or escalates."""

    budget: str
    limit: float
    used: float
    phase: str | None = None
    response: Literal["abort", "escalate"] = "abort"


class StuckDetected(Event, tag="stuck_detected", frozen=True):
    """The actor repeats itself (same action, A/B alternation, consecutive errors) or its last
    outputs — actions that failed, or plans — are more than 90% alike (``similar``)."""

    pattern: Literal["repeat", "alternation", "errors", "similar"]
    action_hashes: list[str] = msgspec.field(default_factory=list)
    count: int = 0
    response: Literal["replan", "abort"] = "replan"


class CriticVerdict(Event, tag="critic_verdict", frozen=True):
    """An optional read-only model's verdict (reflection/critique.py): approve and caution
    proceed, block sends the change back, refused and unavailable proceed with a warning.
    ``payload_sha256`` is the hash of the exact (redacted) payload the critic received;
    ``cached`` says the verdict was reused for an identical payload instead of a new call."""

    verdict: Literal["approve", "caution", "block", "reject", "refused", "unavailable"]
    reasons: list[str] = msgspec.field(default_factory=list)
    model_call_id: str | None = None
    payload_sha256: str | None = None
    redactions: dict[str, int] = msgspec.field(default_factory=dict)
    cached: bool = False
    # The three fields above have defaults, so events written before them decode unchanged
    # (no schema bump needed).
    trigger: Literal["gate", "plan", "escalation", "review"] = "gate"
    """What asked for the review: the verifier's last gate, a new plan, an escalation, or a
    person after the fact (``oopav critic --session``)."""
    # The structured report (defaults: verdicts recorded before it decode unchanged).
    top_risks: list[str] = msgspec.field(default_factory=list)
    missing_tests: list[str] = msgspec.field(default_factory=list)
    confidence: float | None = None
    """The critic's confidence in its verdict (0-1); None when it gave none."""
    shown: list[str] = msgspec.field(default_factory=list)
    """The sections of the session the critic was shown (``policy.critic.allowed_artifact_fields``)."""


class SessionCompleted(Event, tag="session_completed", frozen=True):
    """The end of a session: outcome, summary, final diff and metrics."""

    outcome: Outcome
    summary: str = ""
    diff: str = ""
    metrics: dict[str, Any] = msgspec.field(default_factory=dict)
    reason: str = ""


# --- the decision core (issue 17) ----------------------------------------------------------


class EvidenceItem(msgspec.Struct, kw_only=True, frozen=True):
    """One piece of targeted evidence: a file the instruction names, a symbol it mentions, a
    test run. ``found`` says whether the target was found; ``summary`` is what a prompt shows."""

    kind: Literal["file", "symbol", "tests", "search"]
    target: str
    found: bool
    summary: str = ""
    locations: list[str] = msgspec.field(default_factory=list)


class EvidenceGathered(Event, tag="evidence_gathered", frozen=True):
    """New evidence, gathered because orient rated the task red (or an observation asked for
    more): the named files, the mentioned symbols, a baseline test run when none existed."""

    round: int
    reason: str
    items: list[EvidenceItem] = msgspec.field(default_factory=list)
    tests: TestRun | None = None
    execs: list[ExecRecord] = msgspec.field(default_factory=list)
    source_event: str | None = None
    trigger: Literal["orient", "observer"] = "orient"

    VOLATILE: ClassVar[frozenset[str]] = frozenset({"execs"})


class WorkspaceRolledBack(Event, tag="workspace_rolled_back", frozen=True):
    """The workspace went back to an earlier checkpoint (a negative example, or a failed gate
    whose replan starts from the last good state). ``actions`` are the actions undone."""

    to_checkpoint: str
    reason: str
    actions: list[str] = msgspec.field(default_factory=list)
    rejected: list[str] = msgspec.field(default_factory=list)
    """Short descriptions of the undone actions, shown to the next prompt as what not to do."""
    source: str = ""

    VOLATILE: ClassVar[frozenset[str]] = frozenset({"to_checkpoint"})


class HumanInputRequested(Event, tag="human_input_requested", frozen=True):
    """The loop asks a person: a question, the answers it understands, and a deadline after
    which the session ends ``aborted``."""

    question: str
    options: list[str] = msgspec.field(default_factory=list)
    deadline: datetime | None = None
    kind: Literal["black_risk", "evidence_gap", "escalation", "ask"] = "escalation"
    context: str = ""
    # ``ask``: the actor's ``ask`` action the answer completes (its ``action_applied``).
    action_id: str | None = None


class HumanInputProvided(Event, tag="human_input_provided", frozen=True):
    """A person's answer to ``human_input_requested``."""

    answer: str
    answered_by: str = ""
    request_id: str | None = None


class QuestionAnswered(Event, tag="question_answered", frozen=True):
    """The answer to an actor's ``ask``, kept for later questions like it: given by a person
    (``request_id``: the ``human_input_requested``), or reused from an earlier answer of the
    session or its mission (``reused_from``: that ``question_answered``, with the
    ``similarity`` of the two questions, ``decide/asks.py``)."""

    question: str
    answer: str
    answered_by: str = ""
    action_id: str | None = None
    request_id: str | None = None
    mission: str | None = None
    reused_from: str | None = None
    reused_session: str | None = None
    reused_question: str | None = None
    similarity: float | None = None


class ReplanScored(Event, tag="replan_scored", frozen=True):
    """What a replan bought: the gate results of the verification before it and of the first
    one after it (gate → passed; a gate not reached is absent), and a score for each (the share
    of the tier's gates that passed)."""

    replan_id: str
    source: str
    before: dict[str, bool] = msgspec.field(default_factory=dict)
    after: dict[str, bool] = msgspec.field(default_factory=dict)
    score_before: float = 0.0
    score_after: float = 0.0


class CandidateEvaluated(Event, tag="candidate_evaluated", frozen=True):
    """One of N competing actions, sampled with a fixed candidate id before any was tried,
    applied in its own trial checkpoint and graded by the composite judge (validity, new parse
    errors or stubs, the tests when the task has a command, diff size)."""

    candidate_id: str
    position: int
    action: Action
    action_hash: str
    model_call_id: str | None = None
    valid: bool = True
    score: float = 0.0
    components: dict[str, float] = msgspec.field(default_factory=dict)
    reason: str = ""
    execs: list[ExecRecord] = msgspec.field(default_factory=list)

    VOLATILE: ClassVar[frozenset[str]] = frozenset({"execs"})


class CandidateSelected(Event, tag="candidate_selected", frozen=True):
    """The winner among the candidates, by (score, candidate id); the ranking, best first.
    ``kind``: what competed, actions (``candidate_evaluated``) or plans
    (``plan_candidate_evaluated``)."""

    candidate_id: str
    ranking: list[tuple[str, float]] = msgspec.field(default_factory=list)
    kind: Literal["action", "plan"] = "action"


class PlanCandidateEvaluated(Event, tag="plan_candidate_evaluated", frozen=True):
    """One of N competing plans (``policy.plan_candidates``), sampled with a fixed candidate id
    before any was graded, and graded by the plan judge (valid, grounded, coverage, size;
    handlers/support/plans.py). The winner becomes the ``plan_proposed``."""

    candidate_id: str
    position: int
    steps: list[PlanStep] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    test_decision: str = "optional"
    rationale: str = ""
    model_call_id: str | None = None
    valid: bool = True
    score: float = 0.0
    components: dict[str, float] = msgspec.field(default_factory=dict)
    reason: str = ""


class CautionRaised(Event, tag="caution_raised", frozen=True):
    """Fatigue: repeated failures in the session (and its mission's recent sessions) raised the
    caution level; from here the planner asks for smaller steps and more evidence, and the
    observer escalates sooner (``decide/trends.py``)."""

    level: int
    reasons: list[str] = msgspec.field(default_factory=list)
    effects: list[str] = msgspec.field(default_factory=list)
    # Mission-wide fatigue: the failed sessions of the mission that counted (decide/trends.py).
    mission_failures: list[str] = msgspec.field(default_factory=list)


SESSION_EVENTS: tuple[type[Event], ...] = (
    TaskSubmitted,
    TaskRejected,
    WorkspacePrepared,
    ObservationRecorded,
    OrientReported,
    BaselineReused,
    PlanProposed,
    ModelCalled,
    ActionProposed,
    ActionRejected,
    PermissionRequested,
    PermissionGranted,
    PermissionDenied,
    ActionApplied,
    GateEvaluated,
    VerificationCompleted,
    ReplanTriggered,
    BudgetExceeded,
    StuckDetected,
    CriticVerdict,
    SessionCompleted,
    EvidenceGathered,
    WorkspaceRolledBack,
    HumanInputRequested,
    HumanInputProvided,
    QuestionAnswered,
    ReplanScored,
    CandidateEvaluated,
    CandidateSelected,
    PlanCandidateEvaluated,
    CautionRaised,
)
