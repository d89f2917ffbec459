"""The capability policy: which scopes are granted or denied without asking anyone.

Loaded from YAML or JSON (a file, or the ``policy`` dict of ``task_submitted``)::

    allow: ["exec:pytest", "exec:python -m pytest", "net.http:pypi.org"]
    deny: ["net.any"]
    ask_unknown: true
    write_protected: [".github/**", "Makefile"]
    tools: [read_file, search, search_replace, finish]   # the actions the agent may use

``tools`` (default: every action) names the action types an agent may propose; ``finish`` is
always allowed, so a session can end. A refused tool is an ``action_rejected`` with reason
``tool_not_allowed``, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

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
