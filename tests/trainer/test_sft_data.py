"""`oopav train sft` on exported datasets trains or fails with one line naming the cause; named
reward configurations; test results reaching the reward; metrics measured, not constants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tiny_policy import invoke, make_policy, make_tasks
from trainer_sessions import numbered, session

from oopav.events.actions import AstGrepAction, SearchReplaceAction, SearchReplaceEdit
from oopav.events.ids import derive_id
from oopav.models.prompt import render_answer
from oopav.trainer.datasets import Filters, session_records, write_dataset
from oopav.trainer.evaluate import rules_in, rules_per_task
from oopav.trainer.reward_configs import env_reward_named, run_task_tests, srl_weighted
from oopav.trainer.tasks import target_text

pytest.importorskip("trl")

S1 = derive_id("sftdata", "test", 0)


@pytest.fixture(scope="module")
def base_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_policy(tmp_path_factory, make_tasks(tmp_path_factory, 30, seed=5))


def _sft_config(tmp_path: Path, base: Path, dataset: Path, max_length: int) -> Path:
    import yaml

    cfg = {
        "output_dir": str(tmp_path / "run"),
        "model": str(base),
        "dataset": str(dataset),
        "max_steps": 1,
        "batch_size": 2,
        "max_length": max_length,
        "threads": 1,
    }
    path = tmp_path / "sft.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_sft_on_loop_prompts_longer_than_max_length_fails_with_one_line(
    nats_url: str, tmp_path: Path, base_model: Path
) -> None:
    data = tmp_path / "sft"
    write_dataset(data, "sft", [session_records(numbered(session(S1)), Filters())], Filters())
    cfg = _sft_config(tmp_path, base_model, data, 64)
    r = invoke(nats_url, tmp_path / "d", "train", "sft", "--config", str(cfg))
    assert r.exit_code == 1
    (line,) = [x for x in r.output.splitlines() if x.startswith("Error")]
    assert "every record is longer than max_length 64: the shortest prompt is" in line
    assert "IndexError" not in r.output


def test_sft_on_an_empty_dataset_fails_with_one_line(
    nats_url: str, tmp_path: Path, base_model: Path
) -> None:
    data = tmp_path / "empty"
    failed = session_records(numbered(session(S1, outcome="failed")), Filters(successful_only=True))
    write_dataset(data, "sft", [failed], Filters(successful_only=True))
    cfg = _sft_config(tmp_path, base_model, data, 512)
    r = invoke(nats_url, tmp_path / "d", "train", "sft", "--config", str(cfg))
    assert r.exit_code == 1
    assert "the dataset has 0 records" in r.output and "IndexError" not in r.output


def test_fitting_rows_keeps_the_rows_that_fit(base_model: Path) -> None:
    from transformers import AutoTokenizer

    from oopav.trainer.sft import fitting_rows

    tok = AutoTokenizer.from_pretrained(base_model)
    rows = [{"prompt": "x " * 400, "completion": "y"}, {"prompt": "x", "completion": "y"}]
    assert fitting_rows(rows, tok, 64) == [rows[1]]


# -- rewards ------------------------------------------------------------------------------

PRE, POST = "fetch(u)\n", "fetch_page(u)\n"
GOOD = target_text(
    {"type": "ast_grep", "pattern": "fetch($A)", "rewrite": "fetch_page($A)", "language": "python"}
)
WRONG = target_text(
    {"type": "ast_grep", "pattern": "fetch($A)", "rewrite": "fetch_pag($A)", "language": "python"}
)


def test_env_strict_gives_applied_but_wrong_no_credit_over_invalid() -> None:
    env, strict = env_reward_named("env"), env_reward_named("env_strict")
    kw = {"pre": [PRE] * 3, "post": [POST] * 3}
    answers = [GOOD, WRONG, "garbage"]
    loose = env(None, answers, **kw)
    tight = strict(None, answers, **kw)
    assert loose[0] == tight[0] == 1.0
    assert loose[1] > loose[2]  # partial credit for changing *something*
    assert tight[1] == tight[2] == -1.0  # none under env_strict
    assert env_reward_named("env_strict").__name__ == "reward_env_strict"
    with pytest.raises(ValueError, match="unknown reward 'nope'"):
        env_reward_named("nope")


def test_composite_is_seed_000s_weights() -> None:
    comp = env_reward_named("composite")
    good, wrong, bad = comp(None, [GOOD, WRONG, "garbage"], pre=[PRE] * 3, post=[POST] * 3)
    assert good == pytest.approx(0.6 + 0.1)  # parses, no tests ran, identical to post
    assert 0.6 < wrong < good and bad == 0.0


def test_test_results_reach_the_reward_when_a_task_has_a_test_command() -> None:
    files = {"test_m.py": "from m import fetch_page\nassert fetch_page(2) == 3\n"}
    pre = "def fetch(u):\n    return u + 1\n"
    post = "def fetch_page(u):\n    return u + 1\n"
    rule = {
        "type": "ast_grep",
        "pattern": "def fetch($A): $$$B",
        "rewrite": "def fetch_page($A): $$$B",
        "language": "python",
    }
    good = target_text(rule)
    wrong = target_text({**rule, "rewrite": "def fetch_x($A): $$$B"})
    cols = {
        "pre": [pre] * 2,
        "post": [post] * 2,
        "test_command": [["python", "test_m.py"]] * 2,
        "path": ["m.py"] * 2,
        "test_files": [json.dumps(files)] * 2,
    }
    with_tests = env_reward_named("env")(None, [good, wrong], **cols)
    without = env_reward_named("env")(None, [good, wrong], pre=cols["pre"], post=cols["post"])
    assert with_tests[0] == pytest.approx(without[0] + 0.3)  # tests_bonus: the tests passed
    assert with_tests[1] == pytest.approx(without[1])  # they failed: no bonus
    comp = env_reward_named("composite")(None, [good, wrong], **cols)
    assert comp[0] == pytest.approx(0.6 + 0.3 + 0.1) and comp[1] < 0.6 + 0.3
    outcome = run_task_tests(
        "def fetch_page(u):\n    return u\n",
        path="m.py",
        test_command=["python", "test_m.py"],
        files=files,
        timeout_s=30,
    )
    assert outcome.ran and not outcome.passed and "AssertionError" in outcome.detail


def test_srl_weighted_is_seed_002s_seventy_thirty() -> None:
    from oopav.trainer.rewards import reward_srl

    teacher = {
        "type": "ast_grep",
        "pattern": "fetch($A)",
        "rewrite": "fetch_page($A)",
        "language": "python",
        "paths": ["."],
        "rule": None,
    }
    assert srl_weighted(GOOD, teacher) == pytest.approx(1.0)
    assert srl_weighted("garbage", teacher) == -0.2
    # One field of five differs: fields weigh 0.7 here, 0.5 in reward_srl.
    other, half = srl_weighted(WRONG, teacher), reward_srl(WRONG, teacher)
    assert 0.3 < other < 1.0 and other != pytest.approx(half)


def test_rules_per_task_is_measured_from_the_answers() -> None:
    two = render_answer(
        "action",
        SearchReplaceAction(
            edits=[
                SearchReplaceEdit(path="a.py", search="a", replace="b"),
                SearchReplaceEdit(path="b.py", search="c", replace="d"),
            ]
        ),
        state_update={},
    )
    yaml_rule = "id: a\nlanguage: python\nrule: {pattern: f}\nfix: g\n---\nid: b\nlanguage: python\nrule: {pattern: h}\nfix: i\n"
    multi = render_answer("action", AstGrepAction(rule=yaml_rule), state_update={})
    assert rules_in(GOOD) == 1 and rules_in(two) == 2 and rules_in(multi) == 2
    assert rules_in("garbage") is None
    assert rules_per_task([GOOD, two, "garbage"]) == 1.5
    assert rules_per_task(["garbage"]) == 0.0


def test_prompt_loss_puts_the_loss_on_the_prompt_too(tmp_path: Path) -> None:
    """``prompt_loss: true`` (issue 25) turns TRL's completion-only loss off; the default
    keeps the loss on the answer alone."""
    pytest.importorskip("trl")
    from oopav.trainer.sft import SFTRecipe, sft_args

    def args(**kw: Any) -> Any:
        cfg = SFTRecipe(output_dir=str(tmp_path), dataset=str(tmp_path), **kw)
        return sft_args(cfg, max_steps=1, lr_scheduler="constant", warmup_steps=0)

    assert args().completion_only_loss is True
    assert args(prompt_loss=True).completion_only_loss is False
