"""Budget accounting (DESIGN invariant 8): pure, immutable usage counters, the check against
``Budgets`` in a fixed order, the merge of defaults, policy caps and a submission's request,
and the clipping of tool output before it goes into a prompt.

Usage is charged *before* the work it pays for and checked right after: a limit of 3 retries
allows three retries, and charging the fourth makes ``exceeded`` report it, so the handler emits
``budget_exceeded`` instead of doing the work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import msgspec

from oopav.events.catalog import Budgets

BUDGET_FIELDS: tuple[str, ...] = tuple(Budgets.__struct_fields__)

CHECK_ORDER: tuple[str, ...] = (
    "iterations",
    "model_tokens",
    "retries_per_phase",
    "wall_seconds_per_phase",
    "bounces",
    "prompt_output_bytes",
)
"""The order ``exceeded`` checks budgets in: session-wide totals first (they end the session
whatever phase it is in), then per-phase limits (phases by name), then the gate bounces and the
per-prompt output size. A fixed order makes the reported budget deterministic when several are
over at once."""


class BudgetUsage(msgspec.Struct, kw_only=True, frozen=True):
    """What a session has used so far. Never mutated: every ``charge_*`` returns a new value
    (the dicts are copied, so an older value stays as it was)."""

    retries: dict[str, int] = msgspec.field(default_factory=dict)
    iterations: int = 0
    model_tokens: int = 0
    wall_seconds: dict[str, float] = msgspec.field(default_factory=dict)
    prompt_output_bytes: int = 0
    """The largest amount of tool output put into one prompt (the budget is per prompt)."""
    bounces: int = 0


class BudgetOverrun(NamedTuple):
    budget: str
    limit: float
    used: float
    phase: str | None = None
    """The phase for the per-phase budgets, else None (``BudgetExceeded.phase``)."""


def _check_amount(name: str, amount: float) -> None:
    if isinstance(amount, bool) or not math.isfinite(amount) or amount < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {amount!r}")


def charge_retry(usage: BudgetUsage, phase: str, n: int = 1) -> BudgetUsage:
    _check_amount("retries", n)
    retries = {**usage.retries, phase: usage.retries.get(phase, 0) + n}
    return msgspec.structs.replace(usage, retries=retries)


def charge_iteration(usage: BudgetUsage, n: int = 1) -> BudgetUsage:
    _check_amount("iterations", n)
    return msgspec.structs.replace(usage, iterations=usage.iterations + n)


def charge_tokens(usage: BudgetUsage, tokens: int) -> BudgetUsage:
    _check_amount("model_tokens", tokens)
    return msgspec.structs.replace(usage, model_tokens=usage.model_tokens + tokens)


def charge_wall(usage: BudgetUsage, phase: str, seconds: float) -> BudgetUsage:
    _check_amount("wall_seconds", seconds)
    wall = {**usage.wall_seconds, phase: usage.wall_seconds.get(phase, 0.0) + seconds}
    return msgspec.structs.replace(usage, wall_seconds=wall)


def charge_prompt_output(usage: BudgetUsage, nbytes: int) -> BudgetUsage:
    """Record one prompt's tool-output bytes; usage keeps the largest, since the budget caps
    each prompt rather than a session total."""
    _check_amount("prompt_output_bytes", nbytes)
    return msgspec.structs.replace(
        usage, prompt_output_bytes=max(usage.prompt_output_bytes, nbytes)
    )


def charge_bounce(usage: BudgetUsage, n: int = 1) -> BudgetUsage:
    _check_amount("bounces", n)
    return msgspec.structs.replace(usage, bounces=usage.bounces + n)


def exceeded(budgets: Budgets, usage: BudgetUsage) -> BudgetOverrun | None:
    """The first budget (in ``CHECK_ORDER``) whose usage is above its limit, else None.
    "Above", not "at": the limit is the amount allowed."""
    for name in CHECK_ORDER:
        limit = getattr(budgets, name)
        if name == "retries_per_phase":
            for phase in sorted(usage.retries):
                if usage.retries[phase] > limit:
                    return BudgetOverrun(name, limit, usage.retries[phase], phase)
        elif name == "wall_seconds_per_phase":
            for phase in sorted(usage.wall_seconds):
                if usage.wall_seconds[phase] > limit:
                    return BudgetOverrun(name, limit, usage.wall_seconds[phase], phase)
        else:
            used = getattr(usage, name)
            if used > limit:
                return BudgetOverrun(name, limit, used)
    return None


def _values(source: Budgets | Mapping[str, Any] | None, what: str) -> dict[str, float | int]:
    if source is None:
        return {}
    if isinstance(source, Budgets):
        return {name: getattr(source, name) for name in BUDGET_FIELDS}
    out: dict[str, float | int] = {}
    for name, value in source.items():
        if name not in BUDGET_FIELDS:
            raise ValueError(
                f"unknown budget {name!r} in {what}; known budgets: {', '.join(BUDGET_FIELDS)}"
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise ValueError(
                f"budget {name!r} in {what} must be a finite number > 0, got {value!r}"
            )
        out[name] = value
    return out


def merge_budgets(
    defaults: Budgets,
    policy: Budgets | Mapping[str, Any] | None = None,
    submission: Budgets | Mapping[str, Any] | None = None,
) -> Budgets:
    """The effective budgets of a session.

    Choice: **policy values are hard caps**; the submission may lower any budget, or raise it
    up to the cap. Per budget:

    - cap = the policy's value when it sets one, else the default (deny by default: without a
      policy a submission cannot raise anything above the defaults);
    - start = min(default, cap);
    - effective = min(submission's value, cap) when the submission sets one, else start.

    Raises ``ValueError`` naming the budget for unknown names or values that are not finite
    numbers > 0.
    """
    base = _values(defaults, "defaults")
    caps = {**base, **_values(policy, "policy")}
    wanted = _values(submission, "submission")
    merged: dict[str, Any] = {}
    for name in BUDGET_FIELDS:
        cap = caps[name]
        value = min(wanted[name], cap) if name in wanted else min(base[name], cap)
        # Integer budgets stay integers even when a policy wrote 10.0.
        merged[name] = int(value) if isinstance(base[name], int) else float(value)
    return Budgets(**merged)


def _marker(omitted: int, artifact_path: str) -> str:
    return f"\n… [{omitted} bytes omitted; full output: {artifact_path}] …\n"


def _cut_head(data: bytes, n: int) -> bytes:
    """The first ``n`` bytes or fewer, never splitting a UTF-8 character."""
    cut = max(0, n)
    while 0 < cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


def _cut_tail(data: bytes, n: int) -> bytes:
    """The last ``n`` bytes or fewer, never splitting a UTF-8 character."""
    if n <= 0:
        return b""
    start = max(0, len(data) - n)
    while 0 < start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


HEAD_SHARE = 0.4
"""Share of the room given to the head; the tail gets more because that is where errors,
failing test summaries and exit messages are."""


def clip_output(text: str, max_bytes: int, artifact_path: str) -> str:
    """``text`` when it fits in ``max_bytes`` (UTF-8), otherwise its head and tail around a
    marker ``… [N bytes omitted; full output: <artifact_path>] …`` where N is exactly the number
    of bytes left out. The result fits in ``max_bytes`` unless ``max_bytes`` is smaller than the
    marker itself, in which case the marker alone is returned: a prompt always learns where the
    full output is, and its size stays bounded."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    # The marker's length depends on N's digits and N on the room left; sizing the room for
    # the widest N (everything omitted) breaks the cycle, and the real marker can only be shorter.
    room = max_bytes - len(_marker(len(data), artifact_path).encode("utf-8"))
    if room <= 0:
        return _marker(len(data), artifact_path).strip("\n")
    head = _cut_head(data, int(room * HEAD_SHARE))
    tail = _cut_tail(data, room - len(head))
    omitted = len(data) - len(head) - len(tail)
    return head.decode("utf-8") + _marker(omitted, artifact_path) + tail.decode("utf-8")
