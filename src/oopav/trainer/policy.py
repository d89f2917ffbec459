"""A small policy built here: a Llama-style decoder (~2–5M parameters) and a byte-level BPE
tokenizer trained on the task corpus. No weights are downloaded, ever.

The tokenizer is trained on the prompts and answers the policy will see (plus the generic
corpus of :mod:`oopav.models.tiny`), and the answer contract's constant pieces
(:data:`CONTRACT_PIECES`: ``<think></think>``, ``{"type":"ast_grep"``, ``","rewrite":"``, …)
are whole tokens: BPE alone splits them into ~35 tokens of a ~50-token answer, which the
policy pays for on every training step and every decoding step. It keeps the chat template of
the tiny model, so a checkpoint works as ``--model hf:<dir>``.

**A name is the same tokens wherever it occurs** (:data:`CODE_SPLIT`, issue 25). GPT-2's
pre-tokenizer glues a leading space to a word and runs of punctuation together, so ``join_fast``
was `` join``/``_``/``fast`` after ``fix:`` but ``join``/``_``/``fast`` after a backtick, and
``^old$\\n`` one punctuation run: copying a name from the instruction into the answer then needs
a re-segmentation, not the token copy a small transformer learns quickly (an induction head).
The ``code`` pre-tokenizer isolates every whitespace run, every ASCII letter-digit run, every
other character and the JSON escapes (``\\n``), so BPE merges only inside those pieces and a
name bounded by anything else tokenizes identically in the prompt and in the answer. It is an
option (``pre_tokenizer: code`` in a recipe), not the default: measured, it did not help.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from oopav.models.grammar import require
from oopav.models.tiny import CHAT_TEMPLATE, SPECIAL_TOKENS

# The constant text of an answer (oopav.trainer.tasks.target_text), one token each.
CONTRACT_PIECES: tuple[str, ...] = (
    "<think></think>\n<action>",
    '{"type":"ast_grep","pattern":"',
    '","rewrite":"',
    '","language":"python"}',
    '","language":"javascript"}',
    "</action>\n<state_update>{}</state_update>",
    "$$$ARGS",
)


# The pre-tokenizer's split (see the module docstring): a JSON escape (backslash and one
# character, so ``\\nfix`` does not glue the ``n`` to the next word), a whitespace run, an ASCII
# letter-digit run, or any other single character. ``_`` is "other": ``join_fast`` is
# ``join``, ``_``, ``fast`` everywhere.
CODE_SPLIT = r'\\[nrt"\\/]|\s+|[A-Za-z0-9]+|[^\sA-Za-z0-9]'

# Pre-tokenizers a policy can be built with: ``gpt2`` (GPT-2's byte-level regex, the default)
# and ``code`` (above). ``code`` is not the default because it measured no better: the same
# flywheel success (4% of 100 held-out tasks) and, on the learning bench's shown families at
# 400 steps, 9.3% exact against 16.7% (docs/benchmarks.md#flywheel): its sequences are ~12%
# longer and a short budget learns the answer form more slowly.
PRE_TOKENIZERS = ("code", "gpt2")


@dataclass(frozen=True)
class PolicyShape:
    vocab_size: int = 1024
    hidden_size: int = 256
    intermediate_size: int = 512
    layers: int = 4
    heads: int = 8
    kv_heads: int = 4
    max_positions: int = 8192


def _pre_tokenizer(kind: str) -> Any:
    from tokenizers import Regex, pre_tokenizers

    if kind == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False)
    if kind == "code":
        return pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(CODE_SPLIT), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    raise ValueError(f"unknown pre-tokenizer {kind!r}: use one of {', '.join(PRE_TOKENIZERS)}")


def train_tokenizer(texts: Iterable[str], vocab_size: int, pre_tokenizer: str = "gpt2") -> Any:
    tokenizers = require("tokenizers", "train")
    transformers = require("transformers", "train")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    from oopav.models.tiny import _corpus

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = _pre_tokenizer(pre_tokenizer)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([*texts, *_corpus()], trainer=trainer)
    tok.add_tokens([tokenizers.AddedToken(p, normalized=False) for p in CONTRACT_PIECES])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|pad|>",
        bos_token=None,
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_policy(
    path: str | Path,
    texts: Iterable[str],
    *,
    shape: PolicyShape = PolicyShape(),
    seed: int = 0,
    pre_tokenizer: str = "gpt2",
) -> Path:
    """Write a freshly initialised policy and its tokenizer to ``path``."""
    torch = require("torch", "train")
    transformers = require("transformers", "train")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(texts, shape.vocab_size, pre_tokenizer)
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    pad = tokenizer.convert_tokens_to_ids("<|pad|>")
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=shape.max_positions,
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
    params = sum(p.numel() for p in model.parameters())
    (out / "oopav_policy.json").write_text(
        json.dumps(
            {
                "seed": seed,
                "shape": asdict(shape),
                "parameters": params,
                "pre_tokenizer": pre_tokenizer,
            },
            sort_keys=True,
        )
    )
    return out


def parameter_count(path: str | Path) -> int:
    meta = Path(path) / "oopav_policy.json"
    if meta.exists():
        return int(json.loads(meta.read_text())["parameters"])
    return 0
