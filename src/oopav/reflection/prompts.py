"""The reflector's two model contracts: the critic (one candidate → a strict JSON critique) and
the consolidator (the critiques of a group → operations on the library).

Both answer one bare JSON document, validated against a msgspec struct with per-field caps;
anything else is an :class:`ReflectionAnswerError` (recorded as a failure, never patched up).
The consolidator's prompt is a template whose placeholders are checked when the reflector
starts (:func:`validate_template`), so a broken custom template fails at once, not mid-run.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from oopav.events.mission import CandidateSignal, Critique, GuidanceOp, TaskSpec
from oopav.models.base import Message, ModelRequest, Sampling

CRITIC_ROLE = "reflection_critic"
CONSOLIDATOR_ROLE = "reflection_consolidator"
MAX_CANDIDATES = 6

Short = Annotated[str, Meta(max_length=600)]
Long = Annotated[str, Meta(max_length=2000)]
Item = Annotated[str, Meta(max_length=300)]
Key = Annotated[str, Meta(pattern=r"^G\d+$")]


class OpIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    op: Literal["upsert", "remove", "merge"]
    key: Key | None = None
    text: Short = ""
    rationale: Short = ""
    merged_from: Annotated[list[Key], Meta(max_length=8)] = msgspec.field(default_factory=list)

    def to_op(self) -> GuidanceOp:
        return GuidanceOp(
            op=self.op,
            key=self.key,
            text=self.text,
            rationale=self.rationale,
            merged_from=list(self.merged_from),
        )


class CriticAnswer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    summary: Short
    critique: Long
    root_cause: Short | None = None
    issues: Annotated[list[Item], Meta(max_length=8)] = msgspec.field(default_factory=list)
    candidate_ops: Annotated[list[OpIn], Meta(max_length=4)] = msgspec.field(default_factory=list)
    uncertainty_note: Short | None = None


class ConsolidatorAnswer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    action: Literal["refine", "noop"]
    summary: Short
    critique: Long
    operations: Annotated[list[OpIn], Meta(max_length=16)] = msgspec.field(default_factory=list)
    evidence_group_ids: Annotated[
        list[Annotated[str, Meta(max_length=64)]], Meta(max_length=16)
    ] = msgspec.field(default_factory=list)
    uncertainty_note: Short | None = None


class ReflectionAnswerError(ValueError):
    pass


def parse_strict(text: str, type_: type[Any]) -> Any:
    """One JSON document of ``type_`` and nothing else (surrounding whitespace aside)."""
    if not text.strip():
        raise ReflectionAnswerError("empty answer")
    try:
        return msgspec.json.decode(text.strip().encode(), type=type_)
    except msgspec.ValidationError as exc:
        raise ReflectionAnswerError(f"schema mismatch: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ReflectionAnswerError(f"invalid JSON: {exc}") from None


def _schema(type_: type[Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(msgspec.json.schema(type_)))
    return out


def render_library(lines: Sequence[tuple[str, str]]) -> str:
    from oopav.models.prompt import render_guidance

    return render_guidance(list(lines))


CRITIC_SYSTEM = """\
You are the critic of a coding agent's experience library. You see one attempt at a task,
whether it matched its label (the expected outcome, or the verifier's verdict), and the
guidance lines the agent was prompted with. Say what went wrong or right and which general,
reusable guidance would have helped. Never restate the task's specifics as guidance.
Answer with one JSON document matching the schema, nothing else."""


def critic_request(
    task: TaskSpec,
    signal: CandidateSignal,
    library: Sequence[tuple[str, str]],
    *,
    summary: str,
    diff: str,
    evidence: str,
    mode: str,
    temperature: float = 0.2,
) -> ModelRequest:
    user = "\n\n".join(
        [
            f"## Task\n{task.instruction}",
            f"## Mode\n{mode} (diagnose: every attempt failed; contrast: attempts disagree)",
            "## Attempt\n"
            f"session {signal.session_id}\noutcome {signal.outcome}, verdict {signal.verdict}, "
            f"expected {signal.expected or '(verifier verdict)'}, label_match {signal.label_match}, "
            f"confidence {signal.confidence}",
            f"## Summary\n{summary[:1500] or '(none)'}",
            f"## Gate evidence\n{evidence[:2000] or '(none)'}",
            f"## Final diff\n{diff[:4000] or '(empty)'}",
            f"## Guidance the agent saw\n{render_library(library)}",
            "## Schema\n" + json.dumps(_schema(CriticAnswer), sort_keys=True),
        ]
    )
    return ModelRequest(
        role=CRITIC_ROLE,
        messages=[
            Message(role="system", content=CRITIC_SYSTEM),
            Message(role="user", content=user),
        ],
        schema=_schema(CriticAnswer),
        envelope=None,
        state_update=False,
        sampling=Sampling(temperature=temperature, max_tokens=1024),
        seed=0,
    )


CONSOLIDATOR_TEMPLATE = """\
You maintain the experience library of mission {mission}: short, general guidance lines that
are put into a coding agent's prompt. Decide from the critiques below whether to refine the
library, and how.

Allowed operations: {allowed_ops}.
- upsert with no key adds an entry; upsert with a key rewrites that entry;
- remove drops an entry (the library must never become empty);
- merge replaces the entries in merged_from (two or more) by one entry with the given text.
Budget: at most {max_operations} operations in this proposal. Prefer fewer, general lines.
Answer action "noop" when nothing should change, and put any doubt in uncertainty_note.

## Current library (step {step})
{library}

## Group {group_id}
{signals}

## Critiques
{critiques}

Answer with one JSON document matching this schema, nothing else:
{schema}
"""

TEMPLATE_FIELDS = frozenset(
    {
        "mission",
        "allowed_ops",
        "max_operations",
        "step",
        "library",
        "group_id",
        "signals",
        "critiques",
        "schema",
    }
)
REQUIRED_FIELDS = frozenset({"allowed_ops", "max_operations", "library", "critiques", "schema"})


def validate_template(template: str) -> None:
    """Refuse a consolidator template that cannot work: unknown or missing placeholders."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ValueError(f"consolidator template is not a valid format string: {exc}") from None
    unknown = sorted(n for n in names if n not in TEMPLATE_FIELDS)
    if unknown:
        raise ValueError(
            f"consolidator template has unknown placeholders {unknown}; "
            f"allowed: {sorted(TEMPLATE_FIELDS)}"
        )
    missing = sorted(REQUIRED_FIELDS - names)
    if missing:
        raise ValueError(
            f"consolidator template lacks {missing}: it must show the library, the critiques, "
            "the allowed operations, the operation budget and the schema"
        )


def consolidator_request(
    template: str,
    *,
    mission: str,
    step: int,
    library: Sequence[tuple[str, str]],
    group_id: str,
    signals: Sequence[CandidateSignal],
    critiques: Sequence[Critique],
    max_operations: int,
    temperature: float = 0.2,
) -> ModelRequest:
    sig_lines = [
        f"- {s.session_id}: verdict {s.verdict}, expected {s.expected or '-'}, "
        f"label_match {s.label_match}, confidence {s.confidence}"
        for s in signals
    ]
    crit = [
        json.dumps(
            {
                "session_id": c.session_id,
                "summary": c.summary,
                "critique": c.critique,
                "root_cause": c.root_cause,
                "issues": c.issues,
                "candidate_ops": [msgspec.to_builtins(o) for o in c.candidate_ops],
                "uncertainty_note": c.uncertainty_note,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        for c in critiques
        if c.ok
    ]
    text = template.format(
        mission=mission,
        allowed_ops="upsert, remove, merge",
        max_operations=max_operations,
        step=step,
        library=render_library(library),
        group_id=group_id,
        signals="\n".join(sig_lines),
        critiques="\n".join(crit) or "(none)",
        schema=json.dumps(_schema(ConsolidatorAnswer), sort_keys=True),
    )
    return ModelRequest(
        role=CONSOLIDATOR_ROLE,
        messages=[Message(role="user", content=text)],
        schema=_schema(ConsolidatorAnswer),
        envelope=None,
        state_update=False,
        sampling=Sampling(temperature=temperature, max_tokens=1536),
        seed=0,
    )


def critique_from(session_id: str, answer: CriticAnswer, call_id: str) -> Critique:
    return Critique(
        session_id=session_id,
        model_call_id=call_id,
        summary=answer.summary,
        critique=answer.critique,
        root_cause=answer.root_cause,
        issues=list(answer.issues),
        candidate_ops=[o.to_op() for o in answer.candidate_ops],
        uncertainty_note=answer.uncertainty_note,
    )
