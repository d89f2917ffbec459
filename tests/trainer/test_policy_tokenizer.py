"""The policy's tokenizer: a name is the same tokens in the prompt and in the answer (issue 25).

A policy copies an unseen identifier from the instruction into its answer; with GPT-2's
pre-tokenizer the copy needed a re-segmentation (`` get`` after ``fix:`` against ``get`` after a
backtick). These tests tokenize a real compact prompt and its compact answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers")

NAMES = ("get", "join_fast", "getValue", "type_new", "v2", "_private", "data")


def _compact(old: str, new: str) -> tuple[str, str]:
    """The loop's compact prompt and the compact answer of a rename by ``synth:``."""
    from oopav.models.profiles import PromptState, compact_answer, render

    instruction = f"Rename the method `{old}` to `{new}` at every call site."
    snippet = f"def f(self, x):\n    y = self.{old}(x)\n    return {old}(y) + x.{old}\n"
    messages = render(
        "compact", PromptState(role="actor", instruction=instruction, snippet=snippet, path="m.py")
    )
    rule = (
        f"id: synth-1\nlanguage: python\nrule:\n  kind: identifier\n  regex: ^{old}$\nfix: {new}\n"
    )
    answer = compact_answer({"type": "ast_grep", "rule": rule})
    return "\n".join(m.content for m in messages), answer


def _spans(tok: Any, text: str, name: str) -> list[list[str]]:
    """The tokens covering each occurrence of ``name`` as a whole identifier in ``text``;
    an occurrence whose first or last character shares a token with its neighbours is
    returned with that neighbour's text, so it differs from ``name``'s own tokens."""
    import re

    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    toks = tok.convert_ids_to_tokens(enc["input_ids"])
    out = []
    for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text):
        run = [
            t
            for t, (s, e) in zip(toks, enc["offset_mapping"], strict=True)
            if s < m.end() and e > m.start()
        ]
        out.append(run)
    return out


def _tokenizer(kind: str) -> Any:
    from oopav.trainer.policy import train_tokenizer

    texts = [text for old in NAMES for text in _compact(old, old + "_new")]
    return train_tokenizer(texts * 4, 400, kind)


@pytest.fixture(scope="module")
def code_tok() -> Any:
    return _tokenizer("code")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("join_fast", "join_fast_v2"),
        ("get", "fetch"),
        ("unseenName", "unseen_name2"),
        ("python", "rule"),
    ],
)
def test_a_name_is_the_same_tokens_in_prompt_and_answer(code_tok: Any, old: str, new: str) -> None:
    prompt, answer = _compact(old, new)
    for name in (old, new):
        alone = code_tok.tokenize(name)
        seen = _spans(code_tok, prompt, name) + _spans(code_tok, answer, name)
        # old: the instruction, three uses in the snippet, the rule's regex; new: the
        # instruction and the rule's fix (and "rule:"/"python" where those are the names)
        assert len(seen) >= (5 if name == old else 2)
        assert all(run == alone for run in seen), (name, seen)


def test_gpt2_pre_tokenizer_splits_a_name_by_context() -> None:
    """The old pre-tokenizer, kept as ``pre_tokenizer="gpt2"``: a name after a space is other
    tokens than after a backtick — the check above fails on it."""
    tok = _tokenizer("gpt2")
    prompt, answer = _compact("python", "rule")
    seen = _spans(tok, prompt, "python") + _spans(tok, answer, "python")
    assert any(run != tok.tokenize("python") for run in seen)


def test_code_pre_tokenizer_round_trips_and_keeps_contract_pieces(code_tok: Any) -> None:
    from oopav.trainer.policy import CONTRACT_PIECES

    prompt, answer = _compact("join_fast", "join_fast_v2")
    for text in (prompt, answer, "  x\t= 'é' \\n\n\n    y\\\\z"):
        ids = code_tok(text, add_special_tokens=False)["input_ids"]
        assert code_tok.decode(ids) == text
    toks = code_tok.tokenize(answer)
    assert toks[0] == "<think></think>\n<action>"
    assert all(code_tok.convert_tokens_to_ids(p) != code_tok.unk_token_id for p in CONTRACT_PIECES)
    # a JSON escape is one piece, not glued to the next word
    assert "\\n" in toks and not [t for t in toks if t.startswith("n") and len(t) > 1]


def test_unknown_pre_tokenizer_is_a_clear_error() -> None:
    from oopav.trainer.policy import train_tokenizer

    with pytest.raises(ValueError, match="unknown pre-tokenizer 'bpe'"):
        train_tokenizer(["x"], 300, "bpe")


def test_built_policy_records_its_pre_tokenizer(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from oopav.trainer.policy import PolicyShape, build_policy

    shape = PolicyShape(
        vocab_size=300, hidden_size=16, intermediate_size=32, layers=1, heads=2, kv_heads=1
    )
    out = build_policy(tmp_path / "p", ["Rename `a` to `b`"] * 3, shape=shape, pre_tokenizer="code")
    assert json.loads((out / "oopav_policy.json").read_text())["pre_tokenizer"] == "code"
    default = build_policy(tmp_path / "d", ["Rename `a` to `b`"] * 3, shape=shape)
    assert json.loads((default / "oopav_policy.json").read_text())["pre_tokenizer"] == "gpt2"
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    # the saved tokenizer (what `--model hf:<dir>` loads) keeps the context-free split
    prompt, answer = _compact("abc", "b")
    assert all(run == tok.tokenize("abc") for run in _spans(tok, prompt + answer, "abc"))


def test_a_recipe_chooses_the_pre_tokenizer_of_a_new_policy(tmp_path: Path) -> None:
    """``pre_tokenizer: code`` in an SFT recipe (``model: new``) builds the policy with it, so
    `oopav train sft` users get the option, not only the benches."""
    pytest.importorskip("torch")
    from oopav.trainer.sft import SFTRecipe, prepare_model

    cfg = SFTRecipe(output_dir=str(tmp_path), dataset=str(tmp_path), pre_tokenizer="code")
    base = prepare_model(
        "new", cfg.output_dir, lambda: ["Rename `a` to `b`"] * 3, 0, cfg.pre_tokenizer
    )
    meta = json.loads((Path(base) / "oopav_policy.json").read_text())
    assert meta["pre_tokenizer"] == "code"
