"""orient: turns the baseline observation into a report — risk band, evidence gap, category,
complexity and the test decision — by the explicit rules of ``rules.orient`` (DESIGN step 3).

The band gates what follows (``rules.orient.decide_gate``): red waits for new, targeted
evidence (``evidence_gathered``, gathered by the observer) and orient runs again on it; a gap
that does not close within the policy's rounds, and any black task, halt and ask a person
(``human_input_requested``). A person's answer (``human_input_provided``) is decided here too:
``proceed`` lets planning start, ``replan`` asks for a new plan, ``abort`` ends the session."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oopav.bus.consumer import Delivery
from oopav.decide import OrientInput, mentioned_paths, orient
from oopav.decide.orient import TestsBaseline
from oopav.decide.policy import decision_policy
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.handlers.ports import Ports
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.completion import complete
from oopav.handlers.support.steps import ask_person
from oopav.projections.session import SessionState
from oopav.sandbox.files import WorkspaceFiles

if TYPE_CHECKING:
    from oopav.context.memory import Hit

NAME = "orient"


# Where a src/ or lib/ layout keeps the package that an instruction names without the prefix
# ("fix click/core.py" in a repository with src/click/core.py).
SOURCE_ROOTS = ("src", "lib", "python", "source")


def locate(root: Path, mentioned: str) -> Path | None:
    """The file or directory an instruction's path refers to: as written, under a source
    root, or (a bare file name) a file of that name anywhere in the tree; None when absent."""
    files = WorkspaceFiles(root)
    rel = mentioned.strip("/")
    if ".." in rel.split("/"):
        return None
    for cand in (rel, *(f"{base}/{rel}" for base in SOURCE_ROOTS)):
        if files.exists(cand):
            return files.path(cand)
    if "/" not in rel:
        hit = next((h for h in files.find(f"**/{rel}") if ".git" not in h.split("/")), None)
        return files.path(hit) if hit is not None else None
    return None


class Orient:
    name = NAME
    subscribes = ("observation_recorded", "evidence_gathered", "human_input_provided")

    def __init__(self, memory: object | None = None) -> None:
        # A SessionMemory (context.memory) kept as a projection of the stream, or None.
        self.memory = memory

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        if state.task is None:
            return []
        if isinstance(event, ev.HumanInputProvided):
            return await self._answered(event, state, ports)
        if isinstance(event, ev.EvidenceGathered):
            if event.trigger != "orient":
                return []
        elif not isinstance(event, ev.ObservationRecorded) or event.phase != "baseline":
            return []
        base = state.baseline
        if base is None:
            return []
        out = Emitter(event, NAME, ports)
        task = state.task
        policy = decision_policy(state)
        root = Path(state.workspace.path) if state.workspace else None
        mentioned = mentioned_paths(task.instruction)
        found_files: set[str] = set()
        symbols_missing: list[str] = []
        tests_run = base.tests
        # Later rounds override earlier ones target by target.
        latest: dict[tuple[str, str], ev.EvidenceItem] = {}
        for gathered in state.evidence:
            if gathered.trigger != "orient":
                continue
            for item in gathered.items:
                latest[(item.kind, item.target)] = item
            if tests_run is None and gathered.tests is not None:
                tests_run = gathered.tests
        for (kind, target), item in latest.items():
            if kind == "file" and item.found:
                found_files.add(target)
            elif kind == "symbol" and not item.found:
                symbols_missing.append(target)
        existing = [
            m
            for m in mentioned
            if (root is not None and locate(root, m) is not None) or m in found_files
        ]
        missing = [m for m in mentioned if m not in existing]
        rounds = event.round if isinstance(event, ev.EvidenceGathered) else 0
        found = self._memory_hits(task.instruction, state.session_id)
        hits = [(h.session_id, round(float(h.score), 6)) for h in found]
        tests: TestsBaseline = (
            "unknown" if tests_run is None else ("pass" if tests_run.passed else "fail")
        )
        report = orient(
            OrientInput(
                instruction=task.instruction,
                files_total=base.files_total,
                parse_errors=len(base.parse_errors),
                stubs=len(base.stubs),
                tests_baseline=tests,
                languages=base.languages,
                mentioned_existing=existing,
                mentioned_missing=missing,
                memory_hits=hits,
                evidence_rounds=rounds,
                symbols_missing=sorted(symbols_missing),
                max_evidence_rounds=policy.evidence_rounds,
            ),
            policy.tests,
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
            missing_namespaces=report.missing_namespaces,
            recommended_retrieval=report.recommended_retrieval,
            scaling=report.scaling,
            memory_examples=[
                {
                    "session_id": h.session_id,
                    "score": round(float(h.score), 6),
                    "instruction": str(getattr(h, "instruction", ""))[:500],
                    "plan": str(getattr(h, "plan_summary", ""))[:1000],
                    # Which embedder and query found it, so a hit can be audited and re-run.
                    "embedder": getattr(h, "embedder", None) or self._embedder_name(),
                    "query": task.instruction[:500],
                    # What that session tried and rolled back: shown as "do not repeat".
                    "rejected": [str(r)[:300] for r in getattr(h, "rejected", [])[-5:]],
                }
                for h in found
            ],
        )
        if report.gate == "stop":
            black = report.risk_band == "black"
            why = [r for r in report.reasons if r.startswith(("risk black", "gate stop"))]
            ask_person(
                out,
                state,
                question=(
                    "This task was rated black (destructive or exfiltrating). Proceed anyway?"
                    if black
                    else f"The evidence gap ({report.evidence_gap:.2f}) of this red task did not "
                    f"close after {rounds} evidence round(s). Proceed anyway?"
                ),
                options=["abort", "proceed"],
                kind="black_risk" if black else "evidence_gap",
                context="\n".join(why),
            )
        return out.events

    async def _answered(
        self, event: ev.HumanInputProvided, state: SessionState, ports: Ports
    ) -> list[Event]:
        """A person answered: ``proceed`` (planning starts), ``replan``, or anything else
        (``abort``): the session ends ``aborted`` with the answer as the reason."""
        out = Emitter(event, NAME, ports)
        answer = event.answer.strip().lower()
        asked = state.human_request
        kind = asked.kind if asked is not None else "escalation"
        if kind == "ask":
            return []  # the actor's own question: the actor takes its answer
        if answer == "proceed" and kind in ("black_risk", "evidence_gap") and state.orient:
            o = state.orient
            out.emit(
                ev.OrientReported,
                risk_band=o.risk_band,
                evidence_gap=o.evidence_gap,
                category=o.category,
                complexity=o.complexity,
                test_decision="required" if o.risk_band in ("red", "black") else o.test_decision,
                reasons=[
                    *o.reasons,
                    f"gate proceed: {event.answered_by or 'a person'} said proceed",
                ],
                memory_hits=list(o.memory_hits),
                gate="proceed",
                evidence_rounds=o.evidence_rounds,
                memory_examples=list(o.memory_examples),
                missing_namespaces=list(o.missing_namespaces),
                recommended_retrieval=list(o.recommended_retrieval),
                scaling=o.scaling,
            )
        elif answer in ("replan", "continue", "proceed") and kind == "escalation":
            out.emit(
                ev.ReplanTriggered,
                source="human",
                reason=f"{event.answered_by or 'a person'} asked for a new plan after an escalation",
                evidence=asked.context if asked is not None else "",
                attempt=state.plans + 1,
            )
        else:
            await complete(
                out,
                state,
                "aborted",
                f"{event.answered_by or 'a person'} answered {event.answer!r}"
                + (f" to: {asked.question}" if asked is not None else ""),
                reason="human",
            )
        return out.events

    def _embedder_name(self) -> str:
        embedder = getattr(self.memory, "embedder", None)
        name = getattr(embedder, "name", None)
        return str(name() if callable(name) else name or type(embedder).__name__)

    def _memory_hits(self, instruction: str, session_id: str) -> list[Hit]:
        if self.memory is None:
            return []
        try:
            hits = self.memory.query(instruction, k=3, only_successful=True)  # type: ignore[attr-defined]  # memory is duck-typed (a SessionMemory or a stand-in)
        except Exception:
            return []
        return [h for h in hits if h.session_id != session_id]
