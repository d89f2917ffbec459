"""Deterministic session replay, verification and forks (DESIGN invariant 5).

``verify_session`` re-runs the loop handlers against a fresh, temporary NATS server and data
directory. Model responses are served from the recorded ``model_called`` events by request
hash, sandbox executions from the recorded exec records, timestamps from the recorded events;
the task and every root event a person added (grants, denials) are injected at the point they
originally arrived. The events produced must equal the recorded ones, volatile fields
excluded; otherwise the report names the first divergence and its cause.

``fork_session`` replays a session up to a stream sequence and continues live, with another
model if asked, as a new session that records its parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.events.chain import ChainFinding, check_chain
from oopav.events.codec import comparable
from oopav.logging import get_logger

log = get_logger("oopav.replay")


@dataclass
class Divergence:
    index: int
    recorded_sequence: int | None
    recorded_type: str | None
    replayed_type: str | None
    field: str | None
    cause: str
    detail: str = ""
    # Which handler made the decision that differs, and which of its rules (``rule_of``): what
    # `oopav replay --all` groups a corpus's divergences by.
    handler: str | None = None
    rule: str | None = None


@dataclass
class ReplayReport:
    session_id: str
    ok: bool
    recorded: int
    replayed: int
    first_divergence: Divergence | None = None
    replay_misses: list[str] = field(default_factory=list)
    # The recorded session had not finished: only its events so far were compared.
    partial: bool = False
    # Broken links of the hash chain and terminal events after the first (events.chain).
    tampering: list[ChainFinding] = field(default_factory=list)
    # Where the workspace started: "store" (the starting tree restored from the blob store)
    # or "repository" (a session recorded before trees were stored: the user's repository).
    started_from: str = "repository"
    # Who signed each event, and what does not verify (history/signing.py).
    signatures: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "ok": self.ok,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "replay_misses": self.replay_misses,
            "partial": self.partial,
            "tampering": [f.to_dict() for f in self.tampering],
            "started_from": self.started_from,
            "signatures": self.signatures.to_dict() if self.signatures is not None else None,
        }
        if self.first_divergence is not None:
            out["first_divergence"] = self.first_divergence.__dict__
        return out

    def describe(self) -> str:
        parts = []
        if self.tampering:
            first = self.tampering[0]
            more = f" (+{len(self.tampering) - 1} more)" if len(self.tampering) > 1 else ""
            parts.append(f"stream TAMPERED: {first.describe()}{more}")
        if self.signatures is not None and not self.signatures.ok:
            parts.append(self.signatures.describe())
        if parts:
            parts.append(
                self._divergence()
                if self.first_divergence is not None
                else "the handlers reproduce the rest"
            )
            return "; ".join(parts)
        if self.ok:
            return (
                f"replay OK: {self.replayed} events reproduced exactly (volatile fields excluded)"
            )
        return self._divergence()

    def _divergence(self) -> str:
        d = self.first_divergence
        assert d is not None
        where = f"event #{d.index + 1}" + (
            f" (recorded seq {d.recorded_sequence}, {d.recorded_type})" if d.recorded_type else ""
        )
        return (
            f"replay DIVERGED at {where}: {d.cause}"
            + (f" in field {d.field}" if d.field else "")
            + (f": {d.detail}" if d.detail else "")
        )


class RecordedMemory:
    """Serves the memory hits orient recorded, so retrieval replays exactly."""

    def __init__(self, examples: list[dict[str, Any]]) -> None:
        self.examples = examples

    def query(self, text: str, k: int = 3, only_successful: bool = False) -> list[Any]:
        from types import SimpleNamespace

        return [
            SimpleNamespace(
                session_id=x["session_id"],
                score=x["score"],
                instruction=x.get("instruction", ""),
                plan_summary=x.get("plan", ""),
                embedder=x.get("embedder"),
                # What that session rolled back: orient records it as "do not repeat".
                rejected=list(x.get("rejected") or []),
            )
            for x in self.examples[:k]
        ]


def _at(value: Any, path: str) -> Any:
    """The value at a ``_first_field_difference`` path (``a.b[2].c``; ``[len …]`` → the list)."""
    import re

    for part in re.findall(r"\[len [^\]]*\]|\[\d+\]|[^.\[\]]+", path):
        if part.startswith("[len"):
            return value
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return "(absent)"
    return value


def _shown(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _first_field_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return path or "(type)"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}.{k}" if path else str(k)
            sub = _first_field_difference(a[k], b[k], f"{path}.{k}" if path else str(k))
            if sub:
                return sub
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}[len {len(a)} != {len(b)}]"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            sub = _first_field_difference(x, y, f"{path}[{i}]")
            if sub:
                return sub
        return None
    return None if a == b else (path or "(value)")


def rule_of(recorded: Event | None, replayed: Event | None, fld: str | None) -> str:
    """The rule behind a differing decision, as precisely as the events say: a reason one
    side gives and the other does not (orient and observer name their rules there), a gate,
    a model call's prompt, else the event type and field."""
    a = list(getattr(recorded, "reasons", None) or [])
    b = list(getattr(replayed, "reasons", None) or [])
    if a != b:
        changed = [r for r in b if r not in a] or [r for r in a if r not in b]
        if changed:
            return str(changed[0])[:200]
    for e in (replayed, recorded):
        if isinstance(e, ev.GateEvaluated):
            return f"gate {e.gate}"
        if isinstance(e, ev.ModelCalled):
            return f"{e.role} prompt" if fld and fld.startswith("request") else f"{e.role} call"
    kind = (recorded or replayed).type if (recorded or replayed) is not None else "?"  # type: ignore[union-attr]
    return f"{kind}.{fld}" if fld else kind


def _handler_of(recorded: Event | None, replayed: Event | None) -> str | None:
    e = replayed if replayed is not None else recorded
    return e.actor.split("/", 1)[0] if e is not None else None


def compare(recorded: list[tuple[int, Event]], replayed: list[Event]) -> Divergence | None:
    """The first position where the replayed events differ from the recorded ones."""
    d = _compare(recorded, replayed)
    if d is not None:
        rec = recorded[d.index][1] if d.index < len(recorded) else None
        rep = replayed[d.index] if d.index < len(replayed) else None
        d.handler = _handler_of(rec, rep)
        d.rule = rule_of(rec, rep, d.field)
    return d


def _compare(recorded: list[tuple[int, Event]], replayed: list[Event]) -> Divergence | None:
    for i in range(max(len(recorded), len(replayed))):
        rec = recorded[i] if i < len(recorded) else None
        rep = replayed[i] if i < len(replayed) else None
        if rec is None:
            return Divergence(
                i,
                None,
                None,
                rep.type if rep else None,
                None,
                "extra event",
                "the replay produced more events than were recorded",
            )
        if rep is None:
            return Divergence(
                i,
                rec[0],
                rec[1].type,
                None,
                None,
                "missing event",
                "the replay stopped before reproducing this event",
            )
        a, b = comparable(rec[1]), comparable(rep)
        if a == b:
            continue
        fld = _first_field_difference(a, b)
        cause = "different decision"
        detail = ""
        if (
            isinstance(rec[1], ev.ModelCalled)
            and isinstance(rep, ev.ModelCalled)
            and rec[1].request_hash != rep.request_hash
        ):
            cause = "request hash drift (the prompt differs from the recorded one)"
            # The prompt is what differs; other fields (tokens, an error) follow from it.
            fld = "request"
            detail = _prompt_difference(rec[1].request, rep.request)
        elif rec[1].type != rep.type:
            cause = f"different decision: {rep.type} instead of {rec[1].type}"
        elif fld == "id":
            cause = "different causal chain (ids differ)"
        if not detail and fld:
            # Name both values, so a divergence says what differs, not only where.
            detail = f"recorded {_shown(_at(a, fld))}; replayed {_shown(_at(b, fld))}"
        return Divergence(i, rec[0], rec[1].type, rep.type, fld, cause, detail)
    return None


def _prompt_difference(recorded: dict[str, Any], replayed: dict[str, Any]) -> str:
    """The first line where two model requests differ, so a drift names its cause."""
    a = json.dumps(recorded, sort_keys=True, indent=1, default=str).replace("\\n", "\n")
    b = json.dumps(replayed, sort_keys=True, indent=1, default=str).replace("\\n", "\n")
    for la, lb in zip(a.splitlines(), b.splitlines(), strict=False):
        if la != lb:
            return f"recorded: {la.strip()[:300]!r}; replayed: {lb.strip()[:300]!r}"
    return "one request is a prefix of the other"


async def _signatures(source_url: str, session_id: str) -> Any:
    """The signers of the session's events as stored, checked against the notary's keys and
    anchor (history/signing.py)."""
    from oopav.bus.store import EventStore, connect
    from oopav.history.signing import anchor_of, trusted_keys, verify

    nc = await connect(source_url, name="oopav-replay-signatures")
    try:
        js = nc.jetstream()
        signed = await EventStore(nc).read_signed("session", session_id)
        return verify(signed, await trusted_keys(js), await anchor_of(js, session_id))
    finally:
        await nc.close()


async def _whole_prompts(
    source_url: str, recorded: list[tuple[int, Event]]
) -> list[tuple[int, Event]]:
    from oopav.history.prompts import expand, is_stored

    if not any(isinstance(e, ev.ModelCalled) and is_stored(e.request) for _, e in recorded):
        return recorded
    from oopav.bus.store import connect
    from oopav.history.blobs import BlobStore

    nc = await connect(source_url, name="oopav-replay-prompts")
    try:
        return await expand(BlobStore(nc), recorded)
    finally:
        await nc.close()


async def _restore_tree(
    source_url: str, session_id: str, events: list[Event], dest: Path
) -> dict[str, Any] | None:
    """The session's starting tree written into ``dest`` from the source's blob store, as
    ``Ports.restored_trees``; None when the session stored no tree (then the workspace
    starts from the repository, as recorded)."""
    from oopav.bus.store import connect
    from oopav.handlers.support.workspace import RestoredTree
    from oopav.history.blobs import BlobStore, materialize

    ws = next((e for e in events if isinstance(e, ev.WorkspacePrepared)), None)
    if ws is None or not ws.tree:
        return None
    nc = await connect(source_url, name="oopav-replay-blobs")
    try:
        await materialize(BlobStore(nc), ws.tree, dest)
    finally:
        await nc.close()
    return {session_id: RestoredTree(dest, ws.kind, ws.repo)}


def _pinned_base(session_id: str, events: list[Event]) -> dict[str, str]:
    """The recorded base commit of a git-worktree session (a copy has no stable commit)."""
    for e in events:
        if isinstance(e, ev.WorkspacePrepared) and e.kind == "worktree":
            return {session_id: e.base_commit}
    return {}


async def _mission_events(store: Any, recorded: list[tuple[int, Event]]) -> list[tuple[int, Event]]:
    """The events of the session's mission, when its model calls rendered a library."""
    from oopav.events.mission import mission_aggregate_id

    task = next((e for _, e in recorded if isinstance(e, ev.TaskSubmitted)), None)
    used = any(isinstance(e, ev.ModelCalled) and e.guidance_step is not None for _, e in recorded)
    if task is None or not task.mission or not used:
        return []
    result: list[tuple[int, Event]] = await store.read(
        "mission", mission_aggregate_id(task.mission)
    )
    return result


def _root_events(recorded: list[tuple[int, Event]]) -> list[tuple[int, Event, str | None]]:
    """Events no loop handler produced (the task, grants and answers by people, the watchdog's
    timeouts, the abort of an interrupted `oopav run`), each with the id of the recorded event
    just before it: it is injected once the replay has reproduced that one."""
    from oopav.handlers.registry import LOOP_HANDLERS

    out = []
    prev: str | None = None
    for seq, e in recorded:
        if e.causation_id is None or e.actor.split("/", 1)[0] not in LOOP_HANDLERS:
            out.append((seq, e, prev))
        prev = e.id
    return out


async def verify_session(
    source_url: str,
    session_id: str,
    *,
    recorded: list[tuple[int, Event]] | None = None,
    tamper: Callable[[list[tuple[int, Event]]], list[tuple[int, Event]]] | None = None,
    idle_timeout: float = 15.0,
    total_timeout: float = 600.0,
) -> ReplayReport:
    """Re-run the handlers for ``session_id`` and compare (see the module docstring).

    ``tamper`` may rewrite the recording before it is served (tests use it to prove that a
    changed model response is detected)."""
    from oopav.app import open_bus
    from oopav.bus.store import EventStore, connect
    from oopav.config import Settings
    from oopav.handlers.ports import Ports, RecordedSandbox
    from oopav.handlers.registry import LOOP_HANDLERS, build_loop_handler
    from oopav.handlers.runtime import HandlerRunner
    from oopav.handlers.support.asks import RecordedAnswers
    from oopav.handlers.support.baseline_cache import RecordedBaselines
    from oopav.models.replay import ReplayBackend

    mission_events: list[tuple[int, Event]] = []
    if recorded is None:
        nc = await connect(source_url, name="oopav-replay-source")
        try:
            recorded = await EventStore(nc).read("session", session_id, skip_undecodable=True)
            mission_events = await _mission_events(EventStore(nc), recorded)
        finally:
            await nc.close()
    if not recorded:
        raise ValueError(f"no events for session {session_id}")
    # The chain is checked on the recording as stored, before any test hook rewrites it.
    tampering = check_chain(recorded)
    signatures = await _signatures(source_url, session_id)
    if tamper is not None:
        recorded = tamper(recorded)
    # Model calls with their whole prompts (stored as blobs and deltas: history/prompts.py):
    # what the replay backend serves by request hash, and what is compared.
    recorded = await _whole_prompts(source_url, recorded)
    events_only = [e for _, e in recorded]
    finished = any(isinstance(e, ev.SessionCompleted) for e in events_only)
    orient_hits: list[dict[str, Any]] = next(
        (list(e.memory_examples) for e in events_only if isinstance(e, ev.OrientReported)), []
    )
    backend = ReplayBackend.from_events(events_only, spec=f"replay:{session_id}")
    sandbox = RecordedSandbox.from_events(events_only)
    with tempfile.TemporaryDirectory(prefix="oopav-replay-") as tmp:
        # No model from this process's environment: only what the recording names is served.
        settings = Settings(data_dir=Path(tmp), nats_url=None, model=None)
        restored = await _restore_tree(source_url, session_id, events_only, Path(tmp) / "tree")
        ports = Ports(
            settings=settings,
            sandbox=sandbox,
            baselines=RecordedBaselines.from_events(events_only),
            answers=RecordedAnswers.from_events(events_only),
            model_factory=lambda spec: backend,
            # A session that named no model ran on a default (a handler's --model, or synth:
            # for a task with examples): the recorded spec, so the replayed events name it too.
            # A session that ran with no model at all replays with none (its calls failed the
            # same way), never with a made-up default that would change the recorded backend.
            default_model=next(
                (
                    e.backend
                    for e in events_only
                    if isinstance(e, ev.ModelCalled) and e.backend not in ("", "-")
                ),
                None,
            ),
            recorded_ts={e.id: e.ts for e in events_only},
            pinned_base=_pinned_base(session_id, events_only),
            restored_trees=restored,
            recorded_guidance={
                e.id: e.guidance_step
                for e in events_only
                if isinstance(e, ev.ModelCalled) and e.guidance_step is not None
            },
        )
        async with open_bus(settings, embedded=True, name="oopav-replay") as bus:
            if mission_events:
                # The mission's library as it was: pinned steps render the recorded guidance.
                await bus.events.append_many_async([e for _, e in mission_events])
            runners = []
            for name in LOOP_HANDLERS:
                handler = build_loop_handler(
                    name, memory=RecordedMemory(orient_hits) if name == "orient" else None
                )
                runners.append(HandlerRunner(bus.nc, handler, ports))
            tasks = [asyncio.create_task(r.run()) for r in runners]
            replayed: list[Event] = []
            seen: set[str] = set()
            arrived = asyncio.Event()

            async def on_msg(msg: Any) -> None:
                from oopav.events.codec import decode

                e = decode(msg.data)
                replayed.append(e)
                seen.add(e.id)
                arrived.set()

            sub = await bus.nc.subscribe(f"oopav.ev.session.{session_id}.>", cb=on_msg)
            try:
                roots = _root_events(recorded)
                loop = asyncio.get_running_loop()
                deadline = loop.time() + total_timeout
                pending = list(roots)
                while loop.time() < deadline:
                    while pending and (pending[0][2] is None or pending[0][2] in seen):
                        _, root, _ = pending.pop(0)
                        await bus.events.append(root)
                    if len(replayed) >= len(recorded) and not pending:
                        # Give a runaway replay a moment to show extra events.
                        await asyncio.sleep(0.3)
                        break
                    if replayed and isinstance(replayed[-1], ev.SessionCompleted) and not pending:
                        break
                    arrived.clear()
                    try:
                        await asyncio.wait_for(arrived.wait(), timeout=idle_timeout)
                    except TimeoutError:
                        break
            finally:
                await sub.unsubscribe()
                for r in runners:
                    r.stop()
                for t in tasks:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(t, 10)
            # The stream order is the truth; the subscription saw the same order.
            from oopav.history.blobs import BlobStore
            from oopav.history.prompts import expand

            stored = [
                e
                for _, e in await expand(
                    BlobStore(bus.nc),
                    await EventStore(bus.nc).read("session", session_id, skip_undecodable=True),
                )
            ]
    if not finished:
        # A live session: the replay may run ahead of the recording; compare what exists.
        stored = stored[: len(recorded)]
    divergence = compare(recorded, stored)
    if divergence is not None and sandbox.misses:
        divergence.detail = (
            divergence.detail + f"; sandbox replay misses: {len(sandbox.misses)}"
        ).lstrip("; ")
    return ReplayReport(
        session_id=session_id,
        ok=divergence is None and not tampering and signatures.ok,
        signatures=signatures,
        tampering=tampering,
        recorded=len(recorded),
        replayed=len(stored),
        first_divergence=divergence,
        replay_misses=list(sandbox.misses),
        partial=not finished,
        started_from="store" if restored else "repository",
    )


def _parent_model(recorded: list[tuple[int, Event]], task: ev.TaskSubmitted) -> str | None:
    """The model the parent actually ran on when its task named none: the backend its recorded
    calls name (``synth:`` for a task with examples), else ``synth:`` when it has examples."""
    for _, e in recorded:
        if isinstance(e, ev.ModelCalled) and e.backend not in ("", "-", "replay"):
            if not e.backend.startswith("fork:"):
                return e.backend
    return "synth:" if task.examples else None


async def fork_session(bus: Any, session_id: str, at_sequence: int, model: str | None) -> str:
    """Start a new session from ``session_id``'s task that replays the parent's model answers
    up to ``at_sequence`` and continues live (with ``model`` when given). Returns its id."""
    from oopav.events.factory import root_event

    recorded = await bus.events.read("session", session_id, skip_undecodable=True)
    task = next((e for _, e in recorded if isinstance(e, ev.TaskSubmitted)), None)
    if task is None:
        raise ValueError(f"session {session_id} has no task_submitted event")
    if not any(seq == at_sequence for seq, _ in recorded):
        raise ValueError(
            f"session {session_id} has no event at sequence {at_sequence}; see `oopav show {session_id}`"
        )
    live = model or task.model or bus.settings.model or _parent_model(recorded, task)
    if not live:
        raise ValueError(
            f"session {session_id} ran without a model and has no examples: give the fork one "
            "with --model"
        )
    spec = f"fork:{session_id}@{at_sequence}:{live}"
    fields = {
        k: v
        for k, v in msgspec.structs.asdict(task).items()
        if k in ev.TaskSubmitted.__struct_fields__ and k not in Event.__struct_fields__
    }
    fields.update(model=spec, parent_session=session_id, fork_sequence=at_sequence, source=None)
    child = root_event(ev.TaskSubmitted, handler="replay", **fields)
    await bus.events.append(child, expected=0)
    return child.aggregate_id
