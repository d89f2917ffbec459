"""Named reward configurations, and test results reaching the reward.

A recipe names its reward (``reward: env`` in a GRPO config) instead of wiring weights by
hand; every configuration is a TRL reward function over the dataset's columns:

- ``env`` — :func:`~oopav.trainer.rewards.reward_env` with the default weights (partial credit
  up to 0.5 for a change closer to ``post``).
- ``env_strict`` — no partial credit: an applied-but-wrong change scores the same as an invalid
  answer (−1). Guards against the reward hacking the learning bench measured (GRPO with partial
  credit raised held-out "applied" 0 → 84% with 0% exact).
- ``composite`` — seed 000's composite reward (``CompositeWeights``: syntax 0.6, tests 0.3,
  coverage 0.1): syntax = the answer parses and its result parses; tests = the task's test
  command passed on the result; coverage = the token similarity of the result to ``post``.
- ``srl`` — seed 002's step reward is :func:`~oopav.trainer.rewards.reward_srl` (half field
  match, half difflib ratio); ``srl_weighted`` is the 0.7 / 0.3 variant of seed 002 (fields
  weigh more than text similarity). The SRL recipe takes ``reward: srl | srl_weighted``.

**Tests reach the reward.** When a row has a ``test_command`` (a task's, carried by the GRPO
dataset) and ``test_files`` (the files the command needs, path → text) and the name of the file
the code lives in (``path``), the answer's result is written into a fresh workspace with them and
the command runs **in the sandbox** (bwrap, deny by default, a deadline); its exit status is
``tests_passed`` for :func:`~oopav.trainer.rewards.score_env` (``tests_bonus``) and for the
composite. Rows without a test command are scored without one.
"""

from __future__ import annotations

import difflib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oopav.trainer.rewards import (
    DEFAULT,
    CompositeWeights,
    RewardConfig,
    _ast_key,
    _parse,
    apply_action,
    completion_text,
    composite,
    reward_srl,
    score_env,
    token_similarity,
)

RewardFn = Callable[..., list[float]]

STRICT = RewardConfig(partial_max=0.0, partial_floor=-1.0, broken=-1.0)


@dataclass(frozen=True)
class TestOutcome:
    ran: bool
    passed: bool
    detail: str = ""


def run_task_tests(
    code: str, *, path: str, test_command: Sequence[str], files: dict[str, str], timeout_s: float
) -> TestOutcome:
    """Write ``code`` to ``path`` beside ``files`` in a fresh workspace and run the command in
    the sandbox (never unsandboxed: a sandbox that cannot start is an error, not a pass)."""
    from oopav.sandbox.runner import default_config, run_sandboxed

    with tempfile.TemporaryDirectory(prefix="oopav-reward-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for rel, text in {**files, path: code}.items():
            target = (ws / rel).resolve()
            if not target.is_relative_to(ws.resolve()):
                raise ValueError(f"test file {rel!r} is outside the workspace")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        result = run_sandboxed(
            list(test_command),
            workspace=ws,
            artifacts_dir=Path(tmp) / "artifacts",
            config=default_config(hidden_paths=()),
            timeout_s=timeout_s,
        )
    return TestOutcome(True, result.ok, (result.stdout_tail + result.stderr_tail)[-300:])


def _tests_for(
    completion: Any, pre: str, language: str, row: dict[str, Any], timeout_s: float
) -> TestOutcome:
    command = row.get("test_command")
    if not command or not row.get("path"):
        return TestOutcome(False, False)
    parsed = _parse(completion_text(completion))
    if isinstance(parsed, str):
        return TestOutcome(False, False, parsed)
    out = apply_action(parsed, pre, language)
    if out is None:
        return TestOutcome(False, False, "bad_action")
    files = row.get("test_files") or {}
    if isinstance(files, str):
        files = json.loads(files)
    return run_task_tests(
        out, path=row["path"], test_command=command, files=files, timeout_s=timeout_s
    )


def _rows(n: int, columns: dict[str, Any]) -> list[dict[str, Any]]:
    keys = [k for k, v in columns.items() if isinstance(v, list | tuple) and len(v) == n]
    return [{k: columns[k][i] for k in keys} for i in range(n)]


def env_reward(config: RewardConfig = DEFAULT, *, timeout_s: float = 60.0) -> RewardFn:
    """``reward_env`` under ``config``, with tests when a row carries a test command."""

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        *,
        pre: Sequence[str],
        post: Sequence[str],
        language: Sequence[str] | None = None,
        **columns: Any,
    ) -> list[float]:
        langs = list(language or ["python"] * len(completions))
        rows = _rows(len(completions), columns)
        out = []
        for c, p, q, lang, row in zip(completions, pre, post, langs, rows, strict=True):
            tests = _tests_for(c, p, lang, row, timeout_s)
            passed = tests.passed if tests.ran else None
            out.append(score_env(c, p, q, lang, config=config, tests_passed=passed).reward)
        return out

    return reward


def composite_reward(
    weights: CompositeWeights = CompositeWeights(), *, timeout_s: float = 60.0
) -> RewardFn:
    """Seed 000's composite over (syntax, tests, coverage); an invalid answer scores 0."""

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        *,
        pre: Sequence[str],
        post: Sequence[str],
        language: Sequence[str] | None = None,
        **columns: Any,
    ) -> list[float]:
        langs = list(language or ["python"] * len(completions))
        rows = _rows(len(completions), columns)
        out = []
        for c, p, q, lang, row in zip(completions, pre, post, langs, rows, strict=True):
            parsed = _parse(completion_text(c))
            result = None if isinstance(parsed, str) else apply_action(parsed, p, lang)
            if result is None or result == p:
                out.append(0.0)  # invalid or a no-op: nothing to credit
                continue
            syntax = _ast_key(result, lang) is not None
            tests = _tests_for(c, p, lang, row, timeout_s)
            out.append(
                composite(
                    syntax,
                    tests.passed if tests.ran else None,
                    token_similarity(result, q),
                    weights,
                )
            )
        return out

    return reward


def srl_weighted(
    completion: Any, teacher: Any, *, fields: float = 0.7, text: float = 0.3, invalid: float = -0.2
) -> float:
    """Seed 002's step reward with its 0.7 (field match) / 0.3 (text similarity) weights."""
    import msgspec

    parsed = _parse(completion_text(completion))
    if isinstance(parsed, str):
        return invalid
    want = teacher if isinstance(teacher, dict) else msgspec.to_builtins(teacher)
    got = msgspec.to_builtins(parsed)
    keys = set(want) | set(got)
    match = (
        0.0
        if got.get("type") != want.get("type")
        else sum(1 for k in keys if got.get(k) == want.get(k)) / max(1, len(keys))
    )
    a, b = json.dumps(got, sort_keys=True), json.dumps(want, sort_keys=True)
    ratio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    return fields * match + text * ratio


ENV_REWARDS: dict[str, Callable[[], RewardFn]] = {
    "env": lambda: env_reward(DEFAULT),
    "env_strict": lambda: env_reward(STRICT),
    "composite": lambda: composite_reward(),
}
STEP_REWARDS: dict[str, Callable[..., float]] = {"srl": reward_srl, "srl_weighted": srl_weighted}


def env_reward_named(name: str) -> RewardFn:
    """The TRL reward function of a named configuration, under its name (TRL logs
    ``rewards/<name>/mean``)."""
    if name not in ENV_REWARDS:
        raise ValueError(f"unknown reward {name!r}; one of: {', '.join(sorted(ENV_REWARDS))}")
    fn = ENV_REWARDS[name]()
    fn.__name__ = f"reward_{name}"
    return fn
