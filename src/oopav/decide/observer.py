"""The observer's action after an observation, by explicit rules.

The observer records what an applied action changed; these rules turn those facts into one of
``continue | more_evidence | replan | escalate | negative_example`` (the ``observer_action`` of
``ObservationRecorded``). Keeping them pure and numbered makes every decision explainable from
the event alone: the reasons list names each rule that fired.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

import msgspec

from oopav.events.catalog import Finding

ObserverAction = Literal["continue", "more_evidence", "replan", "escalate", "negative_example"]

# When several rules fire, the most severe action wins; the reasons still list all of them.
SEVERITY: dict[str, int] = {
    "continue": 0,
    "more_evidence": 1,
    "replan": 2,
    "negative_example": 3,
    "escalate": 4,
}

DEFAULT_FAILURE_LIMIT = 3

# --- secret-looking paths ------------------------------------------------------------------

_SECRET_NAMES: frozenset[str] = frozenset(
    {
        ".env",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        "credentials",
        "credentials.json",
        ".htpasswd",
        ".dockercfg",
        "known_hosts",
        "authorized_keys",
    }
)
_SECRET_SUFFIXES: frozenset[str] = frozenset(
    {".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".ppk"}
)
# Directories whose whole content is credentials.
_SECRET_DIRS: frozenset[str] = frozenset({".ssh", ".gnupg", ".aws", ".kube", ".docker"})
# Committed templates of an env file hold no secrets; touching them is ordinary work.
_ENV_TEMPLATES: frozenset[str] = frozenset(
    {".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults"}
)
_SECRETS_FILE_RE = re.compile(r"^secrets?(\.[a-z0-9]+)?$", re.IGNORECASE)


def is_secret_path(path: str) -> bool:
    """True when a path looks like it holds credentials: ``.env`` (not its templates), SSH
    keys, key stores, netrc/pgpass/npmrc/pypirc, ``secrets.*``, anything under ``.ssh``,
    ``.aws``, ``.gnupg``, ``.kube``, ``.docker``. Public keys (``*.pub``) are not secrets."""
    parts = [p for p in re.split(r"[\\/]+", path.strip()) if p not in ("", ".")]
    if not parts:
        return False
    name = parts[-1].lower()
    if name.endswith(".pub") or name in _ENV_TEMPLATES:
        return False
    if any(p.lower() in _SECRET_DIRS for p in parts[:-1]):
        return True
    if name in _SECRET_NAMES or name.startswith(".env."):
        return True
    if PurePosixPath(name).suffix in _SECRET_SUFFIXES:
        return True
    return bool(_SECRETS_FILE_RE.match(name))


# --- the decision --------------------------------------------------------------------------


class ObserverFacts(msgspec.Struct, kw_only=True, frozen=True):
    """What the observer knows after an action (or at baseline).

    ``tests_before`` / ``tests_after``: whether the test command passed before and after the
    change, None when it was not run. ``expected_change``: the applied action is one that should
    modify files (an edit, a rewrite, a file write). ``consecutive_failures``: actions in a row,
    this one included, that failed or were rejected. ``touched_paths``: every path the action
    read or wrote (``changed_files`` are checked as well).
    """

    phase: Literal["baseline", "change"] = "change"
    new_parse_errors: list[Finding] = msgspec.field(default_factory=list)
    new_stubs: list[Finding] = msgspec.field(default_factory=list)
    tests_before: bool | None = None
    tests_after: bool | None = None
    changed_files: list[str] = msgspec.field(default_factory=list)
    expected_change: bool = False
    consecutive_failures: int = 0
    touched_paths: list[str] = msgspec.field(default_factory=list)
    expected_broken: bool = False
    """The plan marks this action's step ``tests_may_fail``: rule 5 waits for a later step."""
    perturbed: bool = True
    """Whether a stuck replan with a perturbation already happened in this session. Rule 2
    escalates only then: the stuck detector's perturbed replan comes first."""


class ObserverDecision(msgspec.Struct, kw_only=True, frozen=True):
    action: ObserverAction
    reasons: list[str]


def decide_observer_action(
    facts: ObserverFacts, *, failure_limit: int = DEFAULT_FAILURE_LIMIT
) -> ObserverDecision:
    """Decide the observer action. Rules, each checked independently:

    1. A secret-looking path (``is_secret_path``) was touched → ``escalate``: credentials are
       never the agent's business, a person must look (DESIGN invariant 7, deny by default).
    2. ``consecutive_failures >= failure_limit`` (default 3) after a perturbed replan
       (``perturbed``) → ``escalate``: retrying more of the same will not help. Before any
       perturbation the rule stays quiet: the actor's stuck detector replans with one first.
    3. The change introduced parse errors → ``negative_example``: the step is recorded as a
       counter-example for training and must be rolled back; the planner replans from the
       last checkpoint.
    4. The change introduced stub markers → ``negative_example``: placeholders are what the
       done-gate rejects, so the step is a counter-example as well.
    5. Tests passed before and fail after → ``replan``: the approach broke behaviour.
       "Before" is the previous step (the last applied action the tests ran after), not the
       baseline: a step is blamed only for what it broke. A step the plan marks
       ``tests_may_fail`` (``expected_broken``) waives the rule; the next unmarked step is
       compared with the state before the marked ones.
    6. The action should have changed files and changed none → ``more_evidence``: the actor's
       picture of the code is wrong (a pattern that matched nothing); look again before acting.
    7. Nothing above → ``continue``.

    Precedence: the most severe action among the fired rules wins, in the order
    ``escalate > negative_example > replan > more_evidence > continue``; ``reasons`` lists every
    fired rule in rule order, so a decision never hides a second problem. At baseline only rules
    1 and 2 can fire (there is no change yet to judge).
    """
    fired: list[tuple[ObserverAction, str]] = []
    waived: list[str] = []

    touched = sorted({*facts.touched_paths, *facts.changed_files})
    secrets = [p for p in touched if is_secret_path(p)]
    if secrets:
        fired.append(("escalate", f"rule 1: secret-looking path touched: {', '.join(secrets)}"))
    if facts.consecutive_failures >= failure_limit and facts.perturbed:
        fired.append(
            (
                "escalate",
                f"rule 2: {facts.consecutive_failures} consecutive failures "
                f"(limit {failure_limit})",
            )
        )
    if facts.phase == "change":
        if facts.new_parse_errors:
            fired.append(
                (
                    "negative_example",
                    f"rule 3: {_summary(facts.new_parse_errors)} parse errors introduced",
                )
            )
        if facts.new_stubs:
            fired.append(
                ("negative_example", f"rule 4: {_summary(facts.new_stubs)} stubs introduced")
            )
        if facts.tests_before is True and facts.tests_after is False:
            if facts.expected_broken:
                waived.append(
                    "rule 5 waived: the plan marks this step tests_may_fail (a later step "
                    "must make them pass)"
                )
            else:
                fired.append(("replan", "rule 5: tests passed before the change and fail after it"))
        if facts.expected_change and not facts.changed_files:
            fired.append(
                ("more_evidence", "rule 6: the action should have changed files but changed none")
            )

    if not fired:
        return ObserverDecision(action="continue", reasons=[*waived, "rule 7: no rule fired"])
    action = max((a for a, _ in fired), key=SEVERITY.__getitem__)
    return ObserverDecision(action=action, reasons=[r for _, r in fired])


def _summary(findings: list[Finding]) -> str:
    """``3 (a.py:4, b.py:9, …)``: a count plus the first few locations, bounded in size."""
    where = ", ".join(f"{f.path}:{f.line}" for f in findings[:3])
    more = ", …" if len(findings) > 3 else ""
    return f"{len(findings)} ({where}{more})"
