"""Budgets (DESIGN invariant 8): the merge of defaults, deployment caps and a submission's
request, the deployment's caps themselves, and the clipping and summarising of what goes into
a prompt (tool output; a role's whole context when it outgrows the role's cap).

Usage itself is counted by the session projection (``BudgetsUsed``) from the events, and the
handlers check it where the work is (``handlers.support``); the former pure usage counters here
were called by nothing and are gone.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oopav.config import yaml_error
from oopav.events.catalog import Budgets

BUDGET_FIELDS: tuple[str, ...] = tuple(Budgets.__struct_fields__)
# Budgets for which zero is a meaningful request ("no retries", "no bounces").
ZERO_OK: frozenset[str] = frozenset({"retries_per_phase", "bounces"})


def deployment_caps(env: Mapping[str, str] | None = None) -> dict[str, float | int]:
    """This deployment's caps on what a submission may ask for: ``budget_caps`` of the YAML or
    JSON file named by ``OOPAV_DEPLOYMENT`` (e.g. ``{budget_caps: {iterations: 50}}``), or
    ``OOPAV_BUDGET_CAPS`` as inline JSON. Empty when neither is set; a broken file is an error
    that names it (a deployment must not silently run uncapped)."""
    environ = os.environ if env is None else env
    inline = environ.get("OOPAV_BUDGET_CAPS")
    path = environ.get("OOPAV_DEPLOYMENT")
    raw: Any = {}
    if path:
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"cannot read OOPAV_DEPLOYMENT {path}: {yaml_error(exc)}") from None
        if not isinstance(data, dict):
            raise ValueError(f"OOPAV_DEPLOYMENT {path} must hold a mapping")
        raw = data.get("budget_caps") or {}
    elif inline:
        try:
            raw = json.loads(inline)
        except ValueError as exc:
            raise ValueError(f"OOPAV_BUDGET_CAPS is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError("budget_caps must be a mapping of budget name to number")
    return _values(raw, "deployment caps")


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
            or value < 0
            or (value == 0 and name not in ZERO_OK)
        ):
            floor = ">= 0" if name in ZERO_OK else "> 0"
            raise ValueError(
                f"budget {name!r} in {what} must be a finite number {floor}, got {value!r}"
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
    numbers > 0 (>= 0 for retries and bounces).
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


def summarise_context(text: str, max_bytes: int, pointer: str) -> str:
    """A prompt context cut to ``max_bytes`` (UTF-8) that keeps its shape: every ``### ``
    section keeps its header and a head-and-tail of its body, each section's room in
    proportion to its size, with ``pointer`` naming where the whole context is kept. The
    result fits in ``max_bytes`` (it falls back to one ``clip_output`` of the whole text)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    note = f"[context summarised to fit {max_bytes} bytes; the full context: {pointer}]\n"
    sections: list[tuple[str, str]] = []
    head, body = "", list[str]()
    for line in text.splitlines(keepends=True):
        if line.startswith("### "):
            if head or body:
                sections.append((head, "".join(body)))
            head, body = line, []
        else:
            body.append(line)
    sections.append((head, "".join(body)))
    fixed = len(note.encode()) + sum(len(h.encode()) + 1 for h, _ in sections)
    room = max_bytes - fixed
    total = sum(len(b.encode()) for _, b in sections) or 1
    if room > 64 * len(sections):
        parts = [note]
        for h, b in sections:
            share = int(room * len(b.encode()) / total)
            parts.append(h + clip_output(b, share, pointer) + "\n")
        out = "".join(parts)
        if len(out.encode()) <= max_bytes:
            return out
    if max_bytes > 2 * len(note.encode()):
        return note + clip_output(text, max_bytes - len(note.encode()), pointer)
    return clip_output(text, max_bytes, pointer)


def context_digest(text: str) -> str:
    """A short content hash that names a context artifact (the same context, the same name,
    so a replayed prompt is byte-identical)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
