"""The prompt contract: a static prefix, the per-call sections, the ``<state>`` block, and the
strict parser of the model's envelope.

Layout of every request (the order matters for prefix caching):

1. ``system``: :func:`static_prefix` — system text, the output schemas, the policy. Byte-identical
   for every call of a session (same policy), so vLLM / llama.cpp reuse its KV cache.
2. ``user``: the role directive, the mission guidance (``[G0]. …`` lines), the context pack and
   the persistent ``<state>`` block (bounded by a token budget).

The answer is ``<think>…</think><TAG>{json}</TAG><state_update>{json}</state_update>`` with TAG
``action`` (actor), ``plan`` (planner) or ``verdict`` (critic, no state update). Parsing is
strict: anything else is an :class:`AnswerError` with a reason code and a message the model can
act on; the caller retries within its budget. The think text is kept for the record only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec
from msgspec import Meta

from oopav.events.actions import Action, action_json_schema
from oopav.models.base import Message, ModelRequest, Sampling, estimate_tokens

TestDecision = Literal["required", "recommended", "optional", "deferred", "skip"]

# --- output structs (one source of truth for parsing and for the decoding schemas) ----------


class PlanStepOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    id: Annotated[int, Meta(ge=1)]
    description: Annotated[str, Meta(min_length=1)]
    files: list[str] = msgspec.field(default_factory=list)
    tests_may_fail: bool = False


class PlanOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """The planner's ``<plan>``: ordered steps, the files it expects to touch, the test decision
    (honouring orient's), and why."""

    steps: Annotated[list[PlanStepOutput], Meta(min_length=1)]
    files: list[str]
    test_decision: TestDecision
    rationale: str


class CriticOutput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """The critic's ``<verdict>``: verdict, reasons, top risks, missing tests, confidence 0-1."""

    # (The docstring is the schema's description in every prompt: keep it short.) The report's
    # fields are optional so a terse critic, and every answer recorded before they existed,
    # still parses; the confidence tier gate skips a verdict without a confidence.

    verdict: Literal["approve", "caution", "block", "reject"]
    reasons: list[str]
    top_risks: list[str] = msgspec.field(default_factory=list)
    missing_tests: list[str] = msgspec.field(default_factory=list)
    confidence: Annotated[float, Meta(ge=0, le=1)] | None = None


class StateUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """What the model asks to change in ``<state>``: list items are added (deduplicated),
    ``resolved`` items leave ``open_issues`` and ``hypotheses``, ``history`` records the step
    just taken, ``next_focus`` replaces the previous one."""

    goals: list[str] = msgspec.field(default_factory=list)
    constraints: list[str] = msgspec.field(default_factory=list)
    decisions: list[str] = msgspec.field(default_factory=list)
    hypotheses: list[str] = msgspec.field(default_factory=list)
    open_issues: list[str] = msgspec.field(default_factory=list)
    resolved: list[str] = msgspec.field(default_factory=list)
    history: str | None = None
    next_focus: str | None = None


class AgentState(msgspec.Struct, kw_only=True, frozen=True):
    """The persistent state carried between calls (rebuilt from events, never kept in memory)."""

    goals: list[str] = msgspec.field(default_factory=list)
    constraints: list[str] = msgspec.field(default_factory=list)
    decisions: list[str] = msgspec.field(default_factory=list)
    hypotheses: list[str] = msgspec.field(default_factory=list)
    history: list[str] = msgspec.field(default_factory=list)
    open_issues: list[str] = msgspec.field(default_factory=list)
    next_focus: str = ""


RoleOutput = tuple[str, Any, bool]  # (tag, type, carries a state update)

ROLE_OUTPUTS: dict[str, RoleOutput] = {
    "planner": ("plan", PlanOutput, True),
    "actor": ("action", Action, True),
    "critic": ("verdict", CriticOutput, False),
}


def role_output(role: str) -> RoleOutput:
    try:
        return ROLE_OUTPUTS[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLE_OUTPUTS)}") from None


@cache
def _schema_json(kind: str) -> str:
    if kind == "action":
        return json.dumps(action_json_schema(), sort_keys=True)
    types = {"plan": PlanOutput, "verdict": CriticOutput, "state_update": StateUpdate}
    return json.dumps(msgspec.json.schema(types[kind]), sort_keys=True)


def output_schema(role: str) -> dict[str, Any]:
    """The JSON schema of ``role``'s payload (a fresh copy: callers may mutate it)."""
    return json.loads(_schema_json(role_output(role)[0]))


def plan_json_schema() -> dict[str, Any]:
    return json.loads(_schema_json("plan"))


def critic_json_schema() -> dict[str, Any]:
    return json.loads(_schema_json("verdict"))


def state_update_schema() -> dict[str, Any]:
    return json.loads(_schema_json("state_update"))


# --- the static prefix -------------------------------------------------------------------

SYSTEM_TEXT = """\
You are oopav, an agent that changes code in a repository one verified step at a time.
You never touch files yourself: you propose plans and actions; the kernel validates them,
applies them in a sandbox and reports what happened.

Answer format (strict; anything else is rejected and costs a retry):
<think>your private reasoning, short</think>
<TAG>one JSON document matching the schema for your role</TAG>
<state_update>one JSON document matching the state update schema</state_update>

TAG is `plan` for the planner, `action` for the actor and `verdict` for the critic (the critic
sends no state_update). JSON must be complete and valid: no comments, no trailing commas,
no text outside the tags."""


def static_prefix(
    policy: Mapping[str, Any] | str | None = None, *, system: str = SYSTEM_TEXT
) -> str:
    """System text, the output schemas and the policy: byte-identical for the same inputs."""
    if policy is None or isinstance(policy, str):
        policy_text = policy or "(default policy)"
    else:
        policy_text = json.dumps(policy, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return _static_prefix(system, policy_text)


@lru_cache(maxsize=16)
def _static_prefix(system: str, policy_text: str) -> str:
    sections = [
        system,
        "## Action schema (actor)\n" + _schema_json("action"),
        "## Text edit blocks (actor)\n" + _blocks_help(),
        "## Plan schema (planner)\n" + _schema_json("plan"),
        "## Verdict schema (critic)\n" + _schema_json("verdict"),
        "## State update schema\n" + _schema_json("state_update"),
        "## Policy\n" + policy_text,
    ]
    return "\n\n".join(sections) + "\n"


def _blocks_help() -> str:
    from oopav.models.blocks import PROMPT_HELP

    return PROMPT_HELP


ROLE_DIRECTIVES: dict[str, str] = {
    "planner": (
        "Role: planner. Propose a plan for the task: numbered steps (id, description, files), the "
        "files manifest, the test decision (keep orient's unless you say why in the rationale); "
        "mark a step tests_may_fail when it leaves the tests failing until a later step. "
        "Answer with <think>, <plan> and <state_update>."
    ),
    "actor": (
        "Role: actor. Propose exactly one next action for the current step (ast_grep, "
        "search_replace, write_file, run_command, or finish when the plan is done; read_file "
        "and search look at the code without changing it and need no permission; ask puts "
        "a question to a person when only they can answer it). "
        "Answer with <think>, <action> and <state_update>."
    ),
    "critic": (
        "Role: critic. Review the change against the task and the plan: approve, caution "
        "(acceptable, with concerns) or block (must not ship), with concrete reasons; list the "
        "top risks (most serious first), the tests that are missing, and your confidence in "
        "the verdict from 0 to 1. Values shown as [REDACTED:...] were removed before review. "
        "Answer with <think> and <verdict>."
    ),
}


# --- the state block -----------------------------------------------------------------------

HISTORY_KEEP = 3
# Eviction order when the block is over budget: least durable first.
_EVICTION: tuple[str, ...] = (
    "hypotheses",
    "decisions",
    "open_issues",
    "history",
    "constraints",
    "goals",
)


def render_state(state: AgentState) -> str:
    body = msgspec.json.format(msgspec.json.encode(state), indent=1).decode()
    return f"<state>\n{body}\n</state>"


def merge_state(
    state: AgentState,
    update: StateUpdate | None,
    *,
    budget_tokens: int = 600,
    item_chars: int = 240,
    max_items: int = 12,
) -> AgentState:
    """Apply ``update`` and bound the result: at most ``max_items`` per list, ``HISTORY_KEEP``
    history items, each item at most ``item_chars``, and the rendered block within
    ``budget_tokens`` (oldest, least durable items are dropped first)."""
    lists: dict[str, list[str]] = {
        name: list(getattr(state, name)) for name in (*_EVICTION, "history")
    }
    next_focus = state.next_focus
    if update is not None:
        resolved = {_clip(r, item_chars) for r in update.resolved}
        for name in ("goals", "constraints", "decisions", "hypotheses", "open_issues"):
            for item in getattr(update, name):
                item = _clip(item, item_chars)
                if (
                    item
                    and item not in lists[name]
                    and not (name in ("open_issues", "hypotheses") and item in resolved)
                ):
                    lists[name].append(item)
        for name in ("open_issues", "hypotheses"):
            lists[name] = [i for i in lists[name] if i not in resolved]
        if update.history:
            lists["history"].append(_clip(update.history, item_chars))
        if update.next_focus is not None:
            next_focus = _clip(update.next_focus, item_chars)
    lists["history"] = lists["history"][-HISTORY_KEEP:]
    for name in _EVICTION:
        lists[name] = lists[name][-max_items:]

    def build() -> AgentState:
        return AgentState(next_focus=next_focus, **lists)

    merged = build()
    for name in _EVICTION:
        while lists[name] and estimate_tokens(render_state(merged)) > budget_tokens:
            lists[name].pop(0)
            merged = build()
    if estimate_tokens(render_state(merged)) > budget_tokens:
        next_focus = _clip(next_focus, max(0, budget_tokens))
        merged = build()
    return merged


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


# --- messages and requests -----------------------------------------------------------------

Guidance = Sequence[str | tuple[str, str]]


def render_guidance(guidance: Guidance) -> str:
    """Mission guidance as ``[G0]. text`` lines (explicit ids are kept: they are stable)."""
    lines = []
    for i, item in enumerate(guidance):
        gid, text = item if isinstance(item, tuple) else (f"G{i}", item)
        lines.append(f"[{gid}]. {' '.join(text.split())}")
    return "\n".join(lines) if lines else "(no guidance yet)"


def build_messages(
    role: str,
    *,
    prefix: str,
    guidance: Guidance = (),
    context: str = "",
    state: AgentState | None = None,
    task: str = "",
    extra: Sequence[Message] = (),
) -> list[Message]:
    """The messages of one call; ``extra`` (e.g. :func:`retry_messages`) goes last."""
    if role not in ROLE_DIRECTIVES:
        raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLE_DIRECTIVES)}")
    parts = [ROLE_DIRECTIVES[role]]
    if task:
        parts.append("## Task\n" + task)
    parts += [
        "## Guidance\n" + render_guidance(guidance),
        "## Context\n" + (context or "(none)"),
        render_state(state or AgentState()),
    ]
    return [
        Message(role="system", content=prefix),
        Message(role="user", content="\n\n".join(parts)),
        *extra,
    ]


def build_request(
    role: str,
    *,
    prefix: str,
    guidance: Guidance = (),
    context: str = "",
    state: AgentState | None = None,
    task: str = "",
    extra: Sequence[Message] = (),
    sampling: Sampling | None = None,
    seed: int | None = None,
) -> ModelRequest:
    """A request for ``role`` with its payload schema and envelope tag attached."""
    tag, _, with_state = role_output(role)
    return ModelRequest(
        role=role,
        messages=build_messages(
            role,
            prefix=prefix,
            guidance=guidance,
            context=context,
            state=state,
            task=task,
            extra=extra,
        ),
        schema=output_schema(role),
        envelope=tag,
        state_update=with_state,
        sampling=sampling or Sampling(),
        seed=seed,
    )


def retry_messages(answer: str, error: AnswerError) -> list[Message]:
    """Messages to append when retrying after a rejected answer."""
    return [
        Message(role="assistant", content=answer),
        Message(role="user", content=f"Your answer was rejected ({error.reason}): {error.message}"),
    ]


# --- context budgets (realproj, issue 16 §3) -----------------------------------------------

# Tokens of the per-call context pack per role (the static prefix, the task and the state
# block come on top). Sections past the budget are cut with an explicit marker, never silently.
CONTEXT_BUDGET_TOKENS: dict[str, int] = {"planner": 6000, "actor": 6000, "critic": 6000}


def fit_sections(
    sections: Sequence[tuple[str, str]], budget_tokens: int, *, role: str = "actor"
) -> str:
    """``### title`` sections in order within ``budget_tokens``. A section that does not fit is
    cut at a line boundary and says so (``[... truncated: N of M lines ... ]``); the ones after
    a budget is spent are named in a final marker so the model knows what it is not seeing."""
    out: list[str] = []
    left = budget_tokens
    dropped: list[str] = []
    for title, body in sections:
        block = f"### {title}\n{body}"
        need = estimate_tokens(block)
        if need <= left:
            out.append(block)
            left -= need
            continue
        if left < 64:
            dropped.append(title)
            continue
        lines = body.split("\n")
        kept: list[str] = []
        used = estimate_tokens(f"### {title}\n") + 40
        for line in lines:
            cost = estimate_tokens(line + "\n")
            if used + cost > left:
                break
            kept.append(line)
            used += cost
        marker = (
            f"[... truncated: {len(lines) - len(kept)} of {len(lines)} lines of {title} not "
            f"shown (the {role}'s context budget is {budget_tokens} tokens) ...]"
        )
        out.append(f"### {title}\n" + "\n".join([*kept, marker]))
        left = 0
    if dropped:
        out.append(
            f"[... not shown (context budget of {budget_tokens} tokens spent): "
            + ", ".join(dropped)
            + " ...]"
        )
    return "\n".join(out)


# --- strict parsing ------------------------------------------------------------------------

ParseReason = Literal[
    "empty", "truncated", "missing_tag", "invalid_json", "schema_mismatch", "unexpected_text"
]
T = TypeVar("T")


class AnswerError(Exception):
    """A rejected answer: ``reason`` for code, ``message`` for the model's retry."""

    def __init__(self, reason: ParseReason, message: str) -> None:
        self.reason: ParseReason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


@dataclass(frozen=True, slots=True)
class ParsedAnswer(Generic[T]):
    payload: T
    think: str  # kept for the record; never used for rewards or decisions
    state_update: StateUpdate | None
    raw: str


_JSON = json.JSONDecoder()


def parse_answer(
    text: str,
    tag: str,
    type_: type[T] | Any,
    *,
    state_update: bool = True,
    finish_reason: str | None = None,
) -> ParsedAnswer[T]:
    """Parse ``<think>…</think><TAG>{json}</TAG>[<state_update>{json}</state_update>]``.

    Whitespace between blocks is allowed; nothing else is. Raises :class:`AnswerError`.
    """
    p = _Parser(text, finish_reason)
    if not text.strip():
        raise AnswerError(
            "truncated" if finish_reason == "length" else "empty",
            "The answer is empty. " + _format_hint(tag, state_update),
        )
    think = p.block_text("think", tag, state_update)
    payload = p.json_block(tag, type_, tag, state_update)
    update: StateUpdate | None = None
    p.skip_ws()
    if p.pos < len(text) and text.startswith("<state_update>", p.pos):
        update = p.json_block("state_update", StateUpdate, tag, state_update)
    elif state_update:
        p.fail_missing("state_update", tag, state_update)
    p.skip_ws()
    if p.pos < len(text):
        raise AnswerError(
            "unexpected_text",
            f"Text after the last block: {text[p.pos : p.pos + 40]!r}. Put nothing outside the "
            "tags. " + _format_hint(tag, state_update),
        )
    return ParsedAnswer(payload=payload, think=think, state_update=update, raw=text)


def parse_role_answer(
    role: str, text: str, *, finish_reason: str | None = None
) -> ParsedAnswer[Any]:
    tag, type_, with_state = role_output(role)
    return parse_answer(text, tag, type_, state_update=with_state, finish_reason=finish_reason)


def _format_hint(tag: str, state_update: bool) -> str:
    tail = "<state_update>{…}</state_update>" if state_update else ""
    return f"Answer again with exactly: <think>…</think><{tag}>{{…}}</{tag}>{tail}"


class _Parser:
    def __init__(self, text: str, finish_reason: str | None) -> None:
        self.text = text
        self.pos = 0
        self.finish_reason = finish_reason

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def fail_missing(self, name: str, tag: str, state_update: bool) -> None:
        self.skip_ws()
        if self.pos >= len(self.text):
            reason: ParseReason = "truncated" if self.truncated() else "missing_tag"
            what = "The answer was cut off" if self.truncated() else "The answer ends"
            raise AnswerError(reason, f"{what} before <{name}>. " + _format_hint(tag, state_update))
        raise AnswerError(
            "missing_tag",
            f"Expected <{name}> at offset {self.pos}, found {self.text[self.pos : self.pos + 30]!r}. "
            + _format_hint(tag, state_update),
        )

    def open(self, name: str, tag: str, state_update: bool) -> None:
        self.skip_ws()
        opener = f"<{name}>"
        if not self.text.startswith(opener, self.pos):
            self.fail_missing(name, tag, state_update)
        self.pos += len(opener)

    def close(self, name: str, tag: str, state_update: bool) -> None:
        self.skip_ws()
        closer = f"</{name}>"
        if self.text.startswith(closer, self.pos):
            self.pos += len(closer)
            return
        if self.pos >= len(self.text) or closer.startswith(self.text[self.pos :]):
            raise AnswerError(
                "truncated",
                f"The answer stops inside <{name}> (no {closer}); it was probably cut off by the "
                "token limit: keep it shorter. " + _format_hint(tag, state_update),
            )
        raise AnswerError(
            "unexpected_text",
            f"Expected {closer} right after the JSON document, found "
            f"{self.text[self.pos : self.pos + 30]!r}. " + _format_hint(tag, state_update),
        )

    def block_text(self, name: str, tag: str, state_update: bool) -> str:
        self.open(name, tag, state_update)
        end = self.text.find(f"</{name}>", self.pos)
        if end < 0:
            raise AnswerError(
                "truncated",
                f"<{name}> is never closed; it was probably cut off by the token limit: think "
                "less. " + _format_hint(tag, state_update),
            )
        body = self.text[self.pos : end]
        self.pos = end + len(f"</{name}>")
        return body.strip()

    def json_block(self, name: str, type_: Any, tag: str, state_update: bool) -> Any:
        self.open(name, tag, state_update)
        self.skip_ws()
        if name == "action" and self.pos < len(self.text) and self.text[self.pos] != "{":
            return self.edit_blocks(name, tag, state_update)
        start = self.pos
        try:
            _, end = _JSON.raw_decode(self.text, start)
        except json.JSONDecodeError as exc:
            at_end = exc.pos >= len(self.text.rstrip()) or self.truncated()
            if at_end:
                raise AnswerError(
                    "truncated",
                    f"The JSON in <{name}> is incomplete (cut off at offset {exc.pos}); keep it "
                    "shorter. " + _format_hint(tag, state_update),
                ) from None
            raise AnswerError(
                "invalid_json",
                f"The JSON in <{name}> is invalid: {exc.msg} at line {exc.lineno} column "
                f"{exc.colno}. Send one complete JSON document, no comments or trailing commas.",
            ) from None
        self.pos = end
        raw = self.text[start:end]
        self.close(name, tag, state_update)
        try:
            return msgspec.json.decode(raw, type=type_)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise AnswerError(
                "schema_mismatch",
                f"The JSON in <{name}> does not match its schema: {exc}. Fix that field and "
                "answer again.",
            ) from None

    def edit_blocks(self, name: str, tag: str, state_update: bool) -> Any:
        """SEARCH/REPLACE text blocks in place of the action's JSON (models/blocks.py)."""
        from oopav.models.blocks import BlockError, parse_blocks

        try:
            action, self.pos = parse_blocks(self.text, self.pos, f"</{name}>")
        except BlockError as exc:
            reason: ParseReason = "truncated" if exc.truncated else "schema_mismatch"
            raise AnswerError(
                reason,
                f"The SEARCH/REPLACE blocks in <{name}> are malformed: {exc.message}. Send "
                "`path@hash`, `<<<<<<< SEARCH`, the lines, `=======`, the new lines, "
                "`>>>>>>> REPLACE`, or one JSON action.",
            ) from None
        self.close(name, tag, state_update)
        return action


def render_answer(
    tag: str,
    payload: Any,
    *,
    think: str = "",
    state_update: StateUpdate | Mapping[str, Any] | None = None,
) -> str:
    """Write a well-formed answer (for scripted backends, examples and training targets)."""
    body = msgspec.json.encode(payload).decode()
    out = f"<think>{think}</think>\n<{tag}>{body}</{tag}>"
    if state_update is not None:
        out += f"\n<state_update>{msgspec.json.encode(state_update).decode()}</state_update>"
    return out
