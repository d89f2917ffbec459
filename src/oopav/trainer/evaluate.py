"""Evaluating a policy on a task suite: validity, apply success, exact and AST match, reward.

``hf:<dir>`` models are evaluated with batched greedy generation, unconstrained: a format gain
must show as a validity gain, not be hidden by a grammar (``constrained=True`` decodes under the
answer grammar instead, :mod:`oopav.models.constrain`). Any other model spec (scripted,
openai, vllm) goes through its backend, one request per task. ``gold`` answers with each
task's own rule (an upper bound and a check of the harness).
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oopav.trainer.rewards import Score, score_env, summarize
from oopav.trainer.tasks import Task, generate, load_tasks, target_text, task_messages

if TYPE_CHECKING:
    from oopav.models.schema_grammar import GrammarOptions


@dataclass
class EvalReport:
    model: str
    suite: str
    tasks: list[Task]
    completions: list[str]
    scores: list[Score]
    completion_tokens: list[int] = field(default_factory=list)
    constrained: bool = False

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "suite": self.suite, **summarize(self.scores)}
        out["constrained"] = self.constrained
        out["n"] = len(self.scores)
        if self.completion_tokens:
            out["tokens_per_step"] = statistics.mean(self.completion_tokens)
        out["rules_per_task"] = rules_per_task(self.completions)
        out["families"] = self.families()
        return out

    def families(self) -> dict[str, dict[str, float]]:
        groups: dict[str, list[Score]] = defaultdict(list)
        for t, s in zip(self.tasks, self.scores, strict=True):
            groups[t.family].append(s)
        return {f: summarize(v) for f, v in sorted(groups.items())}

    def table(self) -> str:
        s = self.summary()
        lines = [
            f"model {self.model}  suite {self.suite}  n={s['n']}",
            f"{'family':18} {'n':>5} {'valid':>7} {'applied':>8} {'exact':>7} {'ast':>7} {'reward':>8}",
        ]
        rows = [*self.families().items(), ("all", summarize(self.scores))]
        for name, m in rows:
            lines.append(
                f"{name:18} {int(m['n']):>5} {m['valid']:>7.1%} {m['applied']:>8.1%} "
                f"{m['exact']:>7.1%} {m['ast_match']:>7.1%} {m['reward']:>8.3f}"
            )
        if self.completion_tokens:
            lines.append(f"tokens per step: {statistics.mean(self.completion_tokens):.1f}")
        return "\n".join(lines)


def rules_in(text: str) -> int | None:
    """How many rewrite rules an answer carries: an ast_grep short form is one, a YAML rule is
    one per document (``---``), search/replace one per edit, a file write one; None when the
    answer does not parse (it carries no rule)."""
    from oopav.events.actions import AstGrepAction, SearchReplaceAction, WriteFileAction
    from oopav.trainer.rewards import _parse

    action = _parse(text)
    if isinstance(action, str):
        return None
    if isinstance(action, AstGrepAction):
        if action.rule:
            docs = [d for d in action.rule.split("\n---") if d.strip()]
            return max(1, len(docs))
        return 1
    if isinstance(action, SearchReplaceAction):
        return len(action.edits)
    return 1 if isinstance(action, WriteFileAction) else 0


def rules_per_task(completions: Sequence[str]) -> float:
    """Mean number of rules per valid answer (0.0 when none is valid): measured from the
    answers, so an answer that needs two rules, or none, shows."""
    counts = [c for c in (rules_in(t) for t in completions) if c is not None]
    return sum(counts) / len(counts) if counts else 0.0


def load_suite(suite: str, *, split: str = "test", n: int = 100, seed: int = 0) -> list[Task]:
    """A tasks directory (``oopav tasks generate``), or ``synthetic-heldout``: held-out
    synthetic tasks generated on the fly from the standard library."""
    if suite == "synthetic-heldout":
        tasks = [t for t in generate(n * 6, seed=seed, holdout=0.2).tasks if t.split == "test"]
        return tasks[:n]
    if not Path(suite).is_dir():
        raise FileNotFoundError(
            f"no suite {suite!r}: give a directory from `oopav tasks generate` or synthetic-heldout"
        )
    return load_tasks(suite, split)[:n]


def prompt_texts(tokenizer: Any, tasks: Sequence[Task]) -> list[str]:
    return [
        str(
            tokenizer.apply_chat_template(
                task_messages(t.instruction, t.pre, t.language),
                tokenize=False,
                add_generation_prompt=True,
            )
        )
        for t in tasks
    ]


def generate_batch(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    max_new_tokens: int = 160,
    batch_size: int = 32,
    constrained: bool | GrammarOptions = False,
) -> tuple[list[str], list[int]]:
    """Greedy completions (text, token count) for string prompts, left-padded batches;
    ``constrained``: under the answer grammar (given options, or the decoding defaults)."""
    import torch

    tokenizer.padding_side = "left"
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    texts: list[str] = []
    counts: list[int] = []
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        for i in range(0, len(prompts), batch_size):
            chunk = list(prompts[i : i + batch_size])
            enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
            enc = {k: v.to(device) for k, v in enc.items()}
            extra: dict[str, Any] = {}
            if constrained:
                from oopav.models.constrain import DECODING, logits_processors

                opts = DECODING if constrained is True else constrained
                extra["logits_processor"] = logits_processors(
                    model, tokenizer, options=opts, budget=max_new_tokens
                )
            with torch.no_grad():
                out = model.generate(
                    **enc,
                    **extra,
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    eos_token_id=eos,
                    pad_token_id=pad,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                )
            new = out[:, enc["input_ids"].shape[1] :]
            for row in new.tolist():
                if eos in row:
                    row = row[: row.index(eos)]
                row = [t for t in row if t != pad]
                counts.append(len(row))
                texts.append(tokenizer.decode(row, skip_special_tokens=True))
    finally:
        if was_training:
            model.train()
    return texts, counts


def evaluate_model(
    model: Any,
    tokenizer: Any,
    tasks: Sequence[Task],
    *,
    name: str = "model",
    suite: str = "",
    max_new_tokens: int = 160,
    constrained: bool | GrammarOptions = False,
) -> EvalReport:
    texts, counts = generate_batch(
        model,
        tokenizer,
        prompt_texts(tokenizer, tasks),
        max_new_tokens=max_new_tokens,
        constrained=constrained,
    )
    scores = [score_env(c, t.pre, t.post, t.language) for c, t in zip(texts, tasks, strict=True)]
    return EvalReport(name, suite, list(tasks), texts, scores, counts, bool(constrained))


def pass_at_k_summary(tasks: Sequence[Task], groups: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Reachability from sampled completions (``groups[i]``: task i's samples): the fraction
    of tasks with at least one exact sample (pass@k), per-sample validity and exact, and why
    samples failed. A learner from verdicts (GRPO, RFT) only sharpens what sampling finds, so
    a family with pass@k 0 is out of its reach."""
    from collections import Counter

    solved = 0
    scores: list[Score] = []
    for t, texts in zip(tasks, groups, strict=True):
        group = [score_env(c, t.pre, t.post, t.language) for c in texts]
        solved += any(s.exact for s in group)
        scores += group
    k = max((len(g) for g in groups), default=0)
    return {
        "n": len(groups),
        "k": k,
        "pass_at_k": solved / max(1, len(groups)),
        "samples": summarize(scores),
        "reasons": dict(Counter(s.reason for s in scores).most_common()),
    }


def load_hf(path: str | Path) -> tuple[Any, Any]:
    from oopav.models.grammar import require

    transformers = require("transformers", "train")
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"no model directory at {p}")
    tok = transformers.AutoTokenizer.from_pretrained(p)
    model = transformers.AutoModelForCausalLM.from_pretrained(p)
    return model, tok


def evaluate_spec(
    spec: str,
    tasks: Sequence[Task],
    *,
    max_new_tokens: int = 160,
    suite: str = "",
    constrained: bool = False,
) -> EvalReport:
    if spec == "gold":
        texts = [target_text(t.rule) for t in tasks]
        scores = [
            score_env(c, t.pre, t.post, t.language) for c, t in zip(texts, tasks, strict=True)
        ]
        return EvalReport(spec, suite, list(tasks), texts, scores)
    if spec.startswith("hf:"):
        import torch

        model, tok = load_hf(spec[3:])
        # On the device when there is one, as the loop's hf: backend does (models/hf.py).
        model.to("cuda" if torch.cuda.is_available() else "cpu")
        return evaluate_model(
            model,
            tok,
            tasks,
            name=spec,
            suite=suite,
            max_new_tokens=max_new_tokens,
            constrained=constrained,
        )
    return asyncio.run(_evaluate_backend(spec, tasks, max_new_tokens, suite))


async def _evaluate_backend(
    spec: str, tasks: Sequence[Task], max_new_tokens: int, suite: str
) -> EvalReport:
    from oopav.models.base import Message, ModelError, ModelRequest, Sampling
    from oopav.models.prompt import output_schema
    from oopav.models.registry import load_backend

    backend = load_backend(spec)
    texts: list[str] = []
    counts: list[int] = []
    try:
        for t in tasks:
            request = ModelRequest(
                role="actor",
                messages=[Message(**m) for m in task_messages(t.instruction, t.pre, t.language)],  # type: ignore[arg-type]  # task_messages' roles are system/user
                schema=output_schema("actor"),
                envelope="action",
                state_update=True,
                sampling=Sampling(max_tokens=max_new_tokens),
            )
            try:
                resp = await backend.complete(request)
            except ModelError as exc:
                texts.append(f"<error {exc.kind}>")
                counts.append(0)
                continue
            texts.append(resp.text)
            counts.append(resp.completion_tokens)
    finally:
        await backend.aclose()
    scores = [score_env(c, t.pre, t.post, t.language) for c, t in zip(texts, tasks, strict=True)]
    return EvalReport(spec, suite, list(tasks), texts, scores, counts)
