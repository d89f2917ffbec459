"""Every answer parses: randomly initialised models answer the loop's real actor and planner
prompts through the hf: backend (sampling at temperature 1), and the strict parser reads
every answer, within max_tokens.

    python bench/parseable.py [--models 20] [--max-tokens 1024] [--roles actor,planner]

Half the models share a policy tokenizer with the contract tokens (oopav.trainer.policy, the
case where xgrammar's mask missed ``<think></think>\\n<action>``), half the tiny model's
(oopav.models.tiny); each model's weights are freshly random (its own seed). Step budget:
``--max-tokens`` per answer; wall time and load are printed. Target: 100% parseable.
Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

TASK = (
    "Rename the function fetch to fetch_page in src/app.py and update every caller.\n"
    "src/app.py:\ndef fetch(url):\n    return get(url)\n\ndef main():\n    fetch('x')\n"
)


def models(root: Path, n: int) -> list[Path]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from oopav.models.tiny import build_tiny_model
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.tasks import generate, target_text, task_messages

    tasks = generate(60, seed=3).tasks
    texts = [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in tasks]
    shape = PolicyShape(
        vocab_size=1024, hidden_size=64, intermediate_size=128, layers=2, heads=4, kv_heads=2
    )
    bases = [build_policy(root / "policy", texts, shape=shape), build_tiny_model(root / "tiny")]
    out = []
    for seed in range(n):
        path = root / f"m{seed}"
        shutil.copytree(bases[seed % 2], path)
        torch.manual_seed(1000 + seed)
        config = AutoConfig.from_pretrained(bases[seed % 2])
        AutoModelForCausalLM.from_config(config).save_pretrained(path)
        out.append(path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--roles", default="actor,planner")
    args = ap.parse_args()
    from oopav.models import Sampling, build_request, parse_role_answer, static_prefix
    from oopav.models.hf import HFBackend

    roles = args.roles.split(",")
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    ok = {r: 0 for r in roles}
    stops = {r: 0 for r in roles}
    tokens: dict[str, list[int]] = {r: [] for r in roles}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in models(Path(tmp), args.models):
            backend = HFBackend(path, device="cpu")
            for role in roles:
                req = build_request(
                    role,
                    prefix=static_prefix({"network": False}),
                    task=TASK,
                    sampling=Sampling(temperature=1.0, max_tokens=args.max_tokens),
                    seed=7,
                )
                resp = backend.generate(req)
                tokens[role].append(resp.completion_tokens)
                stops[role] += resp.finish_reason == "stop"
                try:
                    parse_role_answer(role, resp.text, finish_reason=resp.finish_reason)
                    ok[role] += 1
                except Exception as exc:
                    failures.append(f"{path.name} {role}: {str(exc)[:100]}")
    wall = time.perf_counter() - t0
    print(
        f"models {args.models}  max_tokens {args.max_tokens}  wall {wall:.0f} s  "
        f"load {load0:.1f} -> {os.getloadavg()[0]:.1f} (cores {os.cpu_count()})"
    )
    total = sum(ok.values())
    n = args.models * len(roles)
    for r in roles:
        print(
            f"{r:8} parseable {ok[r]}/{args.models}  stop {stops[r]}/{args.models}  "
            f"tokens median {statistics.median(tokens[r]):.0f} max {max(tokens[r])}"
        )
    verdict = "PASS" if total == n else "MISS"
    print(f"parseable {100 * total / n:.1f}% ({total}/{n}); target 100%: {verdict}")
    for f in failures:
        print("  failed:", f)


if __name__ == "__main__":
    main()
