"""Training speed on a GPU against the same machine's CPU: the flywheel's generation-1 SFT recipe
(bench/flywheel.py ``recipe``: batch 8, prompt loss, name augmentation x4, one CPU thread) for a
fixed number of steps on each, in one process.

    python bench/train_speed.py [--dataset WORKDIR/data-gen0-min --model WORKDIR/gen1-base]
                                [--gpu-steps 1500] [--cpu-steps 150] [--runs 1]

``--dataset`` / ``--model``: a flywheel run's generation-0 data and generation-1 base policy
(``bench/flywheel.py --workdir``); without them, 60 synthetic tasks and a new tiny policy.
Step budgets, not seconds; a run's wall time includes the recipe's data preparation (a few
seconds, the same on both). Without a CUDA device only the CPU figure is printed. Target: the
GPU trains at least 2x as many steps per second as the machine's CPU (a GPU that does not pay
for itself on a policy this small would say so)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, Summary, conclude, parser, repeat, report, runs_of


def recipe(out: Path, dataset: Path | None, tasks: Path | None, model: str, steps: int) -> Any:
    import flywheel

    if dataset is not None:
        return flywheel.recipe(out, dataset, steps, model, 2e-3, 0, True, 4, "all")
    from oopav.trainer.sft import SFTRecipe

    return SFTRecipe(output_dir=str(out), model=model, tasks=str(tasks), max_steps=steps,
                     batch_size=8, eval_n=0, threads=1, prompt_loss=True,
                     logging_steps=max(1, steps // 5))  # fmt: skip


def main() -> None:
    ap = parser(__doc__, runs=1)
    ap.add_argument("--dataset", type=Path, help="compact SFT records (a flywheel workdir's)")
    ap.add_argument("--model", default=None, help="the policy to start from (default: new)")
    ap.add_argument("--gpu-steps", type=int, default=1500)
    ap.add_argument("--cpu-steps", type=int, default=150)
    args = ap.parse_args()
    if args.quick:
        args.gpu_steps, args.cpu_steps = 20, 4
    import torch

    from oopav.trainer.sft import train_sft
    from oopav.trainer.tasks import generate, write_tasks

    tmp = Path(tempfile.mkdtemp(prefix="oopav-train-speed-"))
    tasks = None
    if args.dataset is None:
        tasks = tmp / "tasks"
        write_tasks(generate(60, seed=3, holdout=0.3, families=("rename_call",)), tasks)
    model = args.model or "new"
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if cuda else "no CUDA device"
    print(f"device: {device}; CPU: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")

    def steps_per_s(name: str, use_cpu: bool, steps: int, i: int) -> float:
        cfg = recipe(tmp / f"{name}-{i}", args.dataset, tasks, model, steps)
        cfg.use_cpu = use_cpu
        t = time.perf_counter()
        done = int(train_sft(cfg, lambda kind, fields: None)["steps"])
        return done / (time.perf_counter() - t)

    def measure(i: int) -> dict[str, float]:
        run = {"cpu": steps_per_s("cpu", True, args.cpu_steps, i)}
        if cuda:
            run["cuda"] = steps_per_s("cuda", False, args.gpu_steps, i)
            run["ratio"] = run["cuda"] / run["cpu"]
        return run

    figures = [
        Figure("cpu", f"CPU, {args.cpu_steps} steps", "steps/s"),
        Figure("cuda", f"CUDA, {args.gpu_steps} steps", "steps/s"),
        Figure("ratio", "CUDA / CPU", "x", 2.0),
    ]
    summary = report("flywheel SFT recipe", figures, repeat(measure, runs_of(args)), Summary())
    conclude(summary)


if __name__ == "__main__":
    main()
