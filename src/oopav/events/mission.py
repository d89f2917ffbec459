"""Mission aggregate events (``oopav.ev.mission.<name>.<type>``): the experience library that
the reflector maintains per mission. Every guidance change is one of these facts.

The library is a list of entries with stable keys ``G<n>``: a key is assigned once, by the
event that creates the entry, and never names another entry afterwards (removed keys are not
reused). The step of the library is the number of library-changing events folded so far
(``experience_library_seeded``, ``guidance_op_applied``, ``guidance_rolled_back``); every
``model_called`` that rendered the library records that step.

A mission name may hold ``.``, which is a token separator in subjects: the aggregate id is the
name with ``.`` written as ``~`` (see :func:`mission_aggregate_id`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from oopav.events.catalog import Event

GuidanceOpKind = Literal["upsert", "remove", "merge"]
RejectionReason = Literal[
    "ineligible",  # the group's signals do not call for a reflection under the policy
    "manual_review",  # every candidate was wrong and the policy hands that to a person
    "noop",  # the consolidator chose to change nothing
    "uplift_below_delta",  # the holdout did not improve label_match by apply_if_delta
    "uncertain",  # the proposal carries an uncertainty note and allow_uncertain is off
    "budget",  # max_operations or change_cap_per_epoch would be exceeded
    "invalid_answer",  # the critic or consolidator answer was not valid (recorded as such)
    "invalid_operation",  # an operation names a missing key or would empty the library
]


def mission_aggregate_id(name: str) -> str:
    """The aggregate id (one subject token) of mission ``name``."""
    return name.replace(".", "~")


def mission_name(aggregate_id: str) -> str:
    return aggregate_id.replace("~", ".")


class GuidanceEntry(msgspec.Struct, kw_only=True, frozen=True):
    """One line of the library: ``[key]. text``."""

    key: str
    text: str
    rationale: str = ""
    evidence_session_ids: list[str] = msgspec.field(default_factory=list)
    merged_from: list[str] = msgspec.field(default_factory=list)


class GuidanceOp(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """An operation on the library as a consolidator proposes it. ``key``: the entry an
    ``upsert`` rewrites (absent: a new entry) or the entry a ``remove`` drops; ``merged_from``:
    the entries a ``merge`` replaces with one new entry holding ``text``."""

    op: GuidanceOpKind
    key: str | None = None
    text: str = ""
    rationale: str = ""
    merged_from: list[str] = msgspec.field(default_factory=list)


class CandidateSignal(msgspec.Struct, kw_only=True, frozen=True):
    """What one rollout of a group scored (candidates are ordered by session id)."""

    session_id: str
    outcome: str | None
    verdict: Literal["pass", "fail"]
    expected: Literal["pass", "fail"] | None = None
    label_match: bool
    confidence: float = 0.0
    self_consistency: float | None = None
    guidance_step: int | None = None


class TaskSpec(msgspec.Struct, kw_only=True, frozen=True):
    """The task a group ran, enough to run it again on a holdout."""

    instruction: str
    repo: str
    model: str | None = None
    test_command: list[str] | None = None
    expected: Literal["pass", "fail"] | None = None
    budgets: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    examples: list[dict[str, Any]] = msgspec.field(default_factory=list)


class Critique(msgspec.Struct, kw_only=True, frozen=True):
    """The critic's answer about one candidate, or why it could not be used."""

    session_id: str
    model_call_id: str | None = None
    ok: bool = True
    error: str = ""
    summary: str = ""
    critique: str = ""
    root_cause: str | None = None
    issues: list[str] = msgspec.field(default_factory=list)
    candidate_ops: list[GuidanceOp] = msgspec.field(default_factory=list)
    uncertainty_note: str | None = None


class HoldoutRun(msgspec.Struct, kw_only=True, frozen=True):
    """One holdout session: the task it reran, with which library (``preview``) and seed."""

    session_id: str
    task_index: int
    preview: bool
    seed: int = 0


class ExperienceLibrarySeeded(Event, tag="experience_library_seeded", frozen=True):
    """The library starts (or is replaced wholesale) with these entries."""

    entries: list[GuidanceEntry]
    source: str = ""
    seeded_by: str = ""
    replace: bool = False


class ReflectionProposed(Event, tag="reflection_proposed", frozen=True):
    """A full reflection on one group: its signals, the critiques, the consolidator's answer
    and the holdout it will be judged on. Nothing changes until ``guidance_op_applied``."""

    group_id: str
    epoch: int = 0
    base_step: int = 0
    eligibility: str = ""
    reason: str = ""
    task: TaskSpec | None = None
    signals: list[CandidateSignal] = msgspec.field(default_factory=list)
    critiques: list[Critique] = msgspec.field(default_factory=list)
    action: Literal["refine", "noop"] = "noop"
    summary: str = ""
    critique: str = ""
    operations: list[GuidanceOp] = msgspec.field(default_factory=list)
    # The operations resolved against the library at base_step (new keys assigned): what a
    # holdout previews and what guidance_op_applied will record.
    planned: list[GuidanceOp] = msgspec.field(default_factory=list)
    evidence_group_ids: list[str] = msgspec.field(default_factory=list)
    evidence_session_ids: list[str] = msgspec.field(default_factory=list)
    uncertainty_note: str | None = None
    model_call_ids: list[str] = msgspec.field(default_factory=list)
    holdout_tasks: list[TaskSpec] = msgspec.field(default_factory=list)
    holdout: list[HoldoutRun] = msgspec.field(default_factory=list)
    rapid: bool = False
    # The reflector settings it decided under (a mission replay decides under the same).
    settings: dict[str, Any] = msgspec.field(default_factory=dict)


class GuidanceOpApplied(Event, tag="guidance_op_applied", frozen=True):
    """One operation applied to the library; ``key`` is the entry it created, rewrote or
    removed (a merge creates ``key`` from ``merged_from``). ``step`` is the library's step
    after it."""

    op: GuidanceOpKind
    key: str
    text: str = ""
    rationale: str = ""
    evidence_session_ids: list[str] = msgspec.field(default_factory=list)
    merged_from: list[str] = msgspec.field(default_factory=list)
    proposal_id: str | None = None
    step: int = 0
    label_match_before: float | None = None
    label_match_after: float | None = None


class ReflectionRejected(Event, tag="reflection_rejected", frozen=True):
    """A group that changed nothing, and why. ``proposal_id`` is set when a proposal existed."""

    group_id: str
    reason: RejectionReason
    detail: str = ""
    proposal_id: str | None = None
    epoch: int = 0
    task: TaskSpec | None = None
    signals: list[CandidateSignal] = msgspec.field(default_factory=list)
    label_match_before: float | None = None
    label_match_after: float | None = None
    settings: dict[str, Any] = msgspec.field(default_factory=dict)


class GuidanceRolledBack(Event, tag="guidance_rolled_back", frozen=True):
    """The library returns to what it was at ``to_step`` (a new step; history is kept)."""

    to_step: int
    step: int = 0
    by: str = ""
    reason: str = ""


MISSION_EVENTS: tuple[type[Event], ...] = (
    ExperienceLibrarySeeded,
    ReflectionProposed,
    GuidanceOpApplied,
    ReflectionRejected,
    GuidanceRolledBack,
)
