"""Training runs as aggregates on the stream (``oopav.ev.run.<id>.*``).

The trainer runs in a worker thread (TRL is synchronous); its progress (``emit``) is handed to
the event loop, which appends the run's events in order. ``oopav runs`` folds them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from oopav import __version__
from oopav.bus.store import EventStore
from oopav.events import run as rv
from oopav.events.catalog import Event
from oopav.events.factory import caused_event, root_event
from oopav.logging import get_logger

log = get_logger("oopav.trainer")
HANDLER = "trainer"


class RunRecorder:
    """Turns ``emit(kind, fields)`` calls into the run's events, numbered in order."""

    def __init__(self, recipe: str, config: dict[str, Any], output_dir: str) -> None:
        self.recipe = recipe
        self.config = config
        self.output_dir = output_dir
        self.started: rv.TrainingStarted | None = None
        self.events: list[Event] = []
        self.index = 0
        self.steps = 0
        self.final_checkpoint: str | None = None

    @property
    def run_id(self) -> str | None:
        return self.started.aggregate_id if self.started else None

    def start(self, fields: dict[str, Any]) -> Event:
        import torch

        device = "cuda" if torch.cuda.is_available() and not self.config.get("use_cpu") else "cpu"
        if self.config.get("use_cpu") is False and device == "cpu":
            # The trainers fall back to the CPU rather than fail; say so where the user looks,
            # beside training_started.device.
            log.warning(
                "no_cuda_device",
                recipe=self.recipe,
                detail="use_cpu: false but torch sees no CUDA device: training on the CPU",
            )
        self.started = root_event(
            rv.TrainingStarted,
            handler=HANDLER,
            aggregate="run",
            recipe=self.recipe,
            config=self.config,
            base_model=str(fields.get("base_model", self.config.get("model", ""))),
            output_dir=self.output_dir,
            dataset=str(fields.get("dataset", "")),
            dataset_hash=str(fields.get("dataset_hash", "")),
            dataset_records=int(fields.get("dataset_records", 0)),
            data_order=dict(fields.get("data_order") or {}),
            code_version=f"oopav {__version__}",
            device=device,
        )
        return self.started

    def event(self, kind: str, fields: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if kind == "started":
            out.append(self.start(fields))
            return out
        if self.started is None:
            out.append(self.start({}))
        classes: dict[str, type[Event]] = {
            "step": rv.TrainingStepCompleted,
            "checkpoint": rv.CheckpointSaved,
            "evaluation": rv.EvaluationCompleted,
            "completed": rv.TrainingCompleted,
        }
        cls = classes[kind]
        if kind == "step":
            self.steps = max(self.steps, int(fields["step"]))
        if kind == "checkpoint" and fields.get("final"):
            self.final_checkpoint = str(fields["path"])
        self.index += 1
        assert self.started is not None
        out.append(caused_event(cls, self.started, handler=HANDLER, index=self.index, **fields))
        return out


async def record_run(
    store: EventStore,
    recipe: str,
    config: dict[str, Any],
    output_dir: str,
    train: Callable[[Callable[[str, dict[str, Any]], None]], dict[str, Any]],
) -> dict[str, Any]:
    """Run ``train(emit)`` in a thread, appending its events to the stream as they come."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    recorder = RunRecorder(recipe, config, output_dir)

    def emit(kind: str, fields: dict[str, Any]) -> None:
        for event in recorder.event(kind, fields):
            loop.call_soon_threadsafe(queue.put_nowait, event)

    async def publish() -> None:
        while (event := await queue.get()) is not None:
            try:
                await store.append(event)
            except Exception as exc:  # a lost progress event must not kill the training
                log.warning("run_event_not_recorded", error=repr(exc), type=event.type)

    publisher = asyncio.create_task(publish())
    t0 = time.perf_counter()
    status, error, result = "completed", "", {}
    try:
        result = await asyncio.to_thread(train, emit)
    except Exception as exc:
        status, error = "failed", f"{type(exc).__name__}: {exc}"[:2000]
        log.error("training_failed", error=error)
    emit(
        "completed",
        {
            "status": status,
            "steps": recorder.steps or int(result.get("steps", 0)),
            "seconds": time.perf_counter() - t0,
            "error": error,
            "final_checkpoint": recorder.final_checkpoint,
        },
    )
    await asyncio.sleep(0)
    loop.call_soon_threadsafe(queue.put_nowait, None)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(publisher, 30)
    return {"run_id": recorder.run_id, "status": status, "error": error, **_plain(result)}


def _plain(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    ev = out.pop("evaluation", None)
    if isinstance(ev, dict):
        out["evaluation"] = {k: v for k, v in ev.items() if k != "families"}
    return out


def recipe_of(recipe: str) -> tuple[type, Callable[..., dict[str, Any]]]:
    if recipe == "sft":
        from oopav.trainer.sft import SFTRecipe, train_sft

        return SFTRecipe, train_sft
    if recipe == "grpo":
        from oopav.trainer.grpo import GRPORecipe, train_grpo

        return GRPORecipe, train_grpo
    if recipe == "srl":
        from oopav.trainer.srl import SRLRecipe, train_srl

        return SRLRecipe, train_srl
    if recipe == "rft":
        from oopav.trainer.rft import RFTRecipe, train_rft

        return RFTRecipe, train_rft
    raise ValueError(f"unknown recipe {recipe!r}; one of: sft, srl, grpo, rft")


async def list_runs(store: EventStore) -> list[dict[str, Any]]:
    from oopav.events.codec import EventDecodeError, decode

    rows: dict[str, dict[str, Any]] = {}
    async for _seq, data in store.iter_raw("oopav.ev.run.>"):
        try:
            e = decode(data)
        except EventDecodeError:
            continue
        fold_run(rows, e)
    return sorted(rows.values(), key=lambda r: r["started_at"] or "", reverse=True)


def fold_run(rows: dict[str, dict[str, Any]], e: Event) -> None:
    row = rows.setdefault(
        e.aggregate_id,
        {
            "run_id": e.aggregate_id,
            "recipe": "?",
            "status": "running",
            "steps": 0,
            "started_at": None,
            "output_dir": "",
            "rewards": [],
            "losses": [],
            "validity": [],
            "checkpoints": [],
        },
    )
    if isinstance(e, rv.TrainingStarted):
        row.update(
            recipe=e.recipe,
            started_at=e.ts.isoformat(),
            output_dir=e.output_dir,
            base_model=e.base_model,
            dataset_hash=e.dataset_hash,
        )
    elif isinstance(e, rv.TrainingStepCompleted):
        row["steps"] = max(row["steps"], e.step)
        row["last_loss"] = e.loss
        if e.reward_mean is not None:
            row["last_reward"] = e.reward_mean
            row["rewards"].append([e.step, e.reward_mean])
        if e.loss is not None:
            row["losses"].append([e.step, e.loss])
        if e.validity is not None:
            row["validity"].append([e.step, e.validity])
    elif isinstance(e, rv.CheckpointSaved):
        row["checkpoints"].append(e.path)
    elif isinstance(e, rv.EvaluationCompleted):
        row["last_eval"] = dict(e.metrics)
    elif isinstance(e, rv.TrainingCompleted):
        row["status"] = e.status
        row["error"] = e.error
        row["steps"] = max(row["steps"], e.steps)
