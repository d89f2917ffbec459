"""CLI commands of oopav.models (registered by oopav.cli): ``oopav models check <spec>``."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import click
import msgspec

EXIT_ERROR = 1
EXIT_BAD_OUTPUT = 2


def register(cli: click.Group) -> None:
    """Add this area's commands to the top-level group."""
    cli.add_command(models)


@click.group("models")
def models() -> None:
    """Model backends: check that one answers with a schema-valid action."""


@models.command("check")
@click.argument("spec", required=False)
@click.option(
    "--envelope/--json",
    default=None,
    help="Ask for the full prompt-contract envelope, or a bare JSON action. Default: ask for "
    "bare JSON and accept either form in the answer (a scripted file holds envelopes).",
)
@click.option("--max-tokens", default=256, show_default=True, type=int)
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=float)
def check(spec: str | None, envelope: bool | None, max_tokens: int, timeout_s: float) -> None:
    """Send one small schema-constrained request through SPEC (default $OOPAV_MODEL) and print
    the parsed action, the latency and the token counts.

    SPEC is scripted:<file>, replay:<session>, openai:<base_url>#<model>, vllm:<path> or
    hf:<path>. Exits 1 with a one-line error when the backend fails (server down, model not
    found, context too long), 2 when the answer does not match the action schema.
    """
    from oopav.bus.errors import BusError
    from oopav.models.base import ModelError

    try:
        result = asyncio.run(_check(spec, envelope, max_tokens, timeout_s))
    except (ModelError, BusError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except TimeoutError:
        click.echo(f"error: timeout: no answer within {timeout_s:g}s", err=True)
        sys.exit(EXIT_ERROR)
    if "error" in result:
        click.echo(f"error: bad_output: {result['error']}", err=True)
        click.echo(f"answer: {result['text'][:200]!r}", err=True)
        sys.exit(EXIT_BAD_OUTPUT)
    click.echo(f"backend: {result['backend']}")
    click.echo(f"action: {json.dumps(result['action'], sort_keys=True)}")
    click.echo(f"latency_ms: {result['latency_ms']:.1f}")
    click.echo(
        f"tokens: prompt={result['prompt_tokens']} completion={result['completion_tokens']} "
        f"finish={result['finish_reason']}"
    )


async def _check(
    spec: str | None, envelope: bool | None, max_tokens: int, timeout_s: float
) -> dict[str, Any]:
    from oopav.events.actions import Action
    from oopav.models.base import Message, ModelRequest, Sampling
    from oopav.models.prompt import AnswerError, output_schema, parse_answer
    from oopav.models.registry import load_backend

    backend = load_backend(spec)
    try:
        request = ModelRequest(
            role="actor",
            messages=[
                Message(
                    role="system",
                    content="You are a connectivity check. Answer with one action as JSON.",
                ),
                Message(
                    role="user",
                    content='Finish at once: answer with {"type": "finish", "summary": "ok"}.'
                    + (
                        " Use the envelope <think>…</think><action>{…}</action>."
                        if envelope
                        else ""
                    ),
                ),
            ],
            schema=output_schema("actor"),
            envelope="action" if envelope else None,
            state_update=False,
            sampling=Sampling(temperature=0.0, max_tokens=max_tokens),
            seed=0,
        )
        response = await asyncio.wait_for(backend.complete(request), timeout_s)
    finally:
        await backend.aclose()
    out: dict[str, Any] = {
        "backend": backend.spec,
        "text": response.text,
        "latency_ms": response.latency_ms,
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
        "finish_reason": response.finish_reason,
    }
    if envelope is None:
        # Auto: a bare JSON answer is an action; anything else is read as the envelope.
        envelope = not response.text.lstrip().startswith("{")
    try:
        if envelope:
            parsed = parse_answer(
                response.text,
                "action",
                Action,
                state_update=False,
                finish_reason=response.finish_reason,
            )
            action = parsed.payload
        else:
            action = msgspec.json.decode(response.text, type=Action)
    except AnswerError as exc:
        out["error"] = str(exc)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        out["error"] = f"the answer is not a valid action: {exc}"
    else:
        out["action"] = msgspec.to_builtins(action)
    return out
