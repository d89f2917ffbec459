"""The external critic's side of the verifier: what it may see and what its verdict does.

A critic is a read-only model call, possibly to a provider outside the machine, so:

- it is capability-gated: off unless the task's policy turns it on (``critic: true`` or a
  ``critic: {enabled, model, max_calls, max_tokens, redaction, instructions, on}`` table);
- it reviews when ``on`` says (default ``[gate]``): ``gate``, the last gate of the verifier;
  ``plan``, each plan before it is proposed (a ``block`` replans, within the replan cap);
  ``escalation``, an observer escalation (its verdict is a second opinion in the question put
  to the person, never a decision); all triggers share one budget (handlers/support/critic.py);
- it sees a ``CritiquePack`` — the task, the plan, the diff and the gate results, each
  section bounded, only those ``allowed_artifact_fields`` names (default all four; a section
  left out is named as withheld, so the critic knows what it does not see) — passed through
  the ``Redactor`` before it leaves; the sha256 of the exact
  payload sent is recorded, and an identical payload is never sent twice in a session (the
  earlier verdict is reused);
- its verdict is one of approve | caution | block | refused | unavailable, and what each does
  is the policy table below: only ``block`` sends the change back (a replan); a critic that
  refuses or is unavailable never blocks — the session goes on with a recorded warning;
- its report adds ``top_risks``, ``missing_tests`` and a ``confidence`` (0-1); with
  ``min_confidence`` set, the confidence tier gate (decide/gates.confidence_outcome) fails a
  verdict less sure than that, and skips, saying why, where no confidence was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oopav.models.redact import Redaction, Redactor

Verdict = Literal["approve", "caution", "block", "refused", "unavailable"]
Effect = Literal["proceed", "warn", "replan"]
Trigger = Literal["gate", "plan", "escalation", "auto"]
ArtifactField = Literal["task", "plan", "gates", "diff"]
ARTIFACT_FIELDS: tuple[ArtifactField, ...] = ("task", "plan", "gates", "diff")

VERDICT_POLICY: dict[str, Effect] = {
    "approve": "proceed",
    "caution": "warn",
    "block": "replan",
    "refused": "warn",
    "unavailable": "warn",
    # Older recordings said reject for what is now block.
    "reject": "replan",
}

SECTION_CAPS = {"task": 4_000, "plan": 4_000, "gates": 4_000, "diff": 32_000}


class CriticConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    enabled: bool = True
    model: str | None = Field(None, min_length=1, max_length=512)
    max_calls: int = Field(3, ge=0, le=50)
    max_tokens: int = Field(20_000, ge=100, le=1_000_000)
    redaction: Literal["standard", "strict"] = "standard"
    instructions: str | None = Field(None, max_length=4_000)
    on: list[Trigger] = Field(
        default_factory=lambda: list[Trigger](["gate"]),
        description="when the critic reviews: as the last gate, after each plan, on escalation, "
        "or (auto) as the last gate only when an automatic trigger fires (decide/critic.py)",
    )
    auto_max_files: int = Field(10, ge=1, le=100_000)
    auto_max_lines: int = Field(400, ge=1, le=10_000_000)
    auto_stalled_steps: int = Field(3, ge=1, le=1000)
    allowed_artifact_fields: list[ArtifactField] = Field(
        default_factory=lambda: list(ARTIFACT_FIELDS),
        min_length=1,
        description="what of the session the critic is shown: task, plan, gates, diff",
    )
    min_confidence: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="the confidence tier: a verdict less sure than this fails the gate "
        "(unset: the tier is skipped)",
    )


def critic_config(policy: dict[str, Any] | None) -> CriticConfig | None:
    """The task's critic settings, or None when no critic runs. Raises ``ValueError`` with
    the field at fault for a malformed table (intake rejects the submission with it)."""
    raw = (policy or {}).get("critic")
    if raw is None or raw is False:
        return None
    if raw is True:
        return CriticConfig()
    if not isinstance(raw, dict):
        raise ValueError("policy.critic must be true, false or a table {enabled, model, ...}")
    try:
        cfg = CriticConfig(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"policy.critic.{loc}: {err['msg']}") from None
    return cfg if cfg.enabled else None


@dataclass(frozen=True)
class GateLine:
    gate: str
    passed: bool
    skipped: bool = False
    evidence: str = ""


def _clip(text: str, cap: int) -> str:
    data = text.encode()
    if len(data) <= cap:
        return text
    return data[:cap].decode(errors="ignore") + f"\n[… {len(data) - cap} more bytes not shown]"


def build_pack(
    instruction: str,
    plan: list[str],
    diff: str,
    gates: list[GateLine],
    *,
    instructions: str | None = None,
    shown: Sequence[str] = ARTIFACT_FIELDS,
) -> str:
    """The critic's whole view, as text, before redaction. Sections are bounded so one huge
    diff cannot crowd out the task; only the sections in ``shown``
    (``allowed_artifact_fields``) are included, the others named as withheld."""
    gate_lines = [
        f"- {g.gate}: {'skipped' if g.skipped else 'passed' if g.passed else 'FAILED'}"
        + (f" — {g.evidence.splitlines()[0][:200]}" if g.evidence else "")
        for g in gates
    ]
    sections = {
        "task": "### Task\n" + _clip(instruction, SECTION_CAPS["task"]),
        "plan": "### Plan\n" + _clip("\n".join(plan) or "(no plan)", SECTION_CAPS["plan"]),
        "gates": "### Gates\n"
        + _clip("\n".join(gate_lines) or "(none yet)", SECTION_CAPS["gates"]),
        "diff": "### Diff\n" + _clip(diff or "(empty)", SECTION_CAPS["diff"]),
    }
    parts = [text for name, text in sections.items() if name in shown]
    withheld = [name for name in sections if name not in shown]
    if instructions:
        parts.insert(
            1 if "task" in shown else 0, "### Reviewer instructions\n" + _clip(instructions, 4_000)
        )
    if withheld:
        parts.append(f"### Withheld by policy\n{', '.join(withheld)} (not shown to the reviewer)")
    return "\n\n".join(parts)


def prepare(pack: str, cfg: CriticConfig) -> Redaction:
    """The exact payload the critic will receive (redacted and clamped)."""
    return Redactor(cfg.redaction).redact(pack)


def effect(verdict: str) -> Effect:
    return VERDICT_POLICY.get(verdict, "warn")
