"""A mission's reflection as a run directory, the layout training-free GRPO's own runs use:

- ``stats.json``: the mission's reflection metrics (``projections.guidance.stats``);
- ``trajectories.jsonl``: one line per rollout the reflector looked at — its group, epoch and
  signals (verdict, label match, confidence, self-consistency, the library step it ran with);
- ``selections.jsonl``: one line per group — the candidate the group answered with under the
  mission's selection policy (``decide.reflection.selected``), whether the group was eligible,
  and what became of it (``applied`` with the operations, or the rejection reason).

Everything comes from the mission's events, in stream order, so the same events always give
the same bytes (keys sorted, no timestamps but the events' own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from oopav.decide.reflection import selected
from oopav.events import mission as mev
from oopav.events.catalog import Event


def _line(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def run_records(events: list[Event]) -> tuple[list[str], list[str]]:
    """(trajectory lines, selection lines) of a mission's events."""
    applied: dict[str, list[str]] = {}
    for e in events:
        if isinstance(e, mev.GuidanceOpApplied) and e.proposal_id:
            applied.setdefault(e.proposal_id, []).append(f"{e.op} {e.key}")
    trajectories: list[str] = []
    selections: list[str] = []
    for e in events:
        if isinstance(e, mev.ReflectionProposed):
            outcome = "applied" if e.id in applied else "proposed"
            decided: dict[str, Any] = {"outcome": outcome, "operations": applied.get(e.id, [])}
            eligible = True
        elif isinstance(e, mev.ReflectionRejected):
            if e.proposal_id is not None:
                continue  # the proposal's own line says what became of it
            decided = {"outcome": "rejected", "reason": e.reason, "detail": e.detail}
            eligible = e.reason not in ("ineligible", "manual_review")
        else:
            continue
        for s in e.signals:
            trajectories.append(
                _line({"group_id": e.group_id, "epoch": e.epoch, **msgspec.to_builtins(s)})
            )
        policy = str(e.settings.get("selection", "confidence"))
        chosen = selected(e.signals, policy).session_id if e.signals else None
        selections.append(
            _line(
                {
                    "group_id": e.group_id,
                    "epoch": e.epoch,
                    "selection": policy,
                    "selected": chosen,
                    "candidates": len(e.signals),
                    "eligible": eligible,
                    **decided,
                }
            )
        )
    # Proposals later rejected by their holdout: the rejection names the proposal.
    rejected = {
        e.proposal_id: e.reason
        for e in events
        if isinstance(e, mev.ReflectionRejected) and e.proposal_id is not None
    }
    if rejected:
        by_group = {e.group_id: e.id for e in events if isinstance(e, mev.ReflectionProposed)}
        fixed = []
        for line in selections:
            row = json.loads(line)
            pid = by_group.get(row["group_id"])
            if row["outcome"] == "proposed" and pid in rejected:
                row["outcome"], row["reason"] = "rejected", rejected[pid]
            fixed.append(_line(row))
        selections = fixed
    return trajectories, selections


def write_run(out: Path, events: list[Event], stats: dict[str, Any]) -> list[Path]:
    """Write the run directory; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    trajectories, selections = run_records(events)
    files = {
        "stats.json": json.dumps(stats, indent=2, sort_keys=True) + "\n",
        "trajectories.jsonl": "".join(t + "\n" for t in trajectories),
        "selections.jsonl": "".join(s + "\n" for s in selections),
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        written.append(path)
    return written
