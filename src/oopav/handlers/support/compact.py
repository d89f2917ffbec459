"""The compact prompt's state, read from the session and its workspace (docs/training.md § 6).

:func:`prompt_state` picks the focused snippet — the smallest function or class around the
first use of the symbol the instruction names in backticks, in the step's files (else every
Python/JavaScript file of the workspace, in name order) — and the last feedback (why the last
attempt was refused, failed or rolled back). It reads the workspace at its last checkpoint, like
the actor's context pack, so a replay renders the same state.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from oopav.models.profiles import PromptState
from oopav.projections.session import SessionState
from oopav.sandbox.files import WorkspaceFiles

SNIPPET_LINES = 40
CONTEXT_LINES = 6
_SOURCES = (".py", ".js", ".ts", ".mjs", ".cjs")


def _idents(instruction: str) -> list[str]:
    found = re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", instruction)
    return [i.split(".")[-1] for i in dict.fromkeys(found)]


def _candidates(root: Path, state: SessionState) -> list[str]:
    plan = state.plan
    focus: list[str] = []
    if plan is not None:
        for s in plan.steps:
            focus += [f for f in s.files if f not in focus]
        focus += [f for f in plan.files if f not in focus]
    if focus:
        return focus
    out = []
    for rel in WorkspaceFiles(root).find("**/*"):
        parts = rel.split("/")
        if Path(rel).suffix in _SOURCES and not any(x.startswith(".") for x in parts):
            out.append(rel)
        if len(out) >= 500:
            break
    return out


def _enclosing(text: str, line: int) -> tuple[int, int]:
    """(start, end) 0-based line range of the smallest def/class around ``line`` (Python)."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return max(0, line - CONTEXT_LINES), line + CONTEXT_LINES + 1
    best: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            end = node.end_lineno or node.lineno
            if start <= line < end and (best is None or end - start < best[1] - best[0]):
                best = (start, end)
    if best is None or best[1] - best[0] > SNIPPET_LINES:
        return max(0, line - CONTEXT_LINES), line + CONTEXT_LINES + 1
    return best


def snippet(root: Path, state: SessionState) -> tuple[str, str]:
    """(path, code) of the focused snippet: where the symbol is defined (``def``/``class``/
    ``function``), else its first use; ("", "") when nothing is found."""
    assert state.task is not None
    idents = _idents(state.task.instruction)
    files = _candidates(root, state)
    texts: dict[str, str] = {}
    tree = WorkspaceFiles(root)
    for rel in files:
        text = tree.text(rel)
        if text is not None:
            texts[rel] = text
    passes = []
    for ident in idents:
        name = re.escape(ident)
        passes.append(re.compile(rf"\b(?:def|class|function)\s+{name}\b"))
        passes.append(re.compile(rf"\b{name}\b"))
    if not idents:
        passes.append(re.compile(r"\S"))
    for pattern in passes:
        for rel, text in texts.items():
            rows = text.splitlines(keepends=True)
            for i, row in enumerate(rows):
                if pattern.search(row):
                    if rel.endswith(".py"):
                        start, end = _enclosing(text, i)
                    else:
                        start, end = max(0, i - CONTEXT_LINES), i + CONTEXT_LINES + 1
                    return rel, "".join(rows[start:end])
    return "", ""


_BOILERPLATE = (
    re.compile(r" \(the pattern is valid code; no code has that shape\)"),
    re.compile(r"\s*Fix: loosen the pattern\b.*$", re.S),
)


def feedback(state: SessionState) -> str:
    """Why the last attempt did not stand: a refused or failed action (with the refused rule
    in brief first: the compact prompt does not repeat the answer), or a rollback (the
    verifier's line on what a failed gate undid)."""
    if state.recent and not state.recent[-1].ok:
        r = state.recent[-1]
        text = f"{r.summary} {r.output}".strip()
        rec = state.action(r.action_id)
        if rec is not None and rec.action is not None and rec.type == "ast_grep":
            from oopav.decide.gates import rule_brief

            # The feedback line is capped (models/profiles.py FEEDBACK_CHARS): the rule and
            # the numbers first, the actor's generic advice left out.
            for boiler in _BOILERPLATE:
                text = boiler.sub("", text)
            return f"{rule_brief(rec.action)}: {text}"
        return text
    if not state.recent:
        # A new plan cleared the step results (a replan after the stuck detector fired on
        # repeated rejections): the last attempt's rejection still stands.
        last = next((a for a in reversed(state.actions) if a.type != "finish"), None)
        if last is not None and last.status == "rejected" and last.action is not None:
            from oopav.decide.gates import rule_brief

            return f"{rule_brief(last.action)}: rejected ({last.reason})"
        broke = _observer_replan(state, last)
        if broke:
            return broke
    if state.rejected_actions:
        return state.rejected_actions[-1]
    return ""


_WORKSPACE_PATH = re.compile(r"(?:/[^\s/'\"()]+)*/workspaces/[^\s/'\"()]+/")
_RULE_NUMBER = re.compile(r"^rule \d+: ")
_FAILURE = re.compile(r"^(FAILED |ERROR |E  |\w*Error\b|\w*Exception\b|AssertionError)")


def _observer_replan(state: SessionState, last: Any) -> str:
    """The observer asked for a new plan right after the last action (tests passed before it
    and fail after it: rule 5) and left the change in place: which rule, why, and the first
    failure line of the tests' output. Empty when that is not what happened last."""
    replan = state.last_replan
    if (
        replan is None
        or replan.source != "observer"
        or last is None
        or last.action is None
        or last.status != "applied"
        or state.last_observer_replan_at != len(state.actions)
    ):
        return ""
    from oopav.decide.gates import rule_brief

    why = "; ".join(_RULE_NUMBER.sub("", r) for r in replan.reason.split("; "))
    first = next(
        (ln.strip() for ln in replan.evidence.splitlines() if _FAILURE.match(ln.strip())), ""
    )
    # The session's workspace path only costs the small budget (and a replay's differs).
    first = _WORKSPACE_PATH.sub("", first)
    return f"{rule_brief(last.action)}: {why}; the change is still applied" + (
        f"; first failure: {first}" if first else ""
    )


def language_of(path: str) -> str:
    return "javascript" if path.endswith((".js", ".mjs", ".cjs", ".ts")) else "python"


def prompt_state(
    state: SessionState, role: str = "actor", *, extra_feedback: str = ""
) -> PromptState:
    assert state.task is not None
    root = Path(state.workspace.path) if state.workspace is not None else None
    present = root is not None and WorkspaceFiles(root).is_dir(".")
    path, code = snippet(root, state) if root is not None and present else ("", "")
    return PromptState(
        role=role,
        instruction=state.task.instruction,
        language=language_of(path),
        snippet=code,
        path=path,
        feedback=extra_feedback or feedback(state),
    )


def plan_files(state: SessionState) -> list[str]:
    """The files the compact one-step plan names: those that use the instruction's symbol."""
    assert state.task is not None
    root = Path(state.workspace.path) if state.workspace is not None else None
    if root is None or not WorkspaceFiles(root).is_dir("."):
        return []
    idents = _idents(state.task.instruction)
    if not idents:
        return []
    pattern = re.compile(rf"\b{re.escape(idents[0])}\b")
    out = []
    tree = WorkspaceFiles(root)
    for rel in _candidates(root, state):
        text = tree.text(rel)
        if text is not None and pattern.search(text):
            out.append(rel)
    return out[:20]
