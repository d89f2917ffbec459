"""``hf:<model path>``: transformers ``generate`` on CPU or GPU, constrained by xgrammar.

When the request has a schema, an xgrammar logits processor masks every token the grammar
forbids, so the answer (bare JSON or the full envelope) always parses. The limits fit the
budget: the think text is at most a quarter of ``max_tokens`` (characters), and the last
tokens of the budget are a closing phase (:mod:`oopav.models.constrain`) in which strings,
objects and tags close, so the answer ends before ``max_tokens`` does; were it still cut off,
``finish_reason == "length"`` says so.

A request with ``copy_words`` is decoded copy-constrained too (:mod:`oopav.models.copying`):
every word of the answer's payload is one of those words, a word of the checkpoint's answer
vocabulary (``oopav_answer_words.json``, written by ``oopav train sft``) or a tag name.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from oopav.models.base import Message, ModelError, ModelRequest, ModelResponse
from oopav.models.grammar import DEFAULT_THINK_CHARS, request_grammar, require


class HFBackend:
    def __init__(
        self,
        path: str | Path,
        *,
        device: str | None = None,
        constrained: bool = True,
        think_chars: int = DEFAULT_THINK_CHARS,
        max_string_length: int | None = None,
        max_items: int | None = None,
    ) -> None:
        self.spec = f"hf:{path}"
        torch = require("torch", "train")
        transformers = require("transformers", "train")
        self._torch = torch
        p = Path(path)
        if not p.is_dir():
            raise ModelError(
                "not_found", f"no model directory at {p}; hf: takes a local path (no downloads)"
            )
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(p)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(p)
        except (OSError, ValueError) as exc:
            raise ModelError("not_found", f"cannot load a causal LM from {p}: {exc}") from exc
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.constrained = constrained
        self.think_chars = think_chars
        self.max_string_length = max_string_length
        self.max_items = max_items
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)
        self.eos_ids = _eos_ids(self.model, self.tokenizer)
        from oopav.models.capabilities import Capabilities

        # Declared for the loop (models/capabilities.py): xgrammar constrains, the window is
        # the model's positions.
        self.capabilities = Capabilities(
            grammar=constrained, logprobs=True, context_tokens=self.max_positions or None
        )
        self._compiler: Any = None
        self._compiled: dict[tuple[Any, ...], Any] = {}
        self.path = p
        self._token_texts: list[str] | None = None
        self._answer_words: set[str] | None = None
        # generate() and the global torch RNG are not safe to share between threads.
        self._lock = threading.Lock()

    def prompt_text(self, messages: list[Message]) -> str:
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            return str(
                self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            )
        return "".join(f"{m['role']}: {m['content']}\n" for m in msgs) + "assistant: "

    def think_limit(self, max_tokens: int) -> int:
        """The think text's bound for a call: never more than a quarter of its token budget
        (2,048 characters of think under a 1,024-token budget can never close)."""
        return max(0, min(self.think_chars, max_tokens // 4))

    def _compiled_grammar(self, request: ModelRequest) -> Any:
        think_chars = self.think_limit(request.sampling.max_tokens)
        key = (
            json.dumps(request.schema, sort_keys=True),
            request.envelope,
            request.state_update,
            think_chars,
        )
        if key not in self._compiled:
            xgr = require("xgrammar", "train")
            if self._compiler is None:
                info = xgr.TokenizerInfo.from_huggingface(
                    self.tokenizer, vocab_size=self.model.config.vocab_size
                )
                self._compiler = xgr.GrammarCompiler(info)
            grammar = self._answer_grammar(request, think_chars) or request_grammar(
                request,
                think_chars=think_chars,
                max_string_length=self.max_string_length,
                max_items=self.max_items,
            )
            self._compiled[key] = self._compiler.compile_grammar(grammar)
        return self._compiled[key]

    def _options(self, think_chars: int) -> Any:
        from oopav.models.schema_grammar import GrammarOptions

        bounded = self.max_string_length is not None
        return GrammarOptions(
            compact=True,
            think_chars=think_chars,
            max_string_length=self.max_string_length,
            max_items=self.max_items,
            max_escapes=0 if bounded else 16,  # bounded strings: plain text, as before
            edit_blocks=False,  # small local policies answer JSON (constrain.DECODING)
        )

    def _role_tag(self, request: ModelRequest) -> str | None:
        from oopav.models.prompt import ROLE_OUTPUTS, output_schema

        for role, (tag, _, with_state) in ROLE_OUTPUTS.items():
            if (request.envelope, request.state_update) == (tag, with_state):
                return tag if request.schema == output_schema(role) else None
        return None

    def _processor(self, request: ModelRequest) -> Any:
        from oopav.models.constrain import GrammarLogitsProcessor, added_token_ids, closing_reserve

        budget = request.sampling.max_tokens
        tag = self._role_tag(request)
        if tag is not None:
            reserve = closing_reserve(budget, tag, self._options(self.think_limit(budget)))
        else:
            reserve = max(1, min(32, budget // 3))
        return GrammarLogitsProcessor(
            self._compiled_grammar(request),
            budget=budget,
            reserve=reserve,
            repair=added_token_ids(self.tokenizer),
        )

    def _answer_grammar(self, request: ModelRequest, think_chars: int) -> Any | None:
        """A role's whole answer under its own schema: the exported answer grammar
        (oopav.models.schema_grammar), which takes the keys in any order, so a policy trained on
        ``{"type":…}`` first keeps its format; xgrammar's own JSON-schema converter fixes the
        order (alphabetical) and the separators. Anything else: None."""
        from oopav.models.prompt import ROLE_OUTPUTS, output_schema
        from oopav.models.schema_grammar import answer_grammar

        for role, (tag, _, with_state) in ROLE_OUTPUTS.items():
            if (request.envelope, request.state_update) != (tag, with_state):
                continue
            if request.schema != output_schema(role):
                return None
            opts = self._options(think_chars)
            xgr = require("xgrammar", "train")
            return xgr.Grammar.from_ebnf(answer_grammar(tag, opts).gbnf())
        return None

    def _copy_processor(self, request: ModelRequest) -> Any:
        """The copy constraint of a request with ``copy_words`` (models/copying.py)."""
        from oopav.models.copying import CopyLogitsProcessor, read_answer_words, token_texts

        if self._answer_words is None:
            try:
                self._answer_words = read_answer_words(self.path)
            except (OSError, ValueError) as exc:
                raise ModelError("invalid_request", f"copy_words: {exc}") from exc
            if self._answer_words is None:
                raise ModelError(
                    "invalid_request",
                    f"copy_words needs the checkpoint's answer vocabulary: {self.path} has no "
                    "oopav_answer_words.json (oopav train sft writes it; for another checkpoint "
                    "write it with oopav.models.copying.write_answer_words)",
                )
        if self._token_texts is None:
            self._token_texts = token_texts(self.tokenizer, len(self.tokenizer))
        # The envelope's own name: its closing tag ends the payload (think text and the state
        # update lie outside it and are not constrained).
        tags = {request.envelope} if request.envelope else set()
        return CopyLogitsProcessor(
            self._token_texts,
            {*(request.copy_words or ()), *self._answer_words, *tags},
            envelope=request.envelope,
            free_ids=self.tokenizer.all_special_ids,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self.generate, request)

    def generate(self, request: ModelRequest, *, constrained: bool | None = None) -> ModelResponse:
        torch = self._torch
        transformers = require("transformers", "train")
        started = time.perf_counter()
        text = self.prompt_text(request.messages)
        inputs = self.tokenizer(text, return_tensors="pt", add_special_tokens=False).to(self.device)
        prompt_len = int(inputs["input_ids"].shape[1])
        s = request.sampling
        if self.max_positions and prompt_len + s.max_tokens > self.max_positions:
            raise ModelError(
                "context_length",
                f"prompt ({prompt_len} tokens) + max_tokens ({s.max_tokens}) exceed the model's "
                f"{self.max_positions} positions; shorten the context pack",
            )
        processors = transformers.LogitsProcessorList()
        use_grammar = self.constrained if constrained is None else constrained
        if use_grammar and request.schema is not None:
            processors.append(self._processor(request))
        copying = None
        if request.copy_words is not None:
            # After the grammar: a step where no token keeps both is left to the grammar.
            copying = self._copy_processor(request)
            processors.append(copying)
        kwargs: dict[str, Any] = {
            "max_new_tokens": s.max_tokens,
            "logits_processor": processors,
            "eos_token_id": self.eos_ids,
            "pad_token_id": self.tokenizer.pad_token_id or self.eos_ids[0],
        }
        if s.temperature > 0:
            kwargs.update(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with self._lock, torch.no_grad():
            if request.seed is not None:
                torch.manual_seed(request.seed)
            out = self.model.generate(**inputs, **kwargs)
        new = out[0, prompt_len:].tolist()
        finish = "length"
        if new and new[-1] in self.eos_ids:
            new = new[:-1]
            finish = "stop"
        answer = self.tokenizer.decode(new, skip_special_tokens=True)
        for stop in s.stop:
            cut = answer.find(stop)
            if cut >= 0:
                answer, finish = answer[:cut], "stop"
        notes = []
        if copying is not None and copying.relaxed:
            # A fact about the decoding, recorded (model_called.notes), not part of the answer.
            notes.append(
                f"copy constraint relaxed at {copying.relaxed} step(s): the grammar allowed "
                "no token that keeps the answer's words copied"
            )
        return ModelResponse(
            notes=notes,
            text=answer,
            prompt_tokens=prompt_len,
            completion_tokens=len(new) + (1 if finish == "stop" else 0),
            latency_ms=(time.perf_counter() - started) * 1000,
            finish_reason=finish,
        )

    async def aclose(self) -> None:
        return None


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    ids = eos if isinstance(eos, list) else [eos]
    return [int(i) for i in ids if i is not None]
