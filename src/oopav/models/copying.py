"""Copy-constrained decoding: a local policy's answer may only use words it can copy from the
prompt or words it was trained to write from memory (issue 25).

A small policy's rename answers fail mostly by a name copied wrong: ``regex: ^stripch$`` for
``strip``, ``fix: cont_checked_checked`` for ``convert_checked`` (in the flywheel's generation 1,
40 of 61 failing first answers had the right rule with a name that occurs nowhere in the prompt,
docs/benchmarks.md#flywheel). The rule's structure is a closed vocabulary (``kind``,
``identifier``, ``regex``, ``fix``, metavariables like ``ARGS``) that the policy writes from
memory; the names are an open one that it must copy. This module makes the copying exact by
construction:

- a **word** is a run of ``[A-Za-z0-9_]`` in the answer's payload (the text inside the
  request's envelope tag, ``<action>…</action>``; the whole answer when there is none), with
  JSON escapes (``\\n``, ``\\uXXXX``) as separators, so ``\\nfix`` is the word ``fix``;
- a word that starts with a digit (``1`` of ``synth-1``, a number) is free;
- every other word must be one of the **allowed words**: the request's ``copy_words`` (what the
  loop lets it copy: the instruction's words, ``policy.copy_names``), the checkpoint's **answer
  vocabulary** (:data:`ANSWER_WORDS_FILE`, written by ``oopav train sft``: the words of its
  training answers that their own prompt did not contain, and the answer form's constant words,
  :func:`answer_vocabulary`) and the envelope's tag names.

:class:`CopyLogitsProcessor` enforces it token by token: a token is allowed when, appended to
the answer so far, every word it completes is allowed and the word it leaves open is a prefix of
an allowed word. It runs after the grammar processor; a step at which no token satisfies both
keeps the grammar's mask alone (the copy constraint never blocks an answer from closing). The
allowed words travel in the request (``ModelRequest.copy_words``), so the request recorded in
``model_called`` says what constrained the answer and a replay sends the same request.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Written into a checkpoint directory by the SFT recipe (trainer/sft.py).
ANSWER_WORDS_FILE = "oopav_answer_words.json"

_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_WORD = re.compile(r"[A-Za-z0-9_]+")
# A JSON escape is a separator, not part of a word: ``\nfix`` is ``fix``, ``\u00e9`` nothing.
_ESCAPE = re.compile(r"\\u[0-9A-Fa-f]{4}|\\.")


def words(text: str) -> list[str]:
    """The words of ``text`` in order (JSON escapes separate words; digit-led runs included)."""
    return _WORD.findall(_ESCAPE.sub(" ", text))


def copy_words(text: str) -> list[str]:
    """The words a policy may copy from ``text`` (e.g. an instruction): its words that do not
    start with a digit, sorted and unique (a stable request)."""
    return sorted({w for w in words(text) if not w[0].isdigit()})


def payload(answer: str, envelope: str | None) -> str:
    """The part of an answer the constraint covers: inside ``<envelope>…</envelope>``."""
    if envelope is None:
        return answer
    start = answer.find(f"<{envelope}>")
    if start < 0:
        return ""
    start += len(envelope) + 2
    end = answer.find(f"</{envelope}>", start)
    return answer[start:] if end < 0 else answer[start:end]


def answer_vocabulary(
    pairs: Iterable[tuple[str, str]],
    envelope: str | None = "action",
    *,
    min_count: int = 2,
    min_share: float = 0.02,
    prompt_share: float = 0.5,
) -> set[str]:
    """The words a policy writes from memory, from its training pairs (prompt text, answer):

    - the words of the answers' payloads that their own prompt does not contain, in at least
      ``min_count`` answers (all of them, when there are fewer): a word one teacher rule took
      from outside its prompt is noise, not vocabulary;
    - the answer form's constant words that the prompts contain too (``python`` of the code
      fence, ``ast_grep`` of the compact prompt's directive): in at least ``min_share`` of the
      answers (and ``min_count``) and in at least ``prompt_share`` of all prompts. A constraint
      that copies from the instruction alone must still allow them; a name that recurs across
      tasks (``len`` of ``migrate_api``) is in few prompts and stays something to copy.

    Digit-led words are free anyway and left out."""
    outside: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    prompts: dict[str, int] = {}
    n = 0
    for prompt, answer in pairs:
        n += 1
        have = set(words(prompt))
        for w in have:
            prompts[w] = prompts.get(w, 0) + 1
        for w in {w for w in words(payload(answer, envelope)) if not w[0].isdigit()}:
            anywhere[w] = anywhere.get(w, 0) + 1
            if w not in have:
                outside[w] = outside.get(w, 0) + 1
    common = max(min_count, min_share * n)
    constant = {
        w for w, c in anywhere.items() if c >= common and prompts.get(w, 0) >= prompt_share * n
    }
    # A dataset of fewer than min_count answers: each of its outside words counts.
    return {w for w, c in outside.items() if c >= min(min_count, n)} | constant


def write_answer_words(directory: str | Path, vocabulary: Iterable[str], records: int) -> Path:
    path = Path(directory) / ANSWER_WORDS_FILE
    path.write_text(
        json.dumps({"words": sorted(set(vocabulary)), "records": records}, indent=1) + "\n"
    )
    return path


def read_answer_words(directory: str | Path) -> set[str] | None:
    """The checkpoint's answer vocabulary, or None when it has none."""
    path = Path(directory) / ANSWER_WORDS_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    got = data.get("words") if isinstance(data, dict) else None
    if not isinstance(got, list) or not all(isinstance(w, str) for w in got):
        raise ValueError(f"{path}: expected {{'words': [str, ...]}}")
    return set(got)


class Allowed:
    """A set of words with a fast prefix test."""

    def __init__(self, vocabulary: Iterable[str]) -> None:
        self.words = frozenset(w for w in vocabulary if w)
        self._sorted = sorted(self.words)

    def complete(self, word: str) -> bool:
        return word in self.words

    def prefix(self, word: str) -> bool:
        i = bisect_left(self._sorted, word)
        return i < len(self._sorted) and self._sorted[i].startswith(word)


# An open word that the grammar forced past the constraint (a relaxed step) is free until it
# ends, like a digit-led one: the constraint takes up again at the next word.
FREE = "\0"

# The scanner's state: (inside the payload, the open word, escape characters still to skip,
# the last characters seen — to find the envelope's tags).
State = tuple[bool, str, int, str]


class Scanner:
    """Follows an answer character by character and says whether its words are allowed."""

    def __init__(self, allowed: Allowed, envelope: str | None) -> None:
        self.allowed = allowed
        self.open_tag = f"<{envelope}>" if envelope else ""
        self.close_tag = f"</{envelope}>" if envelope else ""
        self.keep = max(len(self.open_tag), len(self.close_tag))

    def start(self) -> State:
        return (not self.open_tag, "", 0, "")

    def feed(self, state: State, text: str, *, force: bool = False) -> State | None:
        """The state after ``text``, or None when ``text`` breaks the constraint; with
        ``force`` (a token the grammar left no alternative to) a word that breaks it is free
        until it ends, and the state goes on."""
        active, word, esc, tail = state
        for ch in text:
            if self.keep:
                tail = (tail + ch)[-self.keep :]
            if not active:
                if self.open_tag and tail.endswith(self.open_tag):
                    active, word, esc = True, "", 0
                continue
            if esc:
                # \uXXXX: four hex digits after the u; any other escape is one character.
                esc = 4 if (esc == -1 and ch == "u") else (0 if esc == -1 else esc - 1)
                continue
            if ch in _WORD_CHARS:
                word += ch
                if not _free(word) and not self.allowed.prefix(word):
                    if not force:
                        return None
                    word = FREE
                continue
            if word and not _free(word) and not self.allowed.complete(word) and not force:
                return None
            word = ""
            if ch == "\\":
                esc = -1
            if self.close_tag and tail.endswith(self.close_tag):
                active = False
        return (active, word, esc, tail)

    def key(self, state: State) -> State:
        """``state`` with only the part of its tail that can still begin the closing tag: two
        states with the same key accept the same tokens (the mask cache's key)."""
        active, word, esc, tail = state
        tag = self.close_tag
        for n in range(min(len(tag) - 1, len(tail)), 0, -1):
            if tag.startswith(tail[-n:]):
                return (active, word, esc, tail[-n:])
        return (active, word, esc, "")

    def ok(self, text: str) -> bool:
        """Whether a whole answer keeps the constraint (an open word at the end must be a
        whole allowed word)."""
        st = self.feed(self.start(), text)
        if st is None:
            return False
        active, word, _, _ = st
        return not (active and word and not _free(word) and not self.allowed.complete(word))


def _free(word: str) -> bool:
    return word[0].isdigit() or word[0] == FREE


def token_texts(tokenizer: Any, vocab_size: int) -> list[str]:
    """Each token id's text (a byte-level token that is part of a UTF-8 character decodes to
    the replacement character, a separator here)."""
    return [
        tokenizer.decode([i], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        for i in range(vocab_size)
    ]


class CopyLogitsProcessor:
    """A transformers logits processor for one ``generate()`` call: masks every token that would
    put a word into the answer that is neither allowed nor a prefix of an allowed one. Special
    tokens (the stop token) are never masked here. Masks are cached per scanner state, so an
    answer costs one pass over the vocabulary per distinct open word."""

    def __init__(
        self,
        texts: list[str],
        allowed: Iterable[str],
        *,
        envelope: str | None,
        free_ids: Iterable[int] = (),
    ) -> None:
        self.texts = texts
        self.scanner = Scanner(Allowed(allowed), envelope)
        self.free = frozenset(free_ids)
        self.start: int | None = None
        self.states: list[State | None] = []
        self.masks: dict[State, Any] = {}
        self.relaxed = 0  # steps at which no token kept both constraints: left to the grammar
        self.masked = 0  # steps at which this processor removed at least one allowed token

    def _mask(self, state: State, torch: Any, size: int, device: Any) -> Any:
        state = self.scanner.key(state)
        if state not in self.masks:
            feed = self.scanner.feed
            keep = [feed(state, t) is not None for t in self.texts[:size]]
            keep += [True] * (size - len(keep))
            for i in self.free:
                if i < size:
                    keep[i] = True
            self.masks[state] = torch.tensor(keep, dtype=torch.bool, device=device)
        return self.masks[state]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        batch, length = int(input_ids.shape[0]), int(input_ids.shape[1])
        if self.start is None:
            self.start = length
            self.states = [self.scanner.start() for _ in range(batch)]
        elif length > self.start:
            last = input_ids[:, -1].tolist()
            for i, st in enumerate(self.states):
                if st is not None:
                    tok = int(last[i])
                    text = self.texts[tok] if tok < len(self.texts) and tok not in self.free else ""
                    # force: after a relaxed step the row may have taken a token outside the
                    # constraint; its word is then free and the next one constrained again.
                    self.states[i] = self.scanner.feed(st, text, force=True)
        for i, st in enumerate(self.states):
            if st is None or not st[0]:
                continue  # outside the payload (think text, the state update): free
            keep = self._mask(st, torch, int(scores.shape[-1]), scores.device)
            row = scores[i]
            allowed_before = ~torch.isinf(row)
            if not bool((allowed_before & keep).any()):
                self.relaxed += 1
                continue
            if bool((allowed_before & ~keep).any()):
                self.masked += 1
            scores[i] = row.masked_fill(~keep, float("-inf"))
        return scores
