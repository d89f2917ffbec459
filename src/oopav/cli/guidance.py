"""``oopav guidance …``: a mission's experience library — seed, show, history, diff, rollback,
export, stats. Every change is an event on the mission aggregate (a rollback too)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from oopav.config import yaml_error
from oopav.events import mission as mev


def register(cli: click.Group) -> None:
    cli.add_command(guidance)


@click.group("guidance")
def guidance() -> None:
    """A mission's experience library (the reflector's guidance; docs/reflection.md)."""


def _run(ctx: click.Context, fn: Any, *args: Any) -> Any:
    from oopav.cli.kit import run_async

    return run_async(fn)(ctx.obj.settings, *args)


async def _state(bus: Any, mission: str) -> Any:
    from oopav.projections.guidance import fold

    events = await bus.events.read("mission", mev.mission_aggregate_id(mission))
    return fold(events, mission)


def load_seed_file(path: Path) -> list[mev.GuidanceEntry]:
    """Entries from YAML/JSON: a list of strings, or of ``{text, rationale}``, or
    ``{entries: [...]}``. Keys are assigned by the seed, not by the file."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{path} is not valid YAML/JSON: {yaml_error(exc)}") from None
    if isinstance(data, dict):
        data = data.get("entries")
    if not isinstance(data, list):
        raise click.ClickException(
            f"{path}: expected a list of guidance lines (strings or {{text, rationale}})"
        )
    out: list[mev.GuidanceEntry] = []
    for i, item in enumerate(data):
        if isinstance(item, str):
            text, rationale = item, ""
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            text, rationale = item["text"], str(item.get("rationale") or "")
        else:
            raise click.ClickException(f"{path}: entry {i} must be a string or have a text")
        text = " ".join(text.split())
        if not text:
            raise click.ClickException(f"{path}: entry {i} is blank")
        out.append(mev.GuidanceEntry(key="", text=text, rationale=rationale))
    if not out:
        raise click.ClickException(f"{path} holds no entries; the library is never empty")
    return out


@guidance.command("seed")
@click.argument("mission")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--replace", is_flag=True, help="Replace a library that already exists.")
@click.option("--by", default="cli", show_default=True, help="Who seeds (recorded).")
@click.pass_context
def seed(ctx: click.Context, mission: str, file: Path, replace: bool, by: str) -> None:
    """Start MISSION's library from FILE (YAML or JSON lines)."""
    entries = load_seed_file(file)
    state = _run(ctx, _seed, mission, entries, str(file), replace, by)
    click.echo(f"mission {mission}: library at step {state.step}, {len(state.entries)} entries")


async def _seed(
    settings: Any,
    mission: str,
    entries: list[mev.GuidanceEntry],
    source: str,
    replace: bool,
    by: str,
) -> Any:
    from oopav.app import open_bus

    async with open_bus(settings, name="oopav-guidance") as bus:
        state = await _state(bus, mission)
        if state.seeded and not replace:
            raise click.ClickException(
                f"mission {mission} already has a library (step {state.step}); pass --replace "
                "to replace it, or let the reflector change it"
            )
        event = seed_event(state, mission, entries, source=source, replace=replace, by=by)
        await bus.events.append(event, expected=state.last_sequence)
        return await _state(bus, mission)


def seed_event(
    state: Any,
    mission: str,
    entries: list[mev.GuidanceEntry],
    *,
    source: str,
    replace: bool,
    by: str,
) -> mev.ExperienceLibrarySeeded:
    import msgspec

    from oopav.events.factory import root_event

    keyed = [
        msgspec.structs.replace(e, key=f"G{state.next_key + i}") for i, e in enumerate(entries)
    ]
    return root_event(
        mev.ExperienceLibrarySeeded,
        handler="cli",
        aggregate="mission",
        aggregate_id=mev.mission_aggregate_id(mission),
        entries=keyed,
        source=source,
        seeded_by=by,
        replace=replace,
    )


@guidance.command("show")
@click.argument("mission")
@click.option("--step", type=int, help="The library as it was at this step.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def show(ctx: click.Context, mission: str, step: int | None, as_json: bool) -> None:
    """The library (as the planner and actor see it: ``[G0]. …`` lines)."""
    from oopav.projections.guidance import library_at

    state = _run(ctx, _read, mission)
    try:
        entries = state.entries if step is None else library_at(state, step)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    at = state.step if step is None else step
    if as_json:
        import msgspec

        click.echo(
            json.dumps(
                {"mission": mission, "step": at, "entries": msgspec.to_builtins(entries)}, indent=2
            )
        )
        return
    if not state.event_count:
        click.echo(f"mission {mission} has no library yet: `oopav guidance seed {mission} FILE`")
        return
    click.echo(f"# mission {mission}, step {at}")
    for e in entries:
        click.echo(f"[{e.key}]. {e.text}")


async def _read(settings: Any, mission: str) -> Any:
    from oopav.app import open_bus

    async with open_bus(settings, name="oopav-guidance") as bus:
        return await _state(bus, mission)


@guidance.command("history")
@click.argument("mission")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def history(ctx: click.Context, mission: str, as_json: bool) -> None:
    """Every library change, with its rationale and evidence; and every rejected reflection."""
    import msgspec

    state = _run(ctx, _read, mission)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "history": msgspec.to_builtins(state.history),
                    "groups": msgspec.to_builtins(state.groups),
                },
                indent=2,
                default=str,
            )
        )
        return
    for h in state.history:
        extra = f" from {','.join(h.merged_from)}" if h.merged_from else ""
        ev_ids = (
            f" evidence={','.join('…' + s[-12:] for s in h.evidence_session_ids)}"
            if h.evidence_session_ids
            else ""
        )
        click.echo(f"step {h.step:>3}  {h.op:8} {h.key:6}{extra}  {h.text[:70]}")
        if h.rationale or ev_ids:
            click.echo(f"           why: {h.rationale[:100]}{ev_ids}")
    for g in state.groups:
        click.echo(
            f"group {g.group_id[:13]} epoch {g.epoch} label_match {g.label_match:.2f} -> {g.decision}"
        )


@guidance.command("diff")
@click.argument("mission")
@click.argument("from_step", type=int)
@click.argument("to_step", type=int, required=False)
@click.pass_context
def diff(ctx: click.Context, mission: str, from_step: int, to_step: int | None) -> None:
    """What changed between two steps (default: FROM_STEP to now)."""
    from oopav.projections.guidance import diff_libraries, library_at

    state = _run(ctx, _read, mission)
    try:
        a = library_at(state, from_step)
        b = library_at(state, state.step if to_step is None else to_step)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    lines = diff_libraries(a, b)
    click.echo("\n".join(lines) if lines else "(no change)")


@guidance.command("rollback")
@click.argument("mission")
@click.argument("step", type=int)
@click.option("--reason", default="", help="Why (recorded).")
@click.option("--by", default="cli", show_default=True)
@click.pass_context
def rollback(ctx: click.Context, mission: str, step: int, reason: str, by: str) -> None:
    """Return the library to what it was at STEP. A new event: history is kept."""
    state = _run(ctx, _rollback, mission, step, reason, by)
    click.echo(f"mission {mission}: step {state.step}, the library of step {step}")


async def _rollback(settings: Any, mission: str, step: int, reason: str, by: str) -> Any:
    from oopav.app import open_bus

    async with open_bus(settings, name="oopav-guidance") as bus:
        state = await _state(bus, mission)
        event = rollback_event(state, mission, step, reason=reason, by=by)
        await bus.events.append(event, expected=state.last_sequence)
        return await _state(bus, mission)


def rollback_event(state: Any, mission: str, step: int, *, reason: str, by: str) -> Any:
    from oopav.events.factory import root_event
    from oopav.projections.guidance import library_at

    try:
        target = library_at(state, step)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if not target:
        raise click.ClickException(
            f"the library was empty at step {step}; it is never empty: pick a later step"
        )
    return root_event(
        mev.GuidanceRolledBack,
        handler="cli",
        aggregate="mission",
        aggregate_id=mev.mission_aggregate_id(mission),
        to_step=step,
        step=state.step + 1,
        by=by,
        reason=reason,
    )


@guidance.command("export")
@click.argument("mission")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here.")
@click.pass_context
def export(ctx: click.Context, mission: str, out: Path | None) -> None:
    """The library as canonical JSON (the same events always give the same bytes)."""
    from oopav.projections.guidance import export_library

    data = export_library(_run(ctx, _read, mission))
    if out is not None:
        out.write_bytes(data)
        click.echo(str(out))
    else:
        sys.stdout.buffer.write(data + b"\n")


@guidance.command("replay")
@click.argument("mission")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def replay_cmd(ctx: click.Context, mission: str, as_json: bool) -> None:
    """Re-run the reflector's decisions on MISSION from the recording (critic and consolidator
    answers served by request hash) and compare: exits 1 on the first divergence."""
    report = _run(ctx, _replay, mission)
    div = report.first_divergence
    data = {
        "mission": mission,
        "ok": report.ok,
        "recorded": report.recorded,
        "replayed": report.replayed,
        "library_identical": report.library_identical,
        "first_divergence": None if div is None else vars(div),
    }
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    elif report.ok:
        click.echo(
            f"mission {mission}: {report.replayed} events reproduced, library identical "
            f"({len(report.library)} bytes)"
        )
    else:
        click.echo(f"mission {mission}: replay diverges: {data['first_divergence']}")
    if not report.ok:
        sys.exit(1)


async def _replay(settings: Any, mission: str) -> Any:
    from oopav.app import server_url
    from oopav.mission_replay import verify_mission

    url = server_url(settings)
    if url is None:
        from oopav.app import NoServer

        raise NoServer("no NATS server: start `oopav up` or pass --nats-url")
    try:
        return await verify_mission(url, mission)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@guidance.command("export-run")
@click.argument("mission")
@click.option(
    "--out", required=True, type=click.Path(path_type=Path, file_okay=False), help="Directory."
)
@click.pass_context
def export_run(ctx: click.Context, mission: str, out: Path) -> None:
    """MISSION's reflection as a run directory: stats.json, trajectories.jsonl (every rollout's
    signals) and selections.jsonl (per group: the selected candidate, eligibility, outcome)."""
    from oopav.projections.guidance import fold, stats
    from oopav.reflection.run_export import write_run

    events = _run(ctx, _events, mission)
    for path in write_run(out, events, stats(fold(events, mission))):
        click.echo(str(path))


async def _events(settings: Any, mission: str) -> list[Any]:
    from oopav.app import open_bus

    async with open_bus(settings, name="oopav-guidance") as bus:
        read = await bus.events.read("mission", mev.mission_aggregate_id(mission))
    # The store gives (sequence, event) pairs; the run is made of the events.
    return [item[1] if isinstance(item, tuple) else item for item in read]


@guidance.command("stats")
@click.argument("mission")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def stats_cmd(ctx: click.Context, mission: str, as_json: bool) -> None:
    """Reflection metrics: precision, acceptance rate, ops per epoch, label_match per epoch."""
    from oopav.projections.guidance import stats

    data = stats(_run(ctx, _read, mission))
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    for k, v in data.items():
        click.echo(f"{k:22} {v}")
