"""The TUI's data layer: pure folds from events and session states to what the screens show.

Nothing here knows about Textual or NATS. ``SessionsModel`` keeps one ``SessionState`` per
session (folded here, or handed over already folded by a ``ProjectionRunner`` listener) and
turns them into table rows; ``Timeline`` turns a session's raw messages into timeline entries,
undecodable ones included; ``summary_lines`` renders a state as the detail panel's text.
Time comes in as an argument (``now``) so that rows and summaries are deterministic in tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from oopav.display import evidence_summary
from oopav.events.catalog import Event
from oopav.events.codec import REGISTRY, Registry
from oopav.projections.session import SessionState, evolve, initial

ID_PREFIX = 13  # a UUIDv7's first 13 characters are its millisecond timestamp: unique in practice


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One line of the sessions table."""

    session_id: str
    phase: str
    outcome: str
    iterations: int
    model_tokens: int
    bounces: int
    age: str
    instruction: str
    # Sort key: ids are UUIDv7, so they order by creation time.
    created: str = ""

    @property
    def short_id(self) -> str:
        return self.session_id[:ID_PREFIX]

    def cells(self) -> tuple[str, ...]:
        """The table's cells in column order (see ``COLUMNS``)."""
        return (
            self.short_id,
            self.phase,
            self.outcome,
            str(self.iterations),
            str(self.model_tokens),
            str(self.bounces),
            self.age,
            self.instruction,
        )

    def matches(self, text: str) -> bool:
        """Case-insensitive substring match on id, phase, outcome and instruction."""
        if not text:
            return True
        needle = text.casefold()
        return any(
            needle in field.casefold()
            for field in (self.session_id, self.phase, self.outcome, self.instruction)
        )


COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "id"),
    ("phase", "phase"),
    ("outcome", "outcome"),
    ("iterations", "iter"),
    ("model_tokens", "tokens"),
    ("bounces", "bounces"),
    ("age", "age"),
    ("instruction", "instruction"),
)


def format_age(seconds: float) -> str:
    """A compact age: 42s, 7m, 3h, 2d (a table column, not a timestamp)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def row_of(state: SessionState, now: datetime) -> SessionRow:
    """The table row of a session state at time ``now``."""
    if state.task is not None:
        instruction = state.task.instruction
    else:
        instruction = state.rejection or ""
    age = format_age((now - state.created_at).total_seconds()) if state.created_at else "-"
    used = state.budgets_used
    return SessionRow(
        session_id=state.session_id,
        phase=state.phase,
        outcome=state.outcome or "",
        iterations=used.iterations,
        model_tokens=used.model_tokens,
        bounces=used.bounces,
        age=age,
        instruction=one_line(instruction),
        created=state.created_at.isoformat() if state.created_at else "",
    )


class SessionsModel:
    """Every session's state, and which changed since the widgets last looked.

    ``apply`` is the whole update: with ``state`` it adopts a state folded elsewhere (the
    projection runner's, which is the same fold); without it, it folds the event itself."""

    def __init__(self) -> None:
        self.states: dict[str, SessionState] = {}
        self.dirty: set[str] = set()
        self.position = 0

    def seed(self, states: Iterable[tuple[str, SessionState]]) -> None:
        """Start from stored snapshots (the runner then resumes after their position)."""
        for sid, state in states:
            self.states[sid] = state
            self.dirty.add(sid)

    def apply(self, seq: int, event: Event, state: SessionState | None = None) -> str:
        sid = event.aggregate_id
        if state is None:
            current = self.states.get(sid) or initial(sid)
            state = evolve(current, event, seq)
        self.states[sid] = state
        self.dirty.add(sid)
        self.position = max(self.position, seq)
        return sid

    def take_dirty(self) -> set[str]:
        changed, self.dirty = self.dirty, set()
        return changed

    def rows(self, now: datetime, text: str = "") -> list[SessionRow]:
        """Rows matching ``text``, newest session first."""
        rows = [row_of(st, now) for st in self.states.values()]
        rows = [r for r in rows if r.matches(text)]
        rows.sort(key=lambda r: r.session_id, reverse=True)
        return rows

    def resolve(self, prefix: str) -> str | None:
        """The session whose id starts with ``prefix``, when exactly one does."""
        found = [sid for sid in self.states if sid.startswith(prefix)]
        return found[0] if len(found) == 1 else None


# -- timeline ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    seq: int
    offset: float | None  # seconds since the session's first decodable event
    type: str
    actor: str
    summary: str
    bad: bool = False

    def text(self) -> str:
        plus = "       -" if self.offset is None else f"+{self.offset:8.3f}s"
        return f"{self.seq:>7}  {plus}  {self.type:24} {self.actor:18} {self.summary}"


class Timeline:
    """One session's events in stream order, as entries; an undecodable message becomes an
    entry that says so instead of an error (DESIGN invariant 9: bad input never crashes)."""

    def __init__(self, session_id: str, registry: Registry = REGISTRY) -> None:
        self.session_id = session_id
        self.registry = registry
        self.entries: list[TimelineEntry] = []
        self.t0: datetime | None = None
        self._seen: set[int] = set()

    def add(self, seq: int, subject: str, data: bytes) -> TimelineEntry | None:
        """Decode and add one message; None when ``seq`` is already there (a redelivery)."""
        if seq in self._seen:
            return None
        self._seen.add(seq)
        try:
            event = self.registry.decode(data)
        except Exception as exc:  # any decode failure is shown, never raised
            entry = TimelineEntry(
                seq=seq,
                offset=None,
                type="undecodable",
                actor="-",
                summary=one_line(f"{subject.rsplit('.', 1)[-1]}: {exc}", 100),
                bad=True,
            )
        else:
            entry = self.entry_of(seq, event)
        self.entries.append(entry)
        return entry

    def entry_of(self, seq: int, event: Event) -> TimelineEntry:
        if self.t0 is None:
            self.t0 = event.ts
        try:
            summary = describe(event)
        except Exception as exc:  # a summary is a nicety: a failing one must not hide the event
            summary = f"(no summary: {type(exc).__name__})"
        return TimelineEntry(
            seq=seq,
            offset=(event.ts - self.t0).total_seconds(),
            type=event.type,
            actor=event.actor,
            summary=summary,
        )


def describe(event: Event) -> str:
    # Imported here: oopav.services pulls in the handler runtime, which the pure model's unit
    # tests and the CLI's import path do not need until a timeline is shown.
    from oopav.services import describe_event

    return describe_event(event)


# -- summary panel ----------------------------------------------------------------------------

Line = tuple[str, str]  # (text, style): styles are Rich style names, "" for plain


def current_step(state: SessionState) -> int | None:
    """The plan step being worked on: the step of the latest action under the current plan,
    else the plan's first step."""
    if state.plan is None or not state.plan.steps:
        return None
    for rec in reversed(state.actions[state.plan_actions_start :]):
        if rec.step:
            return rec.step
    return state.plan.steps[0].id


def summary_lines(state: SessionState, now: datetime | None = None) -> list[Line]:
    """The detail panel: task, orient report, plan, gates, budgets and outcome."""
    out: list[Line] = []
    out.append((f"session {state.session_id}", "bold"))
    phase = f"phase {state.phase}"
    if state.outcome:
        phase += f" · outcome {state.outcome}"
    if now is not None and state.created_at is not None:
        phase += f" · age {format_age((now - state.created_at).total_seconds())}"
    out.append((phase, _outcome_style(state.outcome)))
    out.append(("", ""))

    asked = state.human_request
    if asked is not None and state.human_pending and state.phase != "completed":
        out.append(("Waiting for a person", "bold reverse yellow"))
        out.append((asked.question.strip(), "bold"))
        if asked.options:
            out.append((f"answers: {', '.join(asked.options)}", ""))
        if asked.deadline is not None:
            out.append((f"deadline {asked.deadline:%Y-%m-%d %H:%M:%S} UTC", "dim"))
        out.append(("press a to answer", "dim"))
        out.append(("", ""))

    out.append(("Task", "bold underline"))
    if state.task is not None:
        out.append((state.task.instruction.strip(), ""))
        out.append((f"repo {state.task.repo}", "dim"))
        if state.task.mission:
            out.append((f"mission {state.task.mission}", "dim"))
    elif state.rejection:
        out.append((f"rejected: {state.rejection}", "red"))
    else:
        out.append(("(no task_submitted yet)", "dim"))
    out.append(("", ""))

    if state.orient is not None:
        o = state.orient
        out.append(("Orient", "bold underline"))
        out.append(
            (
                f"risk {o.risk_band} · gap {o.evidence_gap:.2f} · {o.category} · "
                f"complexity {o.complexity} · tests {o.test_decision} · gate {o.gate}",
                _RISK_STYLE.get(o.risk_band, ""),
            )
        )
        for reason in o.reasons[:5]:
            out.append((f"  {one_line(reason, 90)}", "dim"))
        out.append(("", ""))

    if state.plan is not None:
        plan = state.plan
        out.append((f"Plan (attempt {plan.attempt}, {state.plans} proposed)", "bold underline"))
        cur = current_step(state)
        finished = state.phase == "completed" and state.outcome == "success"
        for step in plan.steps:
            if finished or (cur is not None and step.id < cur):
                mark, style = "✓", "green"
            elif step.id == cur and state.phase != "completed":
                mark, style = "▶", "bold yellow"
            else:
                mark, style = " ", ""
            out.append((f" {mark} {step.id}. {one_line(step.description, 90)}", style))
        out.append(("", ""))

    if state.gates:
        out.append(("Gates", "bold underline"))
        for g in state.gates:
            if g.skipped:
                verdict, style = "skip", "dim"
            elif g.passed:
                verdict, style = "pass", "green"
            else:
                verdict, style = "FAIL", "bold red"
            line = g.summary or evidence_summary(g.gate, g.evidence, 70)
            evidence = f"  {line[:70]}" if line else ""
            out.append((f" {verdict:4} {g.gate} (bounce {g.bounce}){evidence}", style))
        out.append(("", ""))

    out.append(("Budgets (used / limit)", "bold underline"))
    used = state.budgets_used
    limits = state.task.budgets if state.task is not None else None

    def budget(name: str, value: int, limit: int | None) -> None:
        over = name in used.exceeded or (limit is not None and value > limit)
        text = f" {name:14} {value}" + (f" / {limit}" if limit is not None else "")
        out.append((text + ("  EXCEEDED" if over else ""), "bold red" if over else ""))

    budget("iterations", used.iterations, limits.iterations if limits else None)
    budget("model_tokens", used.model_tokens, limits.model_tokens if limits else None)
    budget("bounces", used.bounces, limits.bounces if limits else None)
    budget(
        "output_bytes",
        used.prompt_output_bytes,
        limits.prompt_output_bytes if limits else None,
    )
    out.append((f" {'model_calls':14} {used.model_calls}", "dim"))
    out.append((f" {'replans':14} {used.replans}", "dim"))
    for name in used.exceeded:
        if name not in ("iterations", "model_tokens", "bounces", "output_bytes"):
            out.append((f" {name:14} EXCEEDED", "bold red"))
    out.append(("", ""))

    if state.outcome is not None:
        out.append(("Outcome", "bold underline"))
        out.append((state.outcome, _outcome_style(state.outcome)))
        if state.summary:
            out.append((state.summary.strip(), ""))
        if state.diff:
            lines = state.diff.count("\n") + 1
            out.append((f"diff: {lines} lines (press d)", "dim"))
    return out


OUTCOME_STYLE = {
    "success": "bold green",
    "success_unverified": "bold yellow",
    "failed": "bold red",
    "aborted": "bold red",
    "rejected": "red",
}
_RISK_STYLE = {"green": "green", "yellow": "yellow", "red": "red", "black": "bold red"}


def _outcome_style(outcome: str | None) -> str:
    return OUTCOME_STYLE.get(outcome or "", "")
