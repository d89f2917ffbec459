"""A session's lineage (``oopav show --tree``): its root, every fork below it, their
outcomes and where each diverged from its parent. Pure: built from one ``Node`` per session
(what the sessions projection knows); the divergences come from ``history.diff``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    session_id: str
    parent: str | None = None
    fork_sequence: int | None = None
    outcome: str | None = None
    phase: str = ""
    model: str | None = None
    events: int = 0
    diverged: str | None = None  # where it left its parent (history.diff), when computed
    children: list[Node] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "parent": self.parent,
            "fork_sequence": self.fork_sequence,
            "outcome": self.outcome,
            "phase": self.phase,
            "model": self.model,
            "events": self.events,
            "diverged": self.diverged,
            "children": [c.to_dict() for c in self.children],
        }

    def label(self) -> str:
        at = f"fork@{self.fork_sequence} " if self.parent else ""
        div = f"  ↳ {self.diverged}" if self.diverged else ""
        return (
            f"{at}{self.session_id}  {self.outcome or self.phase or '-'}  "
            f"{self.events} events  model={self.model or '-'}{div}"
        )

    def walk(self) -> list[Node]:
        out = [self]
        for c in self.children:
            out += c.walk()
        return out


def lineage(nodes: dict[str, Node], session_id: str) -> Node:
    """The tree that holds ``session_id``: up to its root (a parent that is not in ``nodes``,
    such as one deleted, ends the walk), then every descendant, children by id (= time)."""
    if session_id not in nodes:
        raise KeyError(session_id)
    root = nodes[session_id]
    seen = {root.session_id}
    while root.parent and root.parent in nodes and root.parent not in seen:
        root = nodes[root.parent]
        seen.add(root.session_id)
    children: dict[str, list[str]] = {}
    for n in nodes.values():
        if n.parent:
            children.setdefault(n.parent, []).append(n.session_id)

    def build(sid: str, path: frozenset[str]) -> Node:
        src = nodes[sid]
        node = Node(
            src.session_id,
            src.parent,
            src.fork_sequence,
            src.outcome,
            src.phase,
            src.model,
            src.events,
            src.diverged,
        )
        for c in sorted(children.get(sid, [])):
            if c not in path:  # a cycle can only come from forged events: cut it
                node.children.append(build(c, path | {c}))
        return node

    return build(root.session_id, frozenset({root.session_id}))


def render(tree: Node, mark: str | None = None) -> list[str]:
    """ASCII lines of the tree; ``mark`` (a session id) gets a ``*``."""
    out: list[str] = []

    def go(node: Node, prefix: str, last: bool, top: bool) -> None:
        star = " *" if node.session_id == mark else ""
        if top:
            out.append(node.label() + star)
            child_prefix = ""
        else:
            out.append(prefix + ("└─ " if last else "├─ ") + node.label() + star)
            child_prefix = prefix + ("   " if last else "│  ")
        for i, c in enumerate(node.children):
            go(c, child_prefix, i == len(node.children) - 1, False)

    go(tree, "", True, True)
    return out
