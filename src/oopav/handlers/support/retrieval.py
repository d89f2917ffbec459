"""Read-only retrieval for the actor's model: ``read_file`` with a line range and ``search``
for a pattern (issue 17 §6). They read the session's own workspace (paths confined to it, git
metadata excluded), write nothing and run nothing, so they need no grant and no sandbox; the
result, clipped to the prompt-output budget, is the step's output in the next prompt.

Each has a deadline (the policy's ``sandbox.read_timeout_s``, 2-5 s): a search past it stops and
says so with what it found, so a huge tree cannot hold a session. Commands, which run in the
sandbox, take their own declared ``timeout_s``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from oopav.decide.evidence import _files, _text
from oopav.events.actions import ReadFileAction, SearchAction
from oopav.sandbox.files import WorkspaceFiles

MAX_READ_LINES = 400


def read_only(
    root: Path,
    action: ReadFileAction | SearchAction,
    *,
    timeout_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[bool, str]:
    """(ok, text): the lines read or found, or why not. ``timeout_s``: the deadline, checked
    before each file a search reads (not ok past it, with the hits so far)."""
    deadline = None if timeout_s is None else clock() + timeout_s
    from oopav.sandbox.validate import PathRejected, resolve_in_workspace

    try:
        if isinstance(action, ReadFileAction):
            norm, _ = resolve_in_workspace(root, action.path)
            if norm == ".git" or norm.startswith(".git/"):
                return False, f"{norm} is git metadata; read the working files instead"
            files = WorkspaceFiles(root)
            if not files.is_file(norm):
                return False, f"{norm} is not a file in the workspace"
            text = _text(files, norm)
            if text is None:
                return False, f"{norm} is binary or too large to read"
            lines = text.splitlines()
            end = min(
                action.end_line or len(lines), len(lines), action.start_line + MAX_READ_LINES - 1
            )
            if action.start_line > max(1, len(lines)):
                return (
                    False,
                    f"{norm} has {len(lines)} lines; start_line {action.start_line} is past the end",
                )
            body = "\n".join(f"{i}: {lines[i - 1]}" for i in range(action.start_line, end + 1))
            return True, f"{norm} lines {action.start_line}-{end} of {len(lines)}\n{body}"
        roots: list[str] = []
        for p in action.paths:
            if p.strip() in ("", "."):
                roots.append(".")
            else:
                roots.append(resolve_in_workspace(root, p)[0])
        try:
            pattern = re.compile(action.pattern if action.regex else re.escape(action.pattern))
        except re.error as exc:
            return False, f"bad regular expression {action.pattern!r}: {exc}"
        hits: list[str] = []
        tree = WorkspaceFiles(root)
        for name in roots:
            found = [name] if tree.is_file(name) else _files(tree, name)
            for n, f in enumerate(found):
                if deadline is not None and clock() > deadline:
                    return False, "\n".join(
                        [
                            *hits,
                            f"(search stopped at its {timeout_s:g} s deadline after {n} "
                            f"file(s) of {name}; narrow `paths` or the pattern)",
                        ]
                    )
                text = _text(tree, f)
                if text is None:
                    continue
                rel = f
                for i, line in enumerate(text.splitlines(), 1):
                    if pattern.search(line):
                        hits.append(f"{rel}:{i}: {line.strip()[:200]}")
                        if len(hits) >= action.max_results:
                            return True, "\n".join([*hits, f"(stopped at {len(hits)} results)"])
        return True, "\n".join(hits) if hits else f"no match for {action.pattern!r}"
    except PathRejected as exc:
        return False, f"{exc}"
