"""The external critic's side of the verifier: what it may see and what its verdict does.

A critic is a read-only model call, possibly to a provider outside the machine, so:

- it is capability-gated: off unless the task's policy turns it on (``critic: true`` or a
  ``critic: {enabled, model, max_calls, max_tokens, redaction, instructions, on}`` table);
- it reviews when ``on`` says (default ``[gate]``): ``gate``, the last gate of the verifier;
  ``plan``, each plan before it is proposed (a ``block`` replans, within the replan cap);
  ``escalation``, an observer escalation (its verdict is a second opinion in the question put
  to the person, never a decision); all triggers share one budget (handlers/support/critic.py);
- it sees a ``CritiquePack`` — the task, the plan, the diff and the gate results, each
  section bounded — passed through the ``Redactor`` before it leaves; the sha256 of the exact
  payload sent is recorded, and an identical payload is never sent twice in a session (the
  earlier verdict is reused);
- its verdict is one of approve | caution | block | refused | unavailable, and what each does
  is the policy table below: only ``block`` sends the change back (a replan); a critic that
  refuses or is unavailable never blocks — the session goes on with a recorded warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oopav.models.redact import Redaction, Redactor

Verdict = Literal["approve", "caution", "block", "refused", "unavailable"]
Effect = Literal["proceed", "warn", "replan"]
Trigger = Literal["gate", "plan", "escalation", "auto"]

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
) -> str:
    """The critic's whole view, as text, before redaction. Sections are bounded so one huge
    diff cannot crowd out the task."""
    gate_lines = [
        f"- {g.gate}: {'skipped' if g.skipped else 'passed' if g.passed else 'FAILED'}"
        + (f" — {g.evidence.splitlines()[0][:200]}" if g.evidence else "")
        for g in gates
    ]
    parts = [
        "### Task\n" + _clip(instruction, SECTION_CAPS["task"]),
        "### Plan\n" + _clip("\n".join(plan) or "(no plan)", SECTION_CAPS["plan"]),
        "### Gates\n" + _clip("\n".join(gate_lines) or "(none yet)", SECTION_CAPS["gates"]),
        "### Diff\n" + _clip(diff or "(empty)", SECTION_CAPS["diff"]),
    ]
    if instructions:
        parts.insert(1, "### Reviewer instructions\n" + _clip(instructions, 4_000))
    return "\n\n".join(parts)


def prepare(pack: str, cfg: CriticConfig) -> Redaction:
    """The exact payload the critic will receive (redacted and clamped)."""
    return Redactor(cfg.redaction).redact(pack)


def effect(verdict: str) -> Effect:
    return VERDICT_POLICY.get(verdict, "warn")
