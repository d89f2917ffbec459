"""Prompt profiles: how a role's prompt is rendered from the session state, per backend.

- ``full`` (the default): the static prefix (system text, every schema, the policy), the
  guidance, the context pack and the state block — 2.5–4k tokens, for capable models.
- ``compact`` (the default for local ``hf:`` policies): the prompt a small policy is trained on
  (:func:`oopav.trainer.tasks.task_messages`): the instruction, one directive, the focused
  snippet of code, and the last feedback when an attempt was refused — within
  :data:`COMPACT_BUDGET` tokens. Retries re-render it with the new feedback instead of appending
  the failed answer, so a prompt never grows past its budget.

A prompt is a pure function of a :class:`PromptState` and the profile: the loop records the
state in ``model_called.prompt_state``, so ``oopav export --profile compact`` renders training
records byte-identical to what the loop sends to a compact policy, whichever profile the
recorded session used.

Under ``compact`` the planner asks no model: a single-codemod task gets a deterministic
one-step plan (:func:`one_step_plan`), the actor's one applied action completes it and the
verifier takes over (the actor finishes a plan whose steps all have an applied action).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from oopav.models.base import Message, ModelRequest, Sampling

Profile = Literal["full", "compact"]
PROFILES: tuple[Profile, ...] = ("full", "compact")
# Tokens of a compact prompt, counted conservatively (:func:`compact_tokens`).
COMPACT_BUDGET = 512
# The directive of the synthetic tasks' prompt (oopav.trainer.tasks.TASK_DIRECTIVE).
DIRECTIVE = "Answer with one ast_grep action that makes the change."
FEEDBACK_CHARS = 240


class PromptState(msgspec.Struct, kw_only=True, frozen=True):
    """What a prompt is rendered from: recorded with every actor call."""

    role: str
    instruction: str
    language: str = "python"
    snippet: str = ""  # the focused code (a function around the symbol the task names)
    path: str = ""  # the file the snippet comes from
    feedback: str = ""  # why the last attempt was refused or undone ("" on the first)


def profile_for(
    spec: str | None, policy: Mapping[str, Any] | None = None, backend: object | None = None
) -> Profile:
    """The task policy's ``prompt_profile`` when set; else ``compact`` when the backend's
    context window is too small for the full prompt (its capabilities, models/capabilities.py:
    a loaded ``backend``'s own or the spec's declared ones, with ``policy.model_capabilities``
    on top); else ``compact`` for ``hf:`` (local, small policies) and ``full`` otherwise."""
    chosen = (policy or {}).get("prompt_profile")
    if chosen is not None:
        if chosen not in PROFILES:
            raise ValueError(f"unknown prompt_profile {chosen!r}; one of: {', '.join(PROFILES)}")
        return chosen
    from oopav.models.capabilities import capabilities_for, profile_of

    if profile_of(capabilities_for(spec, policy, backend)) == "compact":
        return "compact"
    return "compact" if (spec or "").startswith("hf:") else "full"


def compact_tokens(text: str) -> int:
    """A conservative, tokenizer-free token count for budgets: 1.5 bytes a token. A 1,024-token
    byte-level BPE trained on task code measured ~1.9 bytes a token on held-out code (543 tokens
    for what two bytes a token counted as 512); the rendering must not depend on a tokenizer,
    so that export renders the same bytes without one."""
    return (2 * len(text.encode()) + 2) // 3


def _content(state: PromptState, snippet: str, feedback: str) -> str:
    text = f"{state.instruction}\n{DIRECTIVE}\n```{state.language}\n{snippet}```"
    if feedback:
        text += f"\nLast attempt refused: {feedback}"
    return text


def fit_snippet(state: PromptState, budget: int = COMPACT_BUDGET) -> tuple[str, str]:
    """(snippet, feedback) cut to fit ``budget``: the feedback first to its cap, then the
    snippet's lines from the end (the symbol is near its top: the snippet starts at its def)."""
    feedback = " ".join(state.feedback.split())
    if len(feedback) > FEEDBACK_CHARS:
        feedback = feedback[: FEEDBACK_CHARS - 1] + "…"
    lines = state.snippet.splitlines(keepends=True)
    while lines and compact_tokens(_content(state, "".join(lines), feedback)) > budget:
        lines.pop()
    snippet = "".join(lines)
    if compact_tokens(_content(state, snippet, feedback)) > budget:
        raise ValueError(
            f"the instruction alone is over the compact budget of {budget} tokens "
            f"({compact_tokens(state.instruction)}); shorten it"
        )
    return snippet, feedback


def render(profile: Profile, state: PromptState) -> list[Message]:
    """The messages of ``profile`` for ``state``. Only ``compact`` renders from the state
    alone; a ``full`` prompt also needs the context pack, guidance and state block, which the
    handlers build (:func:`oopav.models.prompt.build_messages`)."""
    if profile != "compact":
        raise ValueError(f"profile {profile!r} is rendered by the handlers, not from a state")
    if state.role != "actor":
        raise ValueError(f"the compact profile renders actor prompts, not {state.role!r}")
    snippet, feedback = fit_snippet(state)
    return [Message(role="user", content=_content(state, snippet, feedback))]


def compact_request(
    state: PromptState, *, sampling: Sampling | None = None, seed: int | None = None
) -> ModelRequest:
    from oopav.models.prompt import output_schema, role_output

    tag, _, with_state = role_output(state.role)
    return ModelRequest(
        role=state.role,
        messages=render("compact", state),
        schema=output_schema(state.role),
        envelope=tag,
        state_update=with_state,
        sampling=sampling or Sampling(),
        seed=seed,
    )


def compact_answer(action: Mapping[str, Any]) -> str:
    """The answer a compact policy is trained to give for ``action`` (an action's builtins):
    the contract's envelope with an empty think, the action without its default fields and an
    empty state update — the same form as the synthetic tasks' targets
    (:func:`oopav.trainer.tasks.target_text`). A teacher's think text and history notes copy
    names a small policy would have to learn to copy twice more; the loop parses both forms."""
    import json

    body = {k: v for k, v in action.items() if v is not None and (k != "paths" or v != ["."])}
    return (
        "<think></think>\n<action>"
        + json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        + "</action>\n<state_update>{}</state_update>"
    )


def to_builtins(state: PromptState) -> dict[str, Any]:
    return msgspec.to_builtins(state)


def from_builtins(data: Mapping[str, Any]) -> PromptState:
    return msgspec.convert(dict(data), PromptState)


def one_step_plan(instruction: str, files: list[str]) -> dict[str, Any]:
    """The deterministic plan of a single-codemod task under the compact profile."""
    return {
        "steps": [{"id": 1, "description": instruction, "files": files}],
        "files": files,
        "rationale": "compact profile: a single codemod, one step (no planner call)",
    }
