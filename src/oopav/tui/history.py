"""The history views of the TUI (issue 27): the diff of two runs (mark a session with ``m``,
then ``c`` on another) and a session's fork tree (``f``).

The screens only render: ``oopav.history.diff`` decides what the comparison says (the same
lines `oopav diff` prints) and ``oopav.history.tree`` what the lineage is. They read the
sessions' events over the app's connection and never append one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, RichLog, Static, Tree

from oopav.history.tree import Node
from oopav.projections.session import SessionState


class DiffScreen(Screen[None]):
    """``oopav diff A B`` in the terminal UI."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    CSS = "#diff-title { height: 1; padding: 0 1; background: $panel; }"

    def __init__(self, nc: Any, a: str, b: str) -> None:
        super().__init__()
        self.nc = nc
        self.a = a
        self.b = b
        self.report: Any = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"diff · A {self.a} · B {self.b}", id="diff-title")
        yield RichLog(id="run-diff", wrap=False, highlight=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self.load(), exclusive=True)

    async def load(self) -> None:
        from oopav.history.read import diff_sessions

        log = self.query_one("#run-diff", RichLog)
        try:
            self.report = await diff_sessions(self.nc, self.a, self.b)
        except Exception as exc:  # the view reads; a lost server or session is shown
            self.error = f"cannot compare: {exc}"
            log.clear()
            log.write(Text(self.error, style="red"))
            return
        log.clear()
        for text, style in self.report.lines():
            log.write(Text(text, style=style or ""))

    def action_reload(self) -> None:
        self.run_worker(self.load(), exclusive=True)


class TreeScreen(Screen[None]):
    """A session's lineage as a navigable tree; enter opens the session under the cursor.
    It follows the sessions as they change (``refresh_from``, called by the app)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    CSS = "#tree-title { height: 1; padding: 0 1; background: $panel; }"

    def __init__(
        self,
        nc: Any,
        states: Callable[[], dict[str, SessionState]],
        session_id: str,
        open_session: Callable[[str], None],
    ) -> None:
        super().__init__()
        self.nc = nc
        self.states = states
        self.session_id = session_id
        self.open_session = open_session
        self.root: Node | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"fork tree · {self.session_id}", id="tree-title")
        yield Tree("lineage", id="lineage")
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self.load(), exclusive=True, group="tree")

    async def load(self) -> None:
        from oopav.history.read import tree_of

        widget: Tree[str] = self.query_one("#lineage", Tree)
        try:
            self.root = await tree_of(self.nc, self.states(), self.session_id)
        except Exception as exc:
            self.error = f"cannot build the tree: {exc}"
            widget.root.set_label(Text(self.error, style="red"))
            return
        widget.clear()
        widget.root.set_label(
            self.root.label() + (" *" if self.root.session_id == self.session_id else "")
        )
        widget.root.data = self.root.session_id

        def add(parent: Any, node: Node) -> None:
            for child in node.children:
                label = child.label() + (" *" if child.session_id == self.session_id else "")
                leaf = parent.add(label, data=child.session_id, expand=True)
                add(leaf, child)

        add(widget.root, self.root)
        widget.root.expand_all()
        widget.focus()

    def lines(self) -> list[str]:
        """The labels as shown, depth-first (for tests)."""
        widget: Tree[str] = self.query_one("#lineage", Tree)
        out: list[str] = []

        def go(node: Any, depth: int) -> None:
            out.append("  " * depth + str(node.label))
            for c in node.children:
                go(c, depth + 1)

        go(widget.root, 0)
        return out

    def refresh_from(self, changed: set[str]) -> None:
        """Reload when a session of this tree, or a new fork of one, changed."""
        members = {n.session_id for n in self.root.walk()} if self.root else set()
        states = self.states()
        if changed & members or any(
            (task := states[s].task) is not None and task.parent_session in members
            for s in changed
            if s in states
        ):
            self.run_worker(self.load(), exclusive=True, group="tree")

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        sid = event.node.data
        if sid:
            self.app.pop_screen()
            self.open_session(sid)

    def action_reload(self) -> None:
        self.run_worker(self.load(), exclusive=True, group="tree")
