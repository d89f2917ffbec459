"""observer: prepares the workspace, records the baseline, and after every applied action
records what changed and what should happen next (DESIGN "The loop", step 2).

The decisions are explicit rules (``rules.observer``); this module gathers the facts."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from oopav.bus.consumer import Delivery
from oopav.events import catalog as ev
from oopav.events.catalog import Event, Finding, TestRun
from oopav.handlers.baseline import baseline_unrunnable, environment_spec, probe_environment
from oopav.handlers.common import complete
from oopav.handlers.ports import Ports, exec_key
from oopav.handlers.rules import ObserverFacts, decide_observer_action, new_findings, scan_tree
from oopav.handlers.runtime import Emitter
from oopav.projections.session import SessionState

NAME = "observer"
FILE_ACTIONS = ("ast_grep", "search_replace", "write_file")


class Observer:
    name = NAME
    subscribes = ("task_submitted", "action_applied", "orient_reported")

    async def handle(
        self, event: Event, state: SessionState, ports: Ports, delivery: Delivery | None
    ) -> list[Event]:
        out = Emitter(event, NAME, ports)
        if isinstance(event, ev.TaskSubmitted):
            await self._baseline(event, state, out, delivery)
        elif isinstance(event, ev.ActionApplied):
            await self._after_action(event, state, out)
        elif isinstance(event, ev.OrientReported) and event.gate == "gather_evidence":
            await self._more_evidence(event, state, out)
        return out.events

    async def _baseline(
        self, event: ev.TaskSubmitted, state: SessionState, out: Emitter, delivery: Delivery | None
    ) -> None:
        from oopav.handlers.repo_check import repo_problem
        from oopav.sandbox.workspace import WorkspaceError, prepare_workspace

        ports = out.ports
        # The intake refuses these already; a task that reached the stream another way must
        # still never make the observer walk /proc or copy a home directory.
        problem = await asyncio.to_thread(repo_problem, event.repo)
        if problem is not None:
            await complete(
                out,
                state,
                "aborted",
                f"cannot prepare the workspace: {problem}",
                reason="workspace",
            )
            return
        try:
            pinned = (ports.pinned_base or {}).get(event.aggregate_id)
            info = await asyncio.to_thread(
                functools.partial(prepare_workspace, isolated_at=pinned),
                Path(event.repo),
                event.aggregate_id,
                ports.settings,
            )
        except (WorkspaceError, OSError) as exc:
            await complete(
                out, state, "aborted", f"cannot prepare the workspace: {exc}", reason="workspace"
            )
            return
        ws = out.emit(
            ev.WorkspacePrepared,
            path=info.path,
            base_commit=info.base_commit,
            branch=info.branch,
            kind=info.kind,
            repo=info.repo,
            uncommitted=info.uncommitted,
        )
        state.workspace = ws  # type: ignore[assignment]
        await self._observe_baseline(event, state, out, round_=0)

    async def _observe_baseline(
        self, cause: Event, state: SessionState, out: Emitter, round_: int
    ) -> None:
        ports = out.ports
        root = Path(state.workspace.path)  # type: ignore[union-attr]
        stubs, parse_errors, languages, total = await asyncio.to_thread(scan_tree, root)
        tests: TestRun | None = None
        execs = []
        task = state.task or cause
        test_command = getattr(task, "test_command", None)
        # realproj (issue 16): the project's env must import the workspace; the suite must run.
        stop: str | None = None
        if round_ == 0:
            probe, stop = await probe_environment(state, task, root, ports, cause.id)
            execs += [probe] if probe is not None else []
        if test_command and stop is None:
            key = exec_key(cause.id, "baseline_tests", test_command)
            rec = await ports.sandbox.run(  # type: ignore[union-attr]
                test_command,
                workspace=root,
                session_id=state.session_id,
                key=key,
                purpose="baseline_tests",
                timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),  # type: ignore[union-attr]
                environment=environment_spec(task),
                report=True,
            )
            stop = baseline_unrunnable(rec)
            execs.append(rec)
            tests = TestRun(
                argv=list(test_command),
                exit_code=rec.exit_code if rec.exit_code is not None else -1,
                passed=rec.exit_code == 0 and not rec.timed_out,
                timed_out=rec.timed_out,
                output_tail=(rec.stdout_tail + rec.stderr_tail)[-2000:],
                duration_ms=rec.duration_ms,
            )
        decision = decide_observer_action(
            ObserverFacts(phase="baseline", tests_before=tests.passed if tests else None)
        )
        out.emit(
            ev.ObservationRecorded,
            phase="baseline",
            files_total=total,
            parse_errors=parse_errors[:200],
            stubs=stubs[:200],
            tests=tests,
            languages=languages,
            observer_action=decision.action,
            reasons=decision.reasons + ([f"evidence round {round_}"] if round_ else []),
            source_event=cause.id,
            execs=execs,
        )
        if stop is not None:
            await complete(out, state, "failed", stop, reason="environment")

    async def _more_evidence(
        self, event: ev.OrientReported, state: SessionState, out: Emitter
    ) -> None:
        if state.workspace is None:
            return
        await self._observe_baseline(event, state, out, round_=event.evidence_rounds + 1)

    async def _after_action(
        self, event: ev.ActionApplied, state: SessionState, out: Emitter
    ) -> None:
        rec = state.action(event.action_id)
        kind = rec.type if rec else ""
        if kind == "finish":
            return
        root = Path(state.workspace.path) if state.workspace else None
        new_stubs: list[Finding] = []
        new_errors: list[Finding] = []
        if root is not None and event.files_changed:
            stubs, errors, _, _ = await asyncio.to_thread(
                scan_tree, root, list(event.files_changed)
            )
            base = state.baseline
            changed = set(event.files_changed)
            before_stubs = [f for f in (base.stubs if base else []) if f.path in changed]
            before_errors = [f for f in (base.parse_errors if base else []) if f.path in changed]
            new_stubs = new_findings(before_stubs, stubs)
            new_errors = new_findings(before_errors, errors)
        failures = 0
        for a in reversed(state.actions):
            if a.status in ("failed", "rejected"):
                failures += 1
            elif a.status == "applied":
                break
        if not event.ok:
            failures = max(failures, 1)
        baseline_tests = (
            state.baseline.tests.passed if state.baseline and state.baseline.tests else None
        )
        decision = decide_observer_action(
            ObserverFacts(
                phase="change",
                new_parse_errors=new_errors,
                new_stubs=new_stubs,
                tests_before=baseline_tests,
                changed_files=list(event.files_changed),
                expected_change=kind in FILE_ACTIONS,
                consecutive_failures=failures,
                touched_paths=list(event.files_changed),
            )
        )
        out.emit(
            ev.ObservationRecorded,
            phase="change",
            files_total=state.baseline.files_total if state.baseline else 0,
            parse_errors=new_errors,
            stubs=new_stubs,
            changed_files=list(event.files_changed),
            observer_action=decision.action,
            reasons=decision.reasons,
            source_event=event.id,
        )
        if decision.action == "replan":
            out.emit(
                ev.ReplanTriggered,
                source=NAME,
                reason="; ".join(decision.reasons) or "the observer asks for a new plan",
                evidence=_findings_text(new_errors + new_stubs),
                attempt=state.plans + 1,
            )
        elif decision.action == "escalate":
            await complete(
                out,
                state,
                "aborted",
                "escalated to a human: " + "; ".join(decision.reasons),
                reason="escalate",
            )


def _findings_text(findings: list[Finding]) -> str:
    return "\n".join(f"{f.path}:{f.line}: {f.kind}: {f.message}" for f in findings[:20])
