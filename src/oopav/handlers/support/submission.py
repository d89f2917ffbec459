"""The submission contract: what ``oopav.tasks.submit`` accepts, and the specific error for
everything it does not. Pure: bytes in, a task or a rejection out.

Any payload gets an answer: the parse is bounded (size, nesting depth, number of values,
number literals), every string is checked for lone surrogates and control characters before
anything else looks at it, paths are measured before the filesystem sees them, and a last
catch-all turns an unforeseen error into a rejection instead of a crashed intake. The limits
are listed in docs/operations.md ("Limits")."""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from oopav.events.catalog import Budgets, Example
from oopav.handlers.support.repo_check import path_length_problem, repo_problem

MAX_PAYLOAD = 2 * 1024 * 1024
MAX_INSTRUCTION = 64 * 1024
MAX_EXAMPLES = 20
MAX_EXAMPLE_BYTES = 64 * 1024
MAX_EXAMPLES_TOTAL = 512 * 1024
MAX_DEPTH = 16
MAX_VALUES = 10_000
MAX_LIST = 1000
MAX_KEY_CHARS = 128
MAX_STRING_CHARS = 4096
MAX_INT_DIGITS = 15
MAX_NUMBER_CHARS = 32
MAX_ARGS = 256
MAX_ARGV_BYTES = 64 * 1024
MAX_POLICY_ENTRIES = 256
MAX_MODEL_CHARS = 512
MAX_ERROR_CHARS = 1000

# Fields that hold prose or code, where tab, newline, carriage return, vertical tab and form
# feed are legitimate; every other string field takes no control characters at all.
_TEXT_FIELDS = ("instruction", "examples.*.before", "examples.*.after")
_TEXT_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_ANY_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
# argv elements go to execve unchanged: any character but NUL is legitimate there (a
# ``python -c`` script has newlines), and NUL is what execve cannot carry.
_ARGV_FIELDS = ("test_command", "test_command.*")
_NUL = re.compile(r"\x00")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MISSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_GROUP = 16


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
    # The user edited some sites and left the rest of the file for the rule (docs/synth.md).
    partial: bool = False
    # With partial: 1-based lines of `before` the rule must leave as `after` has them.
    keep: list[int] = Field(default_factory=list, max_length=10_000)


class GridPointIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    temperature: float = Field(0.7, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)


class GroupIn(BaseModel):
    """K rollouts of one task (for the reflector): the sessions share a group id; the grid
    gives each its sampling (empty: temperature 0.7, seeds 0..K-1)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    k: int = Field(ge=1, le=MAX_GROUP)
    grid: list[GridPointIn] = Field(default_factory=list, max_length=MAX_GROUP)
    expected: str | None = None

    @field_validator("expected")
    @classmethod
    def _expected(cls, v: str | None) -> str | None:
        if v is None:
            return None
        from oopav.reflection.groups import normalise_verdict

        norm = normalise_verdict(v)
        if norm is None:
            raise ValueError(f"group.expected {v!r} is not a verdict: use pass or fail")
        return norm


class SubmissionIn(BaseModel):
    """A task submission. Unknown fields are refused so that typos do not pass silently."""

    model_config = ConfigDict(extra="forbid", strict=True)

    instruction: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    mission: str | None = None
    budgets: BudgetsIn | None = None
    policy: dict[str, Any] | None = None
    model: str | None = Field(None, min_length=1, max_length=MAX_MODEL_CHARS)
    test_command: list[str] | str | None = None
    examples: list[ExampleIn] = Field(default_factory=list, max_length=MAX_EXAMPLES)
    group: GroupIn | None = None
    environment: str | dict[str, Any] | None = None

    @field_validator("instruction")
    @classmethod
    def _instruction(cls, v: str) -> str:
        size = len(v.encode())
        if size > MAX_INSTRUCTION:
            raise ValueError(f"instruction is {size} bytes; the limit is {MAX_INSTRUCTION}")
        if not v.strip():
            raise ValueError("instruction is blank")
        return v

    @field_validator("mission")
    @classmethod
    def _mission(cls, v: str | None) -> str | None:
        if v is not None and not _MISSION.match(v):
            raise ValueError(
                "mission must be 1 to 64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
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
    group: GroupIn | None = None
    environment: dict[str, Any] | None = None


@dataclass(frozen=True)
class Rejected:
    error: str
    field: str | None
    code: str
    excerpt: str = ""

    def reply(self) -> dict[str, Any]:
        return {"error": self.error, "field": self.field, "code": self.code}


class _Refused(Exception):
    """Raised inside the parse to stop at the first problem."""

    def __init__(self, error: str, field: str | None, code: str) -> None:
        super().__init__(error)
        self.error = error
        self.field = field
        self.code = code


class _BigNumber:
    """A number literal beyond the limits, kept as text until the scan names its field (the
    json hooks do not know where they are)."""

    def __init__(self, text: str, problem: str) -> None:
        self.text = text
        self.problem = problem


def _parse_int(text: str) -> int | _BigNumber:
    # Checked before int(): Python refuses to convert more than 4300 digits with a ValueError.
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return _BigNumber(
            text, f"is an integer of {len(text.lstrip('-'))} digits; the limit is {MAX_INT_DIGITS}"
        )
    return int(text)


def _parse_float(text: str) -> float | _BigNumber:
    if len(text) > MAX_NUMBER_CHARS:
        return _BigNumber(
            text, f"is a number literal of {len(text)} characters; the limit is {MAX_NUMBER_CHARS}"
        )
    value = float(text)
    return value if math.isfinite(value) else _BigNumber(text, f"({text}) is not a finite number")


def _parse_constant(text: str) -> Any:
    raise _Refused(
        f"submission is not valid JSON: {text} is not a JSON number", None, "invalid_json"
    )


def safe_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` made safe to store and print: valid UTF-8, no control characters, bounded."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = _ANY_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_submission(payload: bytes, *, check_repo: bool = True) -> Accepted | Rejected:
    """Validate raw submission bytes, exactly as the ``nats`` CLI sends them."""
    excerpt = payload[:200].decode("utf-8", "replace")
    excerpt = safe_text(excerpt, 200)
    try:
        return _parse(payload, check_repo)
    except _Refused as exc:
        return Rejected(safe_text(exc.error), exc.field, exc.code, excerpt)
    except Exception as exc:  # the last line of defence: an answer, never a crashed intake
        return Rejected(
            safe_text(f"submission could not be validated: {type(exc).__name__}: {exc}"),
            None,
            "invalid",
            excerpt,
        )


def _parse(payload: bytes, check_repo: bool) -> Accepted:
    if len(payload) > MAX_PAYLOAD:
        raise _Refused(
            f"submission is {len(payload)} bytes; the limit is {MAX_PAYLOAD}", None, "too_large"
        )
    if not payload.strip():
        raise _Refused(
            "empty submission: send a JSON object with at least instruction and repo",
            None,
            "empty",
        )
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Refused(
            f"submission is not valid UTF-8 (byte {exc.start})", None, "invalid_utf8"
        ) from None
    try:
        raw = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except json.JSONDecodeError as exc:
        raise _Refused(
            f"submission is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            None,
            "invalid_json",
        ) from None
    except RecursionError:
        raise _Refused(
            f"submission is nested too deeply; at most {MAX_DEPTH} levels of arrays and objects",
            None,
            "too_deep",
        ) from None
    if not isinstance(raw, dict):
        kind = {
            list: "an array",
            str: "a string",
            int: "a number",
            float: "a number",
            _BigNumber: "a number",
            bool: "a boolean",
        }.get(type(raw), "null")
        raise _Refused(f"submission must be a JSON object, got {kind}", None, "not_an_object")
    _scan(raw)
    try:
        sub = SubmissionIn.model_validate(raw)
    except ValidationError as exc:
        raise _from_validation(exc) from None
    if sub.group is not None and sub.group.grid and len(sub.group.grid) != sub.group.k:
        raise _Refused(
            f"group.grid has {len(sub.group.grid)} points for k={sub.group.k}: give one per "
            "rollout, or none",
            "group.grid",
            "invalid",
        )
    policy = sub.policy
    if policy is not None:
        _check_policy(policy)
    test_command = _argv(sub.test_command)
    examples = _examples(sub.examples)
    if sub.model is not None:
        problem = _model_problem(sub.model)
        if problem is not None:
            raise _Refused(problem, "model", "bad_model")
    repo = sub.repo
    if check_repo:
        repo_bad = repo_problem(repo)
        if repo_bad is not None:
            raise _Refused(str(repo_bad), "repo", repo_bad.code)
        repo = str(Path(repo).expanduser().resolve())
    else:
        too_long = path_length_problem(repo, "repo path")
        if too_long is not None:
            raise _Refused(str(too_long), "repo", too_long.code)
    environment = None
    if sub.environment is not None:
        from oopav.sandbox.environment import EnvironmentError_, normalize_spec

        try:
            environment = normalize_spec(sub.environment) or None
        except EnvironmentError_ as exc:
            raise _Refused(str(exc), "environment", "invalid") from None
        python = (environment or {}).get("python")
        if check_repo and python and not Path(python).expanduser().exists():
            raise _Refused(
                f"environment.python {python} does not exist on the intake host; give a venv "
                "directory or an interpreter path",
                "environment",
                "not_found",
            )
    try:
        budgets = _capped_budgets(sub.budgets.model_dump(exclude_none=True) if sub.budgets else {})
    except ValueError as exc:  # the deployment's caps are broken: say so, do not run uncapped
        raise _Refused(
            f"this deployment's budget caps are unusable: {exc}", "budgets", "deployment"
        ) from None
    return Accepted(
        instruction=sub.instruction,
        repo=repo,
        mission=sub.mission,
        budgets=budgets,
        policy=policy,
        model=sub.model,
        test_command=test_command,
        examples=examples,
        group=sub.group,
        environment=environment,
    )


def _model_problem(spec: str) -> str | None:
    """Why the submitted model spec cannot work, caught here rather than by an aborted session.
    The form is always checked; a missing file only for an absolute path, because a relative
    one is resolved by the handler process that loads it (the CLI makes its paths absolute)."""
    from oopav.models.registry import check_spec

    problem = check_spec(spec)
    if problem is None:
        return None
    rest = spec.partition(":")[2]
    if "does not exist" in problem and not Path(rest).expanduser().is_absolute():
        return None
    return problem


# -- the scan: every value, before pydantic or the filesystem sees any -----------------------


def _text_field(path: str) -> bool:
    parts = path.split(".")
    generic = ".".join("*" if p.isdigit() else p for p in parts)
    return generic in _TEXT_FIELDS


def _argv_field(path: str) -> bool:
    generic = ".".join("*" if p.isdigit() else p for p in path.split("."))
    return generic in _ARGV_FIELDS


def _scan(raw: dict[str, Any]) -> None:
    """Depth, count, numbers, keys and string contents of the whole document, iteratively
    (a recursive walk is what a deep document would crash)."""
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    seen = 0
    while stack:
        value, path, depth = stack.pop()
        field = path or None
        seen += 1
        if seen > MAX_VALUES:
            raise _Refused(f"submission has more than {MAX_VALUES} JSON values", None, "too_large")
        if depth > MAX_DEPTH:
            raise _Refused(
                f"submission is nested too deeply; at most {MAX_DEPTH} levels of arrays and "
                "objects",
                field,
                "too_deep",
            )
        if isinstance(value, dict):
            items = list(value.items())
            for key, _ in items:
                _check_string(key, f"{path}.<key>" if path else "<key>", key=True)
            # A misspelled field is named as such before its value is judged: `before_text`
            # holds code with newlines, which would otherwise read as a control-char error.
            known = _known_fields(path)
            for key, _ in items:
                if known is not None and key not in known:
                    name = f"{path}.{key}" if path else key
                    raise _Refused(
                        f"unknown field {name!r} (allowed: {', '.join(known)})",
                        name,
                        "unknown_field",
                    )
            for key, item in reversed(items):
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list):
            if path == "test_command" and len(value) > MAX_ARGS:
                raise _Refused(
                    f"test_command has {len(value)} arguments; the limit is {MAX_ARGS}",
                    field,
                    "too_many_arguments",
                )
            if len(value) > MAX_LIST:
                raise _Refused(
                    f"{path or 'submission'} has {len(value)} entries; the limit is {MAX_LIST}",
                    field,
                    "too_large",
                )
            for i in range(len(value) - 1, -1, -1):
                stack.append((value[i], f"{path}.{i}" if path else str(i), depth + 1))
        elif isinstance(value, str):
            _check_string(value, path)
        elif isinstance(value, _BigNumber):
            raise _Refused(f"{path or 'submission'} {value.problem}", field, "number_too_large")


def _known_fields(path: str) -> tuple[str, ...] | None:
    """The fields an object at ``path`` may hold, where the contract fixes them."""
    if path == "":
        return tuple(SubmissionIn.model_fields)
    if path == "budgets":
        return tuple(BudgetsIn.model_fields)
    if re.fullmatch(r"examples\.\d+", path):
        return tuple(ExampleIn.model_fields)
    return None


def _check_string(value: str, path: str, *, key: bool = False) -> None:
    what = f"a key in {path.removesuffix('.<key>')}" if key and path != "<key>" else path
    if key and path == "<key>":
        what = "a field name"
    field = path.removesuffix(".<key>").removesuffix("<key>") or None
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise _Refused(
            f"{what} holds a lone UTF-16 surrogate (\\u{ord(bad.group()):04x}) at character "
            f"{bad.start()}: JSON strings must encode valid Unicode",
            field,
            "invalid_unicode",
        )
    if key and len(value) > MAX_KEY_CHARS:
        raise _Refused(
            f"{what} is {len(value)} characters long; the limit is {MAX_KEY_CHARS}",
            field,
            "too_large",
        )
    argv = not key and _argv_field(path)
    if argv:
        pattern = _NUL
    elif not key and _text_field(path):
        pattern = _TEXT_CONTROLS
    else:
        pattern = _ANY_CONTROLS
    bad = pattern.search(value)
    if bad is not None:
        char = bad.group()
        name = "a NUL byte" if char == "\x00" else f"control character U+{ord(char):04X}"
        allowed = (
            "; only tab and line breaks are allowed here"
            if pattern is _TEXT_CONTROLS
            else "; argv elements take any character but NUL"
            if pattern is _NUL
            else "; control characters are not allowed here"
        )
        raise _Refused(
            f"{what} contains {name} at character {bad.start()}{allowed}",
            field,
            "control_character",
        )
    top = path.split(".", 1)[0]
    # instruction, examples, repo and test_command have their own, larger limits (checked later).
    if (
        not key
        and top not in ("instruction", "examples", "repo", "test_command")
        and len(value) > MAX_STRING_CHARS
    ):
        raise _Refused(
            f"{path} is {len(value)} characters long; the limit is {MAX_STRING_CHARS}",
            field,
            "too_large",
        )


# -- field checks after the model --------------------------------------------------------------


def _argv(command: list[str] | str | None) -> list[str] | None:
    if command is None:
        return None
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise _Refused(
                f"test_command cannot be split into arguments: {exc}", "test_command", "invalid"
            ) from None
    else:
        argv = list(command)
    if not argv:
        raise _Refused("test_command is empty", "test_command", "invalid")
    if len(argv) > MAX_ARGS:
        raise _Refused(
            f"test_command has {len(argv)} arguments; the limit is {MAX_ARGS}",
            "test_command",
            "too_many_arguments",
        )
    total = sum(len(a.encode()) + 1 for a in argv)
    if total > MAX_ARGV_BYTES:
        raise _Refused(
            f"test_command is {total} bytes long; the limit is {MAX_ARGV_BYTES}",
            "test_command",
            "too_large",
        )
    if not argv[0]:
        raise _Refused("test_command names an empty program", "test_command", "invalid")
    for i, arg in enumerate(argv):
        bad = _NUL.search(arg)
        if bad is not None:  # the string form is split after the scan
            raise _Refused(
                f"test_command argument {i} contains a NUL byte at character {bad.start()}; "
                "argv elements take any character but NUL",
                "test_command",
                "control_character",
            )
    return argv


def _examples(items: list[ExampleIn]) -> list[Example]:
    total = 0
    out = []
    for i, e in enumerate(items):
        size = len(e.before.encode()) + len(e.after.encode())
        total += size
        if total > MAX_EXAMPLES_TOTAL:
            raise _Refused(
                f"examples add up to more than {MAX_EXAMPLES_TOTAL} bytes (at example {i}); "
                "send fewer or shorter examples",
                "examples",
                "too_large",
            )
        if e.path is not None:
            problem = path_length_problem(e.path, f"examples.{i}.path")
            if problem is not None:
                raise _Refused(str(problem), f"examples.{i}.path", problem.code)
            if not e.path.strip():
                raise _Refused(f"examples.{i}.path is blank", f"examples.{i}.path", "invalid")
        if e.partial and e.before == e.after and not e.keep:
            raise _Refused(
                f"examples.{i} is partial but changes nothing and keeps no line: a partial "
                "example shows the sites you edited (or the lines to leave alone, `keep`); "
                "code the rule must leave alone everywhere is an unchanged example that is "
                "not partial",
                f"examples.{i}.partial",
                "invalid",
            )
        if e.keep and not e.partial:
            raise _Refused(
                f"examples.{i}.keep needs partial: true (an example that is not partial keeps "
                "all of its unchanged code already)",
                f"examples.{i}.keep",
                "invalid",
            )
        out.append(
            Example(
                before=e.before, after=e.after, path=e.path, partial=e.partial, keep=list(e.keep)
            )
        )
    return out


_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
    type(None): "null",
}

_WANT = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "an array",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "bool_type": "true or false",
}


def _got(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _from_validation(exc: ValidationError) -> _Refused:
    err = exc.errors()[0]
    loc = ".".join(
        str(p) for p in err["loc"] if not isinstance(p, str) or p not in ("str", "list[str]")
    )
    etype = err["type"]
    # pydantic reports union members as extra loc parts; keep the user-facing path.
    field = (
        loc.split(".")[0]
        if etype in ("string_type", "list_type") and "test_command" in loc
        else loc
    )
    if etype == "missing":
        return _Refused(f"{field} is required", field or None, "missing")
    if etype == "extra_forbidden":
        allowed = ", ".join(SubmissionIn.model_fields) if "." not in field else "see the contract"
        if field.startswith("budgets."):
            allowed = ", ".join(BudgetsIn.model_fields)
        elif field.startswith("examples."):
            allowed = ", ".join(ExampleIn.model_fields)
        return _Refused(f"unknown field {field!r} (allowed: {allowed})", field, "unknown_field")
    if etype.endswith("_type"):
        want = _WANT.get(etype, etype.removesuffix("_type"))
        if field == "test_command":
            want = "a string or an array of strings"
        return _Refused(
            f"{field} must be {want}, got {_got(err.get('input'))}", field, "wrong_type"
        )
    if etype == "too_long" and field == "examples":
        return _Refused(
            f"examples has {len(err.get('input') or [])} entries; the limit is {MAX_EXAMPLES}",
            field,
            "too_large",
        )
    if etype == "string_too_long":
        return _Refused(
            f"{field} is {len(err.get('input') or '')} characters long; the limit is "
            f"{err.get('ctx', {}).get('max_length')}",
            field,
            "too_large",
        )
    if etype == "string_too_short":
        return _Refused(f"{field} is empty", field, "invalid")
    detail = err["msg"].removeprefix("Value error, ")
    # A message that names its field already is not prefixed again.
    msg = detail if detail.startswith(field) else f"{field} {_lower(detail)}"
    code = "too_large" if "bytes; the limit" in msg else "invalid"
    return _Refused(msg, field or None, code)


def _lower(detail: str) -> str:
    # pydantic says "Input should be ..."; after a field name read "must be ...".
    detail = detail.replace("Input should be", "must be")
    return detail[:1].lower() + detail[1:]


def _check_policy(policy: dict[str, Any]) -> None:
    """A submitted policy must be usable as it is: capability entries parse, switches and
    enums take exactly their values (``ask_unknown: "no"`` is refused, not read as false)."""
    from oopav.decide.policy import LOOP_POLICY_KEYS
    from oopav.sandbox.policy import Policy

    for key in ("lint", "doctest", "tests_per_action"):
        if key in policy and not isinstance(policy[key], bool):
            raise _Refused(
                f"policy.{key} must be true or false, got {_got(policy[key])}",
                f"policy.{key}",
                "wrong_type",
            )
    if "critic" in policy:
        from oopav.reflection.critique import critic_config

        try:
            critic_config(policy)
        except ValueError as exc:
            raise _Refused(str(exc), "policy.critic", "invalid") from None
    from oopav.decide.policy import loop_policy_problem

    problem = loop_policy_problem(policy)
    if problem is not None:
        raise _Refused(problem, "policy", "invalid")
    rest = {k: v for k, v in policy.items() if k not in LOOP_POLICY_KEYS}
    for key, value in rest.items():
        if isinstance(value, list) and len(value) > MAX_POLICY_ENTRIES:
            raise _Refused(
                f"policy.{key} has {len(value)} entries; the limit is {MAX_POLICY_ENTRIES}",
                f"policy.{key}",
                "too_large",
            )
    try:
        Policy.model_validate(rest, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(["policy", *(str(p) for p in err["loc"])])
        field = ".".join(["policy", *(str(p) for p in err["loc"][:1])])
        etype = err["type"]
        if etype == "extra_forbidden":
            allowed = ", ".join([*Policy.model_fields, *LOOP_POLICY_KEYS])
            raise _Refused(
                f"unknown field {loc!r} (allowed in policy: {allowed})", loc, "unknown_field"
            ) from None
        if etype.endswith("_type"):
            want = _WANT.get(etype, etype.removesuffix("_type"))
            raise _Refused(
                f"{loc} must be {want}, got {_got(err.get('input'))}", field, "wrong_type"
            ) from None
        detail = err["msg"].removeprefix("Value error, ")
        raise _Refused(f"{loc}: {detail}", field, "invalid") from None


def _capped_budgets(wanted: dict[str, Any]) -> Budgets:
    """The submission's budgets within this deployment's caps (``OOPAV_DEPLOYMENT``, see
    ``rules.budgets.deployment_caps``): above a cap, the cap applies."""
    from oopav.decide.budgets import deployment_caps, merge_budgets

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
