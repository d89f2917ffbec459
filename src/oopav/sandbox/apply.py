"""Plan an action against a workspace, then apply it.

``plan_action`` reads files and computes every new file content without writing anything;
any problem becomes a ``Rejection`` (reason code, message, details) that the actor turns into
an ``action_rejected`` event and a model can act on. ``apply_plan`` writes the planned files;
``run_plan`` runs a planned command through the bwrap runner after the capability check.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from oopav.events.actions import (
    Action,
    AstGrepAction,
    FinishAction,
    RunCommandAction,
    SearchReplaceAction,
    WriteFileAction,
)
from oopav.sandbox import astpool
from oopav.sandbox.astgrep import RuleError, check_rule, files_for, rule_from_action
from oopav.sandbox.capabilities import (
    Decision,
    ScopeError,
    exec_scope,
    git_fetch_scope,
    needs_network,
    parse_scope,
)
from oopav.sandbox.patch import (
    SearchFailure,
    apply_edit,
    context_hash,
    normalize,
    restore_newlines,
    stale_message,
)
from oopav.sandbox.policy import Policy
from oopav.sandbox.runner import RunResult, SandboxConfig, run_sandboxed
from oopav.sandbox.validate import (
    ALWAYS_PROTECTED,
    PathRejected,
    new_parse_errors,
    protected_match,
    resolve_in_workspace,
)

MAX_FILE_BYTES = 4 * 1024 * 1024


class FileChange(msgspec.Struct, kw_only=True, frozen=True):
    path: str
    before: str | None
    after: str


class ActionPlan(msgspec.Struct, kw_only=True, frozen=True):
    action: Action
    changes: list[FileChange] = msgspec.field(default_factory=list)
    # Scopes the capability check must allow before the plan may run.
    scopes: list[str] = msgspec.field(default_factory=list)
    matches: int = 0

    @property
    def files_changed(self) -> list[str]:
        return [c.path for c in self.changes]

    @property
    def diff(self) -> str:
        return unified_diff(self.changes)

    @property
    def network(self) -> bool:
        """The command runs with the host's network: it needs (and was allowed) a network
        scope. Every other command runs in a network namespace of its own."""
        return needs_network(self.scopes)


class Rejection(msgspec.Struct, kw_only=True, frozen=True):
    reason: str
    message: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


def unified_diff(changes: list[FileChange]) -> str:
    out: list[str] = []
    for c in changes:
        a = (c.before or "").splitlines(keepends=True)
        b = c.after.splitlines(keepends=True)
        src = f"a/{c.path}" if c.before is not None else "/dev/null"
        out.extend(difflib.unified_diff(a, b, src, f"b/{c.path}"))
    return "".join(out)


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PathRejected(
            "file_too_large", f"{path.name} is larger than {MAX_FILE_BYTES} bytes", path.name
        )
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PathRejected("not_text", f"{path.name} is not UTF-8 text", path.name) from exc


def _write_scopes(paths: list[str], policy: Policy | None) -> list[str]:
    globs = policy.write_protected if policy is not None else []
    return [f"fs.write:{p}" for p in paths if protected_match(p, globs)]


def _guard(workspace: Path, rel: str) -> tuple[str, Path]:
    norm, target = resolve_in_workspace(workspace, rel)
    hit = protected_match(norm, ALWAYS_PROTECTED)
    if hit is not None:
        raise PathRejected(
            "protected_path", f"{norm!r} is git metadata; actions may not write it", norm
        )
    return norm, target


def plan_action(
    workspace: Path, action: Action, *, policy: Policy | None = None
) -> ActionPlan | Rejection:
    """Validate ``action`` against ``workspace`` and compute its effect. Writes nothing."""
    try:
        if isinstance(action, WriteFileAction):
            return _plan_write(workspace, action, policy)
        if isinstance(action, SearchReplaceAction):
            return _plan_search_replace(workspace, action, policy)
        if isinstance(action, AstGrepAction):
            return _plan_ast_grep(workspace, action, policy)
        if isinstance(action, RunCommandAction):
            # `git fetch <remote>` is what a git.fetch scope grants (the exec and the network);
            # any other command needs its exec scope.
            fetch = git_fetch_scope(action.argv)
            scopes = [str(fetch if fetch is not None else exec_scope(action.argv))]
            scopes += [str(parse_scope(s)) for s in action.scopes]
            return ActionPlan(action=action, scopes=scopes)
        if isinstance(action, FinishAction):
            return ActionPlan(action=action)
    except PathRejected as exc:
        return Rejection(reason=exc.code, message=exc.message, details={"path": exc.path})
    except ScopeError as exc:
        return Rejection(reason="bad_scope", message=str(exc))
    except OSError as exc:  # a path the file system refuses (not a directory, a loop, ...)
        where = str(exc.filename or "")[:200]
        return Rejection(
            reason="bad_path",
            message=f"{exc.strerror or exc}: {where}".rstrip(": "),
            details={"path": where},
        )
    return Rejection(reason="unknown_action", message=f"unsupported action {type(action).__name__}")


def _parse_check(changes: list[FileChange]) -> Rejection | None:
    for c in changes:
        findings = new_parse_errors(c.path, c.before, c.after)
        if findings:
            return Rejection(
                reason="parse_error",
                message=f"{c.path} would not parse after this change "
                f"(first error line {findings[0].line}); nothing was written",
                details={
                    "path": c.path,
                    "errors": [msgspec.to_builtins(f) for f in findings[:10]],
                },
            )
    return None


def _plan_write(
    workspace: Path, action: WriteFileAction, policy: Policy | None
) -> ActionPlan | Rejection:
    norm, target = _guard(workspace, action.path)
    if target.is_dir():
        return Rejection(
            reason="is_directory", message=f"{norm!r} is a directory", details={"path": norm}
        )
    before = _read(target)
    change = FileChange(path=norm, before=before, after=action.content)
    if before == action.content:
        return Rejection(
            reason="no_change", message=f"{norm} already has this content", details={"path": norm}
        )
    bad = _parse_check([change])
    if bad is not None:
        return bad
    return ActionPlan(action=action, changes=[change], scopes=_write_scopes([norm], policy))


def _plan_search_replace(
    workspace: Path, action: SearchReplaceAction, policy: Policy | None
) -> ActionPlan | Rejection:
    current: dict[str, tuple[str, str]] = {}  # path -> (original, working text, LF)
    order: list[str] = []
    for i, edit in enumerate(action.edits):
        norm, target = _guard(workspace, edit.path)
        if norm not in current:
            original = _read(target)
            if original is None:
                return Rejection(
                    reason="file_not_found",
                    message=f"{norm} does not exist; use write_file to create it",
                    details={"path": norm, "edit": i},
                )
            current[norm] = (original, normalize(original))
            order.append(norm)
        original, text = current[norm]
        if edit.context_hash is not None and edit.context_hash != context_hash(original):
            # Checked against the text before this action (every block of one answer was
            # written against it), never the partly edited text.
            now = context_hash(original)
            return Rejection(
                reason="stale_context",
                message=f"edit {i} ({norm}): "
                + stale_message(norm, edit.context_hash, now, original, edit.search),
                details={"path": norm, "edit": i, "seen": edit.context_hash, "current": now},
            )
        try:
            text = apply_edit(text, edit.search, edit.replace)
        except SearchFailure as exc:
            return Rejection(
                reason=exc.code,
                message=f"edit {i} ({norm}): {exc.message}",
                details={"path": norm, "edit": i, **exc.details()},
            )
        current[norm] = (original, text)
    changes = [
        FileChange(
            path=p, before=current[p][0], after=restore_newlines(current[p][0], current[p][1])
        )
        for p in order
        if restore_newlines(current[p][0], current[p][1]) != current[p][0]
    ]
    if not changes:
        return Rejection(reason="no_change", message="REPLACE equals SEARCH: nothing would change")
    bad = _parse_check(changes)
    if bad is not None:
        return bad
    return ActionPlan(action=action, changes=changes, scopes=_write_scopes(order, policy))


def _plan_ast_grep(
    workspace: Path, action: AstGrepAction, policy: Policy | None
) -> ActionPlan | Rejection:
    try:
        rule = rule_from_action(action)
        check_rule(rule)
    except RuleError as exc:
        return Rejection(reason=exc.code, message=exc.message)
    for p in action.paths:
        if not any(c in p for c in "*?[") and p.strip() not in ("", "."):
            resolve_in_workspace(workspace, p)
        elif p.startswith("/") or ".." in p.split("/"):
            return Rejection(
                reason="path_outside_workspace",
                message=f"{p!r} leaves the workspace",
                details={"path": p},
            )
    files = files_for(workspace, action.paths, rule.language)
    if not files:
        return Rejection(
            reason="no_files",
            message=f"no {rule.language} files under {', '.join(action.paths)}",
            details={"paths": action.paths},
        )
    changes: list[FileChange] = []
    total = 0
    items: list[tuple[str, str]] = []
    for rel in files:
        norm, target = _guard(workspace, rel)
        before = _read(target)
        if before is not None:
            items.append((norm, before))
    try:
        results = astpool.rewrite_files(workspace, items, rule)
    except RuleError as exc:
        return Rejection(reason=exc.code, message=exc.message)
    for (norm, before), (after, n) in zip(items, results, strict=True):
        total += n
        if n and after != before:
            changes.append(FileChange(path=norm, before=before, after=after))
    if total == 0 and rule.optional:
        # A follow-up that no file needs here (every file already imports what it uses).
        return ActionPlan(action=action, changes=[], scopes=[], matches=0)
    if total == 0:
        from oopav.synth.diagnose import nearest_note

        return Rejection(
            reason="no_match",
            message=f"rule {rule.id!r} matches nothing in {len(files)} {rule.language} file(s)"
            + nearest_note(rule.rule, rule.language, items),  # where it nearly matched
            details={"files_searched": len(files)},
        )
    if not changes and not rule.optional:
        return Rejection(reason="no_change", message="the rule matches but its fix changes nothing")
    bad = _parse_check(changes)
    if bad is not None:
        return bad
    return ActionPlan(
        action=action,
        changes=changes,
        scopes=_write_scopes([c.path for c in changes], policy),
        matches=total,
    )


def apply_plan(workspace: Path, plan: ActionPlan) -> list[str]:
    """Write the planned files (each atomically: temp file + rename). Re-checks each path,
    since the workspace may have changed since planning (a command ran in between)."""
    written: list[str] = []
    for c in plan.changes:
        _, target = _guard(workspace, c.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".oopav-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(c.after)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(c.path)
    astpool.forget(workspace, written)
    return written


def run_plan(
    workspace: Path,
    plan: ActionPlan,
    decision: Decision,
    *,
    artifacts_dir: Path,
    config: SandboxConfig | None = None,
    run_id: str | None = None,
) -> RunResult:
    """Run a planned ``run_command`` in the sandbox. ``decision`` must come from
    ``capabilities.check`` on ``plan.scopes``: nothing runs without an allowed decision."""
    if not isinstance(plan.action, RunCommandAction):
        raise TypeError("run_plan takes the plan of a run_command action")
    if not decision.allowed:
        raise PermissionError(f"capability check did not allow {decision.scope}: {decision.reason}")
    return run_sandboxed(
        plan.action.argv,
        workspace=workspace,
        artifacts_dir=artifacts_dir,
        config=config,
        timeout_s=plan.action.timeout_s,
        network=plan.network,
        run_id=run_id,
    )
