"""Pre-emit validation shared by every file action: paths stay inside the workspace and
off protected paths, and no resulting file parses worse than before."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePosixPath

from oopav.context.parsing import error_nodes, language_for_path
from oopav.events.catalog import Finding

# Never writable by an action, whatever the grants: host-side git reads these.
ALWAYS_PROTECTED: tuple[str, ...] = (".git", ".git/**")


class PathRejected(ValueError):
    def __init__(self, code: str, message: str, path: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path


# POSIX limits of a path component and of a whole path (Linux: 255 and 4096 bytes).
NAME_MAX = 255
PATH_MAX = 4096


def resolve_in_workspace(workspace: Path, rel: str) -> tuple[str, Path]:
    """(normalized relative path, absolute path) or PathRejected. Rejects absolute paths,
    ``..``, and any path whose existing part runs through a symlink that leaves the
    workspace, or that is itself a symlink."""
    if not rel or not rel.strip():
        raise PathRejected("bad_path", "empty path", rel)
    if "\x00" in rel:
        raise PathRejected("bad_path", "path contains a NUL byte", rel)
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise PathRejected(
            "path_outside_workspace",
            f"{rel!r} is absolute; give a path relative to the workspace",
            rel,
        )
    parts = [p for p in pure.parts if p not in (".", "")]
    if ".." in parts:
        raise PathRejected("path_outside_workspace", f"{rel!r} contains '..'", rel)
    if not parts:
        raise PathRejected("bad_path", f"{rel!r} names the workspace itself, not a file", rel)
    # A name the file system cannot hold (a model's runaway path): refused like any bad path,
    # before any call raises ENAMETOOLONG (the actor used to crash on it: a dead letter).
    longest = max(len(p.encode()) for p in parts)
    if longest > NAME_MAX or len(rel.encode()) > PATH_MAX:
        shown = rel if len(rel) <= 80 else rel[:77] + "..."
        why = (
            f"a name in it is {longest} bytes, more than a file name may have ({NAME_MAX})"
            if longest > NAME_MAX
            else f"it is {len(rel.encode())} bytes, more than a path may have ({PATH_MAX})"
        )
        raise PathRejected("bad_path", f"{shown!r}: {why}", rel[:200])
    root = workspace.resolve()
    target = root.joinpath(*parts)
    for i in range(1, len(parts)):
        above = root.joinpath(*parts[:i])
        if above.is_file() and not above.is_symlink():
            raise PathRejected(
                "bad_path", f"{rel!r}: {'/'.join(parts[:i])} is a file, not a directory", rel
            )
    if target.is_symlink():
        raise PathRejected(
            "symlink", f"{rel!r} is a symlink; edit the file it points to instead", rel
        )
    real = Path(os.path.realpath(target))
    if real != root and root not in real.parents:
        raise PathRejected(
            "path_outside_workspace",
            f"{rel!r} resolves outside the workspace (through a symlink)",
            rel,
        )
    return "/".join(parts), target


def protected_match(rel: str, globs: tuple[str, ...] | list[str]) -> str | None:
    for g in globs:
        if rel == g or fnmatch.fnmatchcase(rel, g) or rel.startswith(g.rstrip("/") + "/"):
            return g
    return None


def new_parse_errors(path: str, before: str | None, after: str) -> list[Finding]:
    """Findings for the error nodes ``after`` adds over ``before`` (compared by count, so
    an already broken file may stay broken but not get worse). Empty when fine or when the
    file's language is not parsed."""
    lang = language_for_path(path)
    if lang is None:
        return []
    after_errs = error_nodes(after.encode(), lang)
    if not after_errs:
        return []
    before_count = len(error_nodes(before.encode(), lang)) if before is not None else 0
    if len(after_errs) <= before_count:
        return []
    return [
        Finding(
            path=path,
            line=line,
            kind="parse_error",
            message=describe_parse_error(path, after, line, col, kind, lang),
        )
        for line, col, kind in after_errs
    ]


def describe_parse_error(path: str, source: str, line: int, col: int, kind: str, lang: str) -> str:
    """``path:line:col: kind (parser node ...)`` with the line and a caret under the column:
    enough for a model to see what it broke without reading the file again."""
    node = _node_at(source, line, col, lang)
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    shown = text if len(text) <= 200 else text[:200] + " [...]"
    caret = " " * min(col, 200) + "^"
    where = f" (parser node: {node})" if node else ""
    return f"{path}:{line}:{col + 1}: {kind}{where}\n{line:>5} | {shown}\n      | {caret}"


def _node_at(source: str, line: int, col: int, lang: str) -> str:
    """The tree-sitter node at the error and what it sits in, e.g. ``ERROR in argument_list``."""
    from oopav.context.parsing import parse

    try:
        tree = parse(source.encode(), lang)
        node = tree.root_node.descendant_for_point_range((line - 1, col), (line - 1, col))
    except Exception:
        return ""
    if node is None:
        return ""
    while node is not None and node.type != "ERROR" and not node.is_missing and node.parent:
        if node.parent.type == "ERROR":
            node = node.parent
            break
        node = node.parent if node.parent.has_error and node.parent.type != "module" else None
    if node is None:
        return ""
    parent = node.parent.type if node.parent is not None else ""
    name = f"MISSING {node.type}" if node.is_missing else node.type
    return f"{name} in {parent}" if parent else name
