"""The submission contract: what ``oopav.tasks.submit`` accepts, and the specific error for
everything it does not. Pure: bytes in, a task or a rejection out."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from oopav.events.catalog import Budgets, Example

MAX_PAYLOAD = 2 * 1024 * 1024
MAX_INSTRUCTION = 64 * 1024
MAX_EXAMPLES = 20
MAX_EXAMPLE_BYTES = 64 * 1024


class BudgetsIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    retries_per_phase: int | None = Field(None, ge=0, le=20)
    iterations: int | None = Field(None, ge=1, le=500)
    model_tokens: int | None = Field(None, ge=1, le=50_000_000)
    wall_seconds_per_phase: float | None = Field(None, gt=0, le=24 * 3600)
    prompt_output_bytes: int | None = Field(None, ge=256, le=1_000_000)
    bounces: int | None = Field(None, ge=0, le=20)


class ExampleIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    before: str = Field(max_length=MAX_EXAMPLE_BYTES)
    after: str = Field(max_length=MAX_EXAMPLE_BYTES)
    path: str | None = None


class SubmissionIn(BaseModel):
    """A task submission. Unknown fields are refused so that typos do not pass silently."""

    model_config = ConfigDict(extra="forbid", strict=True)

    instruction: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    mission: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    budgets: BudgetsIn | None = None
    policy: dict[str, Any] | None = None
    model: str | None = Field(None, min_length=1, max_length=512)
    test_command: list[str] | str | None = None
    examples: list[ExampleIn] = Field(default_factory=list, max_length=MAX_EXAMPLES)

    @field_validator("instruction")
    @classmethod
    def _instruction(cls, v: str) -> str:
        size = len(v.encode())
        if size > MAX_INSTRUCTION:
            raise ValueError(f"instruction is {size} bytes; the limit is {MAX_INSTRUCTION}")
        if not v.strip():
            raise ValueError("instruction is blank")
        return v


@dataclass(frozen=True)
class Accepted:
    instruction: str
    repo: str
    mission: str | None
    budgets: Budgets
    policy: dict[str, Any] | None
    model: str | None
    test_command: list[str] | None
    examples: list[Example]


@dataclass(frozen=True)
class Rejected:
    error: str
    field: str | None
    code: str
    excerpt: str = ""

    def reply(self) -> dict[str, Any]:
        return {"error": self.error, "field": self.field, "code": self.code}


def parse_submission(payload: bytes, *, check_repo: bool = True) -> Accepted | Rejected:
    """Validate raw submission bytes, exactly as the ``nats`` CLI sends them."""
    excerpt = payload[:200].decode("utf-8", "replace")
    if len(payload) > MAX_PAYLOAD:
        return Rejected(
            f"submission is {len(payload)} bytes; the limit is {MAX_PAYLOAD}",
            None,
            "too_large",
            excerpt,
        )
    if not payload.strip():
        return Rejected(
            "empty submission: send a JSON object with at least instruction and repo",
            None,
            "empty",
            excerpt,
        )
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(
            f"submission is not valid UTF-8 (byte {exc.start})", None, "invalid_utf8", excerpt
        )
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return Rejected(
            f"submission is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            None,
            "invalid_json",
            excerpt,
        )
    if not isinstance(raw, dict):
        kind = {
            list: "an array",
            str: "a string",
            int: "a number",
            float: "a number",
            bool: "a boolean",
        }.get(type(raw), "null")
        return Rejected(
            f"submission must be a JSON object, got {kind}", None, "not_an_object", excerpt
        )
    try:
        sub = SubmissionIn.model_validate(raw)
    except ValidationError as exc:
        return _from_validation(exc, raw, excerpt)
    if sub.policy is not None:
        problem = _policy_problem(sub.policy)
        if problem is not None:
            return Rejected(problem, "policy", "invalid", excerpt)
    test_command: list[str] | None
    if isinstance(sub.test_command, str):
        try:
            test_command = shlex.split(sub.test_command)
        except ValueError as exc:
            return Rejected(
                f"test_command cannot be split into arguments: {exc}",
                "test_command",
                "invalid",
                excerpt,
            )
    else:
        test_command = sub.test_command
    if test_command is not None and not test_command:
        return Rejected("test_command is empty", "test_command", "invalid", excerpt)
    repo = sub.repo
    if check_repo:
        path = Path(repo).expanduser()
        if not path.is_absolute():
            return Rejected(
                f"repo must be an absolute path, got {repo!r} (it is resolved on the machine running the intake handler)",
                "repo",
                "invalid_path",
                excerpt,
            )
        if not path.exists():
            return Rejected(
                f"repo path {repo} does not exist on the intake host", "repo", "not_found", excerpt
            )
        if not path.is_dir():
            return Rejected(
                f"repo path {repo} is not a directory", "repo", "not_a_directory", excerpt
            )
        repo = str(path.resolve())
    try:
        budgets = _capped_budgets(sub.budgets.model_dump(exclude_none=True) if sub.budgets else {})
    except ValueError as exc:  # the deployment's caps are broken: say so, do not run uncapped
        return Rejected(
            f"this deployment's budget caps are unusable: {exc}", "budgets", "deployment", excerpt
        )
    return Accepted(
        instruction=sub.instruction,
        repo=repo,
        mission=sub.mission,
        budgets=budgets,
        policy=sub.policy,
        model=sub.model,
        test_command=test_command,
        examples=[Example(before=e.before, after=e.after, path=e.path) for e in sub.examples],
    )


_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def _from_validation(exc: ValidationError, raw: dict[str, Any], excerpt: str) -> Rejected:
    err = exc.errors()[0]
    loc = ".".join(
        str(p) for p in err["loc"] if not isinstance(p, str) or p not in ("str", "list[str]")
    )
    # pydantic reports union members as extra loc parts; keep the user-facing path.
    field = (
        loc.split(".")[0]
        if err["type"] in ("string_type", "list_type") and "test_command" in loc
        else loc
    )
    etype = err["type"]
    got = _TYPE_NAMES.get(type(err.get("input")), type(err.get("input")).__name__)
    if etype == "missing":
        msg = f"{field} is required"
        code = "missing"
    elif etype == "extra_forbidden":
        allowed = ", ".join(SubmissionIn.model_fields) if "." not in field else "see the contract"
        msg = f"unknown field {field!r} (allowed: {allowed})"
        code = "unknown_field"
    elif etype.endswith("_type") or etype in ("model_type", "dict_type"):
        want = {
            "string_type": "a string",
            "int_type": "an integer",
            "float_type": "a number",
            "list_type": "an array",
            "model_type": "an object",
            "dict_type": "an object",
            "bool_type": "a boolean",
        }.get(etype, etype.removesuffix("_type"))
        if field == "test_command":
            want = "a string or an array of strings"
        msg = f"{field} must be {want}, got {got}"
        code = "wrong_type"
    else:
        detail = err["msg"].removeprefix("Value error, ")
        msg = detail if detail.startswith(field) else f"{field}: {detail}"
        code = "invalid"
        if field == "instruction" and "bytes; the limit" in msg:
            code = "too_large"
    return Rejected(msg, field or None, code, excerpt)


def _policy_problem(policy: dict[str, Any]) -> str | None:
    """Why a submitted policy cannot be used (None when it can): capability entries must parse,
    loop switches must be booleans."""
    from pydantic import ValidationError as PolicyError

    from oopav.handlers.common import LOOP_POLICY_KEYS
    from oopav.sandbox.policy import policy_from

    for key in ("critic", "lint"):
        if key in policy and not isinstance(policy[key], bool):
            return f"policy.{key} must be true or false"
    from oopav.handlers.rules.policy import loop_policy_problem

    problem = loop_policy_problem(policy)
    if problem is not None:
        return problem
    rest = {k: v for k, v in policy.items() if k not in LOOP_POLICY_KEYS}
    try:
        policy_from(rest)
    except PolicyError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        return f"policy.{loc}: {err['msg'].removeprefix('Value error, ')}"
    return None


def _capped_budgets(wanted: dict[str, Any]) -> Budgets:
    """The submission's budgets within this deployment's caps (``OOPAV_DEPLOYMENT``, see
    ``rules.budgets.deployment_caps``): above a cap, the cap applies."""
    from oopav.handlers.rules.budgets import deployment_caps, merge_budgets

    caps = deployment_caps()
    if not caps:
        return Budgets(**wanted)
    limits = {name: field.metadata for name, field in BudgetsIn.model_fields.items()}
    ceiling: dict[str, Any] = {}
    for name in Budgets.__struct_fields__:
        top = next(
            (getattr(m, "le", None) for m in limits.get(name, []) if getattr(m, "le", None)), None
        )
        ceiling[name] = caps.get(name, top if top is not None else getattr(Budgets(), name))
    defaults = Budgets()
    start = {n: min(getattr(defaults, n), ceiling[n]) for n in Budgets.__struct_fields__}
    return merge_budgets(Budgets(**start), ceiling, wanted or None)
