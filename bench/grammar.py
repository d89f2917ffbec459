"""The exported answer grammar: export and recognizer costs, and constrained decoding of an
untrained local policy (validity, and what the grammar costs per generated token).

    python bench/grammar.py [--prompts 16] [--runs 3] [--quick]

Needs the ``[train]`` extra (torch, transformers, xgrammar) and ``lark``. Nothing is downloaded:
the policy is built here (oopav.trainer.policy) and never trained, so every valid answer under
the grammar is the grammar's doing. The grammar's bounds are tight enough that its longest
answer fits the token budget: a constrained answer can never be cut off.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, conclude, parser, repeat, report, runs_of
from oopav.models.prompt import AnswerError, parse_role_answer, render_answer
from oopav.models.schema_grammar import GrammarOptions, answer_grammar

TIGHT = GrammarOptions(compact=True, think_chars=8, max_string_length=6, max_items=1, max_escapes=1)

FIGURES = [
    Figure("export_ms", "export GBNF + Lark (actor), cold", "ms"),
    Figure("gbnf_kb", "GBNF size (actor, flexible)", "KiB", fmt=".1f"),
    Figure("compile_ms", "xgrammar compile for the policy's tokenizer", "ms"),
    Figure("match_us", "GBNF recognizer (xgrammar): per answer", "us", fmt=".0f"),
    Figure("lark_ms", "Lark Earley recognizer: per answer", "ms"),
    Figure("parse_us", "strict parser: per answer", "us", fmt=".0f"),
    Figure("u_valid", "untrained, unconstrained: valid answers", "%", fmt=".0f"),
    Figure("c_valid", "untrained, constrained: valid answers", "%", 100.0, fmt=".0f"),
    Figure("c_tokens", "constrained: tokens per answer", "", fmt=".1f"),
    Figure("proc_us", "grammar processor: per token per row", "us", 1000.0, False, fmt=".0f"),
    Figure("u_ms", "unconstrained: ms per decoding step", "ms"),
    Figure("c_ms", "constrained: ms per decoding step", "ms"),
    Figure("step_x", "constrained / unconstrained, per step", "x"),
]


def build(tmp: Path, prompts: int, quick: bool) -> tuple[Any, Any, list[str]]:
    from oopav.trainer.evaluate import load_hf, prompt_texts
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.tasks import generate, target_text

    tasks = generate(max(prompts * 4, 40), seed=7, holdout=0.3).tasks
    shape = (
        PolicyShape(
            vocab_size=400, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1
        )
        if quick
        else PolicyShape()
    )
    texts = [t.instruction + t.pre + target_text(t.rule) for t in tasks]
    model, tok = load_hf(build_policy(tmp / "policy", texts, shape=shape))
    tok.padding_side = "left"
    return model, tok, prompt_texts(tok, tasks[:prompts])


def valid(text: str) -> bool:
    try:
        parse_role_answer("actor", text)
    except AnswerError:
        return False
    return True


def recognizers(out: dict[str, float]) -> None:
    import lark
    import xgrammar as xgr

    from oopav.trainer.tasks import generate, target_text

    t0 = time.perf_counter()
    g = answer_grammar("action")
    gbnf, lark_text = g.gbnf(), g.lark()
    out["export_ms"] = (time.perf_counter() - t0) * 1000
    out["gbnf_kb"] = len(gbnf.encode()) / 1024
    answers = [target_text(t.rule) for t in generate(30, seed=2).tasks]
    answers += [
        render_answer(
            "action", {"type": "finish", "summary": "done"}, state_update={"history": "x"}
        )
    ] * 5
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(
        xgr.Grammar.from_ebnf(gbnf)
    )
    t0 = time.perf_counter()
    for a in answers:
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert m.accept_string(a) and m.is_terminated()
    out["match_us"] = (time.perf_counter() - t0) / len(answers) * 1e6
    earley = lark.Lark(lark_text, parser="earley", lexer="dynamic")
    t0 = time.perf_counter()
    for a in answers:
        earley.parse(a)
    out["lark_ms"] = (time.perf_counter() - t0) / len(answers) * 1000
    t0 = time.perf_counter()
    for a in answers:
        assert valid(a)
    out["parse_us"] = (time.perf_counter() - t0) / len(answers) * 1e6


def decode(model: Any, tok: Any, prompts: list[str], out: dict[str, float]) -> None:
    import torch

    from oopav.models import constrain

    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    plen = enc["input_ids"].shape[1]
    budget = answer_grammar("action", TIGHT).max_bytes() or 0
    common = {
        "do_sample": False,
        "pad_token_id": tok.pad_token_id,
        "eos_token_id": tok.eos_token_id,
    }
    common.update(temperature=None, top_p=None, top_k=None)

    def texts(ids: Any) -> tuple[list[str], list[int]]:
        rows, counts = [], []
        for row in ids[:, plen:].tolist():
            if tok.eos_token_id in row:
                row = row[: row.index(tok.eos_token_id)]
            row = [t for t in row if t != tok.pad_token_id]
            rows.append(tok.decode(row, skip_special_tokens=True))
            counts.append(len(row))
        return rows, counts

    with torch.no_grad():  # warm-up: the first generate() pays torch's lazy initialisation
        model.generate(**enc, max_new_tokens=4, **common)

    constrain._compiled.clear()  # cold: no compiler, no compiled grammar
    constrain._compilers.clear()
    t0 = time.perf_counter()
    constrain.compile_for(tok, model=model, options=TIGHT)
    out["compile_ms"] = (time.perf_counter() - t0) * 1000
    procs = constrain.logits_processors(model, tok, options=TIGHT)
    proc = procs[0]
    spent = [0.0]
    call = proc.__call__

    def timed(input_ids: Any, scores: Any) -> Any:
        t = time.perf_counter()
        try:
            return call(input_ids, scores)
        finally:
            spent[0] += time.perf_counter() - t

    procs[0] = timed
    t0 = time.perf_counter()
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=budget, logits_processor=procs, **common)
    c_wall = time.perf_counter() - t0
    answers, counts = texts(ids)
    steps = ids.shape[1] - plen
    out["c_valid"] = 100.0 * sum(map(valid, answers)) / len(answers)
    out["c_tokens"] = statistics.mean(counts)
    out["proc_us"] = spent[0] / (proc.masked_steps * len(prompts)) * 1e6
    out["c_ms"] = c_wall / steps * 1000

    # the same number of steps without the grammar: per-step costs compare like for like
    t0 = time.perf_counter()
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=steps, min_new_tokens=steps, **common)
    u_wall = time.perf_counter() - t0
    answers, _ = texts(ids)
    out["u_valid"] = 100.0 * sum(map(valid, answers)) / len(answers)
    out["u_ms"] = u_wall / (ids.shape[1] - plen) * 1000
    out["step_x"] = out["c_ms"] / out["u_ms"]


def main() -> None:
    ap = parser(__doc__.splitlines()[0], runs=3)
    ap.add_argument("--prompts", type=int, default=16, help="prompts per batch")
    args = ap.parse_args()
    if args.quick:
        args.prompts = 4
    runs = runs_of(args)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        model, tok, prompts = build(Path(tmp), args.prompts, args.quick)
        params = sum(p.numel() for p in model.parameters())
        print(
            f"untrained policy: {params / 1e6:.1f}M parameters, vocab {len(tok)}, built in "
            f"{time.perf_counter() - t0:.1f} s; {len(prompts)} prompts per batch, greedy; "
            f"grammar bounds {TIGHT}"
        )

        def measure(_: int) -> dict[str, float]:
            out: dict[str, float] = {}
            recognizers(out)
            decode(model, tok, prompts, out)
            return out

        results = repeat(measure, runs, label="grammar run")
    conclude(report("answer grammar (CPU)", FIGURES, results))


if __name__ == "__main__":
    main()
