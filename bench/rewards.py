"""Reward throughput: scored completions per second on one core.

    python bench/rewards.py [--tasks 200] [--reps 5]

Completions are a realistic mix for a policy in training, per task: the gold answer, a rule
that rewrites one call shape only (partial), a rule that matches nothing (no-op), a garbled
answer (invalid) and an answer with a wrong-language rule. Baseline in the same run: parsing
alone (the strict prompt-contract parser), so the cost of applying rules shows apart.
Target: >= 2000 scored completions/s on one core.
"""

from __future__ import annotations

import argparse
import time

from oopav.events.actions import AstGrepAction
from oopav.models.prompt import parse_role_answer, render_answer
from oopav.trainer.rewards import _ast_key, _tokens, score_env, summarize
from oopav.trainer.tasks import generate, target_text

TARGET = 2000.0


def completions(task) -> list[str]:  # type: ignore[no-untyped-def]
    a = task.action()
    first = (a.pattern or "").split("(")[0]
    return [
        target_text(task.rule),
        render_answer(
            "action",
            AstGrepAction(
                pattern=f"{first}($A)",
                rewrite=a.rewrite.replace("$$$ARGS", "$A") if a.rewrite else "",
                language="python",
            ),
            state_update={},
        ),
        render_answer(
            "action",
            AstGrepAction(pattern="zz_never($$$A)", rewrite="y($$$A)", language="python"),
            state_update={},
        ),
        '<think>hmm</think>\n<action>{"type": "ast_grep", "pattern": ',
        render_answer(
            "action",
            AstGrepAction(pattern=a.pattern, rewrite=a.rewrite, language="javascript"),
            state_update={},
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    tasks = generate(args.tasks, seed=7).tasks
    items = [(c, t) for t in tasks for c in completions(t)]
    for c, t in items[:50]:  # warm imports and caches of the engines, not of the scores
        score_env(c, t.pre, t.post)
    best = 0.0
    scores = []
    for _ in range(args.reps):
        # Cold caches each rep: no credit for having seen a task's code in an earlier rep.
        _tokens.cache_clear()
        _ast_key.cache_clear()
        t0 = time.perf_counter()
        scores = [score_env(c, t.pre, t.post, t.language) for c, t in items]
        best = max(best, len(items) / (time.perf_counter() - t0))
    t0 = time.perf_counter()
    for c, _t in items:
        try:
            parse_role_answer("actor", c)
        except Exception:
            pass
    parse_rate = len(items) / (time.perf_counter() - t0)
    s = summarize(scores)
    print(f"completions per rep: {len(items)} ({len(tasks)} tasks x 5 kinds)")
    print(f"mix: valid {s['valid']:.2f} exact {s['exact']:.2f} noop {s['noop']:.2f}")
    print(f"parse only (baseline): {parse_rate:,.0f}/s")
    print(f"scored completions:    {best:,.0f}/s  ({best / parse_rate:.2f}x of parse-only)")
    print(f"target >= {TARGET:,.0f}/s: {'PASS' if best >= TARGET else 'MISS'}")


if __name__ == "__main__":
    main()
