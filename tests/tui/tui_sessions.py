"""Sessions for the TUI tests: events built with the factory, fixed ids and a manual clock,
appended straight to the stream (faster than running the loop, and deterministic)."""

from __future__ import annotations

from datetime import UTC, datetime

from oopav.events import catalog as ev
from oopav.events.actions import FinishAction, SearchReplaceAction, SearchReplaceEdit
from oopav.events.catalog import Event
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIFF = (
    "diff --git a/webtool/client.py b/webtool/client.py\n"
    "--- a/webtool/client.py\n"
    "+++ b/webtool/client.py\n"
    "@@ -1,2 +1,2 @@\n"
    "-def fetch(url):\n"
    "+def fetch_page(url):\n"
)


class SessionBuilder:
    """One session's events, in the loop's order, each caused by the previous one."""

    def __init__(self, instruction: str, *, seed: int, start: datetime = T0) -> None:
        self.clock = ManualClock(start, step=0.5)
        self.ids = IdGenerator(self.clock, seed=seed)
        self.task = root_event(
            ev.TaskSubmitted,
            handler="intake",
            clock=self.clock,
            ids=self.ids,
            instruction=instruction,
            repo="/srv/repo",
            test_command=["python", "-m", "pytest"],
        )
        self.last: Event = self.task
        self.index = 0

    @property
    def session_id(self) -> str:
        return self.task.aggregate_id

    def next(self, cls: type[Event], handler: str, **fields: object) -> Event:
        self.index += 1
        event = caused_event(
            cls, self.last, handler=handler, index=self.index, clock=self.clock, **fields
        )
        self.last = event
        return event

    def until_plan(self) -> list[Event]:
        return [
            self.task,
            self.next(
                ev.WorkspacePrepared,
                "observer",
                path="/tmp/ws",
                base_commit="0123456789abcdef",
                branch="oopav/x",
            ),
            self.next(ev.ObservationRecorded, "observer", files_total=4),
            self.next(
                ev.OrientReported,
                "orient",
                risk_band="yellow",
                evidence_gap=0.25,
                category="rename",
                complexity=2,
                test_decision="required",
                reasons=["rename touches 3 files"],
            ),
            self.next(
                ev.PlanProposed,
                "planner",
                steps=[
                    ev.PlanStep(id=1, description="rename fetch in client.py"),
                    ev.PlanStep(id=2, description="run the tests"),
                ],
                files=["webtool/client.py"],
                test_decision="required",
            ),
            self.next(
                ev.ModelCalled,
                "planner",
                role="planner",
                backend="scripted",
                request_hash="h1",
                request={},
                response="{}",
                prompt_tokens=100,
                completion_tokens=20,
            ),
        ]

    def act(self) -> list[Event]:
        proposed = self.next(
            ev.ActionProposed,
            "actor",
            action=SearchReplaceAction(
                edits=[SearchReplaceEdit(path="webtool/client.py", search="fetch", replace="x")]
            ),
            action_hash="abcdef0123",
            step=1,
        )
        applied = self.next(
            ev.ActionApplied,
            "actor",
            action_id=proposed.id,
            files_changed=["webtool/client.py"],
            diff=DIFF,
        )
        return [proposed, applied]

    def finish(self) -> list[Event]:
        return [
            self.next(
                ev.ActionProposed,
                "actor",
                action=FinishAction(summary="renamed"),
                action_hash="ffff000011",
                step=2,
            ),
            self.next(ev.GateEvaluated, "verifier", gate="stubs", passed=True),
            self.next(ev.GateEvaluated, "verifier", gate="tests", passed=True, evidence="3 passed"),
            self.next(ev.VerificationCompleted, "verifier", passed=True, gates=["stubs", "tests"]),
            self.next(
                ev.SessionCompleted,
                "verifier",
                outcome="success",
                summary="fetch is now fetch_page",
                diff=DIFF,
            ),
        ]

    def complete(self) -> list[Event]:
        return [*self.until_plan(), *self.act(), *self.finish()]
