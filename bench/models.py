"""Constrained (xgrammar) against unconstrained generation on the tiny local model.

Prints figures and ratios measured in the same run (no thresholds; see docs/models.md):

    python bench/models.py [--samples 20] [--max-tokens 256] [--runs 5] [--quick]

Needs the ``[train]`` extra (torch, transformers, xgrammar). Nothing is downloaded.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, conclude, parser, repeat, report, runs_of
from oopav.models import AnswerError, Sampling, build_request, parse_role_answer, static_prefix
from oopav.models.hf import HFBackend
from oopav.models.tiny import build_tiny_model

FIGURES = [
    Figure("compile_ms", "grammar compile (actor envelope), cold", "ms"),
    Figure("cached_ms", "grammar compile, cached", "ms", fmt=".3f"),
    Figure("u_valid", "unconstrained: valid answers", "%", fmt=".0f"),
    Figure("c_valid", "constrained: valid answers", "%", 100.0, fmt=".0f"),
    Figure("u_tokens", "unconstrained: tokens per answer", "", fmt=".1f"),
    Figure("c_tokens", "constrained: tokens per answer", "", fmt=".1f"),
    Figure("u_ms_token", "unconstrained: ms per token", "ms"),
    Figure("c_ms_token", "constrained: ms per token", "ms"),
    Figure("token_x", "constrained / unconstrained, ms per token", "x"),
    Figure("answer_x", "constrained / unconstrained, ms per answer", "x"),
]


def measure(backend: HFBackend, base: object, samples: int) -> dict[str, float]:
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    backend._compiled.clear()  # cold in every run: no compiled grammar, no compiler
    backend._compiler = None
    backend._compiled_grammar(base)
    out["compile_ms"] = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    backend._compiled_grammar(base)
    out["cached_ms"] = (time.perf_counter() - t0) * 1000
    results: dict[str, dict[str, float]] = {}
    for label, constrained in (("u", False), ("c", True)):
        per_token: list[float] = []
        per_answer: list[float] = []
        tokens = 0
        valid = 0
        for seed in range(samples):
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
            "ms_per_token": statistics.median(per_token),
            "ms_per_answer": statistics.median(per_answer),
        }
        out[f"{label}_valid"] = 100.0 * valid / samples
        out[f"{label}_tokens"] = tokens / samples
        out[f"{label}_ms_token"] = results[label]["ms_per_token"]
    c, u = results["c"], results["u"]
    out["token_x"] = c["ms_per_token"] / u["ms_per_token"]
    out["answer_x"] = c["ms_per_answer"] / u["ms_per_answer"]
    return out


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20, help="answers per mode in each run")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument(
        "--skip-context", action="store_true", help="Skip the repo map and memory figures."
    )
    args = ap.parse_args()
    if args.quick:
        args.samples, args.max_tokens, args.skip_context = 1, 160, True
    runs = runs_of(args)

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
        # Warm-up (first generate pays lazy initialisation in torch).
        backend.generate(msgspec.structs.replace(base, seed=10_000), constrained=True)
        backend.generate(msgspec.structs.replace(base, seed=10_000), constrained=False)
        print(
            f"tiny model: build {build_s:.2f} s; {args.samples} answers per mode and run; "
            f"max_tokens {args.max_tokens}"
        )
        results = repeat(lambda _: measure(backend, base, args.samples), runs, label="models run")
    conclude(report("models (tiny local model, CPU)", FIGURES, results))
    if not args.skip_context:
        # The repo map and the memory feed the same prompts: their figures belong here too.
        import runpy

        print()
        print("context (bench/context.py): repo map for 1k files, memory of 10k sessions")
        sys.argv = [sys.argv[0], "--runs", str(runs)]
        runpy.run_path(str(Path(__file__).with_name("context.py")), run_name="__main__")


if __name__ == "__main__":
    main()
