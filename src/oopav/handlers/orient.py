"""orient: turns the baseline observation into a report — risk band, evidence gap, category,
complexity and the test decision — by the explicit rules of ``rules.orient`` (DESIGN step 3).

Red blocks acting until one more round of evidence is gathered; black stops the session."""

from __future__ import annotations

from pathlib import Path

from oopav.bus.consumer import Delivery
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.handlers.common import complete
from oopav.handlers.ports import Ports
from oopav.handlers.rules import OrientInput, mentioned_paths, orient
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState

NAME = "orient"


# Where a src/ or lib/ layout keeps the package that an instruction names without the prefix
# ("fix click/core.py" in a repository with src/click/core.py).
SOURCE_ROOTS = ("src", "lib", "python", "source")


def locate(root: Path, mentioned: str) -> Path | None:
    """The file or directory an instruction's path refers to: as written, under a source
    root, or (a bare file name) a file of that name anywhere in the tree; None when absent."""
    rel = mentioned.strip("/")
    if ".." in rel.split("/"):
        return None
    for cand in (root / rel, *(root / base / rel for base in SOURCE_ROOTS)):
        if cand.exists():
            return cand
    if "/" not in rel:
        return next((h for h in root.rglob(rel) if ".git" not in h.relative_to(root).parts), None)
    return None


class Orient:
    name = NAME
    subscribes = ("observation_recorded",)

    def __init__(self, memory: object | None = None) -> None:
        # A SessionMemory (context.memory) kept as a projection of the stream, or None.
        self.memory = memory

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if (
            not isinstance(event, ev.ObservationRecorded)
            or event.phase != "baseline"
            or state.task is None
        ):
            return []
        out = Emitter(event, NAME, ports)
        task = state.task
        root = Path(state.workspace.path) if state.workspace else None
        mentioned = mentioned_paths(task.instruction)
        existing = [m for m in mentioned if root is not None and locate(root, m) is not None]
        missing = [m for m in mentioned if m not in existing]
        rounds = state.orient.evidence_rounds + 1 if state.orient is not None else 0
        found = self._memory_hits(task.instruction, state.session_id)
        hits = [(h.session_id, round(float(h.score), 6)) for h in found]
        tests = "unknown" if event.tests is None else ("pass" if event.tests.passed else "fail")
        report = orient(
            OrientInput(
                instruction=task.instruction,
                files_total=event.files_total,
                parse_errors=len(event.parse_errors),
                stubs=len(event.stubs),
                tests_baseline=tests,
                languages=event.languages,
                mentioned_existing=existing,
                mentioned_missing=missing,
                memory_hits=hits,
                evidence_rounds=rounds,
            )
        )
        out.emit(
            ev.OrientReported,
            risk_band=report.risk_band,
            evidence_gap=report.evidence_gap,
            category=report.category,
            complexity=report.complexity,
            test_decision=report.test_decision,
            reasons=report.reasons,
            memory_hits=[(sid, score) for sid, score in report.memory_hits],
            gate=report.gate,
            evidence_rounds=rounds,
            memory_examples=[
                {
                    "session_id": h.session_id,
                    "score": round(float(h.score), 6),
                    "instruction": str(getattr(h, "instruction", ""))[:500],
                    "plan": str(getattr(h, "plan_summary", ""))[:1000],
                }
                for h in found
            ],
        )
        if report.gate == "stop":
            await complete(
                out,
                state,
                "aborted",
                "orient rated the task black: escalated to a human",
                reason="black_risk",
            )
        return out.events

    def _memory_hits(self, instruction: str, session_id: str) -> list:  # type: ignore[type-arg]
        if self.memory is None:
            return []
        try:
            hits = self.memory.query(instruction, k=3, only_successful=True)  # type: ignore[attr-defined]
        except Exception:
            return []
        return [h for h in hits if h.session_id != session_id]
