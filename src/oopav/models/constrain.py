"""Constrained decoding for transformers' ``generate()`` with the exported answer grammar.

The GBNF of :func:`oopav.models.schema_grammar.answer_grammar` (the same text ``oopav schema
export --format gbnf`` writes) is compiled by xgrammar against the model's tokenizer. xgrammar
precomputes, per grammar position, which tokens are always, never or conditionally allowed, so
a step costs a cached mask plus the few context-dependent tokens, not vocabulary × parse.

:class:`GrammarLogitsProcessor` keeps one matcher per batch row: it advances each matcher by the
token the row just sampled and masks the next token's logits; a row whose answer is complete
may only stop. One processor serves one ``generate()`` call (:func:`constrain_generate` builds
a fresh one per call, which is how TRL's GRPOTrainer gets it). torch, transformers and xgrammar
are imported inside the functions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from typing import Any

from oopav.models.grammar import require
from oopav.models.schema_grammar import GrammarOptions, answer_grammar

# The decoding form: compact JSON, and bounds so that even an untrained policy closes every
# string, array and think text (the longest answer is finite: Grammar.max_bytes()).
DECODING = GrammarOptions(compact=True, think_chars=256, max_string_length=256, max_items=16)

_lock = threading.Lock()
_compilers: dict[tuple[int, int], tuple[Any, Any]] = {}
_compiled: dict[tuple[int, int, str], Any] = {}


def decoding_gbnf(tag: str = "action", options: GrammarOptions = DECODING) -> str:
    return answer_grammar(tag, options).gbnf()


def decoding_options(overrides: dict[str, Any] | None = None) -> GrammarOptions:
    """:data:`DECODING` with some bounds replaced (a recipe's ``grammar:`` mapping)."""
    known = {f.name for f in dataclasses.fields(GrammarOptions)}
    unknown = sorted(set(overrides or {}) - known)
    if unknown:
        raise ValueError(
            f"unknown grammar setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    for key, value in (overrides or {}).items():
        if key != "compact" and value is not None and (not isinstance(value, int) or value < 0):
            raise ValueError(f"grammar.{key} must be a whole number >= 0 or null, not {value!r}")
    return dataclasses.replace(DECODING, **(overrides or {}))


def vllm_kwargs(options: GrammarOptions = DECODING, tag: str = "action") -> dict[str, Any]:
    """vLLM sampling parameters that constrain to the same grammar (TRL passes a GRPOConfig's
    ``generation_kwargs`` to vLLM's ``SamplingParams``, colocated or on a server)."""
    return {"structured_outputs": {"grammar": decoding_gbnf(tag, options)}}


def _stop_ids(tokenizer: Any, model: Any | None) -> list[int]:
    ids: list[int] = []
    for source in (getattr(model, "generation_config", None), tokenizer):
        eos = getattr(source, "eos_token_id", None)
        for i in eos if isinstance(eos, list | tuple) else [eos]:
            if i is not None and int(i) not in ids:
                ids.append(int(i))
    if not ids:
        raise ValueError("the tokenizer has no eos token: constrained decoding needs one to stop")
    return ids


def compile_for(
    tokenizer: Any,
    *,
    model: Any | None = None,
    vocab_size: int | None = None,
    tag: str = "action",
    options: GrammarOptions = DECODING,
) -> Any:
    """The xgrammar ``CompiledGrammar`` of the answer grammar for ``tokenizer`` (cached per
    tokenizer object and grammar text)."""
    xgr = require("xgrammar", "train")
    if vocab_size is None:
        config = getattr(model, "config", None)
        vocab_size = int(getattr(config, "vocab_size", 0) or len(tokenizer))
    text = decoding_gbnf(tag, options)
    digest = hashlib.sha256(text.encode()).hexdigest()
    with _lock:
        key = (id(tokenizer), vocab_size)
        if key not in _compilers or _compilers[key][0] is not tokenizer:
            info = xgr.TokenizerInfo.from_huggingface(
                tokenizer, vocab_size=vocab_size, stop_token_ids=_stop_ids(tokenizer, model)
            )
            # the tokenizer is kept alive with its compiler, so its id() cannot be reused
            _compilers[key] = (tokenizer, xgr.GrammarCompiler(info))
        ckey = (id(tokenizer), vocab_size, digest)
        if ckey not in _compiled:
            _compiled[ckey] = _compilers[key][1].compile_grammar(xgr.Grammar.from_ebnf(text))
        return _compiled[ckey]


class GrammarLogitsProcessor:
    """A transformers logits processor for one ``generate()`` call (any batch size)."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self.matchers: list[Any] = []
        self.done: list[bool] = []
        self.length = -1
        self.bitmask: Any = None
        self.stop_ids = list(compiled.tokenizer_info.stop_token_ids)
        self.masked_steps = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        xgr = require("xgrammar", "train")
        torch = require("torch", "train")
        batch, length = int(input_ids.shape[0]), int(input_ids.shape[1])
        if not self.matchers:
            self.matchers = [xgr.GrammarMatcher(self.compiled) for _ in range(batch)]
            self.done = [False] * batch
            self.bitmask = xgr.allocate_token_bitmask(
                batch, self.compiled.tokenizer_info.vocab_size
            )
        elif batch != len(self.matchers) or length != self.length + 1:
            raise RuntimeError(
                "a GrammarLogitsProcessor serves one generate() call; build a new one per call"
            )
        else:
            last = input_ids[:, -1].tolist()
            for i, m in enumerate(self.matchers):
                if not self.done[i] and not m.accept_token(int(last[i])):
                    self.done[i] = True  # cannot happen under the mask; stop the row cleanly
                if m.is_terminated():
                    self.done[i] = True
        self.length = length
        active = [i for i in range(batch) if not self.done[i]]
        for i in active:
            self.matchers[i].fill_next_token_bitmask(self.bitmask, i)
        device = scores.device
        work = scores if device.type in ("cpu", "cuda") else scores.to("cpu")
        if active:
            xgr.apply_token_bitmask_inplace(
                work, self.bitmask.to(work.device), indices=active if len(active) < batch else None
            )
        for i in range(batch):
            if self.done[i]:
                work[i, :] = float("-inf")
                work[i, self.stop_ids] = 0.0
        # A top-k/top-p filter that ran before this processor may have left no allowed token:
        # then any allowed token, uniformly, rather than NaN probabilities.
        dead = torch.isinf(work).all(dim=-1).nonzero().flatten().tolist()
        for i in dead:
            row = torch.zeros_like(work[i : i + 1])
            xgr.apply_token_bitmask_inplace(row, self.bitmask[i : i + 1].to(row.device))
            work[i] = row[0]
        self.masked_steps += 1
        return work if work is scores else work.to(device)


def logits_processors(
    model: Any, tokenizer: Any, *, tag: str = "action", options: GrammarOptions = DECODING
) -> Any:
    """A ``LogitsProcessorList`` holding a fresh grammar processor, for one ``generate()``."""
    transformers = require("transformers", "train")
    compiled = compile_for(tokenizer, model=model, tag=tag, options=options)
    return transformers.LogitsProcessorList([GrammarLogitsProcessor(compiled)])


def constrain_generate(
    model: Any, tokenizer: Any, *, tag: str = "action", options: GrammarOptions = DECODING
) -> Callable[[], None]:
    """Make every ``model.generate()`` call decode under the grammar (a fresh processor each
    call), for callers that build the call themselves (TRL's GRPOTrainer). Returns a function
    that undoes it."""
    compile_for(tokenizer, model=model, tag=tag, options=options)  # fail early, not mid-run
    original = model.generate

    def generate(*args: Any, **kwargs: Any) -> Any:
        procs = logits_processors(model, tokenizer, tag=tag, options=options)
        extra = kwargs.pop("logits_processor", None)
        if extra:
            procs.extend(extra)
        return original(*args, logits_processor=procs, **kwargs)

    model.generate = generate

    def undo() -> None:
        if model.__dict__.get("generate") is generate:
            del model.__dict__["generate"]

    return undo
