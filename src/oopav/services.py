"""Process-level orchestration used by the commands (named apart from `handlers/runtime.py`, the
per-handler runtime): run handlers, submit, query sessions."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import msgspec

from oopav.app import Bus, open_bus
from oopav.bus.consumer import run_until_signalled
from oopav.bus.streams import DLQ_STREAM, EVENTS_STREAM, INTAKE_SUBJECT
from oopav.events import catalog as ev
from oopav.events.catalog import Event
from oopav.logging import get_logger
from oopav.projections.runner import SESSIONS, ProjectionRunner
from oopav.projections.session import SessionState, fold

log = get_logger("oopav.services")


async def run_handlers(
    bus: Bus,
    stop: asyncio.Event | None = None,
    *,
    names: tuple[str, ...] | None = None,
    ports: Any = None,
    model: str | None = None,
    projection: bool = True,
    ready: asyncio.Event | None = None,
    cleanup: bool = False,
    reflector_config: Any = None,
    concurrency: int | str | None = None,
    signals: bool = True,
) -> None:
    """Run handlers (all by default) and the session projection in this process until a
    signal (or ``stop``) arrives, then drain them. ``ready`` is set once requests are
    answered. ``concurrency``: messages of different sessions each handler works on at once
    (default ``DEFAULT_CONCURRENCY``), or ``"auto"``: each loop handler starts at 8 and follows
    the machine's load (bus/adaptive.py); one session's messages are always handled in order."""
    from oopav.bus import storage
    from oopav.bus.consumer import DEFAULT_CONCURRENCY, ConsumerOptions
    from oopav.handlers.intake import Intake
    from oopav.handlers.ports import Ports
    from oopav.handlers.registry import ALL_HANDLERS, LOOP_HANDLERS, build_loop_handler
    from oopav.handlers.runtime import HandlerRunner, SessionCache

    chosen = names or ALL_HANDLERS
    # The free-space watermark and the dead-letter spool live in the data directory.
    storage.configure(bus.settings.data_dir)
    ports = ports or Ports(settings=bus.settings, default_model=model, nats_url=bus.url)
    services: list[Any] = []
    tasks: list[asyncio.Task[Any]] = []
    runner = None
    cleaner = None
    from oopav.bus.adaptive import Adaptive

    adaptive = Adaptive() if concurrency == "auto" else None
    if adaptive is not None:
        concurrency = 8
    concurrency = max(1, int(concurrency or DEFAULT_CONCURRENCY))
    _widen_executor(adaptive.maximum if adaptive is not None else concurrency)
    if projection:
        from oopav.handlers.watchdog import Watchdog

        watchdog = Watchdog(bus.nc)
        listeners: list[Any] = [watchdog.listener]
        if cleanup:  # `oopav up`: remove a session's workspace once it completes
            from oopav.sandbox.cleanup import WorkspaceCleaner

            cleaner = WorkspaceCleaner(bus.settings)
            listeners.append(cleaner.listener)
        runner = ProjectionRunner(
            bus.nc,
            bus.snapshots,
            SESSIONS,
            listeners=listeners,
            on_undecodable=_dead_letter_skipped(bus, tasks),
        )
        # Supervised like the handlers: restarted with backoff (and logged) if it dies.
        services.append(runner)
        services.append(watchdog)
        from oopav.history.signing import Notary, keyring_of

        keyring = keyring_of(bus.nc)
        if keyring is not None:  # chain heads anchored in the notary KV (docs/operations.md)
            services.append(Notary(bus.nc, keyring))
    # One session cache for the loop handlers of this process: each one's outputs are folded
    # in as appended (the intake's new sessions too), so the next handler's input is usually
    # folded without a read.
    shared = SessionCache(bus.events)
    if "intake" in chosen:
        # Whether a task naming no model has one here (refused at intake otherwise).
        has_model = bool(
            ports.default_model or ports.settings.model or ports.model_factory is not None
        )
        intake = Intake(bus.nc, cache=shared, default_model=has_model)
        # Answer requests before anyone is told we are up.
        await intake.start_responder()
        services.append(intake)
    if "grants" in chosen:
        from oopav.handlers.grants import Grants

        grants = Grants(bus.nc)
        await grants.start_responder()
        services.append(grants)
    memory = None
    if "orient" in chosen:
        memory = await _open_memory(bus)
        if memory is not None:
            tasks.append(asyncio.create_task(follow_memory(bus, memory, stop)))
    for name in chosen:
        if name in LOOP_HANDLERS:
            # Each handler its own options: an adaptive limit moves per consumer.
            options = ConsumerOptions(concurrency=concurrency, adaptive=adaptive)
            services.append(
                HandlerRunner(
                    bus.nc, build_loop_handler(name, memory=memory), ports, options, cache=shared
                )
            )
    if "reflector" in chosen:
        from oopav.handlers.registry import build_reflector

        services.append(build_reflector(bus.nc, ports, reflector_config))
    if "learner" in chosen:
        from oopav.handlers.registry import build_learner

        services.append(build_learner(bus.nc, bus.settings.data_dir))
    if ready is not None:
        ready.set()
    try:
        await run_until_signalled(services, stop, signals=signals)
    finally:
        if runner is not None:
            runner.stop()
        if cleaner is not None:
            await cleaner.aclose()
        if tasks:
            _, still = await asyncio.wait(tasks, timeout=2)
            for t in still:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(BaseException):
                    await t
        await ports.aclose()


def _dead_letter_skipped(bus: Bus, tasks: list[asyncio.Task[Any]]) -> Any:
    """Garbage on any session subject (also a type no handler subscribes to) is parked on
    ``oopav.dlq.projection`` by the session projection, which sees every event."""
    from oopav.bus.streams import dlq_subject

    def park(msg: Any, exc: Any) -> None:
        meta = msg.metadata
        stream = meta.stream or EVENTS_STREAM
        headers = {
            "Oopav-Dlq-Reason": exc.reason,
            "Oopav-Dlq-Detail": str(exc.detail)[:1000].replace("\n", " "),
            "Oopav-Dlq-Handler": "projection",
            "Oopav-Dlq-Traceback-Digest": "",
            "Oopav-Original-Subject": msg.subject or "",
            "Oopav-Original-Stream": stream,
            "Oopav-Original-Sequence": str(meta.sequence.stream),
            "Nats-Msg-Id": f"dlq:projection:{stream}:{meta.sequence.stream}",
        }

        async def publish() -> None:
            with contextlib.suppress(Exception):
                if not msg.subject:  # the projection's fast reader keeps no subjects
                    stored = await bus.events.js.get_msg(stream, meta.sequence.stream)
                    headers["Oopav-Original-Subject"] = stored.subject or ""
                await bus.events.js.publish(dlq_subject("projection"), msg.data, headers=headers)

        tasks.append(asyncio.create_task(publish()))

    return park


def _widen_executor(concurrency: int) -> None:
    """Blocking work (sandboxed commands, git, parsing) runs in the default executor: give it
    room for every lane of a few handlers, so a 30 s test command in one session never queues
    another session's work behind it."""
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.get_running_loop()
    workers = max(32, 2 * concurrency + 8)
    if getattr(loop, "_oopav_workers", 0) >= workers:
        return
    loop.set_default_executor(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oopav"))
    loop._oopav_workers = workers  # type: ignore[attr-defined]  # a marker on the loop: workers already set


async def _open_memory(bus: Bus) -> Any:
    """The retrieval memory: loaded from its disposable directory, else empty; it catches up
    from the stream either way."""
    try:
        from oopav.context.memory import SessionMemory

        return SessionMemory.load(bus.settings.data_dir / "memory") or SessionMemory()
    except Exception as exc:  # retrieval is an aid: never block the loop on it
        log.warning("memory_unavailable", error=repr(exc))
        return None


async def follow_memory(
    bus: Bus, memory: Any, stop: asyncio.Event | None, save_every: float = 30.0
) -> None:
    """Keep the session memory current: a projection of the stream (invariant 1)."""
    from nats.js.api import ConsumerConfig, DeliverPolicy

    from oopav.events.codec import EventDecodeError, decode

    def on_msg(msg: Any) -> None:
        try:
            memory.apply(msg.metadata.sequence.stream, decode(msg.data))
        except EventDecodeError:
            pass

    async def cb(msg: Any) -> None:
        on_msg(msg)

    sub = await bus.events.js.subscribe(
        "oopav.ev.session.>",
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        config=ConsumerConfig(opt_start_seq=memory.last_sequence + 1),
        cb=cb,
    )
    directory = bus.settings.data_dir / "memory"
    saved = memory.last_sequence
    try:
        while stop is None or not stop.is_set():
            try:
                if stop is None:
                    await asyncio.sleep(save_every)
                else:
                    await asyncio.wait_for(stop.wait(), save_every)
            except TimeoutError:
                pass
            if memory.last_sequence != saved:
                await asyncio.to_thread(memory.save, directory)
                saved = memory.last_sequence
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        if memory.last_sequence != saved:
            with contextlib.suppress(Exception):
                memory.save(directory)


async def submit_task(bus: Bus, body: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send a submission as `nats req` would and return the intake's reply.

    It also watches for its own outcome on the event stream (``task_submitted`` /
    ``task_rejected`` whose stored copy carries this request's id): the intake process that
    took the request may stop before it can answer (it handed the stored copy to another
    process), and then the outcome is still found here before the deadline."""
    import uuid

    import nats

    from oopav.handlers.replies import REQUEST_HEADER

    payload = json.dumps(body).encode()
    rid = uuid.uuid4().hex
    # The request's own id travels with the stored copy: an identical submission sent at the
    # same moment by another process cannot be handed this one's session.
    mine: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    watch = await _watch_own_outcome(bus, payload, rid, mine)
    request = asyncio.create_task(
        bus.nc.request(INTAKE_SUBJECT, payload, timeout=timeout, headers={REQUEST_HEADER: rid})
    )
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        racing: set[asyncio.Future[Any]] = {request, mine}
        await asyncio.wait(racing, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if mine.done():
            return mine.result()
        reply: dict[str, Any] | None = None
        if request.done():
            try:
                msg = request.result()
            except nats.errors.NoRespondersError:
                # Nothing captured the subject (no OOPAV_INTAKE stream, no intake): nothing
                # was stored, so unlike "queued" the user should submit again once it runs.
                return {
                    "error": "no intake handler is running and no OOPAV_INTAKE stream stored "
                    "the submission: start `oopav up`, then submit it again",
                    "field": None,
                    "code": "no_intake",
                }
            except nats.errors.TimeoutError:
                pass
            else:
                reply = json.loads(msg.data)
                if reply.get("code") not in ("queued", "timeout"):
                    return reply
                # The answering process gave up on it: the outcome may still come.
                left = deadline - asyncio.get_running_loop().time()
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(mine), max(left, 0.0))
                return reply
        if not bus.nc.is_connected:
            # The request may have been lost with the connection (or stored just before):
            # "stored, do not resubmit" would be a guess, so say what to check.
            return {
                "error": f"lost the connection to NATS at {getattr(bus, 'url', 'the server')} "
                "before the intake answered; the submission may not have been stored: once "
                "the server is back, check `oopav sessions` (and `oopav sessions --rejected`) "
                "before submitting it again",
                "field": None,
                "code": "disconnected",
            }
        # OOPAV_INTAKE stored the submission all the same: an intake that starts later turns
        # it into a session, so this is not a rejection (resubmitting would make two).
        return {
            "error": f"no intake answered within {timeout:.0f}s; the submission is stored in "
            "OOPAV_INTAKE and becomes a session when an intake runs (`oopav up`): see "
            "`oopav sessions` then, and do not submit it again",
            "field": None,
            "code": "queued",
        }
    finally:
        request.cancel()
        mine.cancel()
        for sub in watch:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


async def _watch_own_outcome(
    bus: Bus, payload: bytes, rid: str, found: asyncio.Future[dict[str, Any]]
) -> list[Any]:
    """Subscribe to intake outcomes; resolve ``found`` with the reply for the one whose stored
    copy was sent with request id ``rid``."""
    from oopav.bus.store import EventStore
    from oopav.bus.streams import INTAKE_STREAM
    from oopav.handlers.intake import answerable, reply_for
    from oopav.handlers.replies import digest, request_id

    key = digest(payload)

    async def on_outcome(msg: Any) -> None:
        if found.done():
            return
        event = answerable(msg.data)
        source = getattr(event, "source", None)
        if event is None or source is None or source.digest != key:
            return
        try:
            stored = await asyncio.wait_for(
                bus.nc.jetstream().get_msg(INTAKE_STREAM, source.stream_sequence), 5.0
            )
        except Exception:
            return  # the intake's own answer (or the deadline) decides
        if request_id(stored.headers) == rid and not found.done():
            # Seen on the core subject: answer once the stream has it, so a `show` right
            # after finds the session.
            await EventStore(bus.nc).wait_stored("session", event.aggregate_id)
            if not found.done():
                found.set_result(reply_for(event))

    return [
        await bus.nc.subscribe(f"oopav.ev.session.*.{kind}", cb=on_outcome)
        for kind in ("task_submitted", "task_rejected")
    ]


async def session_state(bus: Bus, session_id: str) -> SessionState:
    from oopav.projections.runner import load_session
    from oopav.projections.store import Snapshots

    snaps = Snapshots(bus.snapshots, SESSIONS.name, SESSIONS.schema, SessionState)
    return await load_session(bus.events, snaps, session_id)


async def wait_session(bus: Bus, session_id: str, timeout: float) -> SessionState:
    """Wait until the session completes (or is rejected), following its events."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    final = asyncio.Event()

    async def on_msg(msg: Any) -> None:
        if msg.subject.endswith((".session_completed", ".task_rejected")):
            final.set()

    sub = await bus.nc.subscribe(f"oopav.ev.session.{session_id}.>", cb=on_msg)
    pause = 0.002
    try:
        while True:
            state = await session_state(bus, session_id)
            if state.phase in ("completed", "rejected"):
                return state
            remaining = deadline - loop.time()
            if remaining <= 0:
                return state
            if final.is_set():
                # Core subscribers see a message as it is published, a moment before the
                # stream has committed it (atomic batches): read again shortly.
                await asyncio.sleep(min(pause, remaining))
                pause = min(pause * 2, 0.05)
                continue
            # Only the end is worth a read: reading on every event of the session loaded the
            # server while the handlers worked. A missed core message costs a second at most.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(final.wait(), timeout=min(remaining, 1.0))
    finally:
        await sub.unsubscribe()


INTERRUPTED = "interrupted"


async def abort_interrupted(bus: Bus, session_id: str, attempts: int = 5) -> SessionState:
    """End a session whose `oopav run` was stopped: ``session_completed(aborted, reason
    interrupted)``, so it is not silently resumed by the next run (``oopav resume`` does)."""
    from oopav.bus.errors import ConcurrencyConflict
    from oopav.events.factory import caused_event

    for attempt in range(attempts):
        from oopav.bus.store import Undecodable

        items = await bus.events.read_with_undecodable("session", session_id)
        events = [(s, e) for s, e in items if not isinstance(e, Undecodable)]
        state = fold(events)
        if state.phase in ("completed", "rejected") or not events:
            return state
        last = events[-1][1]
        last_seq = items[-1][0]  # garbage counts for the append check
        abort = caused_event(
            ev.SessionCompleted,
            last,
            handler="run",
            salt=":interrupted",
            outcome="aborted",
            summary="interrupted: the `oopav run` that drove this session was stopped",
            reason=INTERRUPTED,
        )
        try:
            await bus.events.append(abort, expected=last_seq)
        except ConcurrencyConflict:
            await asyncio.sleep(0.02 * (attempt + 1))
            continue
        return fold([*events, (last_seq + 1, abort)])
    return await session_state(bus, session_id)


async def resume_point(bus: Bus, session_id: str) -> int:
    """The sequence a resumed session replays up to: the last event before an interruption
    (or the last event of a session that lost its process)."""
    events = await bus.events.read("session", session_id, skip_undecodable=True)
    if not events:
        raise ValueError(f"session {session_id} has no events")
    for i, (_, e) in enumerate(events):
        if isinstance(e, ev.SessionCompleted):
            if e.reason != INTERRUPTED or i == 0:
                raise ValueError(
                    f"session {session_id} already ended ({e.outcome}: {e.summary[:80]}); "
                    "only an interrupted session can be resumed (or fork it: "
                    "`oopav replay SESSION --fork-at SEQ`)"
                )
            return events[i - 1][0]
        if isinstance(e, ev.TaskRejected):
            raise ValueError(f"session {session_id} was rejected; submit it again")
    return events[-1][0]


def outcome_dict(state: SessionState) -> dict[str, Any]:
    return {
        "session_id": state.session_id,
        "outcome": state.outcome,
        "phase": state.phase,
        "summary": state.summary or (state.rejection or ""),
        "diff": state.diff,
        "events": state.event_count,
        "iterations": state.budgets_used.iterations,
        "model_tokens": state.budgets_used.model_tokens,
        "bounces": state.budgets_used.bounces,
        "replans": state.budgets_used.replans,
        "verified": state.verified,
        "unverified": state.outcome == "success_unverified",
        "reason": state.end_reason,
        "gates": [msgspec.to_builtins(g) for g in state.gates],
    }


async def list_sessions(bus: Bus, limit: int = 50) -> list[dict[str, Any]]:
    runner = ProjectionRunner(bus.nc, bus.snapshots, SESSIONS)
    await runner.catch_up()
    rows: list[dict[str, Any]] = []
    states = {k: v for k, v in runner.snapshots.items()}
    states.update(runner._cache)
    for sid, st in states.items():
        rows.append(
            {
                "session_id": sid,
                "phase": st.phase,
                "outcome": st.outcome,
                "events": st.event_count,
                "instruction": (st.task.instruction if st.task else (st.rejection or "")).replace(
                    "\n", " "
                ),
                "created_at": st.created_at.isoformat() if st.created_at else None,
                "updated_at": st.updated_at.isoformat() if st.updated_at else None,
            }
        )
    rows.sort(key=lambda r: r["session_id"], reverse=True)
    return rows[:limit]


async def resolve_session(bus: Bus, prefix: str) -> str:
    """A full session id from a unique prefix (ids sort by time, so prefixes are handy)."""
    if len(prefix) == 36:
        return prefix
    matches = [
        r["session_id"]
        for r in await list_sessions(bus, 1_000_000)
        if r["session_id"].startswith(prefix)
    ]
    if len(matches) == 1:
        return matches[0]
    from oopav.app import NoServer

    if not matches:
        raise NoServer(f"no session matches {prefix!r}: see `oopav sessions`")
    raise NoServer(f"{prefix!r} matches {len(matches)} sessions; give more characters")


def describe_event(e: Event) -> str:
    """A one-line summary of an event for timelines."""
    match e:
        case ev.TaskSubmitted():
            return f"{e.instruction[:70]!r} repo={e.repo}"
        case ev.TaskRejected():
            return f"{e.field or '-'}: {e.error[:90]}"
        case ev.WorkspacePrepared():
            where = (
                f" (+{len(e.uncommitted)} uncommitted/untracked file(s) from your working tree)"
                if e.uncommitted
                else (" (a copy of the directory as it is)" if e.kind == "copy" else " (HEAD)")
            )
            return f"{e.kind} {e.path} @ {e.base_commit[:10]}{where}"
        case ev.ObservationRecorded():
            return (
                f"{e.phase}: {e.files_total} files, {len(e.parse_errors)} parse errors, {len(e.stubs)} stubs, "
                f"tests={'-' if e.tests is None else ('pass' if e.tests.passed else 'fail')} -> {e.observer_action}"
            )
        case ev.OrientReported():
            return f"risk={e.risk_band} gap={e.evidence_gap:.2f} {e.category} complexity={e.complexity} tests={e.test_decision}"
        case ev.PlanProposed():
            return f"attempt {e.attempt}: {len(e.steps)} steps, files={','.join(e.files)[:60]}" + (
                f" adequacy={e.adequacy:.2f}" if e.adequacy is not None else ""
            )
        case ev.ModelCalled():
            return (
                f"{e.role} via {e.backend}: {e.prompt_tokens}+{e.completion_tokens} tokens, {e.latency_ms:.0f} ms"
                + (f" error={e.error}" if e.error else "")
            )
        case ev.ActionProposed():
            return f"{e.action.type} step={e.step} hash={e.action_hash[:8]}"
        case ev.ActionRejected():
            return f"{e.reason}: {e.message[:80]}"
        case ev.ActionApplied():
            status = "ok" if e.ok else f"failed exit={e.exit_code}"
            return f"{status} files={','.join(e.files_changed)[:60]}" + (
                " timed out" if e.timed_out else ""
            )
        case ev.GateEvaluated():
            from oopav.display import gate_summary

            verdict = "skipped" if e.skipped else ("pass" if e.passed else "FAIL")
            return f"{e.gate}: {verdict} {gate_summary(e)}"
        case ev.VerificationCompleted():
            return "passed" if e.passed else f"failed at {e.failed_gate}"
        case ev.ReplanTriggered():
            return f"{e.source}: {e.reason[:80]}"
        case ev.BudgetExceeded():
            return f"{e.budget}: used {e.used:g} of {e.limit:g} -> {e.response}"
        case ev.StuckDetected():
            return f"{e.pattern} x{e.count} -> {e.response}"
        case ev.CautionRaised():
            return f"level {e.level}: {'; '.join(e.reasons)[:60]} -> {'; '.join(e.effects)[:40]}"
        case ev.CriticVerdict():
            sure = f" (confidence {e.confidence:.2f})" if e.confidence is not None else ""
            return f"{e.trigger} {e.verdict}{sure}: {'; '.join(e.reasons)[:80]}"
        case ev.SessionCompleted():
            return f"{e.outcome}: {e.summary[:80]}"
        case ev.PermissionGranted():
            return (
                f"{e.scope} by {e.granted_by}"
                + (f" until {e.expires_at}" if e.expires_at else "")
                + (f" uses={e.max_uses}" if e.max_uses else "")
            )
        case ev.PermissionRequested() | ev.PermissionDenied():
            return e.scope
        # decision core (docs/loop.md)
        case ev.HumanInputRequested():
            return f"{e.question[:90]} [{'/'.join(e.options)}] until {e.deadline}"
        case ev.HumanInputProvided():
            return f"{e.answer!r} by {e.answered_by or '-'}"
        case ev.EvidenceGathered():
            found = sum(1 for i in e.items if i.found)
            return f"round {e.round} ({e.trigger}): {found}/{len(e.items)} found" + (
                "" if e.tests is None else f", tests {'pass' if e.tests.passed else 'fail'}"
            )
        case ev.BaselineReused():
            return f"from {e.from_session[:13]} ({e.saved_ms / 1000:.1f}s saved) tree={e.tree[:8]}"
        case ev.WorkspaceRolledBack():
            return f"{len(e.actions)} action(s) undone: {e.reason[:70]}"
        case ev.ReplanScored():
            return f"{e.source} replan: score {e.score_before:g} -> {e.score_after:g}"
        case ev.CandidateEvaluated():
            return f"#{e.position} {e.action.type} score={e.score:g} {e.reason[:50]}"
        case ev.CandidateSelected():
            return f"{e.kind} winner {e.candidate_id[:8]} of {len(e.ranking)}"
        case ev.PlanCandidateEvaluated():
            return f"plan #{e.position} score={e.score:g} {(e.reason or e.rationale)[:50]}"
    return ""


async def replay_projection(bus: Bus, session_id: str, verify: bool) -> dict[str, Any]:
    """Re-fold a session from its events; with ``verify``, compare with the stored snapshot
    (after bringing the snapshot up to date incrementally)."""
    events = await bus.events.read("session", session_id, skip_undecodable=True)
    rebuilt = fold(events)
    report: dict[str, Any] = {
        "session_id": session_id,
        "events": len(events),
        "state": msgspec.to_builtins(rebuilt),
    }
    if verify:
        stored = await session_state(bus, session_id)
        a, b = msgspec.to_builtins(rebuilt), msgspec.to_builtins(stored)
        diffs = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        report["matches"] = not diffs
        report["differences"] = diffs
    return report


async def read_dlq(bus: Bus, handler: str | None, limit: int) -> list[dict[str, Any]]:
    from nats.js.api import ConsumerConfig, DeliverPolicy

    subject = f"oopav.dlq.{handler}" if handler else "oopav.dlq.>"
    js = bus.events.js
    info = await js.stream_info(DLQ_STREAM)
    if info.state.messages == 0:
        return []
    sub = await js.subscribe(
        subject, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL, config=ConsumerConfig()
    )
    rows: list[dict[str, Any]] = []
    try:
        ci = await sub.consumer_info()
        if ci.num_pending == 0 and not (ci.delivered and ci.delivered.consumer_seq):
            return []
        while True:
            try:
                msg = await sub.next_msg(timeout=2)
            except Exception:
                break
            h = msg.headers or {}
            rows.append(
                {
                    "seq": msg.metadata.sequence.stream,
                    "handler": h.get("Oopav-Dlq-Handler", ""),
                    "reason": h.get("Oopav-Dlq-Reason", ""),
                    "detail": h.get("Oopav-Dlq-Detail", ""),
                    "traceback_digest": h.get("Oopav-Dlq-Traceback-Digest", ""),
                    "subject": h.get("Oopav-Original-Subject", ""),
                    "original_sequence": int(h.get("Oopav-Original-Sequence", "0") or 0),
                    "payload": msg.data[:500].decode("utf-8", "replace"),
                }
            )
            if msg.metadata.num_pending == 0:
                break
    finally:
        await sub.unsubscribe()
    return rows[-limit:]


async def publish_answer(
    bus: Any, session: str, answer: str, by: str, *, request_id: str | None = None
) -> dict[str, Any]:
    """Append ``human_input_provided`` to a session that waits for a person. ``request_id``:
    the question being answered, when the caller saw it arrive (its read waits up to 5 s for the
    stream to show it, since a live notification can precede a read of the stored batch)."""
    from oopav.events import catalog as ev
    from oopav.events.factory import root_event
    from oopav.projections.session import fold
    from oopav.services import resolve_session

    sid = await resolve_session(bus, session)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5.0
    while True:
        state = fold(await bus.events.read("session", sid))
        seen = state.human_request is not None and state.human_request.id == request_id
        if request_id is None or seen or loop.time() >= deadline:
            break
        await asyncio.sleep(0.1)
    if state.phase == "completed":
        return {"error": f"session {sid} is already completed ({state.outcome})"}
    asked = state.human_request
    if asked is None or not state.human_pending:
        return {"error": f"session {sid} is not waiting for an answer (phase {state.phase})"}
    if asked.options and answer not in asked.options:
        return {"error": f"answer one of {', '.join(asked.options)} (got {answer!r})"}
    event = root_event(
        ev.HumanInputProvided,
        handler="cli.answer",
        aggregate_id=sid,
        answer=answer,
        answered_by=by,
        request_id=asked.id,
    )
    await bus.events.append(event)
    return {"session_id": sid, "answer_id": event.id, "request_id": asked.id}


async def review_session(
    bus: Bus, settings: Any, session: str, *, model: str | None = None
) -> dict[str, Any]:
    """``oopav critic --session``: the critic's review of a recorded session after the fact
    (handlers/support/critic.review_recorded), its ``model_called`` and ``critic_verdict``
    appended to the session's stream after everything already there — linked into the hash
    chain on the last sequence read (a session that moved on meanwhile is a clear error, not a
    fork of the chain), caused by the session's last event, and never terminal, so the first
    terminal event still stands."""
    from oopav.bus.errors import ConcurrencyConflict
    from oopav.handlers.ports import Ports
    from oopav.handlers.runtime import Emitter
    from oopav.handlers.support.critic import REVIEWER, review_recorded
    from oopav.history.blobs import BlobStore

    sid = await resolve_session(bus, session)
    recorded = await bus.events.read("session", sid)
    if not recorded:
        raise ValueError(f"no events for session {sid}")
    state = fold(recorded)
    ports = Ports(settings=settings, blobs=BlobStore(bus.nc), store=bus.events)
    out = Emitter(recorded[-1][1], REVIEWER, ports)
    try:
        said = await review_recorded(state, out, model)
    finally:
        await ports.aclose()
    try:
        await bus.events.append_batch(out.events, expected=state.last_sequence)
    except ConcurrencyConflict:
        raise ValueError(
            f"session {sid} recorded new events during the review; review it again"
        ) from None
    verdict = next(e for e in out.events if isinstance(e, ev.CriticVerdict))
    called = next((e for e in out.events if isinstance(e, ev.ModelCalled)), None)
    return {
        "session_id": sid,
        "verdict_id": verdict.id,
        "verdict": said.verdict,
        "reasons": said.reasons,
        "top_risks": said.top_risks,
        "missing_tests": said.missing_tests,
        "confidence": said.confidence,
        "cached": said.cached,
        "skipped": said.skipped,
        "shown": verdict.shown,
        "payload_sha256": verdict.payload_sha256,
        "model": called.backend if called is not None else None,
        "outcome": state.outcome,
    }


async def run_training(
    settings: Any, recipe: str, config: str | Path | dict[str, Any]
) -> dict[str, Any]:
    """``oopav train``: load the recipe's config, train, record the run on the stream."""
    from oopav.trainer.config import load_config, to_dict
    from oopav.trainer.runs import recipe_of, record_run

    cls, fn = recipe_of(recipe)
    cfg: Any = load_config(cls, config)  # the recipe's own config class (recipe_of)
    async with open_bus(settings, embedded=True, name="oopav-train") as bus:
        return await record_run(
            bus.events, recipe, to_dict(cfg), cfg.output_dir, lambda emit: fn(cfg, emit)
        )


async def record_evaluation(settings: Any, spec: str, suite: str, report: Any) -> str:
    """An evaluation outside a training run: a run aggregate of its own (recipe ``eval``)."""

    from oopav.trainer.runs import RunRecorder

    summary = report.summary()
    recorder = RunRecorder("eval", {"model": spec, "suite": suite}, "")
    events = recorder.event("started", {"base_model": spec, "dataset": suite})
    events += recorder.event(
        "evaluation",
        {
            "suite": suite,
            "model": spec,
            "n": int(summary["n"]),
            "metrics": {k: float(v) for k, v in summary.items() if isinstance(v, int | float)},
            "families": summary["families"],
        },
    )
    events += recorder.event("completed", {"status": "completed"})
    async with open_bus(settings, embedded=True, name="oopav-eval") as bus:
        for e in events:
            await bus.events.append(e)
    return recorder.run_id or ""
