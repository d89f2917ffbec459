"""oopav.sandbox: the bwrap runner, capability policy and grants, ast-grep and search/replace
actions with pre-emit validation, and per-session workspaces. See docs/sandbox.md."""

from oopav.sandbox.apply import ActionPlan, FileChange, Rejection, apply_plan, plan_action, run_plan
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
