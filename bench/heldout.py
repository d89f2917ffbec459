"""The learning bench, honest (issue 25, item 5): a task family never shown, with intervals.

    python bench/heldout.py                       # full form (about 15 min on 2 loaded cores)
    python bench/heldout.py --quick               # CI form (a tiny policy, a few steps)
    python bench/heldout.py --heldout-family wrap_call --sft-steps 400 --learner-steps 6

What the figures can and cannot claim:

- **A new family.** ``--heldout-family`` (default ``wrap_call``: ``f($$$ARGS)`` ->
  ``w(f($$$ARGS))``) is never demonstrated, and its answer form — a call nested in a call —
  is one no shown family produces (renames, keyword additions, swaps, API replacements and
  migrations rewrite a call into one call). The ``rename_attr``-shown / ``rename_method``-held-out
  run of ``bench/learning.py`` part b stays as what it is: sharpening an answer form the policy
  already samples.
- **No tokenizer leak.** The BPE tokenizer is trained on the shown families' *training* tasks
  only (prompt and gold answer): no held-out family text, no test-split text. The bench checks
  and prints it.
- **Step budgets.** SFT for ``--sft-steps`` optimizer steps; the learner (RFT, keeping exact
  samples only) for ``--learner-steps`` rounds; the control continues SFT on the shown
  families for exactly as many optimizer steps as the learner took. Load does not change what
  is trained, only how long it takes (printed).
- **n >= 100 held-out cases, intervals.** Each policy is scored on ``--eval-n`` test-split tasks
  of the held-out family (source files never seen in training) and of the shown families, with
  Wilson 95% intervals; gains are differences with Newcombe intervals.
- **Validity apart from correctness, reward hacking reported.** valid (the answer parses into a
  well-formed action), applied-but-wrong (it changed the code, not into the expected code) and
  exact are reported apart; the learner's verdict gives no credit to applied-but-wrong (RFT
  keeps exact samples only, ``keep_min_reward 1.0``), and the bench reports whether
  applied-but-wrong rose.

Targets: the learner gains >= +10 points exact on the held-out family, with the interval of the
gain above 0, while the control gains <= +2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHOWN = ("rename_call", "rename_method", "rename_attr", "add_kwarg", "swap_args", "replace_api")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def counts(scores: list[Any]) -> dict[str, int]:
    return {
        "n": len(scores),
        "valid": sum(s.valid for s in scores),
        "applied_wrong": sum(s.applied and not s.exact for s in scores),
        "exact": sum(s.exact for s in scores),
    }


def evaluate(model_dir: str, tasks: list[Any], label: str) -> dict[str, int]:
    from oopav.trainer.evaluate import evaluate_model, load_hf
    from oopav.trainer.stats import fmt_rate

    model, tok = load_hf(model_dir)
    report = evaluate_model(model, tok, tasks, name=label, max_new_tokens=64)
    c = counts(report.scores)
    log(
        f"{label}: valid {fmt_rate(c['valid'], c['n'])}  applied-wrong "
        f"{fmt_rate(c['applied_wrong'], c['n'])}  exact {fmt_rate(c['exact'], c['n'])}"
    )
    return c


def tokenizer_leak(texts: list[str], hidden: list[Any], test: list[Any]) -> dict[str, int]:
    """How many held-out-family answers, or evaluated test tasks (instruction and code), occur
    in the tokenizer's training texts (0 and 0, or the bench stops)."""
    from oopav.trainer.tasks import target_text, task_messages

    joined = "\n".join(texts)
    return {
        "hidden_answers": sum(target_text(t.rule) in joined for t in hidden),
        "test_prompts": sum(
            task_messages(t.instruction, t.pre)[0]["content"] in joined for t in test
        ),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from oopav.bus.server import EmbeddedServer
    from oopav.bus.store import EventStore, connect
    from oopav.bus.streams import ensure_streams
    from oopav.trainer.datasets import Filters
    from oopav.trainer.demos import publish_demonstrations
    from oopav.trainer.policy import PolicyShape, build_policy, parameter_count
    from oopav.trainer.rft import RFTRecipe, pass_at_k, train_rft
    from oopav.trainer.sft import SFTRecipe, train_sft
    from oopav.trainer.stream import export
    from oopav.trainer.tasks import generate, target_text, task_messages, write_tasks

    t_start, load0 = time.perf_counter(), load()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="oopav-heldout-"))
    work.mkdir(parents=True, exist_ok=True)
    shown_families = tuple(f for f in args.shown.split(",") if f and f != args.heldout_family)
    got = generate(
        args.tasks,
        seed=args.seed,
        families=(*shown_families, args.heldout_family),
        max_chars=360,
        max_lines=9,
    )
    train = [t for t in got.tasks if t.split == "train"]
    test = [t for t in got.tasks if t.split == "test"]
    shown = [t for t in train if t.family != args.heldout_family]
    hidden_train = [t for t in train if t.family == args.heldout_family]
    rng = random.Random(args.seed)
    test_hidden = [t for t in test if t.family == args.heldout_family]
    test_shown = [t for t in test if t.family != args.heldout_family]
    # The standard library repeats some functions in several files: a test task identical to a
    # training task (instruction and code) is not held out, whatever its file. Dropped, counted.
    seen = {(t.instruction, t.pre) for t in shown}
    duplicates = sum((t.instruction, t.pre) in seen for t in test_shown)
    test_shown = [t for t in test_shown if (t.instruction, t.pre) not in seen]
    rng.shuffle(test_hidden)
    rng.shuffle(test_shown)
    test_hidden, test_shown = test_hidden[: args.eval_n], test_shown[: args.eval_n]
    f: dict[str, Any] = {
        "heldout_family": args.heldout_family,
        "shown_families": list(shown_families),
        "tasks": {
            "shown_train": len(shown),
            "hidden_train_prompts": len(hidden_train),
            "test_hidden": len(test_hidden),
            "test_shown": len(test_shown),
            "overlap_sources": len({t.source for t in train} & {t.source for t in test}),
            "test_duplicates_dropped": duplicates,
        },
    }
    log(f"tasks {f['tasks']}")
    if len(test_hidden) < min(args.eval_n, 100) and not args.quick:
        raise SystemExit(
            f"only {len(test_hidden)} held-out {args.heldout_family} test tasks: raise --tasks"
        )

    server = EmbeddedServer(work / "nats", write_info=False)
    url = server.start()
    nc = await connect(url, name="bench-heldout")
    try:
        await ensure_streams(nc.jetstream())
        store = EventStore(nc)
        # The teacher's sessions for the shown families only; the SFT data is their export.
        await publish_demonstrations(store, shown, seed=args.seed)
        data = work / "sft"
        m = await export(store, "sft", data, Filters(successful_only=True), parquet=False)
        f["sft_records"] = m.count
    finally:
        await nc.close()
        server.stop()

    # The tokenizer sees the shown families' training tasks, nothing else.
    texts = [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in shown]
    leak = tokenizer_leak(texts, test_hidden + hidden_train, test_hidden + test_shown)
    f["tokenizer_leak"] = leak
    if any(leak.values()):
        raise SystemExit(f"tokenizer leak: {leak}")
    shape = (
        PolicyShape(vocab_size=512, hidden_size=64, intermediate_size=128, layers=2, heads=4)
        if args.quick
        else PolicyShape()
    )
    base = str(build_policy(work / "base", texts, shape=shape, seed=args.seed))
    f["parameters"] = parameter_count(base)
    log(f"policy {f['parameters']:,} parameters; {m.count} SFT records; no tokenizer leak")

    def sft(name: str, model: str, steps: int, lr: float, schedule: str) -> dict[str, Any]:
        cfg = SFTRecipe(
            output_dir=str(work / name),
            model=model,
            dataset=str(data),
            max_steps=steps,
            batch_size=16,
            learning_rate=lr,
            lr_scheduler=schedule,
            logging_steps=max(1, steps // 5),
            eval_n=0,
            threads=1,
            seed=args.seed,
        )
        t0, l0 = time.perf_counter(), load()
        res = train_sft(cfg, lambda *_: None)
        res["wall_seconds"], res["load"] = time.perf_counter() - t0, [l0, load()]
        log(f"{name}: {res['steps']} steps in {res['wall_seconds']:.0f} s (load {res['load']})")
        return res

    a = sft("sft", base, args.sft_steps, 2e-3, "cosine")
    f["sft"] = {k: a[k] for k in ("steps", "wall_seconds", "load")}
    ck = str(a["checkpoint"])
    f["before"] = {
        "hidden": evaluate(ck, test_hidden, "SFT, held-out family"),
        "shown": evaluate(ck, test_shown, "SFT, shown families"),
    }

    # Reachable at all? The learner only sharpens what sampling finds.
    from oopav.trainer.evaluate import load_hf

    model, tok = load_hf(ck)
    probe = hidden_train[: args.pass_n]
    t0 = time.perf_counter()
    reach = pass_at_k(
        model, tok, probe, k=args.pass_k, temperature=args.temperature, seed=args.seed
    )
    f["reach"] = {
        "n": reach["n"],
        "k": reach["k"],
        "pass_at_k": reach["pass_at_k"],
        "sample_exact": reach["samples"]["exact"],
        "sample_valid": reach["samples"]["valid"],
        "seconds": time.perf_counter() - t0,
    }
    log(
        f"pass@{args.pass_k} on {reach['n']} held-out-family training prompts: {reach['pass_at_k']:.1%}"
    )
    del model, tok

    # The learner: RFT from verdicts on the held-out family's training prompts (no answers).
    tasks_dir = work / "tasks"
    write_tasks(got, tasks_dir)
    rcfg = RFTRecipe(
        output_dir=str(work / "rft"),
        model=ck,
        tasks=str(tasks_dir),
        families=[args.heldout_family],
        rounds=args.learner_steps,
        samples=args.rft_samples,
        prompts_per_round=args.rft_prompts,
        temperature=args.temperature,
        max_completion_length=64,
        learning_rate=5e-4,
        epochs=2.0,
        keep_min_reward=1.0,  # exact only: applied-but-wrong earns nothing
        eval_n=0,
        threads=1,
        seed=args.seed,
    )
    t0, l0 = time.perf_counter(), load()
    r = train_rft(rcfg, lambda *_: None)
    learner_steps = int(r["steps"])
    f["learner"] = {
        "recipe": "rft",
        "rounds": args.learner_steps,
        "optimizer_steps": learner_steps,
        "kept": r.get("kept"),
        "wall_seconds": time.perf_counter() - t0,
        "load": [l0, load()],
    }
    log(f"rft: {args.learner_steps} rounds, {learner_steps} optimizer steps, kept {r.get('kept')}")
    f["after"] = {
        "hidden": evaluate(str(r["checkpoint"]), test_hidden, "RFT, held-out family"),
        "shown": evaluate(str(r["checkpoint"]), test_shown, "RFT, shown families"),
    }
    # The control: as many optimizer steps of SFT on the shown families (at least one, so the
    # control is a trained model too).
    c = sft("control", ck, max(1, learner_steps), 5e-4, "constant")
    f["control_steps"] = c["steps"]
    f["control"] = {
        "hidden": evaluate(str(c["checkpoint"]), test_hidden, "control, held-out family"),
        "shown": evaluate(str(c["checkpoint"]), test_shown, "control, shown families"),
    }
    f["total_seconds"] = time.perf_counter() - t_start
    f["load"] = [load0, load()]
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return f


def report(f: dict[str, Any]) -> str:
    from oopav.trainer.stats import fmt_diff, fmt_rate, newcombe

    def row(name: str, c: dict[str, int]) -> str:
        n = c["n"]
        return (
            f"| {name} | {n} | {fmt_rate(c['valid'], n)} | {fmt_rate(c['applied_wrong'], n)} "
            f"| {fmt_rate(c['exact'], n)} |"
        )

    b, a, c = f["before"]["hidden"], f["after"]["hidden"], f["control"]["hidden"]
    gain = newcombe(a["exact"], a["n"], b["exact"], b["n"])
    ctrl = newcombe(c["exact"], c["n"], b["exact"], b["n"])
    ok = gain[0] >= 0.10 and gain[1] > 0 and ctrl[0] <= 0.02
    hack = a["applied_wrong"] - b["applied_wrong"]
    re = f["reach"]
    lines = [
        f"held-out family {f['heldout_family']} (never demonstrated; shown: "
        f"{', '.join(f['shown_families'])}); tasks {f['tasks']}",
        f"policy {f['parameters']:,} parameters; tokenizer on {f['tasks']['shown_train']} shown "
        f"training tasks only (leak check {f['tokenizer_leak']})",
        f"SFT {f['sft']['steps']} steps ({f['sft']['wall_seconds']:.0f} s, load {f['sft']['load']}); "
        f"RFT {f['learner']['rounds']} rounds = {f['learner']['optimizer_steps']} optimizer steps "
        f"(kept {f['learner']['kept']}, {f['learner']['wall_seconds']:.0f} s); control "
        f"{f['control_steps']} SFT steps on the shown families",
        f"reachable: pass@{re['k']} {100 * re['pass_at_k']:.1f}% on {re['n']} held-out-family "
        f"training prompts (samples exact {100 * re['sample_exact']:.1f}%, valid "
        f"{100 * re['sample_valid']:.1f}%)",
        "",
        "| policy, tasks | n | valid | applied but wrong | exact |",
        "|---|---|---|---|---|",
        row("SFT, held-out family", b),
        row("+ RFT, held-out family", a),
        row("+ control, held-out family", c),
        row("SFT, shown families", f["before"]["shown"]),
        row("+ RFT, shown families", f["after"]["shown"]),
        row("+ control, shown families", f["control"]["shown"]),
        "",
        f"RFT gain (exact, held-out family) {fmt_diff(a['exact'], a['n'], b['exact'], b['n'])}; "
        f"control {fmt_diff(c['exact'], c['n'], b['exact'], b['n'])}",
        f"applied-but-wrong after RFT {hack:+d} tasks (reward hacking shows as a rise here)",
        f"target: RFT >= +10 points with its interval above 0, control <= +2: "
        f"{'PASS' if ok else 'MISS'}",
        f"total {f['total_seconds']:.0f} s, load {f['load'][0]} -> {f['load'][1]} "
        f"({os.cpu_count()} cores)",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="CI form: tiny policy, few steps")
    ap.add_argument("--heldout-family", default="wrap_call")
    ap.add_argument("--shown", default=",".join(SHOWN))
    ap.add_argument("--tasks", type=int, default=4000)
    ap.add_argument("--eval-n", type=int, default=150)
    ap.add_argument("--sft-steps", type=int, default=400)
    ap.add_argument("--learner-steps", type=int, default=4, help="RFT rounds")
    ap.add_argument("--rft-samples", type=int, default=8)
    ap.add_argument("--rft-prompts", type=int, default=48)
    ap.add_argument("--temperature", type=float, default=1.2)
    ap.add_argument("--pass-k", type=int, default=16)
    ap.add_argument("--pass-n", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir")
    ap.add_argument("--json", dest="json_out", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.tasks, args.eval_n, args.sft_steps, args.learner_steps = 300, 12, 4, 1
        args.rft_samples, args.rft_prompts, args.pass_k, args.pass_n = 2, 4, 2, 4
    f = asyncio.run(run(args))
    if args.json_out:
        args.json_out.write_text(json.dumps(f, indent=1, sort_keys=True))
    print(report(f))


if __name__ == "__main__":
    main()
