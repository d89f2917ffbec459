"""observer: prepares the workspace, records the baseline, and after every applied action
records what changed and what should happen next (DESIGN "The loop", step 2).

The decisions are explicit rules (``rules.observer``); this module gathers the facts and makes
the decision act (issue 17 §3):

- ``negative_example``: the workspace goes back to the checkpoint before the action
  (``workspace_rolled_back``, the action named as rejected for the next prompt);
- ``more_evidence``: targeted evidence is gathered (``evidence_gathered``), then acting goes on;
- ``replan``: ``replan_triggered``, within the policy's replan cap and cooldown;
- ``escalate``: a person is asked (``human_input_requested``).

Red orient reports ask it for evidence as well; with red risk, a ``required`` test decision (or
``policy.tests_per_action``) the tests run after every file change, in the project's environment,
so "tests passed before, fail after" can fire."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
from pathlib import Path

from oopav.bus.consumer import Delivery
from oopav.decide import ObserverFacts, decide_observer_action, new_findings, scan_tree
from oopav.decide.gates import base_decision, describe_action
from oopav.decide.policy import decision_policy
from oopav.events import catalog as ev
from oopav.events.catalog import Event, Finding, TestRun
from oopav.handlers.ports import Ports, exec_key
from oopav.handlers.runtime import Emitter
from oopav.handlers.support.baseline import baseline_unrunnable, environment_spec, probe_environment
from oopav.handlers.support.completion import complete
from oopav.handlers.support.steps import ask_person, roll_back
from oopav.handlers.support.workspace import workspace_path
from oopav.projections.session import SessionState
from oopav.sandbox.files import WorkspaceFiles

NAME = "observer"
FILE_ACTIONS = ("ast_grep", "search_replace", "write_file")
# Rejections that mean the action's target was not where the actor thought (rule 6).
MISSED = ("no_match", "file_not_found", "no_files")


class Observer:
    name = NAME
    subscribes = ("task_submitted", "action_applied", "orient_reported", "action_rejected")

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
        elif isinstance(event, ev.ActionRejected) and event.reason in MISSED:
            await self._missed(event, state, out)
        return out.events

    async def _missed(self, event: ev.ActionRejected, state: SessionState, out: Emitter) -> None:
        """Rule 6 for an action whose target was not there (a pattern that matched nothing, a
        file that does not exist): the actor's picture of the code is wrong, so look again
        (``more_evidence``) before it acts on it."""
        if state.workspace is None or state.task is None or state.phase == "completed":
            return
        rec = state.action(event.action_id)
        reasons = [f"rule 6: the action's target was not found ({event.reason}): look again"]
        out.emit(
            ev.ObservationRecorded,
            phase="change",
            files_total=state.baseline.files_total if state.baseline else 0,
            observer_action="more_evidence",
            reasons=reasons,
            source_event=event.id,
        )
        await self._gather(
            event,
            state,
            out,
            round_=len(state.evidence) + 1,
            reason=reasons[0],
            trigger="observer",
            extra_text=_action_text(rec.action) if rec is not None else "",
        )

    async def _baseline(
        self, event: ev.TaskSubmitted, state: SessionState, out: Emitter, delivery: Delivery | None
    ) -> None:
        from oopav.handlers.support.repo_check import repo_problem
        from oopav.handlers.support.workspace import (
            restored_tree,
            settle_tree,
            start_storing_tree,
        )
        from oopav.history.blobs import BlobError
        from oopav.sandbox.workspace import WorkspaceError, prepare_workspace

        ports = out.ports
        try:
            restored = await restored_tree(event, ports)
        except BlobError as exc:
            await complete(
                out,
                state,
                "aborted",
                f"cannot restore the starting tree: {exc}",
                reason="workspace",
            )
            return
        # The intake refuses these already; a task that reached the stream another way must
        # still never make the observer walk /proc or copy a home directory. A restored tree
        # comes from the store: the repository is not read (it may be gone).
        problem = None if restored else await asyncio.to_thread(repo_problem, event.repo)
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
                functools.partial(
                    prepare_workspace,
                    isolated_at=None if restored else pinned,
                    source=restored.path if restored else None,
                ),
                Path(event.repo),
                event.aggregate_id,
                ports.settings,
            )
        except (WorkspaceError, OSError) as exc:
            await complete(
                out, state, "aborted", f"cannot prepare the workspace: {exc}", reason="workspace"
            )
            return
        finally:
            if restored is not None and restored.temporary:
                await asyncio.to_thread(shutil.rmtree, restored.path, True)
        tree, storing = await start_storing_tree(Path(info.path), ports)
        ws = out.emit(
            ev.WorkspacePrepared,
            path=info.path,
            base_commit=info.base_commit,
            branch=info.branch,
            kind=restored.kind if restored else info.kind,
            repo=restored.repo if restored else info.repo,
            uncommitted=info.uncommitted,
            tree=tree,
        )
        state.workspace = ws
        try:
            await self._after_workspace(event, state, out, Path(info.path))
        except BaseException:
            if storing is not None:
                storing.cancel()
            raise
        await settle_tree(storing, out.events, ws)

    async def _after_workspace(
        self, event: ev.TaskSubmitted, state: SessionState, out: Emitter, root: Path
    ) -> None:
        ports = out.ports
        if event.examples:
            from oopav.handlers.support.examples_check import examples_match_nothing
            from oopav.handlers.support.model_calls import model_spec

            if model_spec(state, ports).startswith("synth:"):
                # Before any test: a learned rule that matches nothing can only be retried.
                why = await asyncio.to_thread(examples_match_nothing, root, list(event.examples))
                if why is not None:
                    await complete(out, state, "failed", why, reason="examples_match_nothing")
                    return
        await self._observe_baseline(event, state, out, round_=0)

    async def _observe_baseline(
        self, cause: Event, state: SessionState, out: Emitter, round_: int
    ) -> None:
        """The first baseline is reused when the same tree, environment and command were
        measured before (``baseline_reused``; handlers/support/baseline_cache.py), unless the
        policy says ``fresh_baseline``; later rounds always measure."""
        cache = out.ports.baselines
        task = state.task or cause
        if round_ != 0 or cache is None or state.workspace is None:
            await self._measure_baseline(cause, state, out, round_)
            return
        root = Path(state.workspace.path)
        argv = list(getattr(task, "test_command", None) or [])
        budgets = getattr(task, "budgets", None)  # the task, or the cause standing in for it
        timeout_s = min(300.0, budgets.wall_seconds_per_phase if budgets is not None else 300.0)
        async with cache.claim(
            state.session_id,
            root,
            task,
            argv,
            timeout_s=timeout_s,
            fresh=decision_policy(state).fresh_baseline,
            deadline_s=timeout_s + 120.0,
        ) as claim:
            if claim.hit is not None:
                self._reuse_baseline(cause, out, claim)
                return
            observed, stop = await self._measure_baseline(cause, state, out, round_)
            if stop is None and observed is not None:
                claim.store(state.session_id, observed)

    def _reuse_baseline(self, cause: Event, out: Emitter, claim) -> None:  # type: ignore[no-untyped-def]
        hit, key = claim.hit, claim.key
        out.emit(
            ev.BaselineReused,
            key=key.key,
            from_session=hit.session_id,
            from_event=hit.event_id,
            tree=key.tree,
            environment=key.environment,
            command=list(key.command),
            saved_ms=hit.measured_ms,
        )
        tests = hit.tests
        decision = decide_observer_action(
            ObserverFacts(phase="baseline", tests_before=tests.passed if tests else None)
        )
        out.emit(
            ev.ObservationRecorded,
            phase="baseline",
            files_total=hit.files_total,
            parse_errors=list(hit.parse_errors),
            stubs=list(hit.stubs),
            tests=tests,
            languages=dict(hit.languages),
            observer_action=decision.action,
            reasons=[*decision.reasons, f"baseline reused from session {hit.session_id}"],
            source_event=cause.id,
            execs=list(hit.execs),
        )

    async def _measure_baseline(
        self, cause: Event, state: SessionState, out: Emitter, round_: int
    ) -> tuple[ev.ObservationRecorded | None, str | None]:
        root = workspace_path(state)
        # The stub/parse scan reads files only: it runs beside the probe and the suite (a
        # separate process) instead of before them (0.6 s on idna's 400 KB data modules). The
        # files are listed before the suite starts, so what a test writes is never counted.
        from oopav.decide.stubs import tree_files

        files = WorkspaceFiles(root)
        paths = await asyncio.to_thread(tree_files, files)
        scan = asyncio.ensure_future(
            asyncio.to_thread(functools.partial(scan_tree, files, listed=paths))
        )
        # The planner's repo map parses the tree next; its tags cache (disposable, keyed by
        # file content: the planner's own directory) is filled while the suite runs instead.
        warm = (
            asyncio.ensure_future(
                asyncio.to_thread(
                    _warm_repo_map, root, out.ports.settings.data_dir / "cache" / "repomap"
                )
            )
            if round_ == 0
            else None
        )
        try:
            result = await self._measure_with(cause, state, out, round_, root, scan)
        except BaseException:
            if warm is not None:
                warm.cancel()
            raise
        finally:
            if not scan.done():
                scan.cancel()
        if warm is not None:
            await warm  # a few tenths of a second at most; the planner would pay it after
        return result

    async def _measure_with(
        self,
        cause: Event,
        state: SessionState,
        out: Emitter,
        round_: int,
        root: Path,
        scan: asyncio.Future[tuple[list[Finding], list[Finding], dict[str, int], int]],
    ) -> tuple[ev.ObservationRecorded | None, str | None]:
        ports = out.ports
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
            rec = await ports.sandbox.run(
                test_command,
                workspace=root,
                session_id=state.session_id,
                key=key,
                purpose="baseline_tests",
                timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),  # type: ignore[attr-defined]  # a test_command: task is the TaskSubmitted
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
        stubs, parse_errors, languages, total = await scan
        decision = decide_observer_action(
            ObserverFacts(phase="baseline", tests_before=tests.passed if tests else None)
        )
        observed = out.emit(
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
        return observed, stop

    async def _more_evidence(
        self, event: ev.OrientReported, state: SessionState, out: Emitter
    ) -> None:
        if state.workspace is None or state.task is None:
            return
        round_ = event.evidence_rounds + 1
        await self._gather(
            event,
            state,
            out,
            round_=round_,
            reason=f"orient rated the task {event.risk_band}: evidence round {round_}",
            trigger="orient",
        )

    async def _gather(
        self,
        cause: Event,
        state: SessionState,
        out: Emitter,
        *,
        round_: int,
        reason: str,
        trigger: str,
        extra_text: str = "",
    ) -> None:
        """Targeted evidence (``rules.evidence``) and, when no test result exists yet, one
        test run (the task's command, else a detected one)."""
        from oopav.decide.evidence import gather
        from oopav.decide.tests import detect_test_command

        task = state.task
        assert task is not None
        root = workspace_path(state)
        text = task.instruction + ("\n" + extra_text if extra_text else "")
        items = await asyncio.to_thread(gather, WorkspaceFiles(root), text, round_)
        tests: TestRun | None = None
        execs = []
        known = (state.baseline is not None and state.baseline.tests is not None) or any(
            g.tests is not None for g in state.evidence
        )
        if trigger == "orient" and not known:
            argv = list(task.test_command or [])
            if not argv:
                detected, _ = await asyncio.to_thread(detect_test_command, WorkspaceFiles(root))
                argv = detected or []
            if argv:
                tests, rec = await self._run_tests(cause, state, out, root, argv, "evidence_tests")
                execs.append(rec)
        out.emit(
            ev.EvidenceGathered,
            round=round_,
            reason=reason,
            items=items,
            tests=tests,
            execs=execs,
            source_event=cause.id,
            trigger=trigger,
        )

    async def _run_tests(
        self,
        cause: Event,
        state: SessionState,
        out: Emitter,
        root: Path,
        argv: list[str],
        purpose: str,
    ) -> tuple[TestRun, ev.ExecRecord]:
        task = state.task
        assert task is not None
        from oopav.handlers.support.baseline_cache import run_tests

        rec = await run_tests(
            out.ports,
            state,
            argv,
            root=root,
            key=exec_key(cause.id, purpose, argv),
            purpose=purpose,
            timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),
            report=True,  # per-test results, and the tests gate on the same tree reuses it
        )
        assert rec is not None  # run_tests returns None only when asked to peek
        return (
            TestRun(
                argv=argv,
                exit_code=rec.exit_code if rec.exit_code is not None else -1,
                passed=rec.exit_code == 0 and not rec.timed_out,
                timed_out=rec.timed_out,
                output_tail=(rec.stdout_tail + rec.stderr_tail)[-2000:],
                duration_ms=rec.duration_ms,
            ),
            rec,
        )

    async def _run_suite(
        self,
        event: Event,
        state: SessionState,
        out: Emitter,
        root: Path,
        argv: list[str],
        changed: list[str],
    ) -> tuple[TestRun, list[ev.ExecRecord]]:
        """The tests after an action: the affected tests first (a break fails fast), then the
        rest (handlers/support/affected.py); passed means no test the baseline passed fails."""
        from oopav.decide.gates import baseline_tests
        from oopav.handlers.support.affected import run_suite

        task = state.task
        assert task is not None
        suite = await run_suite(
            out.ports,
            state,
            argv,
            root=root,
            changed=changed,
            cause_id=event.id,
            purpose="action_tests",
            timeout_s=min(300.0, task.budgets.wall_seconds_per_phase),
            base=baseline_tests(state),
        )
        last = suite.records[-1]
        return (
            TestRun(
                argv=argv,
                exit_code=last.exit_code if last.exit_code is not None else -1,
                passed=suite.passed,
                timed_out=any(r.timed_out for r in suite.records),
                output_tail=(suite.evidence + "\n" + last.stdout_tail + last.stderr_tail)[-2000:],
                duration_ms=sum(r.duration_ms for r in suite.records),
            ),
            suite.records,
        )

    async def _after_action(
        self, event: ev.ActionApplied, state: SessionState, out: Emitter
    ) -> None:
        rec = state.action(event.action_id)
        kind = rec.type if rec else ""
        if kind == "finish":
            return
        task = state.task
        policy = decision_policy(state)
        root = Path(state.workspace.path) if state.workspace else None
        new_stubs: list[Finding] = []
        new_errors: list[Finding] = []
        if root is not None and event.files_changed:
            stubs, errors, _, _ = await asyncio.to_thread(
                scan_tree, WorkspaceFiles(root), list(event.files_changed)
            )
            base = state.baseline
            changed = set(event.files_changed)
            before_stubs = [f for f in (base.stubs if base else []) if f.path in changed]
            before_errors = [f for f in (base.parse_errors if base else []) if f.path in changed]
            new_stubs = new_findings(before_stubs, stubs)
            new_errors = new_findings(before_errors, errors)
        failures = 0
        # Failures of the current plan only: a (perturbed) replan starts the count again.
        for a in reversed(state.actions[state.plan_actions_start :]):
            if a.status in ("failed", "rejected"):
                failures += 1
            elif a.status == "applied":
                break
        if not event.ok:
            failures = max(failures, 1)
        tests_before = _tests_before(state, rec.id if rec else None)
        tests_after: TestRun | None = None
        execs = []
        if root is not None and task is not None and event.ok and event.files_changed:
            if _tests_per_action(state, policy.tests_per_action) and tests_before is not None:
                argv = _test_argv(state)
                if argv:
                    tests_after, suite_execs = await self._run_suite(
                        event, state, out, root, argv, list(event.files_changed)
                    )
                    execs += suite_execs
        decision = decide_observer_action(
            ObserverFacts(
                phase="change",
                new_parse_errors=new_errors,
                new_stubs=new_stubs,
                tests_before=tests_before,
                tests_after=tests_after.passed if tests_after is not None else None,
                changed_files=list(event.files_changed),
                expected_change=kind in FILE_ACTIONS,
                consecutive_failures=failures,
                touched_paths=list(event.files_changed),
                expected_broken=_expected_broken(state, rec.step if rec else 0),
                perturbed=state.stuck > 0,
            )
        )
        action, reasons = decision.action, list(decision.reasons)
        if action == "replan":
            cap = policy.replans.cap
            since = len(state.actions) - state.last_observer_replan_at
            if state.observer_replans >= cap:
                action = "escalate"
                reasons.append(f"replan cap: {state.observer_replans} observer replans (cap {cap})")
            elif state.last_observer_replan_at >= 0 and since <= policy.replans.cooldown_actions:
                action = "negative_example"
                reasons.append(
                    f"replan cooldown: {since} action(s) since the last replan "
                    f"(cooldown {policy.replans.cooldown_actions}); rolling the step back instead"
                )
        out.emit(
            ev.ObservationRecorded,
            phase="change",
            files_total=state.baseline.files_total if state.baseline else 0,
            parse_errors=new_errors,
            stubs=new_stubs,
            tests=tests_after,
            changed_files=list(event.files_changed),
            observer_action=action,
            reasons=reasons,
            source_event=event.id,
            execs=execs,
        )
        if action == "negative_example" and rec is not None and rec.status == "applied":
            await roll_back(
                out,
                state,
                _checkpoint_before(state, rec.id),
                [rec],
                reason="; ".join(reasons),
                rejected=[f"{describe_action(rec.action)}: " + "; ".join(r for r in reasons)[:300]],
            )
        elif action == "more_evidence" and state.workspace is not None and task is not None:
            await self._gather(
                event,
                state,
                out,
                round_=len(state.evidence) + 1,
                reason="; ".join(reasons),
                trigger="observer",
                extra_text=_action_text(rec.action) if rec is not None else "",
            )
        elif action == "replan":
            evidence = _findings_text(new_errors + new_stubs)
            if tests_after is not None and not tests_after.passed:
                evidence = (evidence + "\n" + tests_after.output_tail).strip()
            out.emit(
                ev.ReplanTriggered,
                source=NAME,
                reason="; ".join(reasons) or "the observer asks for a new plan",
                evidence=evidence,
                attempt=state.plans + 1,
            )
        elif action == "escalate":
            opinion = await _second_opinion(state, out, reasons)
            ask_person(
                out,
                state,
                question="The observer escalates: "
                + "; ".join(reasons)
                + ". Replan, or abort the session?"
                + (f" ({opinion})" if opinion else ""),
                options=["replan", "abort"],
                kind="escalation",
                context="\n".join([*reasons, opinion]).strip(),
            )


async def _second_opinion(state: SessionState, out: Emitter, reasons: list[str]) -> str:
    """With ``policy.critic.on`` holding ``escalation``, the critic reviews the change so far and
    the reasons for escalating; its verdict is shown to the person, who still decides."""
    from oopav.handlers.support.critic import review
    from oopav.handlers.support.workspace import final_diff
    from oopav.reflection.critique import build_pack, critic_config

    task = state.task
    cfg = critic_config(task.policy) if task is not None else None
    if task is None or cfg is None or "escalation" not in cfg.on:
        return ""
    asked = cfg.instructions or decision_policy(state).critic_instructions or ""
    pack = build_pack(
        task.instruction,
        [f"{s.id}. {s.description}" for s in (state.plan.steps if state.plan else [])],
        await final_diff(state, out.ports),
        [],
        instructions=(
            asked + "\nThe loop escalates to a person because: " + "; ".join(reasons)
        ).strip(),
        shown=cfg.allowed_artifact_fields,
    )
    said = await review(state, out, pack, cfg, "escalation")
    if said.skipped is not None:
        return f"critic: {said.skipped}"
    return f"the critic's second opinion: {said.verdict}: " + "; ".join(said.reasons)


def _warm_repo_map(root: Path, cache_dir: Path) -> None:
    """``context.repomap.warm_repo_map``; a map is an aid: a failure here only costs the
    planner the parse it would have done anyway."""
    from oopav.context.repomap import warm_repo_map

    with contextlib.suppress(Exception):
        warm_repo_map(root, cache_dir)


def _expected_broken(state: SessionState, step: int) -> bool:
    """Whether the current plan marks ``step`` as leaving the tests failing on purpose."""
    steps = state.plan.steps if state.plan else []
    return any(s.id == step and s.tests_may_fail for s in steps)


def _tests_before(state: SessionState, action_id: str | None = None) -> bool | None:
    """The tests before this action: after the last earlier action still applied that the
    tests ran after (skipping steps the plan marks ``tests_may_fail``), else at baseline.
    Compared with the previous step, not the baseline, so a step after a breaking one is
    not blamed for what it did not break."""
    if action_id is not None:
        mine = [i for i, a in enumerate(state.actions) if a.id == action_id]
        end = mine[0] if mine else len(state.actions)
        for a in reversed(state.actions[:end]):
            if a.status != "applied" or a.tests is None:
                continue
            if _expected_broken(state, a.step) and not a.tests:
                continue  # a planned broken state: compare with what came before it
            return a.tests
    if state.baseline is not None and state.baseline.tests is not None:
        return state.baseline.tests.passed
    for g in reversed(state.evidence):
        if g.tests is not None:
            return g.tests.passed
    return None


def _test_argv(state: SessionState) -> list[str]:
    if state.task is not None and state.task.test_command:
        return list(state.task.test_command)
    for g in reversed(state.evidence):
        if g.tests is not None:
            return list(g.tests.argv)
    return []


def _tests_per_action(state: SessionState, switch: bool | None) -> bool:
    """Tests after every file change: when the policy says so, else when risk is red or the
    test decision (orient's, or the plan's) is ``required`` — so rule 5 (tests passed before,
    fail after → replan) can fire on every decision that asks for tests."""
    if switch is not None:
        return switch
    if state.orient is not None and state.orient.risk_band in ("red", "black"):
        return True
    return state.orient is not None and base_decision(state) == "required"


def _checkpoint_before(state: SessionState, action_id: str) -> str:
    prior = None
    for a in state.actions:
        if a.id == action_id:
            break
        if a.status == "applied" and a.checkpoint:
            prior = a.checkpoint
    return prior or state.good_checkpoint or state.workspace.base_commit  # type: ignore[union-attr]  # a session with actions has its workspace


def _action_text(action: object) -> str:
    """The names an action worked on, for the evidence search (paths and quoted text)."""
    parts: list[str] = []
    for e in getattr(action, "edits", []) or []:
        parts.append(f"{e.path} `{_first_ident(e.search)}`")
    if getattr(action, "path", None):
        parts.append(str(action.path))  # type: ignore[attr-defined]  # duck-typed action: path checked by getattr above
    return " ".join(parts)


def _first_ident(text: str) -> str:
    import re

    m = re.search(r"[A-Za-z_][A-Za-z0-9_]{2,}", text.replace("def ", " ").replace("class ", " "))
    return m.group(0) if m else ""


def _findings_text(findings: list[Finding]) -> str:
    return "\n".join(f"{f.path}:{f.line}: {f.kind}: {f.message}" for f in findings[:20])
