"""oopav.sandbox: the bwrap runner, capability policy and grants, ast-grep and search/replace
actions with pre-emit validation, and per-session workspaces. See docs/sandbox.md.

The names below load their module on first use (PEP 562): ``oopav synth`` needs only
``sandbox.astgrep``, and importing the whole package (the runner, policy, workspaces and their
pydantic models) cost most of its start-up (issue 26)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oopav.sandbox.apply import (
        ActionPlan,
        FileChange,
        Rejection,
        apply_plan,
        plan_action,
        run_plan,
    )
    from oopav.sandbox.capabilities import (
        Decision,
        GrantState,
        Scope,
        ScopeError,
        apply_event,
        build_denial,
        build_grant,
        check,
        fold_grants,
        parse_duration,
        parse_scope,
    )
    from oopav.sandbox.limits import Limits
    from oopav.sandbox.policy import Policy, load_policy, policy_from
    from oopav.sandbox.runner import (
        RunResult,
        SandboxConfig,
        SandboxUnavailable,
        default_config,
        run_sandboxed,
    )
    from oopav.sandbox.workspace import (
        WorkspaceError,
        WorkspaceInfo,
        apply_to_repo,
        changed_files,
        checkpoint,
        final_diff,
        find_workspace,
        prepare_workspace,
        rollback,
    )

_LAZY: dict[str, str] = {
    "ActionPlan": "oopav.sandbox.apply",
    "Decision": "oopav.sandbox.capabilities",
    "FileChange": "oopav.sandbox.apply",
    "GrantState": "oopav.sandbox.capabilities",
    "Limits": "oopav.sandbox.limits",
    "Policy": "oopav.sandbox.policy",
    "Rejection": "oopav.sandbox.apply",
    "RunResult": "oopav.sandbox.runner",
    "SandboxConfig": "oopav.sandbox.runner",
    "SandboxUnavailable": "oopav.sandbox.runner",
    "Scope": "oopav.sandbox.capabilities",
    "ScopeError": "oopav.sandbox.capabilities",
    "WorkspaceError": "oopav.sandbox.workspace",
    "WorkspaceInfo": "oopav.sandbox.workspace",
    "apply_event": "oopav.sandbox.capabilities",
    "apply_plan": "oopav.sandbox.apply",
    "apply_to_repo": "oopav.sandbox.workspace",
    "build_denial": "oopav.sandbox.capabilities",
    "build_grant": "oopav.sandbox.capabilities",
    "changed_files": "oopav.sandbox.workspace",
    "check": "oopav.sandbox.capabilities",
    "checkpoint": "oopav.sandbox.workspace",
    "default_config": "oopav.sandbox.runner",
    "final_diff": "oopav.sandbox.workspace",
    "find_workspace": "oopav.sandbox.workspace",
    "fold_grants": "oopav.sandbox.capabilities",
    "load_policy": "oopav.sandbox.policy",
    "parse_duration": "oopav.sandbox.capabilities",
    "parse_scope": "oopav.sandbox.capabilities",
    "plan_action": "oopav.sandbox.apply",
    "policy_from": "oopav.sandbox.policy",
    "prepare_workspace": "oopav.sandbox.workspace",
    "rollback": "oopav.sandbox.workspace",
    "run_plan": "oopav.sandbox.apply",
    "run_sandboxed": "oopav.sandbox.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # AttributeError lets `from oopav.sandbox import clean` fall back to the submodule.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ActionPlan",
    "Decision",
    "FileChange",
    "GrantState",
    "Limits",
    "Policy",
    "Rejection",
    "RunResult",
    "SandboxConfig",
    "SandboxUnavailable",
    "Scope",
    "ScopeError",
    "WorkspaceError",
    "WorkspaceInfo",
    "apply_event",
    "apply_plan",
    "apply_to_repo",
    "build_denial",
    "build_grant",
    "changed_files",
    "check",
    "checkpoint",
    "default_config",
    "final_diff",
    "find_workspace",
    "fold_grants",
    "load_policy",
    "parse_duration",
    "parse_scope",
    "plan_action",
    "policy_from",
    "prepare_workspace",
    "rollback",
    "run_plan",
    "run_sandboxed",
]
