"""Pieces the command modules share: task options and the submission they build, model specs checked at the CLI, outcomes and exit statuses, forks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from oopav.cli.kit import Ctx, _json_out


def task_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options that describe a task, shared by `submit` and `run`."""
    options = [
        click.argument("instruction", required=False),
        click.option(
            "--repo",
            type=click.Path(path_type=Path, exists=True, file_okay=False),
            help="Repository to change (default: the task file's).",
        ),
        click.option(
            "--task",
            "task_file",
            type=click.Path(path_type=Path, exists=True, dir_okay=False),
            help="A JSON task file (fields as in the submission contract), e.g. "
            "examples/rename_fetch/task.json.",
        ),
        click.option("--mission", help="Mission name (groups sessions for reflection)."),
        click.option(
            "--model",
            help="Model spec, e.g. scripted:policy.yaml or openai:http://host:8000/v1#model "
            "(default: the task's, else OOPAV_MODEL).",
        ),
        click.option(
            "--test-command", help="How to run the repository's tests, e.g. 'python -m pytest -q'."
        ),
        click.option(
            "--budget",
            multiple=True,
            metavar="NAME=VALUE",
            help="Override a budget, e.g. iterations=10.",
        ),
        click.option(
            "--env",
            "env",
            metavar="PATH|uv",
            help="The project's environment: a venv or interpreter path, or 'uv' to build one "
            "(default: the repo's .venv/venv, else $VIRTUAL_ENV; docs/sandbox.md).",
        ),
        click.option(
            "--env-var",
            multiple=True,
            metavar="NAME=VALUE",
            help="An extra variable for the project's commands.",
        ),
        *_decision_options(),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def cli_model_spec(
    spec: str | None, base: Path | None = None, *, param: str = "--model"
) -> str | None:
    """A model spec given on the command line: relative paths made absolute against the
    caller's directory (the handlers may run elsewhere), and checked offline, so a bad spec
    is a usage error here instead of an aborted session later."""
    from oopav.models.registry import absolute_spec, check_spec

    if spec is None:
        return None
    spec = absolute_spec(spec, base)
    problem = check_spec(spec)
    if problem is not None:
        raise click.BadParameter(problem, param_hint=param)
    return spec


def _decision_options() -> list[Callable[..., Any]]:
    from oopav.cli.decision import decision_options

    return decision_options()


def _submission(
    task_file: Path | None,
    instruction: str | None,
    repo: Path | None,
    mission: str | None,
    model: str | None,
    test_command: str | None,
    budget: tuple[str, ...],
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    base = Path.cwd()
    if (
        task_file is None
        and instruction
        and instruction.endswith(".json")
        and " " not in instruction
    ):
        if Path(instruction).is_file():
            # `oopav submit examples/rename_fetch/task.json`: a task file, not an instruction.
            task_file, instruction = Path(instruction), None
        else:
            raise click.UsageError(f"task file {instruction} does not exist")
    if task_file is not None:
        try:
            body = json.loads(task_file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise click.UsageError(f"cannot read task file {task_file}: {exc}") from None
        if not isinstance(body, dict):
            raise click.UsageError(f"task file {task_file} must hold a JSON object")
        base = task_file.resolve().parent
    if instruction:
        body["instruction"] = instruction
    if repo is not None:
        body["repo"] = str(repo)
    if "repo" in body:
        # Paths are resolved on the intake host; make a local relative path absolute here.
        given = Path(str(body["repo"])).expanduser()
        body["repo"] = str((base / given).resolve())
        if repo is None and task_file is not None and not given.is_absolute():
            _warn_task_relative_repo(task_file, given, Path(body["repo"]))
    elif instruction or task_file is not None:
        # Said here, before `oopav run` starts a server and every handler to be told so.
        raise click.UsageError(
            "no repository: pass --repo DIRECTORY (e.g. --repo .)"
            + (f' or add "repo" to {task_file}' if task_file is not None else "")
        )
    if mission:
        body["mission"] = mission
    if model:
        body["model"] = model
        base_for_model = Path.cwd()
    else:
        base_for_model = base
    spec = body.get("model")
    if isinstance(spec, str):
        # A script or model path is read by the handlers: make it absolute like the repo.
        where = "--model" if model else f"model (in {task_file})"
        body["model"] = cli_model_spec(spec, base_for_model, param=where)
    if test_command:
        body["test_command"] = test_command
    for item in budget:
        key, _, value = item.partition("=")
        if not value:
            raise click.UsageError(f"--budget takes NAME=VALUE, got {item!r}")
        try:
            number: float | int = float(value) if "." in value else int(value)
        except ValueError:
            raise click.BadParameter(
                f"{key} must be a number, got {value!r}", param_hint="--budget"
            ) from None
        body.setdefault("budgets", {})[key] = number
    if "instruction" not in body:
        raise click.UsageError("give an INSTRUCTION or --task FILE")
    from oopav.cli.decision import apply_decision_options

    return apply_decision_options(body)


def _exit_status(outcome: str | None) -> int:
    from oopav.cli.decision import exit_status

    return exit_status(outcome)


def _print_outcome(state: Any, as_json: bool) -> None:
    from oopav.display import is_success
    from oopav.services import outcome_dict

    out = outcome_dict(state)
    out["ok"] = is_success(out.get("outcome"))
    if as_json:
        _json_out(out)
        return
    outcome = out["outcome"] or "not finished"
    click.echo(f"session {out['session_id']}: {outcome} ({out['phase']})")
    if out["outcome"] and not out["ok"] and out["outcome"].startswith("success"):
        click.echo(f"note: {outcome} is not a verified success; exit status 1")
    if out.get("summary"):
        click.echo(f"summary: {out['summary']}")
    if out.get("diff"):
        click.echo(out["diff"].rstrip())


def _in_git(path: Path) -> bool:
    return any((p / ".git").exists() for p in (path, *path.parents))


def _warn_task_relative_repo(task_file: Path, given: Path, resolved: Path) -> None:
    """A relative ``repo`` in a task file is resolved against the task file's directory (so
    a task kept beside its project works from anywhere). A task file kept elsewhere then
    points at the wrong tree — say so when that tree is no git repository but the same path
    from the current directory is one."""
    from_cwd = (Path.cwd() / given).resolve()
    if from_cwd == resolved or _in_git(resolved) or not _in_git(from_cwd):
        return
    click.echo(
        f'note: "repo": "{given}" in {task_file} is resolved against the task file\'s '
        f"directory: {resolved} (not a git repository); from the current directory it would "
        f"be {from_cwd} — pass --repo {given} to use that",
        err=True,
    )


def _environment(
    body: dict[str, Any], env: str | None, env_var: tuple[str, ...], task_file: Path | None
) -> dict[str, Any]:
    from oopav.sandbox.environment import EnvironmentError_, with_environment

    base = task_file.resolve().parent if task_file is not None else None
    try:
        return with_environment(body, env, env_var, base=base)
    except EnvironmentError_ as exc:
        raise click.UsageError(str(exc)) from None


async def _fork(
    c: Ctx, session: str, fork_at: int, model: str | None, timeout: float, as_json: bool
) -> None:
    from oopav.app import open_bus
    from oopav.handlers.registry import LOOP_HANDLERS
    from oopav.replay import fork_session
    from oopav.services import resolve_session, run_handlers, wait_session

    async with open_bus(c.settings, embedded=True, name="oopav-fork") as bus:
        sid = await resolve_session(bus, session)
        stop = asyncio.Event()
        handlers = asyncio.create_task(run_handlers(bus, stop, names=LOOP_HANDLERS))
        try:
            try:
                child = await fork_session(bus, sid, fork_at, model)
            except ValueError as exc:
                raise click.ClickException(str(exc)) from None
            click.echo(f"fork {child} of {sid} at sequence {fork_at}", err=True)
            state = await wait_session(bus, child, timeout)
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 15)
    _print_outcome(state, as_json)
    sys.exit(_exit_status(state.outcome))
