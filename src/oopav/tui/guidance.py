"""The guidance view of the TUI (key ``g`` on a session of a mission): the mission's current
library, its history with rationale and evidence, and the groups the reflector decided on.

``guidance_lines`` decides what is shown (pure, tested without a terminal); the screen only
reads the mission aggregate and renders them. It never appends an event."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, RichLog, Static

from oopav.projections.guidance import GuidanceState, stats

Line = tuple[str, str]  # (text, style)


def guidance_lines(state: GuidanceState) -> list[Line]:
    if not state.event_count:
        return [(f"mission {state.mission} has no library yet", "dim")]
    s = stats(state)
    out: list[Line] = [
        (f"Library of {state.mission} — step {state.step}, {len(state.entries)} entries", "bold"),
    ]
    out += [(f"[{e.key}]. {e.text}", "") for e in state.entries]
    out.append(("", ""))
    rate = s["acceptance_rate"]
    precision = s["precision"]
    out.append(
        (
            f"{s['groups']} groups, {s['proposals']} proposals, {s['applied']} applied"
            + (f" (acceptance {rate:.0%})" if rate is not None else "")
            + (f", precision {precision:.0%}" if precision is not None else "")
            + f", pending {len(s['pending'])}",
            "bold",
        )
    )
    out.append(("", ""))
    out.append(("History", "bold"))
    for h in reversed(state.history):
        merged = f" ← {', '.join(h.merged_from)}" if h.merged_from else ""
        style = {"remove": "red", "rollback": "yellow", "merge": "cyan"}.get(h.op, "green")
        out.append((f"step {h.step:>3}  {h.op:<8} {h.key}{merged}  {h.text}", style))
        if h.rationale:
            out.append((f"            why: {h.rationale}", "dim"))
        if h.evidence_session_ids:
            ids = ", ".join(sid[-12:] for sid in h.evidence_session_ids)
            out.append((f"            evidence: {ids}", "dim"))
    out.append(("", ""))
    out.append(("Groups", "bold"))
    for g in reversed(state.groups):
        style = "green" if g.decision == "proposed" else "dim"
        out.append(
            (
                f"{g.group_id[-12:]}  epoch {g.epoch}  label_match {g.label_match:.2f}  "
                f"step {'-' if g.guidance_step is None else g.guidance_step}  {g.decision}",
                style,
            )
        )
    return out


class GuidanceScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    CSS = "#guidance-title { height: 1; padding: 0 1; background: $panel; }"

    def __init__(self, nc: Any, mission: str) -> None:
        super().__init__()
        self.nc = nc
        self.mission = mission
        self.state: GuidanceState | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"guidance · mission {self.mission}", id="guidance-title")
        yield RichLog(id="guidance", wrap=True, highlight=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self.load(), exclusive=True)

    async def load(self) -> None:
        from oopav.bus.store import EventStore
        from oopav.events.mission import mission_aggregate_id
        from oopav.projections.guidance import fold

        log = self.query_one("#guidance", RichLog)
        try:
            events = await EventStore(self.nc).read("mission", mission_aggregate_id(self.mission))
        except Exception as exc:  # the view reads; a lost server is shown, not raised
            log.clear()
            log.write(Text(f"cannot read mission {self.mission}: {exc}", style="red"))
            return
        self.state = fold(events, self.mission)
        log.clear()
        for text, style in guidance_lines(self.state):
            log.write(Text(text, style=style))

    def action_reload(self) -> None:
        self.run_worker(self.load(), exclusive=True)
