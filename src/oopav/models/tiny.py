"""A tiny, randomly initialised Llama and a byte-level BPE tokenizer, built locally.

Nothing is downloaded: the tokenizer is trained in code on a small built-in corpus and the
model is a 2-layer, 64-wide ``LlamaForCausalLM``. Tests, benchmarks, the loop tests and the
trainer use it wherever a real transformers model directory is needed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from oopav.models.grammar import require

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|pad|>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def _corpus() -> list[str]:
    # Deterministic text close to what the model will see, so BPE merges are useful.
    from oopav.models.prompt import ROLE_DIRECTIVES, static_prefix

    samples = [
        '{"type":"search_replace","edits":[{"path":"src/app.py","search":"fetch(","replace":"fetch_page("}]}',
        '{"type":"ast_grep","pattern":"fetch($A)","rewrite":"fetch_page($A)","language":"python","paths":["."]}',
        '{"type":"write_file","path":"README.md","content":"# Title\\n"}',
        '{"type":"run_command","argv":["pytest","-q"],"timeout_s":60.0,"scopes":[]}',
        '{"type":"finish","summary":"renamed fetch to fetch_page"}',
        "<think>rename the function and its callers</think>\n<action>",
        '</action>\n<state_update>{"history":"renamed","next_focus":"tests"}</state_update>',
    ]
    return [static_prefix(), *ROLE_DIRECTIVES.values(), *samples] * 4


def build_tiny_tokenizer(vocab_size: int = 512) -> PreTrainedTokenizerFast:
    """A byte-level BPE ``PreTrainedTokenizerFast`` with a chat template (any text encodes)."""
    tokenizers = require("tokenizers", "train")
    transformers = require("transformers", "train")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|pad|>",
        bos_token=None,
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(
    path: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 512,
    hidden_size: int = 64,
    layers: int = 2,
    max_positions: int = 8192,
) -> Path:
    """Write a tiny random Llama + tokenizer to ``path`` (loadable with ``from_pretrained``)."""
    torch = require("torch", "train")
    transformers = require("transformers", "train")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer(vocab_size)
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    pad = tokenizer.convert_tokens_to_ids("<|pad|>")
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "oopav_tiny.json").write_text(json.dumps({"seed": seed, "vocab_size": vocab_size}))
    return out
