"""Constrained decoding for transformers' ``generate()`` with the exported answer grammar.

The GBNF of :func:`oopav.models.schema_grammar.answer_grammar` (the same text ``oopav schema
export --format gbnf`` writes) is compiled by xgrammar against the model's tokenizer. xgrammar
precomputes, per grammar position, which tokens are always, never or conditionally allowed, so
a step costs a cached mask plus the few context-dependent tokens, not vocabulary × parse.

:class:`GrammarLogitsProcessor` keeps one matcher per batch row: it advances each matcher by the
token the row just sampled and masks the next token's logits; a row whose answer is complete
may only stop. Two repairs on top of xgrammar's mask:

- **Tokens the mask misses.** xgrammar 0.2.8's mask can leave out a token its matcher accepts:
  with the policy's tokenizer (1024 tokens, the contract pieces as whole tokens) the mask at
  position 0 allowed only ``<``, never ``<think></think>\n<action>`` — the token every trained
  answer starts with — while ``accept_token`` took it. The processor checks the tokenizer's
  added (non-special) tokens against the matcher at every step and admits those it accepts.
- **Closing within the budget.** The grammar's bounds make every answer finite, but not short
  enough for any ``max_new_tokens`` (the actor grammar admits answers of 150 KB). With a
  ``budget``, the last ``reserve`` tokens are a closing phase: where the grammar allows a token
  that closes something (a quote, ``}``, ``]``, a closing tag ``</…``, the stop token) only
  those are allowed, so strings, objects and the envelope close before the budget runs out.
  ``reserve`` defaults to twice the grammar's shortest answer in bytes plus 32 (a byte-level
  token is at least one byte), at most half the budget.

One processor serves one ``generate()`` call (:func:`constrain_generate` builds
a fresh one per call, which is how TRL's GRPOTrainer gets it). torch, transformers and xgrammar
are imported inside the functions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oopav.models.grammar import require
from oopav.models.schema_grammar import GrammarOptions, answer_grammar

# The decoding form: compact JSON, and bounds so that even an untrained policy closes every
# string, array and think text (the longest answer is finite: Grammar.max_bytes()).
DECODING = GrammarOptions(
    compact=True, think_chars=256, max_string_length=256, max_items=16, edit_blocks=False
)

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
        if key in ("compact", "edit_blocks"):
            continue
        if value is not None and (not isinstance(value, int) or value < 0):
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


def added_token_ids(tokenizer: Any) -> list[int]:
    """The tokenizer's added, non-special tokens of more than one character (the contract
    pieces of a policy built here): the tokens xgrammar's mask has been seen to miss."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    out = []
    for i, tok in sorted((getattr(tokenizer, "added_tokens_decoder", None) or {}).items()):
        if i in special or getattr(tok, "special", False) or len(str(tok)) < 2:
            continue
        out.append(int(i))
    return out


_CLOSING_CHARS = frozenset('"}]')


@dataclass(frozen=True)
class Closers:
    """Token classes of the closing phase (ids): ``stop``; ``tags`` (``</…``: the think text
    and the envelope); ``quote`` (a quote, then only closing brackets: ends a string);
    ``brackets`` (``}`` or ``]`` first, then only closing characters)."""

    stop: tuple[int, ...]
    tags: tuple[int, ...]
    quote: tuple[int, ...]
    brackets: tuple[int, ...]
    comma: tuple[int, ...] = ()


def closer_ids(compiled: Any) -> Closers:
    info = compiled.tokenizer_info
    tags: list[int] = []
    quote: list[int] = []
    brackets: list[int] = []
    comma: list[int] = []
    for i, raw in enumerate(info.decoded_vocab):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text in (",", ',"'):
            comma.append(i)
        elif text.startswith("</"):
            tags.append(i)
        elif text and set(text) <= _CLOSING_CHARS:
            (quote if text[0] == '"' else brackets).append(i)
    stop = tuple(int(i) for i in info.stop_token_ids)
    return Closers(stop, tuple(tags), tuple(quote), tuple(brackets), tuple(comma))


def closing_reserve(budget: int, tag: str = "action", options: GrammarOptions = DECODING) -> int:
    """Tokens kept for closing: twice the shortest answer in bytes plus 32, at most half the
    budget."""
    shortest = answer_grammar(tag, options).min_bytes()
    return max(1, min(2 * shortest + 32, budget // 2))


class GrammarLogitsProcessor:
    """A transformers logits processor for one ``generate()`` call (any batch size).

    ``budget``: the call's ``max_new_tokens``; the last ``reserve`` of them only close.
    ``repair``: token ids to check against the matcher where the mask leaves them out."""

    def __init__(
        self,
        compiled: Any,
        *,
        budget: int | None = None,
        reserve: int = 0,
        repair: list[int] | tuple[int, ...] = (),
        closers: Closers | None = None,
    ) -> None:
        self.compiled = compiled
        self.matchers: list[Any] = []
        self.done: list[bool] = []
        self.length = -1
        self.start = -1
        self.bitmask: Any = None
        self.stop_ids = list(compiled.tokenizer_info.stop_token_ids)
        self.masked_steps = 0
        self.budget = budget
        self.reserve = reserve
        self.repair = [i for i in repair if i < compiled.tokenizer_info.vocab_size]
        self.closers = (
            closers if closers is not None else (closer_ids(compiled) if budget else None)
        )
        self.closing_steps = 0
        self.repaired = 0
        self.vocab = compiled.tokenizer_info.decoded_vocab if self.closers is not None else []
        self.scan: list[dict[str, Any]] = []
        self.tensors: dict[str, Any] = {}

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        xgr = require("xgrammar", "train")
        torch = require("torch", "train")
        batch, length = int(input_ids.shape[0]), int(input_ids.shape[1])
        if not self.matchers:
            self.start = length
            self.matchers = [xgr.GrammarMatcher(self.compiled) for _ in range(batch)]
            self.scan = [
                {"think": True, "string": False, "escape": False, "tail": ""} for _ in range(batch)
            ]
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
                elif not self.done[i] and self.closers is not None:
                    self._track(i, int(last[i]))
                if m.is_terminated():
                    self.done[i] = True
        self.length = length
        active = [i for i in range(batch) if not self.done[i]]
        for i in active:
            self.matchers[i].fill_next_token_bitmask(self.bitmask, i)
            if self.repair:
                self._repair(i)
        device = scores.device
        work = scores if device.type in ("cpu", "cuda") else scores.to("cpu")
        if active:
            xgr.apply_token_bitmask_inplace(
                work, self.bitmask.to(work.device), indices=active if len(active) < batch else None
            )
        if self.budget is not None and active and self.closers:
            left = self.budget - (length - self.start)
            if left <= self.reserve:
                self._close(work, active, torch)
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

    def _repair(self, row: int) -> None:
        """Admit the repair tokens the matcher accepts but the mask left out."""
        m = self.matchers[row]
        words = self.bitmask[row]
        for t in self.repair:
            word, bit = divmod(t, 32)
            if (int(words[word]) >> bit) & 1:
                continue
            if m.accept_token(t):
                m.rollback(1)
                value = int(words[word]) | (1 << bit)
                words[word] = value - (1 << 32) if value >= 1 << 31 else value  # int32
                self.repaired += 1

    def _track(self, row: int, token: int) -> None:
        """Follow where the row's answer is (think text, inside a JSON string) from the bytes
        of the token it just took: the closing phase closes what is open there."""
        st = self.scan[row]
        raw = bytes(self.vocab[token]) if token < len(self.vocab) else b""
        for ch in raw.decode("utf-8", "replace"):
            st["tail"] = (st["tail"] + ch)[-8:]
            if st["think"]:
                if st["tail"].endswith("</think>"):
                    st["think"] = False
            elif st["escape"]:
                st["escape"] = False
            elif st["string"] and ch == "\\":
                st["escape"] = True
            elif ch == '"':
                st["string"] = not st["string"]

    def _close(self, work: Any, rows: list[int], torch: Any) -> None:
        """Closing phase: allow only the first class of closing tokens that has an allowed
        one — the stop token; in the think text a closing tag; inside a string a quote; else
        a closing bracket, a closing tag, a quote (a value that must be a string), a comma
        (a required key still missing)."""
        c = self.closers
        assert c is not None
        named = {
            "stop": c.stop,
            "tags": c.tags,
            "quote": c.quote,
            "brackets": c.brackets,
            "comma": c.comma,
        }
        for i in rows:
            st = self.scan[i]
            if st["think"]:
                order: tuple[str, ...] = ("stop", "tags")
            elif st["string"]:
                order = ("stop", "quote")
            else:
                # a comma only where nothing closes: the next required key, not more digits
                order = ("stop", "brackets", "tags", "quote", "comma")
            row = work[i]
            for name in order:
                if not named[name]:
                    continue
                ids = self.tensors.setdefault(
                    name, torch.tensor(named[name], dtype=torch.long, device=work.device)
                )
                if bool((~torch.isinf(row[ids])).any()):
                    keep = row[ids].clone()
                    row[:] = float("-inf")
                    row[ids] = keep
                    break
        self.closing_steps += 1


def logits_processors(
    model: Any,
    tokenizer: Any,
    *,
    tag: str = "action",
    options: GrammarOptions = DECODING,
    budget: int | None = None,
) -> Any:
    """A ``LogitsProcessorList`` holding a fresh grammar processor, for one ``generate()``;
    with ``budget`` (its ``max_new_tokens``) the answer closes before the budget runs out."""
    transformers = require("transformers", "train")
    compiled = compile_for(tokenizer, model=model, tag=tag, options=options)
    return transformers.LogitsProcessorList([processor(compiled, tokenizer, budget, tag, options)])


def processor(
    compiled: Any,
    tokenizer: Any,
    budget: int | None,
    tag: str = "action",
    options: GrammarOptions = DECODING,
) -> GrammarLogitsProcessor:
    """The grammar processor with both repairs: the tokenizer's added tokens checked against
    the matcher, and the closing phase when ``budget`` is given."""
    return GrammarLogitsProcessor(
        compiled,
        budget=budget,
        reserve=closing_reserve(budget, tag, options) if budget else 0,
        repair=added_token_ids(tokenizer),
    )


def constrain_generate(
    model: Any, tokenizer: Any, *, tag: str = "action", options: GrammarOptions = DECODING
) -> Callable[[], None]:
    """Make every ``model.generate()`` call decode under the grammar (a fresh processor each
    call), for callers that build the call themselves (TRL's GRPOTrainer). Returns a function
    that undoes it."""
    compile_for(tokenizer, model=model, tag=tag, options=options)  # fail early, not mid-run
    original = model.generate

    def generate(*args: Any, **kwargs: Any) -> Any:
        config = kwargs.get("generation_config")
        budget = kwargs.get("max_new_tokens") or getattr(config, "max_new_tokens", None)
        procs = logits_processors(model, tokenizer, tag=tag, options=options, budget=budget)
        extra = kwargs.pop("logits_processor", None)
        if extra:
            procs.extend(extra)
        return original(*args, logits_processor=procs, **kwargs)

    model.generate = generate

    def undo() -> None:
        if model.__dict__.get("generate") is generate:
            del model.__dict__["generate"]

    return undo
