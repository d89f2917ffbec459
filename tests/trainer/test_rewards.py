"""Rewards: exact, AST-equal, partial, broken, invalid, no-op; validity apart from correctness."""

from __future__ import annotations

from oopav.events.actions import (
    AstGrepAction,
    FinishAction,
    SearchReplaceAction,
    SearchReplaceEdit,
)
from oopav.models.prompt import render_answer
from oopav.trainer.rewards import (
    CompositeWeights,
    RewardConfig,
    composite,
    reward_env,
    reward_srl,
    reward_valid,
    score_env,
    summarize,
)

PRE = "def f(x):\n    return fetch(x) + fetch(x, 2)\n"
POST = "def f(x):\n    return fetch_page(x) + fetch_page(x, 2)\n"
GOLD = AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python")


def ans(action: object) -> str:
    return render_answer("action", action, state_update={})


def test_exact_ast_partial_broken_invalid_noop_are_ordered() -> None:
    exact = score_env(ans(GOLD), PRE, POST)
    assert exact.reward == 1.0 and exact.exact and exact.valid
    spaced = AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page( $$$A )", language="python")
    ast_eq = score_env(ans(spaced), PRE, POST)
    assert ast_eq.reason == "ast_equal" and ast_eq.ast_match and not ast_eq.exact
    one = AstGrepAction(pattern="fetch($A)", rewrite="fetch_page($A)", language="python")
    partial = score_env(ans(one), PRE, POST)
    assert partial.reason == "partial" and 0 < partial.reward < ast_eq.reward
    broken = AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page(($$$A)", language="python")
    b = score_env(ans(broken), PRE, POST)
    assert b.reason == "broken" and b.reward < 0 and b.valid
    garbled = score_env("<think></think><action>{nope", PRE, POST)
    assert garbled.reward == -1.0 and not garbled.valid and garbled.reason == "invalid_json"
    bad_rule = AstGrepAction(rule="id: x\nlanguage: python\nrule: [oops", language="python")
    assert score_env(ans(bad_rule), PRE, POST).valid is False
    noop = AstGrepAction(pattern="nothing_here($$$A)", rewrite="x($$$A)", language="python")
    n = score_env(ans(noop), PRE, POST)
    # A valid no-op scores no higher than an invalid answer.
    assert n.reason == "noop" and n.valid and n.reward <= garbled.reward
    assert score_env(ans(FinishAction(summary="done")), PRE, POST).reward <= garbled.reward
    wrong_lang = AstGrepAction(pattern="fetch($$$A)", rewrite="y($$$A)", language="javascript")
    assert not score_env(ans(wrong_lang), PRE, POST).valid


def test_search_replace_conciseness_and_tests_bonus() -> None:
    sr = SearchReplaceAction(
        edits=[
            SearchReplaceEdit(
                path="a.py",
                search="fetch(x) + fetch(x, 2)",
                replace="fetch_page(x) + fetch_page(x, 2)",
            )
        ]
    )
    assert score_env(ans(sr), PRE, POST).exact
    long = render_answer("action", GOLD, think="x" * 900, state_update={})
    assert score_env(long, PRE, POST).reward < 1.0
    cfg = RewardConfig(tests_bonus=0.5)
    assert score_env(ans(GOLD), PRE, POST, config=cfg, tests_passed=True).reward == 1.5


def test_trl_signature_and_conversational_completions() -> None:
    comps = [[{"role": "assistant", "content": ans(GOLD)}], "garbage"]
    r = reward_env(None, comps, pre=[PRE, PRE], post=[POST, POST])
    assert r == [1.0, -1.0]
    assert reward_valid(None, comps) == [1.0, 0.0]
    s = summarize([score_env(c, PRE, POST) for c in comps])
    assert s["valid"] == 0.5 and s["exact"] == 0.5 and s["n"] == 2


def test_srl_and_composite() -> None:
    teacher = {
        "type": "ast_grep",
        "rule": None,
        "pattern": "fetch($$$A)",
        "rewrite": "fetch_page($$$A)",
        "language": "python",
        "paths": ["."],
    }
    assert reward_srl(ans(GOLD), teacher) == 1.0
    other = AstGrepAction(pattern="fetch($$$A)", rewrite="get($$$A)", language="python")
    assert 0.5 < reward_srl(ans(other), teacher) < 1.0
    assert reward_srl("junk", teacher) == -0.2
    assert abs(composite(True, True, 1.0) - 1.0) < 1e-9
    assert abs(composite(True, None) - 0.6) < 1e-9
    assert composite(False, True, 0.5, CompositeWeights(0.5, 0.5, 0.0)) == 0.5


def test_rewards_reach_trl_on_a_grid_where_equal_groups_have_zero_advantage() -> None:
    """GRPO's group mean in float32 of eight equal non-binary rewards (0.8 - a penalty) is off
    by an ulp, which Adam turns into a full random step; on the 2**-10 grid it is exact."""
    import numpy as np

    from oopav.trainer.rewards import QUANTUM, for_trainer

    def reward_env(prompts=None, completions=(), **_):  # type: ignore[no-untyped-def]
        return [0.8 - 0.013] * len(completions)

    wrapped = for_trainer(reward_env)
    assert wrapped.__name__ == "reward_env"  # TRL logs rewards/<name>/mean
    raw = np.array(reward_env(completions=[""] * 8), dtype=np.float32)
    got = np.array(wrapped(completions=[""] * 8), dtype=np.float32)
    assert all(r / QUANTUM == int(r / QUANTUM) for r in got)
    assert float(np.abs(got - got.mean()).max()) == 0.0
    assert abs(float(got[0]) - float(raw[0])) <= QUANTUM / 2
