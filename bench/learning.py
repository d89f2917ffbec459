"""The demonstration that the policy learns: held-out exact-apply before and after training.

    python bench/learning.py                 # full form (22-30 min on 2 busy cores): parts a and b
    python bench/learning.py --parts c --c-steps 300 --c-phase-steps 2   # c alone, step-bounded
    python bench/learning.py --short         # CI form (<= 60 s): SFT only, a smaller policy

Everything is built here; nothing is downloaded. Synthetic codemod tasks are generated from the
Python standard library and split by source file (held-out tasks come from files never seen
in training). A teacher's answers are recorded as sessions on a real (embedded) NATS stream,
``oopav export`` turns them into the SFT dataset, and a ~2.6M-parameter Llama-style policy with
a BPE tokenizer trained on the training split learns from it with TRL. Every training run is a
run aggregate on the same stream. Format validity and exact-apply are reported apart.

- **a) SFT off the stream**: the untrained policy (the control) against the policy after
  ``--sft-seconds`` of SFT, on held-out tasks of the families it was shown.
- **b) learning from verdicts where no demonstration exists**: one family (``--heldout-family``)
  is kept out of the SFT data; from the (a) checkpoint, GRPO and RFT (rejection-sampling
  fine-tuning, ``oopav train rft``) with ``reward_env`` on that family's prompts for
  ``--grpo-seconds`` each, against an equal-time control that continues SFT on the other
  families. Reported on the held-out family's test tasks (and the shown families', to see
  what a learner cost them), after pass@k of the checkpoint on the family's training prompts
  (``--pass-k``): verdicts only sharpen what sampling finds. The setting that passes holds out
  ``rename_method`` and shows ``rename_attr`` (``--families``, docs/benchmarks.md § Learning).
- **c) learning from imperfect sessions**: SFT on every session of a teacher wrong 30% of the
  time (its failed sessions included) against SFT on its verified-successful sessions only,
  each with and without a ``--c-phase`` (RFT or GRPO) phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oopav.trainer.tasks import FAMILIES, generate, write_tasks


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load_avg() -> float:
    """The 1-minute load average: the machine is shared, so every figure carries it."""
    return round(os.getloadavg()[0], 2)


async def zero_std_fractions(store: Any, run_id: str) -> list[float]:
    """Per logged step, the fraction of groups whose samples all scored the same (they teach
    GRPO nothing; for RFT, the prompts where no sample stood out)."""
    from oopav.events import run as rv

    return [
        float(e.zero_std_fraction)
        for _, e in await store.read("run", run_id)
        if isinstance(e, rv.TrainingStepCompleted) and e.zero_std_fraction is not None
    ]


def evaluate(model_dir: str, tasks: list[Any], label: str) -> dict[str, Any]:
    from oopav.trainer.evaluate import evaluate_model, load_hf

    model, tok = load_hf(model_dir)
    t0 = time.perf_counter()
    # Answers are ~22 tokens (the contract's pieces are whole tokens); 64 leaves room for the
    # longest and bounds what an untrained policy's rambling costs.
    report = evaluate_model(model, tok, tasks, name=label, max_new_tokens=64)
    s = report.summary()
    s["eval_seconds"] = time.perf_counter() - t0
    s["load"] = load_avg()
    log(
        f"eval {label}: n={s['n']} valid={s['valid']:.1%} exact={s['exact']:.1%} "
        f"reward={s['reward']:.3f}"
    )
    return s


async def run(
    *,
    short: bool = False,
    parts: str = "a,b",
    n_tasks: int = 3000,
    sft_seconds: float = 600.0,
    grpo_seconds: float = 180.0,
    eval_n: int = 200,
    heldout_family: str = "swap_args",
    seed: int = 0,
    workdir: Path | None = None,
    snippet_chars: int = 360,
    threads: int = 1,
    learners: tuple[str, ...] = ("grpo", "rft"),
    temperature: float = 1.0,
    grpo_lr: float = 3e-5,
    rft_lr: float = 5e-4,
    rft_samples: int = 8,
    rft_prompts: int = 64,
    c_seconds: float = 300.0,
    c_phase: str = "rft",
    c_phase_seconds: float = 120.0,
    c_steps: int = 0,
    c_phase_steps: int = 0,
    sft_checkpoint: str = "",
    families: tuple[str, ...] = FAMILIES,
    pass_k: int = 16,
    pass_n: int = 48,
) -> dict[str, Any]:
    from oopav.bus.server import EmbeddedServer
    from oopav.bus.store import EventStore, connect
    from oopav.bus.streams import ensure_streams
    from oopav.trainer.config import to_dict
    from oopav.trainer.datasets import Filters
    from oopav.trainer.demos import publish_demonstrations
    from oopav.trainer.grpo import GRPORecipe, train_grpo
    from oopav.trainer.policy import PolicyShape, build_policy, parameter_count
    from oopav.trainer.rft import RFTRecipe, train_rft
    from oopav.trainer.runs import list_runs, record_run
    from oopav.trainer.sft import SFTRecipe, train_sft
    from oopav.trainer.stream import export
    from oopav.trainer.tasks import target_text, task_messages

    if short:
        parts, n_tasks, eval_n = "a", 240, 24
        sft_seconds = min(sft_seconds, 30.0)
    work = workdir or Path(tempfile.mkdtemp(prefix="oopav-learning-"))
    work.mkdir(parents=True, exist_ok=True)
    server = EmbeddedServer(work / "nats", write_info=False)
    url = server.start()
    nc = await connect(url, name="bench-learning")
    await ensure_streams(nc.jetstream())
    store = EventStore(nc)
    t_start = time.perf_counter()
    figures: dict[str, Any] = {"short": short, "parts": parts, "snippet_chars": snippet_chars}
    figures["families"] = list(families)
    try:
        # The short form teaches one family whose rules come from a fixed API table: learnable
        # in seconds. Families that copy names out of the instruction take minutes.
        if short:
            families = ("migrate_api",)
        got = generate(
            n_tasks,
            seed=seed,
            families=families,
            max_chars=snippet_chars,
            max_lines=max(4, snippet_chars // 40),
        )
        tasks_dir = work / "tasks"
        write_tasks(got, tasks_dir)
        train = [t for t in got.tasks if t.split == "train"]
        test = [t for t in got.tasks if t.split == "test"]
        shown = [t for t in train if t.family != heldout_family]
        test_shown = [t for t in test if t.family != heldout_family][:eval_n]
        test_hidden = [t for t in test if t.family == heldout_family][:eval_n]
        figures["tasks"] = {
            "train": len(train),
            "test": len(test),
            "train_sources": len({t.source for t in train}),
            "test_sources": len({t.source for t in test}),
            "overlap_sources": len({t.source for t in train} & {t.source for t in test}),
        }
        log(f"tasks: {figures['tasks']}")

        # The teacher's sessions on the stream: every shown training task once, and (for c)
        # a second teacher that is wrong 30% of the time.
        await publish_demonstrations(store, shown, seed=seed)
        sft_dir = work / "data" / "sft-successful"
        m = await export(store, "sft", sft_dir, Filters(successful_only=True), parquet=False)
        figures["dataset"] = {
            "records": m.count,
            "sessions": len(m.sessions),
            "sha256": m.content_hash,
        }
        log(f"exported {m.count} SFT records from {len(m.sessions)} sessions")

        shape = (
            PolicyShape(
                vocab_size=512,
                hidden_size=128,
                intermediate_size=256,
                layers=2,
                heads=4,
                kv_heads=2,
            )
            if short
            else PolicyShape()
        )
        texts = [
            task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in train
        ]
        base = str(build_policy(work / "base", texts, shape=shape, seed=seed))
        figures["parameters"] = parameter_count(base)
        log(f"policy: {figures['parameters']:,} parameters")

        async def sft(
            name: str, model: str, dataset: Path, seconds: float, steps: int = 0
        ) -> dict[str, Any]:
            # The short form is bounded by steps (the same result on a busy machine), the full
            # form by wall time with a learning rate that anneals over that time, or by
            # ``steps`` where arms are compared (c) on a machine whose load varies.
            steps = 100 if short else steps
            cfg = SFTRecipe(
                output_dir=str(work / name),
                model=model,
                dataset=str(dataset),
                max_steps=steps or 100_000,
                max_seconds=0.0 if steps else seconds,
                batch_size=8 if short else 16,
                learning_rate=3e-3 if short else 2e-3,
                lr_scheduler="cosine" if steps else "time_cosine",
                logging_steps=5 if short else 25,
                eval_n=0,
                threads=threads,
            )
            t0, load0 = time.perf_counter(), load_avg()
            res = await record_run(
                store, "sft", to_dict(cfg), cfg.output_dir, lambda emit: train_sft(cfg, emit)
            )
            if res["status"] != "completed":
                raise RuntimeError(f"{name} failed: {res['error']}")
            res["wall_seconds"] = time.perf_counter() - t0
            res["steps_per_s"] = res["steps"] / max(res["seconds"], 1e-9)
            res["load"] = [load0, load_avg()]
            log(
                f"{name}: {res['steps']} steps in {res['wall_seconds']:.0f}s "
                f"({res['steps_per_s']:.2f} steps/s, load {res['load']})"
            )
            return res

        if "a" in parts or "b" in parts:
            before = evaluate(base, test_shown, "untrained")
            if sft_checkpoint:
                # Part b again from an earlier run's (a) checkpoint: it must come from the same
                # --seed, --tasks and --heldout-family, or the held-out family was shown to it.
                a = {"checkpoint": sft_checkpoint, "steps": 0, "wall_seconds": 0.0}
                a |= {"steps_per_s": 0.0, "load": [load_avg()] * 2, "run_id": None}
            else:
                a = await sft("sft", base, sft_dir, sft_seconds)
            after = evaluate(a["checkpoint"], test_shown, "sft")
            figures["a"] = {
                "before": before,
                "after": after,
                "sft_steps": a["steps"],
                "sft_seconds": a["wall_seconds"],
                "sft_steps_per_s": a["steps_per_s"],
                "sft_load": a["load"],
                "run_id": a["run_id"],
            }

        async def learner(
            recipe: str, name: str, model: str, families: list[str], seconds: float, steps: int = 0
        ) -> dict[str, Any]:
            """GRPO or RFT from verdicts only (``reward_env`` on the families' prompts), for
            ``seconds`` or, given, ``steps`` (GRPO steps, RFT rounds)."""
            cfg: Any
            fn: Any
            if recipe == "grpo":
                cfg = GRPORecipe(
                    output_dir=str(work / name),
                    model=model,
                    tasks=str(tasks_dir),
                    families=families,
                    max_steps=steps or 100_000,
                    max_seconds=0.0 if steps else seconds,
                    num_generations=8,
                    batch_size=16,
                    learning_rate=grpo_lr,
                    temperature=temperature,
                    max_completion_length=64,
                    eval_n=0,
                    threads=threads,
                )
                fn = train_grpo
            else:
                cfg = RFTRecipe(
                    output_dir=str(work / name),
                    model=model,
                    tasks=str(tasks_dir),
                    families=families,
                    rounds=steps or 1000,
                    max_seconds=0.0 if steps else seconds,
                    samples=rft_samples,
                    prompts_per_round=rft_prompts,
                    temperature=temperature,
                    max_completion_length=64,
                    learning_rate=rft_lr,
                    epochs=2.0,
                    eval_n=0,
                    threads=threads,
                    seed=seed,
                )
                fn = train_rft
            t0, load0 = time.perf_counter(), load_avg()
            res = await record_run(
                store, recipe, to_dict(cfg), cfg.output_dir, lambda emit: fn(cfg, emit)
            )
            if res["status"] != "completed":
                raise RuntimeError(f"{name} failed: {res['error']}")
            res["wall_seconds"] = time.perf_counter() - t0
            res["load"] = [load0, load_avg()]
            runs = {r["run_id"]: r for r in await list_runs(store)}
            res["rewards"] = runs.get(res["run_id"] or "", {}).get("rewards", [])
            res["zero_std"] = await zero_std_fractions(store, res["run_id"] or "")
            log(
                f"{name}: {res['steps']} steps in {res['wall_seconds']:.0f}s (load {res['load']})"
                + (f", kept {res['kept']}" if "kept" in res else "")
            )
            return res

        if "b" in parts and test_hidden:
            hidden_before = evaluate(a["checkpoint"], test_hidden, f"sft on {heldout_family}")
            # Did a learner cost the shown families? Checked on the first half of their tests.
            shown_check = test_shown[: max(1, len(test_shown) // 2)]
            figures["b"] = {"family": heldout_family, "sft_checkpoint": hidden_before}
            if pass_k and pass_n:
                # Reachable at all? Verdicts only sharpen what sampling finds: pass@k of the
                # checkpoint on the family's training prompts (the ones the learners see).
                from oopav.trainer.evaluate import load_hf
                from oopav.trainer.rft import pass_at_k

                hidden_train = [t for t in train if t.family == heldout_family]
                random.Random(seed).shuffle(hidden_train)
                model, tok = load_hf(a["checkpoint"])
                t0 = time.perf_counter()
                reach = pass_at_k(
                    model, tok, hidden_train[:pass_n], k=pass_k, temperature=temperature, seed=seed
                )
                reach |= {"seconds": time.perf_counter() - t0, "load": load_avg()}
                figures["b"]["reach"] = reach
                log(
                    f"pass@{pass_k} on {reach['n']} {heldout_family} training prompts at "
                    f"T={temperature}: {reach['pass_at_k']:.1%} (samples exact "
                    f"{reach['samples']['exact']:.1%}, valid {reach['samples']['valid']:.1%})"
                )
            budget = 0.0
            for recipe in learners:
                got_b = await learner(
                    recipe, f"b-{recipe}", a["checkpoint"], [heldout_family], grpo_seconds
                )
                budget = max(budget, got_b["wall_seconds"])
                figures["b"][recipe] = {
                    "hidden": evaluate(got_b["checkpoint"], test_hidden, f"{recipe}"),
                    "shown": evaluate(got_b["checkpoint"], shown_check, f"{recipe} (shown)"),
                    "steps": got_b["steps"],
                    "seconds": got_b["wall_seconds"],
                    "load": got_b["load"],
                    "rewards": got_b["rewards"],
                    "zero_std": got_b["zero_std"],
                    "kept": got_b.get("kept"),
                    "rounds": got_b.get("rounds"),
                }
            # The control: as long as the longest learner, SFT continues on the shown families.
            control = await sft("b-sft-control", a["checkpoint"], sft_dir, budget)
            figures["b"]["control"] = evaluate(control["checkpoint"], test_hidden, "control")
            figures["b"]["control_shown"] = evaluate(
                control["checkpoint"], shown_check, "control (shown)"
            )
            figures["b"]["control_steps"] = control["steps"]
            figures["b"]["control_seconds"] = control["wall_seconds"]

        if "c" in parts:
            # A second teacher, wrong 30% of the time, on its own stretch of the stream: the
            # sessions it failed are on the stream next to the ones it got right.
            rng = random.Random(seed)
            wrong = [rng.random() < 0.3 for _ in shown]
            since = datetime(2026, 2, 1, tzinfo=UTC)
            await publish_demonstrations(store, shown, wrong=wrong, seed=seed + 1, start=since)
            all_dir = work / "data" / "sft-all"
            ok_dir = work / "data" / "sft-successful-2"
            m_all = await export(store, "sft", all_dir, Filters(since=since), parquet=False)
            m_ok = await export(
                store, "sft", ok_dir, Filters(successful_only=True, since=since), parquet=False
            )
            figures["c"] = {
                "records_all": m_all.count,
                "records_successful": m_ok.count,
                "wrong": sum(wrong),
                "phase": c_phase,
                "sft_seconds": c_seconds,
                "phase_seconds": c_phase_seconds,
                "sft_steps": c_steps,
                "phase_steps": c_phase_steps,
            }
            for label, data in (("all_sessions", all_dir), ("successful_only", ok_dir)):
                got_c = await sft(f"c-sft-{label}", base, data, c_seconds, c_steps)
                figures["c"][label] = evaluate(got_c["checkpoint"], test_shown, f"c {label}")
                figures["c"][label]["train"] = {
                    k: got_c[k] for k in ("steps", "wall_seconds", "steps_per_s", "load")
                }
                phase = await learner(
                    c_phase,
                    f"c-{c_phase}-{label}",
                    got_c["checkpoint"],
                    [f for f in families if f != heldout_family],
                    c_phase_seconds,
                    c_phase_steps,
                )
                figures["c"][f"{label}+{c_phase}"] = evaluate(
                    phase["checkpoint"], test_shown, f"c {label} + {c_phase}"
                )
                figures["c"][f"{label}+{c_phase}"]["train"] = {
                    k: phase.get(k) for k in ("steps", "wall_seconds", "load", "kept", "zero_std")
                }
        figures["runs_on_stream"] = len(await list_runs(store))
        figures["total_seconds"] = time.perf_counter() - t_start
    finally:
        await nc.close()
        server.stop()
        if workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return figures


def report(f: dict[str, Any]) -> str:
    def row(name: str, s: dict[str, Any]) -> str:
        return (
            f"| {name} | {int(s['n'])} | {s['valid']:.1%} | {s['applied']:.1%} | {s['exact']:.1%} "
            f"| {s['ast_match']:.1%} | {s['reward']:.3f} |"
        )

    head = "| policy | n | valid | applied | exact | AST | reward |\n|---|---|---|---|---|---|---|"
    out = [
        f"tasks {f['tasks']}; policy {f['parameters']:,} parameters; "
        f"SFT data {f['dataset']['records']} records from {f['dataset']['sessions']} sessions",
    ]
    a = f.get("a")
    out += (
        []
        if a is None
        else [
            "",
            f"a) SFT off the stream ({a['sft_steps']} steps, {a['sft_seconds']:.0f} s), held-out files:",
            head,
            row("untrained (control)", a["before"]),
            row("after SFT", a["after"]),
            f"exact {a['before']['exact']:.1%} -> {a['after']['exact']:.1%}, "
            f"valid {a['before']['valid']:.1%} -> {a['after']['valid']:.1%}",
        ]
    )
    if "b" in f:
        b = f["b"]
        base_exact = b["sft_checkpoint"]["exact"]
        learned = [k for k in ("grpo", "rft") if k in b]
        out += [
            "",
            f"b) family {b['family']} never demonstrated; "
            + ", ".join(
                f"{k.upper()} {b[k]['steps']} steps ({b[k]['seconds']:.0f} s, load {b[k]['load']})"
                for k in learned
            )
            + f" vs SFT control {b['control_steps']} steps ({b['control_seconds']:.0f} s):",
            *(
                [
                    f"reachable: pass@{b['reach']['k']} {b['reach']['pass_at_k']:.1%} on "
                    f"{b['reach']['n']} of its training prompts (samples exact "
                    f"{b['reach']['samples']['exact']:.1%}, valid "
                    f"{b['reach']['samples']['valid']:.1%}, T={b['reach']['temperature']})"
                ]
                if "reach" in b
                else []
            ),
            head,
            row("SFT checkpoint", b["sft_checkpoint"]),
            *[row(f"+ {k.upper()} on its prompts", b[k]["hidden"]) for k in learned],
            row("+ SFT control", b["control"]),
            *[row(f"{k.upper()}, shown families", b[k]["shown"]) for k in learned],
            row("SFT control, shown families", b["control_shown"]),
            *[
                f"{k.upper()} gain {100 * (b[k]['hidden']['exact'] - base_exact):+.1f} points "
                f"exact; identical-reward groups {statistics.fmean(b[k]['zero_std'] or [0]):.0%}"
                + (f"; kept {b[k]['kept']}" if b[k].get("kept") is not None else "")
                for k in learned
            ],
            f"control {100 * (b['control']['exact'] - base_exact):+.1f} points exact",
        ]
    if "c" in f:
        c = f["c"]
        ph = c["phase"].upper()
        bound = f"{c['sft_steps']} steps" if c["sft_steps"] else f"{c['sft_seconds']:.0f} s"
        pbound = (
            f"{c['phase_steps']} steps/rounds"
            if c["phase_steps"]
            else f"{c['phase_seconds']:.0f} s"
        )
        out += [
            "",
            f"c) SFT ({bound}) on all sessions ({c['records_all']} records, "
            f"{c['wrong']} answers wrong) vs verified-successful only "
            f"({c['records_successful']}), each + {ph} ({pbound}):",
            head,
            row("all sessions", c["all_sessions"]),
            row(f"all sessions + {ph}", c[f"all_sessions+{c['phase']}"]),
            row("successful only", c["successful_only"]),
            row(f"successful only + {ph}", c[f"successful_only+{c['phase']}"]),
        ]
    out.append(
        f"\ntotal {f['total_seconds']:.0f} s; {f['runs_on_stream']} runs recorded on the stream"
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--parts", default="a,b")
    ap.add_argument("--tasks", type=int, default=3000)
    ap.add_argument("--sft-seconds", type=float, default=600.0)
    ap.add_argument("--grpo-seconds", type=float, default=180.0)
    ap.add_argument("--eval-n", type=int, default=200)
    ap.add_argument("--heldout-family", default="swap_args")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--snippet-chars", type=int, default=360, help="Longest pre snippet.")
    ap.add_argument(
        "--threads", type=int, default=1, help="torch threads (1 is faster on a shared machine)."
    )
    ap.add_argument("--learners", default="grpo,rft", help="Part b's learners.")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--grpo-lr", type=float, default=3e-5)
    ap.add_argument("--rft-lr", type=float, default=5e-4)
    ap.add_argument("--rft-samples", type=int, default=8)
    ap.add_argument("--rft-prompts", type=int, default=64, help="Prompts per RFT round.")
    ap.add_argument("--c-seconds", type=float, default=300.0)
    ap.add_argument("--c-phase", choices=("grpo", "rft"), default="rft")
    ap.add_argument("--c-phase-seconds", type=float, default=120.0)
    ap.add_argument("--c-steps", type=int, default=0, help="Bound c's SFT by steps, not time.")
    ap.add_argument(
        "--c-phase-steps", type=int, default=0, help="Bound c's phase by GRPO steps / RFT rounds."
    )
    ap.add_argument(
        "--sft-checkpoint",
        default="",
        help="Reuse this (a) checkpoint (same --seed/--tasks/--heldout-family) instead of SFT.",
    )
    ap.add_argument(
        "--families",
        default=",".join(FAMILIES),
        help="Task families generated (default: the standard mix; add rename_attr for part b "
        "with rename_method held out).",
    )
    ap.add_argument(
        "--pass-k", type=int, default=16, help="Part b: samples per prompt for pass@k (0: skip)."
    )
    ap.add_argument("--pass-n", type=int, default=48, help="Part b: prompts for pass@k.")
    ap.add_argument("--workdir", type=Path, help="Keep everything here (default: a temp dir).")
    ap.add_argument(
        "--json", dest="json_out", type=Path, help="Also write the figures as JSON here."
    )
    args = ap.parse_args()
    figures = asyncio.run(
        run(
            short=args.short,
            parts=args.parts,
            n_tasks=args.tasks,
            sft_seconds=args.sft_seconds,
            grpo_seconds=args.grpo_seconds,
            eval_n=args.eval_n,
            heldout_family=args.heldout_family,
            seed=args.seed,
            snippet_chars=args.snippet_chars,
            threads=args.threads,
            workdir=args.workdir,
            learners=tuple(x for x in args.learners.split(",") if x),
            temperature=args.temperature,
            grpo_lr=args.grpo_lr,
            rft_lr=args.rft_lr,
            rft_samples=args.rft_samples,
            rft_prompts=args.rft_prompts,
            c_seconds=args.c_seconds,
            c_phase=args.c_phase,
            c_phase_seconds=args.c_phase_seconds,
            c_steps=args.c_steps,
            c_phase_steps=args.c_phase_steps,
            sft_checkpoint=args.sft_checkpoint,
            families=tuple(x for x in args.families.split(",") if x),
            pass_k=args.pass_k,
            pass_n=args.pass_n,
        )
    )
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=1, sort_keys=True))
    print(report(figures))


if __name__ == "__main__":
    main()
