"""CLI commands of oopav.models (registered by oopav.cli): ``oopav models check <spec>`` and
``oopav schema export``."""

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
    cli.add_command(schema)


@click.group("models")
def models() -> None:
    """Model backends: check that one answers with a schema-valid action."""


@models.command("capabilities")
@click.argument("specs", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per spec.")
def capabilities(specs: tuple[str, ...], as_json: bool) -> None:
    """What each backend declares it can do (grammar-constrained decoding, logprobs, native
    tools, context window), by SPEC or, without one, per scheme; the loop chooses the prompt
    profile and the decoding from these (docs/models.md). Loads no model: a loaded hf:/vllm:
    backend also knows its context window."""
    from oopav.models.capabilities import DECLARED, declared
    from oopav.models.registry import SCHEMES

    for spec in specs:
        # Only the scheme: capabilities are declared per backend, no file or model is needed
        # (an unknown scheme printed an empty row and exited 0).
        scheme, sep, _ = spec.partition(":")
        if not sep or (scheme not in SCHEMES and scheme != "synth"):
            raise click.UsageError(
                f"bad model spec {spec!r}: expected one of "
                + ", ".join(s + ":…" for s in ("synth", *SCHEMES))
            )
    rows = [(spec, declared(spec)) for spec in specs] or [
        (f"{scheme}:", caps) for scheme, caps in DECLARED.items()
    ]
    for spec, caps in rows:
        if as_json:
            click.echo(json.dumps({"spec": spec, **msgspec.to_builtins(caps)}, sort_keys=True))
        else:
            click.echo(f"{spec:<12} {' '.join(caps.flags())}")


@models.command("check")
@click.argument("spec", required=False)
@click.option(
    "--envelope/--json",
    default=None,
    help="Ask for the full prompt-contract envelope, or a bare JSON action. Default: ask for "
    "bare JSON and accept either form in the answer (a scripted file holds envelopes).",
)
@click.option("--max-tokens", default=256, show_default=True, type=click.IntRange(min=1))
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
    from oopav.models.prompt import AnswerError, ParsedAnswer, output_schema, parse_answer
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
            parsed: ParsedAnswer[Action] = parse_answer(
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


@click.group("schema")
def schema() -> None:
    """The answer language as a JSON schema or a grammar, for constrained decoders."""


@schema.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json-schema", "gbnf", "lark"]),
    required=True,
    help="json-schema: the payload only; gbnf (llama.cpp, vLLM, xgrammar) and lark: the whole "
    "answer, <think>, the tagged payload and <state_update>.",
)
@click.option(
    "--tag",
    type=click.Choice(["action", "plan", "verdict"]),
    default="action",
    show_default=True,
    help="Whose answer: the actor's <action>, the planner's <plan>, the critic's <verdict>.",
)
@click.option("--out", type=click.Path(dir_okay=False, writable=True), help="Default: stdout.")
@click.option(
    "--compact",
    is_flag=True,
    help="The decoding form: no whitespace inside JSON, one newline between blocks.",
)
@click.option("--think-chars", type=click.IntRange(min=1), help="Bound the think text.")
@click.option(
    "--max-string",
    type=click.IntRange(min=0),
    help="Bound strings: runs of at most N characters around at most --max-escapes escapes.",
)
@click.option("--max-escapes", type=click.IntRange(min=0), default=16, show_default=True)
@click.option("--max-items", type=click.IntRange(min=0), help="Bound every array's length.")
def export(
    fmt: str,
    tag: str,
    out: str | None,
    compact: bool,
    think_chars: int | None,
    max_string: int | None,
    max_escapes: int,
    max_items: int | None,
) -> None:
    """Write the answer language for --tag, generated from the same msgspec structs the strict
    parser decodes with: whatever the grammars accept, the parser accepts."""
    from oopav.models.schema_grammar import GrammarError, GrammarOptions, answer_grammar

    if fmt == "json-schema":
        if compact or think_chars or max_string is not None or max_items is not None:
            raise click.UsageError("--compact and the bounds apply to gbnf and lark only")
        from oopav.models.prompt import ROLE_OUTPUTS, output_schema

        role = next(r for r, (t, _, _) in ROLE_OUTPUTS.items() if t == tag)
        doc = {"$schema": "https://json-schema.org/draft/2020-12/schema", **output_schema(role)}
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    else:
        opts = GrammarOptions(
            compact=compact,
            think_chars=think_chars,
            max_string_length=max_string,
            max_items=max_items,
            max_escapes=max_escapes,
        )
        try:
            grammar = answer_grammar(tag, opts)
        except GrammarError as exc:
            raise click.ClickException(str(exc)) from None
        text = grammar.gbnf() if fmt == "gbnf" else grammar.lark()
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc.strerror}") from None
    click.echo(f"wrote {out} ({fmt}, <{tag}>, {len(text)} bytes)", err=True)
