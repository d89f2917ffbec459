"""Teacher demonstrations recorded as sessions on the stream.

A codemod task solved by a teacher (its gold rule, or a deliberately wrong one) becomes the
events a real session would have: ``task_submitted`` (with the pre/post example),
``model_called`` (the actor prompt and the answer), ``action_proposed``, ``action_applied``
(the diff) and ``session_completed`` (success when the result equals ``post``). Datasets are
then built from the stream exactly as from live sessions, which is how the learning bench
trains "off the stream" without running thousands of sandboxed sessions.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from oopav.bus.store import EventStore
from oopav.events import catalog as ev
from oopav.events.actions import AstGrepAction, action_hash, decode_action
from oopav.events.catalog import Event, Example
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator
from oopav.models.base import Message, ModelRequest, ModelResponse, model_called_fields
from oopav.models.prompt import output_schema
from oopav.trainer.tasks import Task, apply_rule, target_text, task_messages


def corrupt(task: Task) -> AstGrepAction:
    """A plausible wrong answer: the rewrite names something else."""
    a = task.action()
    rewrite = (a.rewrite or "").replace("(", "_old(", 1)
    return AstGrepAction(pattern=a.pattern, rewrite=rewrite, language=a.language)


def session_events(
    task: Task, answer: AstGrepAction | None, ids: IdGenerator, clock: ManualClock
) -> list[Event]:
    """The events of one session in which the actor answered ``answer`` (default: gold)."""
    import json

    action = answer or task.action()
    text = target_text(json.loads(json.dumps(_builtins(action))))
    submitted = root_event(
        ev.TaskSubmitted,
        handler="intake",
        ids=ids,
        clock=clock,
        instruction=task.instruction,
        repo=f"/synthetic/{task.source}",
        mission=f"synthetic-{task.family}",
        examples=[Example(before=task.pre, after=task.post, path=task.source)],
    )
    request = ModelRequest(
        role="actor",
        messages=[Message(**m) for m in task_messages(task.instruction, task.pre, task.language)],  # type: ignore[arg-type]  # task_messages' roles are system/user
        schema=output_schema("actor"),
        envelope="action",
    )
    called = caused_event(
        ev.ModelCalled,
        submitted,
        handler="actor",
        index=0,
        clock=clock,
        **model_called_fields(request, ModelResponse(text=text), "teacher"),
    )
    parsed = decode_action(json.dumps(_builtins(action)))
    proposed = caused_event(
        ev.ActionProposed,
        submitted,
        handler="actor",
        index=1,
        clock=clock,
        action=parsed,
        action_hash=action_hash(parsed),
        step=1,
        model_call_id=called.id,
    )
    out, _ = apply_rule(action, task.pre)
    diff = "".join(
        difflib.unified_diff(
            task.pre.splitlines(True), out.splitlines(True), f"a/{task.source}", f"b/{task.source}"
        )
    )
    applied = caused_event(
        ev.ActionApplied,
        proposed,
        handler="actor",
        index=0,
        clock=clock,
        action_id=proposed.id,
        ok=True,
        diff=diff,
        files_changed=[task.source],
    )
    success = out == task.post
    done = caused_event(
        ev.SessionCompleted,
        applied,
        handler="verifier",
        index=0,
        clock=clock,
        outcome="success" if success else "failed",
        diff=diff,
        reason="" if success else "tests_failed",
    )
    return [submitted, called, proposed, applied, done]


def _builtins(action: AstGrepAction) -> dict[str, Any]:
    import msgspec

    return msgspec.to_builtins(action)


async def publish_demonstrations(
    store: EventStore,
    tasks: Sequence[Task],
    *,
    wrong: Sequence[bool] | None = None,
    seed: int = 0,
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
) -> list[str]:
    """Append one session per task (``wrong[i]``: the teacher answers wrongly), timed from
    ``start`` (so ``export --since`` can tell two teachers apart); session ids."""
    clock = ManualClock(start, step=0.001)
    ids = IdGenerator(clock, seed=seed)
    sids = []
    for i, task in enumerate(tasks):
        answer = corrupt(task) if wrong is not None and wrong[i] else None
        events = session_events(task, answer, ids, clock)
        await store.append_batch(events, expected=0)
        sids.append(events[0].aggregate_id)
    return sids
