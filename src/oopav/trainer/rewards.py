"""Rewards: pure functions from a completion (and the task) to a score.

``reward_env`` parses the completion with the strict prompt-contract parser, applies the action
to the ``pre`` code in-process (ast-grep rules with the sandbox's own engine; search/replace
blocks and file writes in memory) and compares the result with ``post``:

====================================  ======================================================
exact text match                      ``exact`` (1.0)
same AST (formatting differs)         ``ast_equal`` (0.8)
changed, parses, closer to ``post``   up to ``partial_max`` (0.5), by token-similarity gain
changed but does not parse            ``broken`` (−0.5)
invalid (format, schema, bad rule)    ``invalid`` (−1.0)
valid but changes nothing (no-op)     ``noop`` (−1.0): never above invalid, or a policy learns
                                      that doing nothing is safer than trying
====================================  ======================================================

minus a conciseness penalty past ``concise_chars``, plus ``tests_bonus`` when a test result is
given. Format validity and correctness are separate fields of :class:`Score` and separate
metrics in :func:`summarize`, so a format-only gain never looks like learning.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from oopav.events.actions import (
    Action,
    AstGrepAction,
    SearchReplaceAction,
    WriteFileAction,
)


@dataclass(frozen=True)
class RewardConfig:
    exact: float = 1.0
    ast_equal: float = 0.8
    partial_max: float = 0.5
    broken: float = -0.5
    invalid: float = -1.0
    noop: float = -1.0
    concise_chars: int = 400
    concise_penalty: float = 0.1  # at most, reached at 2 × concise_chars
    tests_bonus: float = 0.3
    # The score of a change that parses but is not post, before the similarity gain: 0 by
    # default; -1 (with partial_max 0) gives applied-but-wrong no credit beyond invalid.
    partial_floor: float = 0.0


@dataclass(frozen=True)
class CompositeWeights:
    """Seed 000's composite reward: syntax 0.6, tests 0.3, coverage 0.1."""

    syntax: float = 0.6
    tests: float = 0.3
    coverage: float = 0.1


DEFAULT = RewardConfig()


@dataclass(frozen=True)
class Score:
    reward: float
    valid: bool  # the answer parsed and the action is well-formed
    applied: bool  # it changed the code
    exact: bool
    ast_match: bool
    similarity: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def completion_text(completion: Any) -> str:
    """TRL passes plain strings or conversational ``[{"role": "assistant", "content": …}]``."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        last = completion[-1]
        if isinstance(last, dict):
            return str(last.get("content", ""))
    return str(completion)


def _parse(text: str) -> Action | str:
    from oopav.models.prompt import AnswerError, parse_role_answer

    try:
        return parse_role_answer("actor", text).payload
    except AnswerError as exc:
        return exc.reason


def apply_action(action: Action, pre: str, language: str = "python") -> str | None:
    """The code after ``action``, or None when the action is malformed for this code."""
    if isinstance(action, AstGrepAction):
        from oopav.sandbox.astgrep import RuleError, rewrite_source, rule_from_action

        try:
            rule = rule_from_action(action)
            if rule.language != language:
                return None
            return rewrite_source(pre, rule)[0]
        except (RuleError, ValueError, RuntimeError):
            return None
    if isinstance(action, SearchReplaceAction):
        out = pre
        for edit in action.edits:
            if not edit.search or out.count(edit.search) != 1:
                return None
            out = out.replace(edit.search, edit.replace)
        return out
    if isinstance(action, WriteFileAction):
        return action.content
    return pre  # run_command / finish change no code


_TOKEN = re.compile(r"\w+|[^\w\s]")


@lru_cache(maxsize=4096)
def _tokens(code: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(code))


def token_similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, _tokens(a), _tokens(b), autojunk=False).ratio()


@lru_cache(maxsize=4096)
def _ast_key(code: str, language: str) -> str | None:
    if language == "python":
        import ast

        try:
            return ast.dump(ast.parse(code))
        except (SyntaxError, ValueError):
            return None
    from ast_grep_py import SgRoot

    root = SgRoot(code, language).root()
    if root.find(kind="ERROR") is not None:
        return None
    return " ".join(_tokens(code))


def score_env(
    completion: Any,
    pre: str,
    post: str,
    language: str = "python",
    *,
    config: RewardConfig = DEFAULT,
    tests_passed: bool | None = None,
) -> Score:
    text = completion_text(completion)
    over = max(0, len(text) - config.concise_chars) / max(config.concise_chars, 1)
    penalty = config.concise_penalty * min(1.0, over)
    parsed = _parse(text)
    if isinstance(parsed, str):
        return Score(config.invalid - penalty, False, False, False, False, 0.0, parsed)
    out = apply_action(parsed, pre, language)
    if out is None:
        return Score(config.invalid - penalty, False, False, False, False, 0.0, "bad_action")
    bonus = 0.0 if tests_passed is None else (config.tests_bonus if tests_passed else 0.0)
    if out == pre:
        return Score(config.noop - penalty, True, False, False, False, 0.0, "noop")
    if out == post:
        return Score(config.exact - penalty + bonus, True, True, True, True, 1.0, "exact")
    key = _ast_key(out, language)
    if key is None:
        return Score(config.broken - penalty, True, True, False, False, 0.0, "broken")
    if key == _ast_key(post, language):
        return Score(config.ast_equal - penalty + bonus, True, True, False, True, 1.0, "ast_equal")
    sim_out, sim_pre = token_similarity(out, post), token_similarity(pre, post)
    gain = max(0.0, (sim_out - sim_pre) / max(1e-9, 1.0 - sim_pre))
    return Score(
        config.partial_floor + config.partial_max * gain - penalty + bonus,
        True,
        True,
        False,
        False,
        sim_out,
        "partial",
    )


def reward_env(
    prompts: Sequence[Any] | None = None,
    completions: Sequence[Any] = (),
    *,
    pre: Sequence[str],
    post: Sequence[str],
    language: Sequence[str] | None = None,
    config: RewardConfig = DEFAULT,
    **_: Any,
) -> list[float]:
    """TRL reward-function signature: dataset columns ``pre``, ``post`` (``language``) arrive as
    keyword lists aligned with ``completions``."""
    langs = language or ["python"] * len(completions)
    return [
        score_env(c, p, q, lang, config=config).reward
        for c, p, q, lang in zip(completions, pre, post, langs, strict=True)
    ]


# Rewards are rounded to multiples of 2**-10 before TRL sees them. A group of equal rewards
# must give advantages of exactly 0: TRL computes group means and stds in float32, and for a
# value such as -0.2 or 0.8 (not binary fractions) the mean of eight copies is off by an ulp,
# so every completion gets an advantage of ~1e-4 and Adam, which normalises the gradient,
# moves the weights by a full learning-rate step in a random direction. Measured with SRL: 15
# steps in which every sample was invalid (TRL reported 0% zero-std groups) turned a policy
# answering 25% of steps validly into one answering none. On this grid TRL's sums are exact.
QUANTUM = 2.0**-10


def quantize(value: float) -> float:
    return round(value / QUANTUM) * QUANTUM


def for_trainer(fn: Any) -> Any:
    """``fn`` (a TRL reward function) with its rewards on the :data:`QUANTUM` grid, under the
    same name (TRL logs ``rewards/<name>/mean``)."""
    import functools

    @functools.wraps(fn)
    def quantized(*args: Any, **kwargs: Any) -> list[float]:
        return [quantize(r) for r in fn(*args, **kwargs)]

    return quantized


def reward_valid(
    prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **_: Any
) -> list[float]:
    """Format validity alone (1/0): logged next to reward_env, never mistaken for it."""
    return [0.0 if isinstance(_parse(completion_text(c)), str) else 1.0 for c in completions]


def composite(
    syntax_ok: bool,
    tests_passed: bool | None,
    coverage: float = 0.0,
    weights: CompositeWeights = CompositeWeights(),
) -> float:
    """Seed 000's composite: weighted syntax, tests (0 when none ran), coverage in [0, 1]."""
    return (
        weights.syntax * float(syntax_ok)
        + weights.tests * float(bool(tests_passed))
        + weights.coverage * min(1.0, max(0.0, coverage))
    )


def reward_srl(
    completion: Any, teacher: dict[str, Any] | Action, *, invalid: float = -0.2
) -> float:
    """Step-wise reward (seed 002 §SRL): half for the fraction of action fields equal to the
    teacher's, half for the difflib ratio of the canonical JSON; ``invalid`` when unparsable."""
    import msgspec

    parsed = _parse(completion_text(completion))
    if isinstance(parsed, str):
        return invalid
    want = teacher if isinstance(teacher, dict) else msgspec.to_builtins(teacher)
    got = msgspec.to_builtins(parsed)
    if got.get("type") != want.get("type"):
        fields = 0.0
    else:
        keys = set(want) | set(got)
        fields = sum(1 for k in keys if got.get(k) == want.get(k)) / max(1, len(keys))
    a, b = json.dumps(got, sort_keys=True), json.dumps(want, sort_keys=True)
    return 0.5 * fields + 0.5 * difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def summarize(scores: Iterable[Score]) -> dict[str, float]:
    """Rates with validity and correctness apart: valid, applied, exact, ast_match, reward."""
    items = list(scores)
    n = max(1, len(items))
    return {
        "n": float(len(items)),
        "valid": sum(s.valid for s in items) / n,
        "applied": sum(s.applied for s in items) / n,
        "exact": sum(s.exact for s in items) / n,
        "ast_match": sum(s.ast_match for s in items) / n,
        "noop": sum(s.reason == "noop" for s in items) / n,
        "reward": sum(s.reward for s in items) / n,
    }
