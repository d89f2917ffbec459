"""Decoding that always yields a parseable answer within max_tokens: the grammar processor's
MASK (not only the matcher) admits the contract token, and randomly initialised models answer
the loop's real prompts parseably, every time, within the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oopav.models import Sampling, build_request, parse_role_answer, static_prefix

pytest.importorskip("torch")
xgr = pytest.importorskip("xgrammar")

TEXTS = [
    "Rename fetch to fetch_page "
    + 'def f(u):\n    return fetch(u)\n<think></think>\n<action>{"type":"ast_grep","pattern":"'
    + 'fetch($$$ARGS)","rewrite":"fetch_page($$$ARGS)","language":"python"}</action>\n'
    + "<state_update>{}</state_update>"
] * 20


def _policy(path: Path, seed: int, vocab: int = 1024) -> Path:
    from oopav.trainer.policy import PolicyShape, build_policy

    shape = PolicyShape(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1
    )
    return build_policy(path, TEXTS, shape=shape, seed=seed)


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _policy(tmp_path_factory.mktemp("policy") / "m", 0)


def _allowed(proc: Any, prefix_ids: list[int], vocab: int) -> set[int]:
    import torch

    scores = torch.zeros(1, vocab)
    out = proc(torch.tensor([prefix_ids]), scores)
    return set((~torch.isinf(out[0])).nonzero().flatten().tolist())


def test_the_mask_admits_every_token_the_matcher_accepts_along_a_real_answer(
    policy_dir: Path,
) -> None:
    from transformers import AutoTokenizer

    from oopav.models.constrain import compile_for, processor
    from oopav.trainer.tasks import target_text

    tok = AutoTokenizer.from_pretrained(policy_dir)
    compiled = compile_for(tok)
    vocab = compiled.tokenizer_info.vocab_size
    contract = tok.convert_tokens_to_ids("<think></think>\n<action>")
    answer = target_text(
        {
            "type": "ast_grep",
            "pattern": "fetch($$$ARGS)",
            "rewrite": "fetch_page($$$ARGS)",
            "language": "python",
        }
    )
    ids = tok(answer, add_special_tokens=False)["input_ids"]
    assert ids[0] == contract  # the tokenizer has the contract token, and uses it
    prompt = tok("<|assistant|>\n", add_special_tokens=False)["input_ids"]
    proc = processor(compiled, tok, budget=None)
    checker = xgr.GrammarMatcher(compiled)
    for pos in range(len(ids)):
        mask = _allowed(proc, prompt + ids[:pos], vocab)
        accepted = set()
        for t in range(vocab):
            if checker.accept_token(t):
                accepted.add(t)
                checker.rollback(1)
        assert mask == accepted, (pos, tok.convert_ids_to_tokens(sorted(accepted ^ mask)))
        assert checker.accept_token(ids[pos])
    assert contract in _allowed(processor(compiled, tok, budget=None), prompt, vocab)


def _requests(budgets: dict[str, int]) -> list[tuple[str, Any]]:
    """The loop's real actor and planner requests (static prefix, role directive, a task)."""
    task = (
        "Rename the function fetch to fetch_page in src/app.py and update every caller.\n"
        "src/app.py:\ndef fetch(url):\n    return get(url)\n\ndef main():\n    fetch('x')\n"
    )
    return [
        (
            role,
            build_request(
                role,
                prefix=static_prefix({"network": False}),
                task=task,
                sampling=Sampling(temperature=1.0, max_tokens=budgets[role]),
                seed=7,
            ),
        )
        for role in ("actor", "planner")
    ]


def random_models(root: Path, n: int) -> list[Path]:
    """``n`` randomly initialised models: half share a policy tokenizer with the contract tokens
    (oopav.trainer.policy), half the tiny model's (oopav.models.tiny); weights differ by seed."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from oopav.models.tiny import build_tiny_model

    bases = [_policy(root / "policy-base", 0), build_tiny_model(root / "tiny-base", seed=0)]
    out = []
    for seed in range(n):
        base = bases[seed % 2]
        path = root / f"m{seed}"
        shutil.copytree(base, path)
        config = AutoConfig.from_pretrained(base)
        torch.manual_seed(1000 + seed)
        AutoModelForCausalLM.from_config(config).save_pretrained(path)  # fresh random weights
        out.append(path)
    return out


def test_twenty_random_models_answer_real_prompts_parseably(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """20 random models answer the loop's actor prompt (and every fifth its planner prompt) by
    sampling at temperature 1 under small budgets: every answer parses and ends before the
    budget (a stop, not a cut). The full-scale figure (1,024 tokens) is bench/parseable.py.

    The budgets are the smallest the closing phase is sized for: twice its reserve (twice the
    shortest answer plus 32 tokens), which it gets only while that is at most half the
    budget. Below that (128 tokens for the actor, whose shortest answer is 84 bytes) the
    reserve is cut to half the budget and a byte-level tokenizer can run out one character
    before `</state_update>` closes: that held or not by luck of the prompt's bytes."""
    from oopav.models.constrain import closing_reserve
    from oopav.models.hf import HFBackend

    budgets = {
        r: 2 * closing_reserve(1 << 20, t) for r, t in (("actor", "action"), ("planner", "plan"))
    }
    failures = []
    answers = 0
    for i, path in enumerate(random_models(tmp_path_factory.mktemp("random"), 20)):
        backend = HFBackend(path, device="cpu")
        for role, request in _requests(budgets):
            if role == "planner" and i % 5:
                continue
            resp = backend.generate(request)
            answers += 1
            try:
                parse_role_answer(role, resp.text, finish_reason=resp.finish_reason)
            except Exception as exc:
                failures.append((path.name, role, resp.finish_reason, str(exc)[:80]))
            assert resp.completion_tokens <= budgets[role]
    assert answers == 24 and failures == []


def test_think_limit_fits_the_budget(policy_dir: Path) -> None:
    from oopav.models.hf import HFBackend

    backend = HFBackend(policy_dir, device="cpu", think_chars=2048)
    assert backend.think_limit(1024) == 256 and backend.think_limit(100) == 25
