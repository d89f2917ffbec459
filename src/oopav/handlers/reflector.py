"""reflector: a training-free experience library per mission (DESIGN step 7).

It watches finished sessions. When every rollout of a group has finished it scores the
candidates (ordered by session id), decides whether the group calls for a reflection
(eligibility), asks a critic about each candidate and a consolidator for operations on the
mission's library, and records all of it as ``reflection_proposed`` on the mission
aggregate, with every model call as a ``model_called`` there too. A proposal changes nothing
yet: the reflector reruns a holdout slice of the mission's tasks twice — with the library at
the proposal's step and with the proposal previewed on top (same model, same seeds) — and
applies the operations (``guidance_op_applied``) only when the preview improves label_match by
at least ``apply_if_delta``; otherwise ``reflection_rejected``. ``rapid_mode`` skips the
holdout (experiments only).

Everything it decides is derived from the stream (the sessions and the mission aggregate):
a restart picks up where the stream is, redeliveries derive the same ids, and mission appends
use optimistic concurrency.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from pydantic import BaseModel, ConfigDict, Field, field_validator

from oopav.bus.consumer import ConsumerOptions, Delivery, HandlerConsumer
from oopav.bus.errors import ConcurrencyConflict
from oopav.bus.store import EventStore
from oopav.config import yaml_error
from oopav.decide.reflection import (
    AllWrongStrategy,
    EligibilityPolicy,
    SelectionPolicy,
    candidate_signal,
    eligibility,
    group_signals,
    mean_label_match,
)
from oopav.events import catalog as ev
from oopav.events import mission as mev
from oopav.events.catalog import Event
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.events.factory import actor_name, caused_event
from oopav.events.ids import derive_id, uuid7_from
from oopav.logging import get_logger
from oopav.projections.guidance import GuidanceState, OpsRefused, plan_operations
from oopav.reflection.guidance import StreamGuidance
from oopav.reflection.prompts import (
    CONSOLIDATOR_TEMPLATE,
    MAX_CANDIDATES,
    ConsolidatorAnswer,
    CriticAnswer,
    ReflectionAnswerError,
    consolidator_request,
    critic_request,
    critique_from,
    parse_strict,
    validate_template,
)

NAME = "reflector"
log = get_logger("oopav.handlers.reflector", handler=NAME)
MAX_CONFLICT_RETRIES = 5


class ReflectorConfig(BaseModel):
    """How the reflector decides (``oopav up --reflector-config FILE``, YAML or JSON)."""

    model_config = ConfigDict(extra="forbid")

    eligibility: EligibilityPolicy = "selected_mismatch_or_all_wrong"
    all_wrong_strategy: AllWrongStrategy = "reflect_diagnose"
    selection: SelectionPolicy = "confidence"
    max_candidates: int = Field(MAX_CANDIDATES, ge=1, le=MAX_CANDIDATES)
    max_operations: int = Field(3, ge=1, le=16)
    change_cap_per_epoch: int = Field(6, ge=1, le=1000)
    epoch_groups: int = Field(4, ge=1, le=10_000)
    apply_if_delta: float = Field(0.1, ge=-1.0, le=1.0)
    allow_uncertain: bool = False
    rapid_mode: bool = False
    holdout_size: int = Field(2, ge=1, le=32)
    holdout_k: int = Field(1, ge=1, le=8)
    critic_model: str | None = None
    consolidator_model: str | None = None
    consolidator_template: str = CONSOLIDATOR_TEMPLATE
    temperature: float = Field(0.2, ge=0.0, le=2.0)
    missions: list[str] | None = None

    @field_validator("consolidator_template")
    @classmethod
    def _template(cls, v: str) -> str:
        validate_template(v)
        return v

    def recorded(self) -> dict[str, Any]:
        """The settings recorded with each decision (model specs and template aside)."""
        exclude = {"critic_model", "consolidator_model", "consolidator_template", "missions"}
        if self.selection == "confidence":
            # The default is left out, so the decisions of missions recorded before the setting
            # existed replay byte for byte.
            exclude.add("selection")
        return self.model_dump(exclude=exclude)

    @classmethod
    def load(cls, path: str | Path | None, **overrides: Any) -> ReflectorConfig:
        import yaml

        data: dict[str, Any] = {}
        if path is not None:
            p = Path(path)
            try:
                data = yaml.safe_load(p.read_text()) or {}
            except OSError as exc:
                raise ValueError(f"cannot read reflector config {p}: {exc.strerror}") from None
            except yaml.YAMLError as exc:
                raise ValueError(
                    f"reflector config {p} is not valid YAML: {yaml_error(exc)}"
                ) from None
            if not isinstance(data, dict):
                raise ValueError(f"reflector config {p} must be a mapping")
            tpl = data.get("consolidator_template_file")
            if tpl:
                data.pop("consolidator_template_file")
                data["consolidator_template"] = (p.parent / tpl).read_text()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)


class MissionOut:
    """Collects the reflector's outputs for one decision on a mission (derived ids)."""

    def __init__(self, cause: Event, mission: str, clock: Clock, salt: str = "") -> None:
        self.cause = cause
        self.aggregate_id = mev.mission_aggregate_id(mission)
        self.clock = clock
        self.salt = salt
        self.events: list[Event] = []

    @property
    def next_id(self) -> str:
        return derive_id(self.cause.id + self.salt, NAME, len(self.events))

    def emit(self, cls: type[Event], **fields: Any) -> Any:
        event = caused_event(
            cls,
            self.cause,
            handler=NAME,
            index=len(self.events),
            clock=self.clock,
            aggregate="mission",
            aggregate_id=self.aggregate_id,
            salt=self.salt,
            **fields,
        )
        self.events.append(event)
        return event


def task_spec(task: ev.TaskSubmitted) -> mev.TaskSpec:
    return mev.TaskSpec(
        instruction=task.instruction,
        repo=task.repo,
        model=task.model,
        test_command=task.test_command,
        expected=task.group.expected if task.group else None,
        budgets=msgspec.to_builtins(task.budgets),
        policy=task.policy,
        examples=[msgspec.to_builtins(e) for e in task.examples],
    )


def holdout_slice(state: GuidanceState, current: mev.TaskSpec, size: int) -> list[mev.TaskSpec]:
    """The mission's most recent distinct tasks other than the evidence group's, oldest first;
    the group's own task fills in only when the mission has too few others (in-sample)."""
    others = [t for t in state.tasks if t != current]
    if len(others) >= size:
        return others[-size:]
    return [*others, current][-size:]


class Reflector:
    name = NAME

    def __init__(
        self,
        nc: NATS,
        ports: Any,
        config: ReflectorConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        options: ConsumerOptions | None = None,
    ) -> None:
        self.nc = nc
        self.ports = ports
        self.config = config or ReflectorConfig()
        self.clock = clock
        self.events = EventStore(nc)
        self.guidance = StreamGuidance(self.events)
        self.consumer = HandlerConsumer(
            nc,
            NAME,
            ["oopav.ev.session.*.session_completed"],
            self.process,
            options=options or ConsumerOptions(ack_wait=60.0),
        )
        self.decisions = 0
        self._lock = asyncio.Lock()

    async def run(self) -> None:
        await self.consumer.run()

    def stop(self) -> None:
        self.consumer.stop()

    # -- entry ------------------------------------------------------------------------------

    async def process(self, event: Event, delivery: Delivery | None) -> None:
        if not isinstance(event, ev.SessionCompleted):
            return
        task = await self._task(event.aggregate_id)
        if task is None or not task.mission:
            return
        if task.group is None:
            # A mission session submitted without a group is a group of one.
            task = msgspec.structs.replace(
                task, group=ev.GroupInfo(group_id=task.id, members=[task.id])
            )
        if self.config.missions and task.mission not in self.config.missions:
            return
        # One decision at a time per process: decisions on one mission must see each other.
        assert task.group is not None  # given above when the submission had none
        async with self._lock:
            if task.group.purpose == "holdout":
                await self._judge(task)
            else:
                await self._reflect(task)

    async def _task(self, session_id: str) -> ev.TaskSubmitted | None:
        for _, e in await self.events.read("session", session_id):
            if isinstance(e, ev.TaskSubmitted):
                return e
        return None

    async def _finished(self, ids: list[str]) -> dict[str, list[Event]] | None:
        sessions: dict[str, list[Event]] = {}
        for sid in ids:
            events = [e for _, e in await self.events.read("session", sid)]
            if not any(isinstance(e, ev.SessionCompleted) for e in events):
                return None
            sessions[sid] = events
        return sessions

    async def _append(self, out: MissionOut, expected: int) -> None:
        if out.events:
            await self.events.append_batch(out.events, expected=expected)
            self.decisions += 1
            log.info(
                "decided",
                mission=mev.mission_name(out.aggregate_id),
                emitted=[e.type for e in out.events],
            )

    # -- a group finished -------------------------------------------------------------------

    async def _reflect(self, task: ev.TaskSubmitted) -> None:
        group = task.group
        assert group is not None and task.mission is not None
        members = sorted(group.members or [task.id])
        sessions = await self._finished(members)
        if sessions is None:
            return  # a later completion of this group decides
        trigger = next(
            e for e in reversed(sessions[members[-1]]) if isinstance(e, ev.SessionCompleted)
        )
        for _ in range(MAX_CONFLICT_RETRIES):
            state = await self.guidance.state(task.mission)
            decided = state.decided_groups.get(group.group_id)
            if decided is not None:
                if decided in state.pending:
                    await self._ensure_holdout(state.proposals_seen[decided], task.mission)
                return
            out = MissionOut(trigger, task.mission, self.clock)
            proposal = await self._decide_group(out, state, task, sessions)
            try:
                await self._append(out, state.last_sequence)
            except ConcurrencyConflict:
                continue
            if (
                proposal is not None
                and proposal.holdout
                and proposal.id in [e.id for e in out.events]
            ):
                if not any(isinstance(e, mev.ReflectionRejected) for e in out.events):
                    await self._ensure_holdout(proposal, task.mission)
            return
        raise ConcurrencyConflict(task.mission, -1, "reflector gave up after conflicts")

    async def _decide_group(
        self,
        out: MissionOut,
        state: GuidanceState,
        task: ev.TaskSubmitted,
        sessions: dict[str, list[Event]],
    ) -> mev.ReflectionProposed | None:
        cfg = self.config
        assert task.group is not None and task.mission is not None
        gid = task.group.group_id
        signals = group_signals(sessions)
        epoch = len(state.groups) // cfg.epoch_groups
        spec = task_spec(task)
        ok, reason, why = eligibility(
            signals, cfg.eligibility, cfg.all_wrong_strategy, cfg.selection
        )
        if not ok:
            out.emit(
                mev.ReflectionRejected,
                group_id=gid,
                reason=reason,
                detail=why,
                epoch=epoch,
                task=spec,
                signals=signals,
                settings=cfg.recorded(),
            )
            return None
        mode = "diagnose" if not any(s.label_match for s in signals) else "contrast"
        library = state.lines()
        critiques: list[mev.Critique] = []
        call_ids: list[str] = []
        for sig in signals[: cfg.max_candidates]:
            events = sessions[sig.session_id]
            done = next(e for e in reversed(events) if isinstance(e, ev.SessionCompleted))
            evidence = "\n".join(
                f"{g.gate}: {'pass' if g.passed else 'FAIL'} {g.evidence[:300]}"
                for g in events
                if isinstance(g, ev.GateEvaluated) and not g.skipped
            )
            request = critic_request(
                spec,
                sig,
                library,
                summary=done.summary,
                diff=done.diff,
                evidence=evidence,
                mode=mode,
                temperature=cfg.temperature,
            )
            text, called = await self._call(out, cfg.critic_model, request, state.step)
            call_ids.append(called.id)
            if text is None:
                critiques.append(
                    mev.Critique(
                        session_id=sig.session_id,
                        model_call_id=called.id,
                        ok=False,
                        error=called.error or "no answer",
                    )
                )
                continue
            try:
                answer = parse_strict(text, CriticAnswer)
            except ReflectionAnswerError as exc:
                critiques.append(
                    mev.Critique(
                        session_id=sig.session_id, model_call_id=called.id, ok=False, error=str(exc)
                    )
                )
                continue
            critiques.append(critique_from(sig.session_id, answer, called.id))
        base: dict[str, Any] = {
            "group_id": gid,
            "epoch": epoch,
            "base_step": state.step,
            "eligibility": cfg.eligibility,
            "reason": why,
            "task": spec,
            "signals": signals,
            "critiques": critiques,
            "model_call_ids": call_ids,
        }
        if not any(c.ok for c in critiques):
            out.emit(
                mev.ReflectionRejected,
                group_id=gid,
                reason="invalid_answer",
                detail="no critic answer was valid: "
                + "; ".join(c.error for c in critiques)[:1500],
                epoch=epoch,
                task=spec,
                signals=signals,
                settings=cfg.recorded(),
            )
            return None
        request = consolidator_request(
            cfg.consolidator_template,
            mission=task.mission,
            step=state.step,
            library=library,
            group_id=gid,
            signals=signals,
            critiques=critiques,
            max_operations=cfg.max_operations,
            temperature=cfg.temperature,
        )
        text, called = await self._call(
            out, cfg.consolidator_model or cfg.critic_model, request, state.step
        )
        call_ids.append(called.id)
        consolidated: ConsolidatorAnswer | None = None
        error = called.error or "no answer"
        if text is not None:
            try:
                consolidated = parse_strict(text, ConsolidatorAnswer)
            except ReflectionAnswerError as exc:
                error = str(exc)
        if consolidated is None:
            out.emit(
                mev.ReflectionRejected,
                group_id=gid,
                reason="invalid_answer",
                detail=f"the consolidator's answer is not valid: {error}"[:1500],
                epoch=epoch,
                task=spec,
                signals=signals,
                settings=cfg.recorded(),
            )
            return None
        ops = [o.to_op() for o in consolidated.operations]
        evidence_groups = list(dict.fromkeys([gid, *consolidated.evidence_group_ids]))
        evidence_sessions = [c.session_id for c in critiques if c.ok]
        proposal_id = out.next_id
        rejection: tuple[str, str] | None = None
        planned: list[dict[str, Any]] = []
        if consolidated.action == "noop":
            rejection = ("noop", consolidated.summary or "the consolidator changed nothing")
        elif consolidated.uncertainty_note and not cfg.allow_uncertain:
            rejection = ("uncertain", consolidated.uncertainty_note)
        else:
            try:
                planned = plan_operations(
                    state,
                    ops,
                    max_operations=cfg.max_operations,
                    change_cap_per_epoch=cfg.change_cap_per_epoch,
                    epoch=epoch,
                )
            except OpsRefused as exc:
                rejection = (exc.reason, exc.detail)
        holdout_tasks: list[mev.TaskSpec] = []
        runs: list[mev.HoldoutRun] = []
        if rejection is None and not cfg.rapid_mode:
            holdout_tasks = holdout_slice(state, spec, cfg.holdout_size)
            ms = int(out.cause.ts.timestamp() * 1000)
            for t in range(len(holdout_tasks)):
                for preview in (False, True):
                    for r in range(cfg.holdout_k):
                        sid = uuid7_from(ms, f"{proposal_id}:holdout:{t}:{int(preview)}:{r}")
                        runs.append(
                            mev.HoldoutRun(session_id=sid, task_index=t, preview=preview, seed=r)
                        )
        proposal = out.emit(
            mev.ReflectionProposed,
            **base,
            action=consolidated.action,
            summary=consolidated.summary,
            critique=consolidated.critique,
            operations=ops,
            planned=[
                mev.GuidanceOp(
                    op=p["op"],
                    key=p["key"],
                    text=p["text"],
                    rationale=p["rationale"],
                    merged_from=p["merged_from"],
                )
                for p in planned
            ],
            evidence_group_ids=evidence_groups,
            evidence_session_ids=evidence_sessions,
            uncertainty_note=consolidated.uncertainty_note,
            holdout_tasks=holdout_tasks,
            holdout=runs,
            rapid=cfg.rapid_mode,
            settings=cfg.recorded(),
        )
        if rejection is not None:
            out.emit(
                mev.ReflectionRejected,
                group_id=gid,
                reason=rejection[0],
                detail=rejection[1][:1500],
                proposal_id=proposal.id,
                epoch=epoch,
            )
        elif cfg.rapid_mode:
            self._apply(out, state, planned, proposal, None, None)
        return proposal

    def _apply(
        self,
        out: MissionOut,
        state: GuidanceState,
        planned: list[dict[str, Any]],
        proposal: mev.ReflectionProposed,
        before: float | None,
        after: float | None,
    ) -> None:
        for i, fields in enumerate(planned):
            out.emit(
                mev.GuidanceOpApplied,
                **fields,
                evidence_session_ids=list(proposal.evidence_session_ids),
                proposal_id=proposal.id,
                step=state.step + i + 1,
                label_match_before=before,
                label_match_after=after,
            )

    async def _call(
        self, out: MissionOut, spec: str | None, request: Any, step: int
    ) -> tuple[str | None, ev.ModelCalled]:
        from oopav.models.base import ModelError, model_called_fields

        name = spec or self.ports.default_model or self.ports.settings.model or "-"
        try:
            backend = self.ports.model(spec)
            response = await backend.complete(request)
        except ModelError as exc:
            called = out.emit(
                ev.ModelCalled,
                **model_called_fields(request, None, name, error=exc),
                guidance_step=step,
            )
            return None, called
        called = out.emit(
            ev.ModelCalled, **model_called_fields(request, response, name), guidance_step=step
        )
        return response.text, called

    # -- holdout ----------------------------------------------------------------------------

    async def _ensure_holdout(self, proposal: mev.ReflectionProposed, mission: str) -> None:
        """Submit the proposal's holdout sessions (idempotent: their ids are fixed in the
        proposal, so a retry finds them there)."""
        members = sorted(r.session_id for r in proposal.holdout)
        group_id = derive_id(proposal.id, NAME, 10_000)
        for i, run in enumerate(proposal.holdout):
            spec = proposal.holdout_tasks[run.task_index]
            event = ev.TaskSubmitted(
                id=run.session_id,
                schema=ev.TaskSubmitted.SCHEMA,
                aggregate="session",
                aggregate_id=run.session_id,
                causation_id=None,
                correlation_id=run.session_id,
                actor=actor_name(NAME),
                ts=proposal.ts,
                instruction=spec.instruction,
                repo=spec.repo,
                mission=mission,
                budgets=msgspec.convert(spec.budgets or {}, ev.Budgets),
                policy=spec.policy,
                model=spec.model,
                test_command=spec.test_command,
                examples=[msgspec.convert(x, ev.Example) for x in spec.examples],
                group=ev.GroupInfo(
                    group_id=group_id,
                    index=i,
                    members=members,
                    temperature=0.0,
                    top_p=1.0,
                    seed=run.seed,
                    expected=spec.expected,
                    purpose="holdout",
                    proposal_id=proposal.id,
                    preview=run.preview,
                    guidance_step=proposal.base_step,
                ),
            )
            await self.events.append(event, expected=0)

    async def _judge(self, task: ev.TaskSubmitted) -> None:
        group = task.group
        assert group is not None and group.proposal_id is not None and task.mission is not None
        cfg = self.config
        for _ in range(MAX_CONFLICT_RETRIES):
            state = await self.guidance.state(task.mission)
            pid = group.proposal_id
            if pid not in state.pending:
                return
            proposal = state.proposals_seen[pid]
            sessions = await self._finished([r.session_id for r in proposal.holdout])
            if sessions is None:
                return
            preview_of = {r.session_id: r.preview for r in proposal.holdout}
            signals = {sid: candidate_signal(sid, evs) for sid, evs in sessions.items()}
            before = mean_label_match([s for sid, s in signals.items() if not preview_of[sid]])
            after = mean_label_match([s for sid, s in signals.items() if preview_of[sid]])
            delta = after - before
            out = MissionOut(proposal, task.mission, self.clock, salt=":judge")
            facts = (
                f"holdout label_match {before:.3f} -> {after:.3f} (delta {delta:+.3f}, "
                f"apply_if_delta {cfg.apply_if_delta:g}, {len(sessions)} sessions)"
            )
            if delta + 1e-9 >= cfg.apply_if_delta:
                try:
                    planned = plan_operations(
                        state,
                        list(proposal.operations),
                        max_operations=cfg.max_operations,
                        change_cap_per_epoch=cfg.change_cap_per_epoch,
                        epoch=proposal.epoch,
                    )
                except OpsRefused as exc:
                    out.emit(
                        mev.ReflectionRejected,
                        group_id=proposal.group_id,
                        reason=exc.reason,
                        detail=f"{exc.detail} (after {facts})",
                        proposal_id=pid,
                        epoch=proposal.epoch,
                        label_match_before=before,
                        label_match_after=after,
                    )
                else:
                    self._apply(out, state, planned, proposal, before, after)
            else:
                out.emit(
                    mev.ReflectionRejected,
                    group_id=proposal.group_id,
                    reason="uplift_below_delta",
                    detail=facts,
                    proposal_id=pid,
                    epoch=proposal.epoch,
                    label_match_before=before,
                    label_match_after=after,
                )
            try:
                await self._append(out, state.last_sequence)
            except ConcurrencyConflict:
                continue
            return
        raise ConcurrencyConflict(task.mission, -1, "reflector gave up after conflicts")
