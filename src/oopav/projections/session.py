"""``SessionState``: the fold of one session's events.

``evolve(state, event)`` is the whole projection. It is deterministic and depends on nothing
but its arguments; for speed it updates the state it is given (a linear fold: callers never
keep the previous state), so a rebuild of 100k events allocates little.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from oopav.display import gate_summary
from oopav.events import catalog as ev
from oopav.events.actions import Action
from oopav.events.catalog import Event
from oopav.events.chain import TERMINAL_TYPES, event_hashes, link_problem

SCHEMA = 5  # bump when the state's shape or the fold's meaning changes: snapshots rebuild

PHASE_BY_EVENT: dict[str, str] = {
    "task_submitted": "submitted",
    "task_rejected": "rejected",
    "workspace_prepared": "observing",
    "observation_recorded": "orienting",
    "orient_reported": "planning",
    "plan_proposed": "acting",
    "replan_triggered": "planning",
    "session_completed": "completed",
}


class ActionRecord(msgspec.Struct, kw_only=True):
    id: str
    type: str
    hash: str
    step: int = 0
    status: str = "proposed"  # proposed | rejected | applied | failed
    reason: str = ""
    checkpoint: str | None = None
    grants_used: list[str] = msgspec.field(default_factory=list)
    action: Action | None = None
    applied_event: str | None = None  # the action_applied event's id
    tests: bool | None = None  # the tests after this action, when the observer ran them


class GateRecord(msgspec.Struct, kw_only=True):
    gate: str
    passed: bool
    skipped: bool = False
    bounce: int = 0
    evidence: str = ""
    # One line for people: the evidence's headline and, for tests, pytest's counts.
    summary: str = ""


class GrantRecord(msgspec.Struct, kw_only=True):
    id: str
    scope: str
    granted_by: str
    expires_at: datetime | None = None
    max_uses: int | None = None
    uses: int = 0
    denied: bool = False


class BudgetsUsed(msgspec.Struct, kw_only=True):
    iterations: int = 0
    model_tokens: int = 0
    model_calls: int = 0
    model_calls_by_role: dict[str, int] = msgspec.field(default_factory=dict)
    # role -> [event id, request hash] of the session's last model call of that role: the
    # base the next call's prompt is stored as a delta against (history/prompts.py).
    last_calls: dict[str, list[str]] = msgspec.field(default_factory=dict)
    retries: dict[str, int] = msgspec.field(default_factory=dict)
    bounces: int = 0
    replans: int = 0
    prompt_output_bytes: int = 0
    exceeded: list[str] = msgspec.field(default_factory=list)


class StepResult(msgspec.Struct, kw_only=True):
    """What happened to one action, as the actor's next prompt shows it."""

    action_id: str
    type: str
    ok: bool
    summary: str
    output: str = ""


class ObservationPoint(msgspec.Struct, kw_only=True, frozen=True):
    """One observation in the session's history (the continuous observer, decide/trends.py)."""

    phase: str
    parse_errors: int = 0
    stubs: int = 0
    tests_passed: bool | None = None
    changed: int = 0
    action: str = "continue"


OBSERVATION_HISTORY = 20


class SessionState(msgspec.Struct, kw_only=True):
    session_id: str = ""
    phase: str = "new"
    task: ev.TaskSubmitted | None = None
    rejection: str | None = None
    workspace: ev.WorkspacePrepared | None = None
    baseline: ev.ObservationRecorded | None = None
    last_observation: ev.ObservationRecorded | None = None
    orient: ev.OrientReported | None = None
    plan: ev.PlanProposed | None = None
    plans: int = 0
    actions: list[ActionRecord] = msgspec.field(default_factory=list)
    gates: list[GateRecord] = msgspec.field(default_factory=list)
    verdicts: list[str] = msgspec.field(default_factory=list)
    critic_verdicts: list[ev.CriticVerdict] = msgspec.field(default_factory=list)
    critic_tokens: int = 0
    verified: bool | None = None
    grants: list[GrantRecord] = msgspec.field(default_factory=list)
    pending_permissions: list[str] = msgspec.field(default_factory=list)
    budgets_used: BudgetsUsed = msgspec.field(default_factory=BudgetsUsed)
    stuck: int = 0
    outcome: str | None = None
    summary: str = ""
    diff: str = ""
    event_count: int = 0
    last_sequence: int = 0
    last_event_id: str = ""
    last_event_type: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    event_ids: list[str] = msgspec.field(default_factory=list)
    phase_started: dict[str, datetime] = msgspec.field(default_factory=dict)
    last_replan: ev.ReplanTriggered | None = None
    agent_state: dict[str, Any] = msgspec.field(default_factory=dict)
    awaiting_permission: str | None = None
    recent: list[StepResult] = msgspec.field(default_factory=list)
    plan_actions_start: int = 0
    # Tamper evidence (events.chain): the hash of the last event while the session is
    # chained, the first broken link, and terminal events that came after the first one.
    chained: bool = False
    chain_hash: str | None = None
    # The last event's other accepted hash (events.chain.event_hashes), for older sessions.
    chain_alt: str | None = None
    chain_break: str | None = None
    late_terminals: list[str] = msgspec.field(default_factory=list)
    # decision core (issue 17)
    good_checkpoint: str | None = None
    rejected_actions: list[str] = msgspec.field(default_factory=list)
    evidence: list[ev.EvidenceGathered] = msgspec.field(default_factory=list)
    human_request: ev.HumanInputRequested | None = None
    human_pending: bool = False
    human_answers: list[ev.HumanInputProvided] = msgspec.field(default_factory=list)
    # Answers to the actor's `ask` actions (a person's or reused), for later questions like them.
    answered_questions: list[ev.QuestionAnswered] = msgspec.field(default_factory=list)
    phase_before_human: str = ""
    end_reason: str = ""
    plan_texts: list[str] = msgspec.field(default_factory=list)
    pending_gates: dict[str, bool] = msgspec.field(default_factory=dict)
    last_gate_results: dict[str, bool] = msgspec.field(default_factory=dict)
    unscored_replan: ev.ReplanTriggered | None = None
    replan_scores_before: dict[str, bool] = msgspec.field(default_factory=dict)
    observer_replans: int = 0
    adequacy_replans: int = 0
    last_observer_replan_at: int = -1
    # The continuous observer: the last observations (capped) and the caution they raised.
    observations: list[ObservationPoint] = msgspec.field(default_factory=list)
    caution_level: int = 0
    caution_reasons: list[str] = msgspec.field(default_factory=list)

    def action(self, action_id: str) -> ActionRecord | None:
        for rec in reversed(self.actions):
            if rec.id == action_id:
                return rec
        return None

    def has_event(self, event_id: str) -> bool:
        return event_id in self.event_ids


def initial(session_id: str = "") -> SessionState:
    return SessionState(session_id=session_id)


def evolve(state: SessionState, event: Event, sequence: int = 0) -> SessionState:
    """Apply one event. Unknown-to-this-fold event types only advance the counters.

    An event at or below the state's ``last_sequence`` was folded already and is ignored, so
    re-reading a stretch of the stream never applies an event twice."""
    if sequence and sequence <= state.last_sequence:
        return state
    if state.chained or event.prev_hash is not None:
        _link(state, event, sequence)
    etype = event.type  # a property: read once
    if etype in TERMINAL_TYPES and state.outcome is not None:
        # The first terminal event wins; a later one is counted, not applied.
        state.event_count += 1
        if sequence:
            state.last_sequence = sequence
        state.last_event_id = event.id
        state.last_event_type = etype
        state.event_ids.append(event.id)
        state.late_terminals.append(f"seq {sequence} ({etype} {event.id} by {event.actor})")
        return state
    if not state.session_id:
        state.session_id = event.aggregate_id
    state.event_count += 1
    if sequence:
        state.last_sequence = sequence
    state.last_event_id = event.id
    state.last_event_type = etype
    state.event_ids.append(event.id)
    if state.created_at is None:
        state.created_at = event.ts
    state.updated_at = event.ts
    before = state.phase
    phase = PHASE_BY_EVENT.get(etype)
    if phase and state.phase != "completed":
        state.phase = phase
    fn = _APPLY.get(type(event))
    if fn is not None:
        fn(state, event)
    if state.phase != before:
        state.phase_started[state.phase] = event.ts
    return state


def _link(state: SessionState, event: Event, sequence: int) -> None:
    if state.chain_break is None:
        problem = link_problem(
            event,
            first=state.event_count == 0,
            chained=state.chained,
            previous_hash=state.chain_hash,
            previous_alt=state.chain_alt,
        )
        if problem is not None:
            state.chain_break = f"seq {sequence} ({event.type} {event.id}): {problem}"
    state.chained = True
    hashes = event_hashes(event)
    state.chain_hash = hashes[0]
    state.chain_alt = hashes[1] if len(hashes) > 1 else None


def fold(
    events: list[tuple[int, Event]] | list[Event], state: SessionState | None = None
) -> SessionState:
    st = state or initial()
    for item in events:
        if isinstance(item, tuple):
            evolve(st, item[1], item[0])
        else:
            evolve(st, item)
    return st


# -- per-type application ------------------------------------------------------------------


def _task_submitted(s: SessionState, e: ev.TaskSubmitted) -> None:
    s.task = e


def _task_rejected(s: SessionState, e: ev.TaskRejected) -> None:
    # Messages name their field already; prefix only one that does not.
    s.rejection = e.error if not e.field or e.field in e.error else f"{e.field}: {e.error}"
    s.outcome = "rejected"


def _workspace(s: SessionState, e: ev.WorkspacePrepared) -> None:
    s.workspace = e


def _observation(s: SessionState, e: ev.ObservationRecorded) -> None:
    if e.phase == "baseline" and s.baseline is None:
        s.baseline = e
    s.last_observation = e
    point = ObservationPoint(
        phase=e.phase,
        parse_errors=len(e.parse_errors),
        stubs=len(e.stubs),
        tests_passed=e.tests.passed if e.tests is not None else None,
        changed=len(e.changed_files),
        action=e.observer_action,
    )
    s.observations = [*s.observations, point][-OBSERVATION_HISTORY:]
    if e.phase == "change" and e.tests is not None:
        for a in reversed(s.actions):
            if a.applied_event == e.source_event:
                a.tests = e.tests.passed
                break
    if e.phase == "change" and s.phase not in ("completed",):
        s.phase = "acting"


def _caution(s: SessionState, e: ev.CautionRaised) -> None:
    s.caution_level = e.level
    s.caution_reasons = list(e.reasons)


def _orient(s: SessionState, e: ev.OrientReported) -> None:
    s.orient = e


def _plan(s: SessionState, e: ev.PlanProposed) -> None:
    s.plan = e
    s.plans += 1
    s.plan_texts = [*s.plan_texts, plan_text(e)][-3:]
    # A plan closes its planning phase and opens a new acting phase.
    s.budgets_used.retries["planning"] = 0
    s.budgets_used.retries["acting"] = 0
    s.plan_actions_start = len(s.actions)
    s.recent = []
    _merge_agent_state(s, e.state_update)


def plan_text(plan: ev.PlanProposed) -> str:
    """A plan's canonical text for fuzzy repetition: its steps and files, nothing volatile."""
    steps = "\n".join(f"{st.id}. {st.description} [{', '.join(st.files)}]" for st in plan.steps)
    return f"{steps}\nfiles: {', '.join(plan.files)}\ntests: {plan.test_decision}"


def _merge_agent_state(s: SessionState, update: dict[str, Any] | None) -> None:
    if not update:
        return
    from oopav.models.prompt import AgentState, StateUpdate, merge_state

    try:
        current = msgspec.convert(s.agent_state, AgentState) if s.agent_state else AgentState()
        merged = merge_state(current, msgspec.convert(update, StateUpdate))
    except msgspec.ValidationError:
        return
    s.agent_state = msgspec.to_builtins(merged)


def _remember(s: SessionState, result: StepResult) -> None:
    s.recent.append(result)
    del s.recent[:-5]


ROLE_PHASE = {"planner": "planning", "actor": "acting"}


def _model_called(s: SessionState, e: ev.ModelCalled) -> None:
    b = s.budgets_used
    phase = ROLE_PHASE.get(e.role)
    if phase is not None:
        # Every call counts as a retry until an answer it produced is accepted (below).
        b.retries[phase] = b.retries.get(phase, 0) + 1
    b.model_calls += 1
    b.model_calls_by_role[e.role] = b.model_calls_by_role.get(e.role, 0) + 1
    b.last_calls[e.role] = [e.id, e.request_hash]
    b.model_tokens += e.prompt_tokens + e.completion_tokens
    if e.role == "critic":
        s.critic_tokens += e.prompt_tokens + e.completion_tokens


def _action_proposed(s: SessionState, e: ev.ActionProposed) -> None:
    s.budgets_used.iterations += 1
    if e.model_call_id is not None:
        acting = s.budgets_used.retries.get("acting", 0)
        s.budgets_used.retries["acting"] = max(0, acting - 1)
    s.actions.append(
        ActionRecord(id=e.id, type=e.action.type, hash=e.action_hash, step=e.step, action=e.action)
    )
    if e.action.type == "finish":
        s.phase = "verifying"
    _merge_agent_state(s, e.state_update)


def _action_rejected(s: SessionState, e: ev.ActionRejected) -> None:
    rec = s.action(e.action_id)
    if rec is not None:
        rec.status = "rejected"
        rec.reason = e.reason
    if s.awaiting_permission == e.action_id:
        s.awaiting_permission = None
    _remember(
        s,
        StepResult(
            action_id=e.action_id,
            type=rec.type if rec else "",
            ok=False,
            summary=f"rejected ({e.reason}): {e.message}"[:2400],
        ),
    )


def _permission_requested(s: SessionState, e: ev.PermissionRequested) -> None:
    s.pending_permissions.append(e.scope)
    s.awaiting_permission = e.action_id
    s.phase = "waiting_permission"


def _permission_granted(s: SessionState, e: ev.PermissionGranted) -> None:
    s.grants.append(
        GrantRecord(
            id=e.id,
            scope=e.scope,
            granted_by=e.granted_by,
            expires_at=e.expires_at,
            max_uses=e.max_uses,
        )
    )
    if e.scope in s.pending_permissions:
        s.pending_permissions.remove(e.scope)


def _permission_denied(s: SessionState, e: ev.PermissionDenied) -> None:
    s.grants.append(GrantRecord(id=e.id, scope=e.scope, granted_by=e.denied_by, denied=True))
    if e.scope in s.pending_permissions:
        s.pending_permissions.remove(e.scope)


def _action_applied(s: SessionState, e: ev.ActionApplied) -> None:
    rec = s.action(e.action_id)
    if rec is not None:
        rec.status = "applied" if e.ok else "failed"
        rec.checkpoint = e.checkpoint
        rec.applied_event = e.id
        rec.grants_used = list(e.grants_used)
    if s.awaiting_permission == e.action_id:
        s.awaiting_permission = None
        s.phase = "acting"
    if e.ok:
        summary = f"applied; files changed: {', '.join(e.files_changed) or 'none'}"
    else:
        summary = f"failed: exit {e.exit_code}" + (" (timed out)" if e.timed_out else "")
    _remember(
        s,
        StepResult(
            action_id=e.action_id,
            type=rec.type if rec else "",
            ok=e.ok,
            summary=summary,
            output=(e.stdout_tail + e.stderr_tail)[-1500:],
        ),
    )
    for gid in e.grants_used:
        for g in s.grants:
            if g.id == gid:
                g.uses += 1
    b = s.budgets_used
    b.prompt_output_bytes += min(e.output_bytes, 1 << 30)


def _gate(s: SessionState, e: ev.GateEvaluated) -> None:
    s.gates.append(
        GateRecord(
            gate=e.gate,
            passed=e.passed,
            skipped=e.skipped,
            bounce=e.bounce,
            evidence=e.evidence[:500],
            summary=gate_summary(e),
        )
    )
    s.phase = "verifying"
    s.pending_gates[e.gate] = e.passed


def _verification(s: SessionState, e: ev.VerificationCompleted) -> None:
    s.verified = e.passed
    if e.passed:
        s.good_checkpoint = next(
            (a.checkpoint for a in reversed(s.actions) if a.status == "applied" and a.checkpoint),
            s.good_checkpoint,
        )
    s.verdicts.append("passed" if e.passed else f"failed:{e.failed_gate}")
    s.last_gate_results = s.pending_gates
    s.pending_gates = {}


def _replan(s: SessionState, e: ev.ReplanTriggered) -> None:
    s.last_replan = e
    b = s.budgets_used
    b.replans += 1
    if s.unscored_replan is None:
        s.unscored_replan = e
        s.replan_scores_before = dict(s.last_gate_results)
    if e.source == "adequacy":
        s.adequacy_replans += 1
    if e.source == "observer":
        s.observer_replans += 1
        s.last_observer_replan_at = len(s.actions)
    if e.source == "verifier":
        b.bounces += 1


def _budget(s: SessionState, e: ev.BudgetExceeded) -> None:
    s.budgets_used.exceeded.append(e.budget)


def _stuck(s: SessionState, e: ev.StuckDetected) -> None:
    s.stuck += 1


def _critic(s: SessionState, e: ev.CriticVerdict) -> None:
    s.verdicts.append(f"critic:{e.verdict}")
    s.critic_verdicts.append(e)


def _completed(s: SessionState, e: ev.SessionCompleted) -> None:
    s.outcome = e.outcome
    s.summary = e.summary
    s.diff = e.diff
    s.end_reason = e.reason
    s.phase = "completed"


def _replan_scored(s: SessionState, e: ev.ReplanScored) -> None:
    s.unscored_replan = None
    s.replan_scores_before = {}


def _candidate(s: SessionState, e: ev.CandidateEvaluated) -> None:
    # A sampled candidate is an accepted answer, not a retry.
    if e.model_call_id is not None:
        acting = s.budgets_used.retries.get("acting", 0)
        s.budgets_used.retries["acting"] = max(0, acting - 1)


def _evidence(s: SessionState, e: ev.EvidenceGathered) -> None:
    s.evidence.append(e)


def _rolled_back(s: SessionState, e: ev.WorkspaceRolledBack) -> None:
    undone = set(e.actions)
    for a in s.actions:
        if a.id in undone and a.status == "applied":
            a.status = "rolled_back"
    s.rejected_actions = (s.rejected_actions + list(e.rejected))[-5:]


def _human_requested(s: SessionState, e: ev.HumanInputRequested) -> None:
    s.human_request = e
    s.human_pending = True
    if s.phase != "completed":
        s.phase_before_human = s.phase
        s.phase = "waiting_for_human"


def _human_provided(s: SessionState, e: ev.HumanInputProvided) -> None:
    s.human_answers.append(e)
    if s.phase == "waiting_for_human":
        s.phase = s.phase_before_human or "orienting"
    s.human_pending = False


def _question_answered(s: SessionState, e: ev.QuestionAnswered) -> None:
    s.answered_questions.append(e)


_APPLY: dict[type, Any] = {
    ev.TaskSubmitted: _task_submitted,
    ev.TaskRejected: _task_rejected,
    ev.WorkspacePrepared: _workspace,
    ev.ObservationRecorded: _observation,
    ev.OrientReported: _orient,
    ev.CautionRaised: _caution,
    ev.PlanProposed: _plan,
    ev.ModelCalled: _model_called,
    ev.ActionProposed: _action_proposed,
    ev.ActionRejected: _action_rejected,
    ev.PermissionRequested: _permission_requested,
    ev.PermissionGranted: _permission_granted,
    ev.PermissionDenied: _permission_denied,
    ev.ActionApplied: _action_applied,
    ev.GateEvaluated: _gate,
    ev.VerificationCompleted: _verification,
    ev.ReplanTriggered: _replan,
    ev.BudgetExceeded: _budget,
    ev.StuckDetected: _stuck,
    ev.CriticVerdict: _critic,
    ev.SessionCompleted: _completed,
    ev.EvidenceGathered: _evidence,
    ev.WorkspaceRolledBack: _rolled_back,
    ev.HumanInputRequested: _human_requested,
    ev.HumanInputProvided: _human_provided,
    ev.QuestionAnswered: _question_answered,
    ev.ReplanScored: _replan_scored,
    ev.CandidateEvaluated: _candidate,
}
