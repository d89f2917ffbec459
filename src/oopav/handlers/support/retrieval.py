"""Read-only retrieval for the actor's model: ``read_file`` with a line range and ``search``
for a pattern (issue 17 §6). They read the session's own workspace (paths confined to it, git
metadata excluded), write nothing and run nothing, so they need no grant and no sandbox; the
result, clipped to the prompt-output budget, is the step's output in the next prompt."""

from __future__ import annotations

import re
from pathlib import Path

from oopav.decide.evidence import _files, _text
from oopav.events.actions import ReadFileAction, SearchAction

MAX_READ_LINES = 400


def read_only(root: Path, action: ReadFileAction | SearchAction) -> tuple[bool, str]:
    """(ok, text): the lines read or found, or why not."""
    from oopav.sandbox.validate import PathRejected, resolve_in_workspace

    try:
        if isinstance(action, ReadFileAction):
            norm, target = resolve_in_workspace(root, action.path)
            if norm == ".git" or norm.startswith(".git/"):
                return False, f"{norm} is git metadata; read the working files instead"
            if not target.is_file():
                return False, f"{norm} is not a file in the workspace"
            text = _text(target)
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
        roots = []
        for p in action.paths:
            if p.strip() in ("", "."):
                roots.append(root)
            else:
                roots.append(resolve_in_workspace(root, p)[1])
        try:
            pattern = re.compile(action.pattern if action.regex else re.escape(action.pattern))
        except re.error as exc:
            return False, f"bad regular expression {action.pattern!r}: {exc}"
        hits: list[str] = []
        for base in roots:
            files = [base] if base.is_file() else _files(base)
            for f in files:
                text = _text(f)
                if text is None:
                    continue
                rel = str(f.relative_to(root))
                for i, line in enumerate(text.splitlines(), 1):
                    if pattern.search(line):
                        hits.append(f"{rel}:{i}: {line.strip()[:200]}")
                        if len(hits) >= action.max_results:
                            return True, "\n".join([*hits, f"(stopped at {len(hits)} results)"])
        return True, "\n".join(hits) if hits else f"no match for {action.pattern!r}"
    except PathRejected as exc:
        return False, f"{exc}"
