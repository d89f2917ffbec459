"""CLI pieces of the decision core (registered by oopav.cli): ``oopav answer``, the task
options ``--critic``, ``--critic-instructions``, ``--policy FILE``, ``--grant SCOPE``,
``--tier`` shared by ``run`` and ``submit``, and the exit status of an outcome."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from oopav.config import yaml_error
from oopav.services import publish_answer

EXIT_STATUS = {"success": 0, "success_unverified": 4, "rejected": 2}
"""``oopav run`` / ``submit --wait``: 0 success, 4 success_unverified (every gate that ran
passed, the tests could not run), 3 a permission nobody can answer (``oopav run`` without a
terminal), 2 rejected, 1 anything else."""

_META = "oopav.decision"


def exit_status(outcome: str | None) -> int:
    return EXIT_STATUS.get(outcome or "", 1)


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value not in (None, (), False):
            ctx.meta.setdefault(_META, {})[key] = value
        return value

    return callback


def decision_options() -> list[Any]:
    """Options that only change the submission's policy; their values travel in
    ``ctx.meta`` so the commands' signatures stay as they are."""
    return [
        click.option(
            "--policy",
            "policy_file",
            type=click.Path(path_type=Path, exists=True, dir_okay=False),
            expose_value=False,
            callback=_remember("policy_file"),
            help="A YAML or JSON policy file (capabilities and loop switches, docs/loop.md).",
        ),
        click.option(
            "--critic/--no-critic",
            default=None,
            expose_value=False,
            callback=_remember("critic"),
            help="Run the critic gate (a read-only model review) before success.",
        ),
        click.option(
            "--critic-instructions",
            expose_value=False,
            callback=_remember("critic_instructions"),
            help="What the critic should look for (implies --critic).",
        ),
        click.option(
            "--grant",
            "grants",
            multiple=True,
            metavar="SCOPE",
            expose_value=False,
            callback=_remember("grants"),
            help="Allow SCOPE up front (added to the policy's allow list), e.g. 'exec:make test'.",
        ),
        click.option(
            "--tier",
            type=click.Choice(["compile_only", "tests", "full"]),
            expose_value=False,
            callback=_remember("tier"),
            help="Victory tier: which gates must pass (default: orient decides).",
        ),
    ]


def _load_policy(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise click.UsageError(f"cannot read policy file {path}: {yaml_error(exc)}") from None
    if not isinstance(data, dict):
        raise click.UsageError(f"policy file {path} must hold a mapping (YAML or JSON object)")
    return data


def apply_decision_options(body: dict[str, Any]) -> dict[str, Any]:
    """Fold the decision options of the current command into the submission's policy."""
    ctx = click.get_current_context(silent=True)
    opts = (ctx.meta.get(_META) if ctx is not None else None) or {}
    if not opts:
        return body
    policy = dict(body.get("policy") or {})
    if "policy_file" in opts:
        policy.update(_load_policy(opts["policy_file"]))
    if "critic" in opts:
        policy["critic"] = bool(opts["critic"])
    if "critic_instructions" in opts:
        policy["critic"] = True
        policy["critic_instructions"] = opts["critic_instructions"]
    if "tier" in opts:
        policy["tier"] = opts["tier"]
    for scope in opts.get("grants", ()):
        allow = list(policy.get("allow") or [])
        if scope not in allow:
            allow.append(scope)
        policy["allow"] = allow
    body["policy"] = policy
    return body


# -- oopav answer ------------------------------------------------------------------------------


@click.command("answer")
@click.argument("session")
@click.argument("text")
@click.option("--by", default=None, help="Who answers (default: $USER).")
@click.option("--json", "as_json", is_flag=True, help="Print the reply as JSON.")
@click.pass_context
def answer_cmd(ctx: click.Context, session: str, text: str, by: str | None, as_json: bool) -> None:
    """Answer SESSION's question (human_input_requested) with TEXT: a human_input_provided
    event. `oopav show SESSION` shows the question and the answers it understands."""
    import getpass

    from oopav.app import NoServer, open_bus
    from oopav.bus.errors import BusError
    from oopav.config import Settings

    settings = getattr(ctx.obj, "settings", None) or Settings()

    async def go() -> dict[str, Any]:
        async with open_bus(settings, name="oopav-answer") as bus:
            return await publish_answer(bus, session, text, by or getpass.getuser())

    try:
        reply = asyncio.run(go())
    except (NoServer, BusError, OSError, ValueError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(reply))
    elif "error" in reply:
        click.echo(f"refused: {reply['error']}", err=True)
    else:
        click.echo(reply["answer_id"])
    if "error" in reply:
        sys.exit(2)


def register(cli: click.Group) -> None:
    cli.add_command(answer_cmd)


async def ask_inline(bus: Any, session_id: str) -> Any:
    """For ``oopav run`` on a terminal: when the session asks a person, ask on this terminal
    and publish the answer (the session also takes ``oopav answer`` from elsewhere). Returns
    the subscription, to be unsubscribed by the caller."""
    from oopav.events.catalog import HumanInputRequested
    from oopav.events.codec import decode as decode_event

    async def on_msg(msg: Any) -> None:
        try:
            event = decode_event(msg.data)
        except Exception:
            return
        if not isinstance(event, HumanInputRequested):
            return
        options = list(getattr(event, "options", []) or [])
        prompt = f"\n{event.question}" + (f" [{'/'.join(options)}]" if options else "")

        def ask() -> str:
            choice = click.Choice(options) if options else None
            return str(click.prompt(prompt, type=choice, err=True))

        try:
            answer = await asyncio.to_thread(ask)
        except (click.Abort, EOFError):
            return
        import getpass

        reply = await publish_answer(
            bus, session_id, answer, getpass.getuser(), request_id=event.id
        )
        if "error" in reply:
            click.echo(f"not sent: {reply['error']}", err=True)

    return await bus.nc.subscribe(f"oopav.ev.session.{session_id}.human_input_requested", cb=on_msg)
