"""The capability policy: which scopes are granted or denied without asking anyone.

Loaded from YAML or JSON (a file, or the ``policy`` dict of ``task_submitted``)::

    allow: ["exec:pytest", "exec:python -m pytest", "net.http:pypi.org"]
    deny: ["net.any"]
    ask_unknown: true
    write_protected: [".github/**", "Makefile"]
    tools: [read_file, search, search_replace, finish]   # the actions the agent may use
    sandbox:                                             # how commands are isolated
      backend: bwrap                                     # or none (isolates nothing)
      read_only_mounts: [/opt/sdk]                       # host paths visible read-only
      dependency_dirs: [node_modules, vendor, .venv]     # the repo's, read-only (the default)
      read_timeout_s: 5                                  # read_file / search deadline, 2-5 s

``tools`` (default: every action) names the action types an agent may propose; ``finish`` is
always allowed, so a session can end. A refused tool is an ``action_rejected`` with reason
``tool_not_allowed``, before anything runs.

``sandbox`` (docs/sandbox.md, "The policy's sandbox section") reaches the sandbox port through
the task's environment spec; leaving it out keeps every earlier default.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any, Literal, cast

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from oopav.config import yaml_error
from oopav.sandbox.capabilities import Scope, ScopeError, covers, parse_scope

# Dependency directories a repository keeps out of git (installed packages, vendored code):
# absent from the session's workspace, bound into it read-only from the repository so that
# the project's commands find them and no action can change them.
DEPENDENCY_DIRS: tuple[str, ...] = ("node_modules", "vendor", ".venv", "venv")
READ_TIMEOUT_S = 5.0


class SandboxPolicy(BaseModel):
    """The sandbox a task's commands run in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # None: the backend this process is configured with (bwrap unless told otherwise).
    backend: Literal["bwrap", "none"] | None = None
    # Absolute host paths made visible read-only at the same place (a toolchain, an SDK).
    read_only_mounts: list[str] = Field(default_factory=list, max_length=32)
    # Repository-relative directories bound read-only into the workspace when the workspace
    # lacks them (ignored or excluded from it).
    dependency_dirs: list[str] = Field(default_factory=lambda: list(DEPENDENCY_DIRS))
    # The deadline of a read-only action (read_file, search): these run in process, and a
    # search over a huge tree must not hold the session. Commands take their own ``timeout_s``.
    read_timeout_s: float = Field(READ_TIMEOUT_S, ge=2.0, le=5.0)

    @field_validator("read_only_mounts")
    @classmethod
    def _mounts(cls, value: list[str]) -> list[str]:
        for path in value:
            parts = PurePosixPath(path).parts
            if not path.startswith("/") or ".." in parts:
                raise ValueError(
                    f"read_only_mounts takes absolute paths without '..', got {path!r}"
                )
            if path.rstrip("/") in ("", "/proc", "/dev", "/sys"):
                raise ValueError(f"read_only_mounts cannot mount {path!r}")
        return [os.path.normpath(p) for p in value]

    @field_validator("dependency_dirs")
    @classmethod
    def _deps(cls, value: list[str]) -> list[str]:
        for rel in value:
            parts = PurePosixPath(rel).parts
            if not rel or rel.startswith("/") or ".." in parts or parts[0] == ".git":
                raise ValueError(
                    f"dependency_dirs takes repository-relative paths outside .git, got {rel!r}"
                )
        return value


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    # False: a scope neither allowed nor granted is denied instead of asked for.
    ask_unknown: bool = True
    # Workspace-relative globs that file actions may only write with an `fs.write:` scope.
    write_protected: list[str] = Field(default_factory=list)
    # The action types the agent may use (None: all of them).
    tools: list[str] | None = None
    # None: the defaults of SandboxPolicy (and nothing added to the prompt's policy).
    sandbox: SandboxPolicy | None = None

    @property
    def sandbox_or_default(self) -> SandboxPolicy:
        return self.sandbox or SandboxPolicy()

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        from oopav.events.actions import ACTION_TYPES

        known = [str(cast(Any, a).__struct_config__.tag) for a in ACTION_TYPES]  # msgspec tags
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(known)}")
        return value

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The policy is part of every prompt's static prefix: leaving the unset ``tools`` out
        # keeps the prefix (and the recorded request hashes) of every other policy unchanged.
        data: dict[str, Any] = handler(self)
        if self.tools is None:
            data.pop("tools", None)
        if self.sandbox is None:
            data.pop("sandbox", None)
        return data

    def refuses_tool(self, action_type: str) -> str | None:
        """Why ``action_type`` may not be used under this policy (None: it may)."""
        if self.tools is None or action_type == "finish" or action_type in self.tools:
            return None
        return (
            f"the policy does not allow the {action_type} tool; allowed: "
            f"{', '.join([*self.tools, 'finish'])}"
        )

    @field_validator("allow", "deny")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        out = []
        for i, text in enumerate(value):
            try:
                out.append(str(parse_scope(text)))
            except ScopeError as exc:
                raise ValueError(f"entry {i}: {exc}") from exc
        return out

    def denies(self, needed: Scope) -> str | None:
        """The deny entry that matches ``needed``, if any."""
        return next((d for d in self.deny if covers(parse_scope(d), needed)), None)

    def allows(self, needed: Scope) -> str | None:
        return next((a for a in self.allow if covers(parse_scope(a), needed)), None)


def policy_from(data: dict[str, Any] | None) -> Policy:
    return Policy.model_validate(data or {})


def load_policy(path: Path) -> Policy:
    """Read a policy from a .yaml/.yml/.json file (YAML is a superset of JSON)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read policy {path}: {yaml_error(exc)}") from exc
    if data is not None and not isinstance(data, dict):
        raise ValueError(f"policy {path} must be a mapping, got {type(data).__name__}")
    return policy_from(data)


def sandbox_config_with(
    base: Any, policy: SandboxPolicy, workspace: Path, repo: Path | None
) -> Any:
    """``base`` (a SandboxConfig) under the policy's sandbox section: its backend, its
    read-only mounts exposed (secrets and hidden paths inside them stay masked: mount_plan),
    and the repository's dependency directories that the workspace lacks bound read-only
    into it. Raises ValueError for a read-only mount that does not exist."""
    import msgspec

    missing = [p for p in policy.read_only_mounts if not os.path.exists(p)]
    if missing:
        raise ValueError(f"policy.sandbox.read_only_mounts: {', '.join(missing)} does not exist")
    binds = list(base.binds)
    for host, inside in dependency_mounts(policy.dependency_dirs, workspace, repo):
        binds.append((str(host), str(inside), False))
    return msgspec.structs.replace(
        base,
        backend=policy.backend or base.backend,
        exposed_paths=tuple(dict.fromkeys((*base.exposed_paths, *policy.read_only_mounts))),
        binds=tuple(binds),
    )


def dependency_mounts(
    names: list[str], workspace: Path, repo: Path | None
) -> list[tuple[Path, Path]]:
    """(repository dir, workspace dir) for each dependency directory the repository has and
    the workspace does not (git left it out as ignored, or the copy excluded it). A symlink is
    not followed out of the repository."""
    if repo is None or repo.resolve() == workspace.resolve():
        return []
    out = []
    for rel in names:
        host, inside = repo / rel, workspace / rel
        if host.is_dir() and not host.is_symlink() and not os.path.lexists(inside):
            real = host.resolve()
            if real == repo.resolve() or repo.resolve() in real.parents:
                out.append((real, inside))
    return out
