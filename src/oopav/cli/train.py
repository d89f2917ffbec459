"""CLI commands of oopav.trainer (registered by oopav.cli): export, tasks, train, runs, eval.

Imports stay inside the commands: torch, trl and datasets load only when a command needs them.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click


def register(cli: click.Group) -> None:
    cli.add_command(export_cmd)
    cli.add_command(tasks)
    cli.add_command(train)
    cli.add_command(runs)
    cli.add_command(eval_cmd)


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """An ISO time (``2026-01-02``, ``2026-01-02T10:00:00Z``) or an age (``90m``, ``12h``, ``7d``)."""
    if not text:
        return None
    m = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
        return (now or datetime.now(UTC)) - timedelta(**{unit: int(m.group(1))})
    try:
        ts = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither an ISO time (2026-01-02T10:00:00Z) nor an age (90m, 12h, 7d)"
        ) from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _settings(ctx: click.Context) -> Any:
    obj = ctx.find_root().obj
    return obj.settings


# -- export ---------------------------------------------------------------------------------


@click.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["sft", "srl", "grpo", "negatives", "pairs"]),
    required=True,
    help="sft/srl/grpo: demonstrations and prompts; negatives: refused or undone answers with "
    "why; pairs: (prompt, chosen, rejected) where a later attempt at the step was kept.",
)
@click.option("--mission", help="Only sessions of this mission.")
@click.option("--since", help="Only sessions completed since: an ISO time or an age (12h, 7d).")
@click.option("--successful-only", is_flag=True, help="Only sessions whose outcome is success.")
@click.option(
    "--all-answers",
    is_flag=True,
    help="SFT/SRL: keep answers that did not parse or whose action failed (default: clean only).",
)
@click.option("--no-parquet", is_flag=True, help="JSONL shards only.")
@click.option(
    "--profile",
    type=click.Choice(["full", "compact"]),
    default=None,
    help="Render prompts with this profile from each call's recorded prompt state (compact: "
    "what a local hf: policy is sent); default: the recorded messages.",
)
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), required=True)
@click.pass_context
def export_cmd(
    ctx: click.Context,
    fmt: str,
    mission: str | None,
    since: str | None,
    successful_only: bool,
    all_answers: bool,
    no_parquet: bool,
    profile: str | None,
    out: Path,
) -> None:
    """Build a training dataset from the finished sessions on the stream: JSONL (and Parquet)
    shards plus manifest.json (counts, source sessions and stream sequences, filters, content
    hash). The same stream gives the same bytes. Load it with
    ``datasets.load_dataset("json", data_files=f"{out}/{fmt}-*.jsonl")``."""

    from oopav.trainer.datasets import Filters

    filters = Filters(
        successful_only=successful_only,
        require_parsed=not all_answers,
        require_applied=not all_answers,
        mission=mission,
        since=parse_since(since),
        profile=profile,
    )
    settings = _settings(ctx)

    async def go() -> Any:
        from oopav.app import open_bus
        from oopav.trainer.stream import export

        async with open_bus(settings, name="oopav-export") as bus:
            return await export(bus.events, fmt, out, filters, parquet=not no_parquet)

    manifest = _run(go)
    click.echo(
        f"{fmt}: {manifest.count} records from {len(manifest.sessions)} sessions "
        f"({manifest.duplicates} duplicates dropped) -> {out}  sha256 {manifest.content_hash[:16]}"
    )


def _run(fn: Any) -> Any:
    import asyncio
    import sys

    from oopav.app import NoServer
    from oopav.bus.errors import BusError
    from oopav.bus.server import ServerError

    try:
        return asyncio.run(fn())
    except (NoServer, BusError, ServerError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


# -- tasks ----------------------------------------------------------------------------------


@click.group("tasks")
def tasks() -> None:
    """Task sets for training and evaluation."""


@tasks.command("generate")
@click.option("--kind", type=click.Choice(["synthetic", "git"]), default="synthetic")
@click.option("--n", "n", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--holdout", type=float, default=0.2, show_default=True, help="Share of source files held out."
)
@click.option(
    "--corpus",
    type=click.Path(path_type=Path, exists=True),
    help="Default: the Python standard library.",
)
@click.option(
    "--repo", type=click.Path(path_type=Path, exists=True), help="--kind git: the repository."
)
@click.option(
    "--rev",
    help="--kind git: the commits to mine, a range A..B or a revision (default: HEAD's history).",
)
@click.option(
    "--families",
    help="--kind synthetic: comma-separated task families (default: the standard mix; "
    "rename_attr only when named).",
)
@click.option(
    "--split-by",
    type=click.Choice(["file", "repository"]),
    default="file",
    show_default=True,
    help="repository: whole repositories (the corpus's top-level directories) on one side, "
    "balanced by language (docs/training.md).",
)
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), required=True)
def tasks_generate(
    kind: str,
    n: int,
    seed: int,
    holdout: float,
    corpus: Path | None,
    repo: Path | None,
    rev: str | None,
    families: str | None,
    split_by: str,
    out: Path,
) -> None:
    """Generate codemod tasks (instruction, pre, post, gold ast-grep rule), each verified by
    applying its gold rule, split into train/test disjoint by source file. --kind synthetic
    applies templates to a corpus; --kind git mines the commits of a local repository (one
    task per hunk whose rule `oopav synth --from-git` learns and verifies)."""
    from oopav.trainer.tasks import generate, write_tasks

    if kind == "git":
        if repo is None:
            raise click.UsageError("--kind git needs --repo (a local git repository)")
        from oopav.trainer.mined import mine

        try:
            result = mine(repo, rev=rev, n=n, holdout=holdout)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    else:
        from oopav.trainer.tasks import FAMILIES

        chosen = (
            tuple(f.strip() for f in families.split(",") if f.strip()) if families else FAMILIES
        )
        try:
            result = generate(n, seed=seed, holdout=holdout, corpus=corpus, families=chosen)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if split_by == "repository":
        import dataclasses

        from oopav.trainer.splits import split_by_repository

        result = dataclasses.replace(
            result, tasks=split_by_repository(result.tasks, holdout, seed=seed)
        )
    counts = write_tasks(result, out)
    click.echo(
        f"{sum(counts.values())} tasks -> {out} "
        + " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
    )
    if holdout > 0 and sum(counts.values()) > 0 and not counts.get("test"):
        files = len({t.source for t in result.tasks})
        click.echo(
            f"warning: no test split: the tasks come from {files} source file(s) and the split "
            "is by file; ask for more (--n) so that evaluations have held-out tasks",
            err=True,
        )


# -- train / runs / eval ----------------------------------------------------------------------


@click.command("train")
@click.argument("recipe", type=click.Choice(["sft", "srl", "grpo", "rft"]))
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    required=True,
)
@click.pass_context
def train(ctx: click.Context, recipe: str, config_path: Path) -> None:
    """Train a policy with TRL (SFTTrainer / GRPOTrainer; srl: GRPO scored by reward_srl
    against a teacher's step actions; rft: rejection-sampling fine-tuning) from a YAML
    config. The run is an
    aggregate on the stream: training_started, training_step_completed, checkpoint_saved,
    evaluation_completed, training_completed (`oopav runs`)."""
    from oopav.services import run_training
    from oopav.trainer.config import ConfigError

    settings = _settings(ctx)
    try:
        result = _run(lambda: run_training(settings, recipe, config_path))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(result, sort_keys=True))
    if result["status"] != "completed":
        raise click.ClickException(f"training failed: {result['error']}")


@click.command("runs")
@click.option("--json", "as_json", is_flag=True)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.pass_context
def runs(ctx: click.Context, as_json: bool, limit: int) -> None:
    """Training runs recorded on the stream, newest first."""
    from oopav.trainer.runs import list_runs

    settings = _settings(ctx)

    async def go() -> Any:
        from oopav.app import open_bus

        async with open_bus(settings, name="oopav-runs") as bus:
            return await list_runs(bus.events)

    rows = _run(go)[:limit]
    if as_json:
        click.echo(json.dumps(rows, sort_keys=True))
        return
    if not rows:
        click.echo("no training runs")
        return
    for r in rows:
        ev = r.get("last_eval") or {}
        click.echo(
            f"{r['run_id'][:13]}  {r['recipe']:5} {r['status']:9} steps={r['steps']:<5} "
            f"loss={_fmt(r.get('last_loss'))} reward={_fmt(r.get('last_reward'))} "
            f"exact={_fmt(ev.get('exact'))} {r.get('output_dir', '')}"
        )


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


@click.command("eval")
@click.option(
    "--model", "spec", required=True, help="hf:<dir>, scripted:<file>, openai:…, vllm:…, or gold."
)
@click.option(
    "--suite", required=True, help="A tasks directory (oopav tasks generate) or synthetic-heldout."
)
@click.option("--split", default="test", show_default=True)
@click.option("--n", "n", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=160, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--record/--no-record", default=False, help="Also publish evaluation_completed on the stream."
)
@click.option(
    "--constrained", is_flag=True, help="hf: decode under the answer grammar (oopav schema export)."
)
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    spec: str,
    suite: str,
    split: str,
    n: int,
    max_new_tokens: int,
    as_json: bool,
    record: bool,
    constrained: bool,
) -> None:
    """Evaluate a policy on a task suite: format validity, apply success, exact and AST match,
    mean reward — validity and correctness reported apart."""
    from oopav.models.base import ModelError
    from oopav.trainer.evaluate import evaluate_spec, load_suite

    if constrained and not spec.startswith("hf:"):
        raise click.UsageError(
            "--constrained applies to hf: models; other backends constrain or not on their own"
        )
    try:
        items = load_suite(suite, split=split, n=n)
        if not items:
            # A small synthetic set can hold out no file at all: a table of 0.0% said nothing.
            raise click.ClickException(
                f"suite {suite} has no {split} tasks (its {split} split is empty): generate "
                "more tasks, or pass --split train"
            )
        report = evaluate_spec(
            spec, items, max_new_tokens=max_new_tokens, suite=suite, constrained=constrained
        )
    except (FileNotFoundError, ModelError) as exc:
        raise click.ClickException(str(exc)) from None
    if record:
        from oopav.services import record_evaluation

        settings = _settings(ctx)
        _run(lambda: record_evaluation(settings, spec, suite, report))
    if as_json:
        click.echo(json.dumps(report.summary(), sort_keys=True))
        return
    click.echo(report.table())
