"""Reflection benchmark: epochs of groups of rollouts, the reflector changing the mission's
library between them, and what that costs.

    python bench/reflection.py [--epochs 3] [--groups 2] [--k 4]
    python bench/reflection.py --policy-model openai:http://localhost:8000/v1#qwen \\
        --critic-model openai:http://localhost:8000/v1#qwen --tasks tasks.json

Starts its own embedded nats-server and runs every handler (the reflector included) in this
process, with the real sandbox. By default the policy, the critic and the consolidator are the
guidance-sensitive fake server of the tests (``tests/reflection/policy_server.py``): its actor
is right on one seed in four, and always once the guidance holds the rule the task's tests
encode; its consolidator first proposes a harmful line (which the holdout must reject), then
the helpful one. With ``--policy-model`` / ``--critic-model`` the same loop runs against real
models (docs/reflection.md).

Reports per epoch: label_match of the rollouts (epoch 0 runs with the seed library: it is the
baseline, measured in the same run), operations applied and rejected, and the model calls and
tokens spent on reflection (critic, consolidator and holdout sessions) per point of uplift.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reflection"))

from policy_server import INSTRUCTION, TEST_COMMAND, PolicyServer

from oopav.events import catalog as ev
from oopav.events import mission as mev

MISSION = "bench-answers"


def default_tasks(root: Path) -> list[dict[str, Any]]:
    repo = root / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# answers\n\nanswer.txt holds the answer.\n")
    return [
        {
            "instruction": INSTRUCTION,
            "repo": str(repo),
            "test_command": TEST_COMMAND,
            "expected": "pass",
        }
    ]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from oopav.app import open_bus
    from oopav.cli.guidance import seed_event
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.handlers.reflector import ReflectorConfig
    from oopav.projections.guidance import fold, stats
    from oopav.services import run_handlers, submit_task

    tmp = Path(tempfile.mkdtemp(prefix="oopav-bench-reflection-"))
    server = None
    if args.policy_model is None:
        server = PolicyServer(lucky_seeds=(3,)).start()
    policy = args.policy_model or server.spec  # type: ignore[union-attr]
    critic = args.critic_model or policy
    tasks = json.loads(Path(args.tasks).read_text()) if args.tasks else default_tasks(tmp)
    config = ReflectorConfig(
        critic_model=critic,
        eligibility=args.eligibility,
        apply_if_delta=args.apply_if_delta,
        holdout_size=min(args.holdout_size, len(tasks)),
        epoch_groups=args.groups,
        max_operations=2,
        change_cap_per_epoch=4,
    )
    settings = Settings(data_dir=tmp / "data", nats_url=None)
    per_epoch: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        async with open_bus(settings, embedded=True, name="bench-reflection") as bus:
            ports = Ports(settings=settings)
            stop = asyncio.Event()
            handlers = asyncio.create_task(
                run_handlers(bus, stop, ports=ports, projection=False, reflector_config=config)
            )
            agg = mev.mission_aggregate_id(MISSION)
            state = fold(await bus.events.read("mission", agg), MISSION)
            await bus.events.append(
                seed_event(
                    state,
                    MISSION,
                    [mev.GuidanceEntry(key="", text="Keep changes small and focused.")],
                    source="bench",
                    replace=False,
                    by="bench",
                )
            )
            session_ids: list[str] = []
            for epoch in range(args.epochs):
                t0 = time.perf_counter()
                for g in range(args.groups):
                    task = tasks[(epoch * args.groups + g) % len(tasks)]
                    body = {
                        "instruction": task["instruction"],
                        "repo": task["repo"],
                        "mission": MISSION,
                        "model": policy,
                        "test_command": task.get("test_command"),
                        "budgets": {"bounces": 0, "retries_per_phase": 1, "iterations": 8},
                        "group": {
                            "k": args.k,
                            "grid": [
                                {"temperature": 0.7, "top_p": 0.95, "seed": s}
                                for s in range(args.k)
                            ],
                            "expected": task.get("expected", "pass"),
                        },
                    }
                    reply = await submit_task(bus, body, timeout=30)
                    if "session_ids" not in reply:
                        raise SystemExit(f"submission refused: {reply}")
                    session_ids += reply["session_ids"]
                want = (epoch + 1) * args.groups
                state = await wait_settled(bus, agg, want, args.timeout)
                per_epoch.append({"epoch": epoch, "seconds": time.perf_counter() - t0})
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handlers, 30)
            mission_events = [e for _, e in await bus.events.read("mission", agg)]
            rollout_tokens = 0
            rollout_calls = 0
            for sid in session_ids:
                for _, e in await bus.events.read("session", sid):
                    if isinstance(e, ev.ModelCalled):
                        rollout_calls += 1
                        rollout_tokens += e.prompt_tokens + e.completion_tokens
            holdout_calls = 0
            holdout_tokens = 0
            for e in mission_events:
                if isinstance(e, mev.ReflectionProposed):
                    for r in e.holdout:
                        for _, x in await bus.events.read("session", r.session_id):
                            if isinstance(x, ev.ModelCalled):
                                holdout_calls += 1
                                holdout_tokens += x.prompt_tokens + x.completion_tokens
    finally:
        if server is not None:
            server.stop()
    summary = stats(state)
    lm = summary["label_match_per_epoch"]
    reflect_calls = [e for e in mission_events if isinstance(e, ev.ModelCalled)]
    reflect_tokens = sum(e.prompt_tokens + e.completion_tokens for e in reflect_calls)
    for row in per_epoch:
        k = str(row["epoch"])
        row["label_match"] = lm.get(k)
        row["applied"] = sum(
            1
            for e in mission_events
            if isinstance(e, mev.GuidanceOpApplied)
            and any(
                g.proposal_id == e.proposal_id and g.epoch == row["epoch"] for g in state.groups
            )
        )
        row["rejected"] = sorted(
            e.reason
            for e in mission_events
            if isinstance(e, mev.ReflectionRejected) and e.epoch == row["epoch"]
        )
    first = per_epoch[0]["label_match"] or 0.0
    last = per_epoch[-1]["label_match"] or 0.0
    uplift_points = (last - first) * 100
    cost_calls = len(reflect_calls) + holdout_calls
    cost_tokens = reflect_tokens + holdout_tokens
    return {
        "policy": policy,
        "critic": critic,
        "epochs": per_epoch,
        "baseline_label_match": first,
        "final_label_match": last,
        "uplift_points": round(uplift_points, 1),
        "reflection_model_calls": len(reflect_calls),
        "holdout_model_calls": holdout_calls,
        "reflection_tokens": reflect_tokens,
        "holdout_tokens": holdout_tokens,
        "rollout_model_calls": rollout_calls,
        "rollout_tokens": rollout_tokens,
        "calls_per_point": round(cost_calls / uplift_points, 2) if uplift_points > 0 else None,
        "tokens_per_point": round(cost_tokens / uplift_points) if uplift_points > 0 else None,
        "library": [f"[{e.key}]. {e.text}" for e in state.entries],
        "stats": summary,
        "seconds": round(time.perf_counter() - started, 1),
    }


async def wait_settled(bus: Any, agg: str, groups: int, timeout: float) -> Any:
    """The mission once ``groups`` groups are decided and no proposal is pending."""
    from oopav.projections.guidance import fold

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        state = fold(await bus.events.read("mission", agg), mev.mission_name(agg))
        if len(state.groups) >= groups and not state.pending:
            return state
        if loop.time() > deadline:
            raise SystemExit(
                f"timed out after {timeout:.0f}s: {len(state.groups)}/{groups} groups decided, "
                f"{len(state.pending)} proposals pending"
            )
        await asyncio.sleep(0.25)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--groups", type=int, default=2, help="groups per epoch")
    p.add_argument("--k", type=int, default=4, help="rollouts per group")
    p.add_argument("--policy-model", help="model spec of the policy (default: the fake server)")
    p.add_argument("--critic-model", help="critic and consolidator (default: the policy)")
    p.add_argument("--tasks", help="JSON list of {instruction, repo, test_command, expected}")
    p.add_argument("--eligibility", default="contradictions_or_all_wrong")
    p.add_argument("--apply-if-delta", type=float, default=0.25)
    p.add_argument("--holdout-size", type=int, default=1)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per epoch")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    import os

    os.environ.setdefault("OOPAV_LOG_LEVEL", "WARNING")
    from oopav.logging import configure

    configure("WARNING")
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    print(f"policy {result['policy']}  critic {result['critic']}  ({result['seconds']} s)")
    print(f"{'epoch':>5}  {'label_match':>11}  {'applied':>7}  rejected")
    for row in result["epochs"]:
        lm = row["label_match"]
        print(
            f"{row['epoch']:>5}  {'-' if lm is None else f'{lm:.3f}':>11}  {row['applied']:>7}  "
            f"{', '.join(row['rejected']) or '-'}"
        )
    print(
        f"label_match {result['baseline_label_match']:.3f} (epoch 0, baseline) -> "
        f"{result['final_label_match']:.3f}: {result['uplift_points']:+.1f} points"
    )
    print(
        f"reflection: {result['reflection_model_calls']} critic/consolidator calls "
        f"({result['reflection_tokens']} tokens) + {result['holdout_model_calls']} holdout calls "
        f"({result['holdout_tokens']} tokens); rollouts: {result['rollout_model_calls']} calls "
        f"({result['rollout_tokens']} tokens)"
    )
    print(
        f"per point of uplift: {result['calls_per_point']} model calls, "
        f"{result['tokens_per_point']} tokens"
    )
    print("library: " + " | ".join(result["library"]))


if __name__ == "__main__":
    main()
