"""Constrained (xgrammar) against unconstrained generation on the tiny local model.

Prints figures and ratios measured in the same run (no thresholds; see docs/models.md):

    python bench/models.py [--runs 20] [--max-tokens 256]

Needs the ``[train]`` extra (torch, transformers, xgrammar). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import msgspec

from oopav.models import AnswerError, Sampling, build_request, parse_role_answer, static_prefix
from oopav.models.hf import HFBackend
from oopav.models.tiny import build_tiny_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument(
        "--skip-context", action="store_true", help="Skip the repo map and memory figures."
    )
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        path = build_tiny_model(Path(tmp) / "tiny")
        build_s = time.perf_counter() - t0
        backend = HFBackend(path, device="cpu", think_chars=16, max_string_length=12, max_items=2)
        base = build_request(
            "actor",
            prefix=static_prefix({"network": False}),
            task="rename fetch to fetch_page",
            sampling=Sampling(temperature=1.0, max_tokens=args.max_tokens),
        )

        t0 = time.perf_counter()
        backend._compiled_grammar(base)
        compile_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        backend._compiled_grammar(base)
        cached_ms = (time.perf_counter() - t0) * 1000

        # Warm-up (first generate pays lazy initialisation in torch).
        backend.generate(msgspec.structs.replace(base, seed=10_000), constrained=True)
        backend.generate(msgspec.structs.replace(base, seed=10_000), constrained=False)

        results: dict[str, dict[str, float]] = {}
        for label, constrained in (("unconstrained", False), ("constrained", True)):
            per_token: list[float] = []
            per_answer: list[float] = []
            tokens = 0
            valid = 0
            for seed in range(args.runs):
                req = msgspec.structs.replace(base, seed=seed)
                resp = backend.generate(req, constrained=constrained)
                tokens += resp.completion_tokens
                per_answer.append(resp.latency_ms)
                per_token.append(resp.latency_ms / max(1, resp.completion_tokens))
                try:
                    parse_role_answer("actor", resp.text, finish_reason=resp.finish_reason)
                    valid += 1
                except AnswerError:
                    pass
            results[label] = {
                "valid": valid,
                "tokens": tokens / args.runs,
                "ms_per_token": statistics.median(per_token),
                "ms_per_answer": statistics.median(per_answer),
            }

    print(
        f"tiny model: build {build_s:.2f} s; prompt {resp.prompt_tokens} tokens; "
        f"{args.runs} runs; max_tokens {args.max_tokens}"
    )
    print(f"grammar compile (actor envelope): cold {compile_ms:.1f} ms, cached {cached_ms:.3f} ms")
    print(f"{'mode':<14} {'valid':>8} {'tokens/answer':>14} {'ms/token':>9} {'ms/answer':>10}")
    for label, r in results.items():
        print(
            f"{label:<14} {int(r['valid']):>3}/{args.runs:<4} {r['tokens']:>14.1f} "
            f"{r['ms_per_token']:>9.2f} {r['ms_per_answer']:>10.1f}"
        )
    c, u = results["constrained"], results["unconstrained"]
    print(
        f"ratio constrained/unconstrained ms per token: {c['ms_per_token'] / u['ms_per_token']:.2f}x"
    )
    print(
        f"ratio constrained/unconstrained ms per answer: {c['ms_per_answer'] / u['ms_per_answer']:.2f}x"
    )
    print(
        f"valid answers: constrained {int(c['valid'])}/{args.runs}, unconstrained {int(u['valid'])}/{args.runs}"
    )
    if not args.skip_context:
        # The repo map and the memory feed the same prompts: their figures belong here too.
        import runpy

        print()
        print("context (bench/context.py): repo map for 1k files, memory of 10k sessions")
        runpy.run_path(str(Path(__file__).with_name("context.py")), run_name="__main__")


if __name__ == "__main__":
    main()
