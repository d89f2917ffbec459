"""When the critic reviews a change on its own (``policy.critic.on: [auto]``): automatic
escalation triggers, as pure rules over facts the verifier already has.

A change gets a second opinion when it touches

- **security-sensitive files**: credentials and key stores (``observer.is_secret_path``), or
  paths that name auth, crypto, permissions or security;
- **dependency manifests or build files** (``tests.BUILD_MANIFESTS``): a change there can break
  every user of the project without touching code;
- **a large scope**: more files than ``max_files`` (default 10) or more changed lines than
  ``max_lines`` (default 400);
- **no progress**: ``stalled_steps`` or more actions in a row that were rolled back or rejected
  before this one (default 3).

Each rule that fires is a reason, recorded in the gate's evidence and shown to the critic."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from oopav.decide.observer import is_secret_path
from oopav.decide.tests import build_manifests

_SENSITIVE = re.compile(
    r"(^|[/_.-])(auth|authn|authz|oauth|login|password|passwd|crypto|crypt|cipher|"
    r"security|permissions?|acl|token|session|sso|saml|jwt)([/_.-]|$)",
    re.I,
)


def sensitive_paths(paths: list[str]) -> list[str]:
    """Paths holding credentials, or whose names say auth, crypto, permissions or security."""
    return [p for p in paths if is_secret_path(p) or _SENSITIVE.search(PurePosixPath(p).as_posix())]


def critic_triggers(
    changed: list[str],
    lines: int,
    stalled: int,
    *,
    max_files: int = 10,
    max_lines: int = 400,
    stalled_steps: int = 3,
) -> list[str]:
    """The reasons the critic should review this change, empty when none fires."""
    out = []
    sensitive = sensitive_paths(changed)
    if sensitive:
        out.append(f"security-sensitive files changed: {', '.join(sensitive[:5])}")
    manifests = build_manifests(changed)
    if manifests:
        out.append(f"dependency manifests or build files changed: {', '.join(manifests[:5])}")
    if len(changed) > max_files:
        out.append(f"large scope: {len(changed)} files changed (> {max_files})")
    if lines > max_lines:
        out.append(f"large scope: {lines} changed lines (> {max_lines})")
    if stalled >= stalled_steps:
        out.append(f"no progress: {stalled} actions in a row rolled back or rejected")
    return out


def stalled_actions(statuses: list[str]) -> int:
    """How many of the latest actions, counting back, did not stick (anything but
    ``applied``)."""
    n = 0
    for status in reversed(statuses):
        if status == "applied":
            break
        n += 1
    return n
