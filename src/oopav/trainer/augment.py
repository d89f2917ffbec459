"""Name-permutation augmentation for SFT (issue 25): make copying the only thing that fits.

A rename answer copies names from its instruction (`Rename `clear` to `clear_safe``
-> ``regex: ^clear$ … fix: clear_safe``). Trained on ~1,000 such records a small policy
memorises the answers — it learns ``clear_safe`` as a string to recall, not as the name the
instruction gave — and on a held-out task with names it never saw it writes names it did see
(docs/benchmarks.md#flywheel). This module makes copies of a record in which every such name
is replaced, consistently in the prompt and the answer, by a freshly made-up identifier: the
answer then cannot be recalled, only copied.

**Which names.** The identifiers written inside backticks in the prompt (the instruction names
what to change that way) that also occur in the answer, outside an ast-grep metavariable
(``$A``, ``$$$ARGS``) and not a keyword. The answer's own vocabulary (``kind``, ``regex``,
``fix``, ``language``, …) is never in backticks, so it stays; so do the identifiers of the
snippet that the answer does not name.

**How.** A name is split at ``_`` into parts; each distinct part gets a random word (syllables,
1-3 of them, the part's case kept: ``clear`` -> ``vomek``, ``ValueError`` -> ``TisaRonu``,
``v2`` -> ``ka7``), shared by every name of the record, so ``clear`` and ``clear_safe``
become ``vomek`` and ``vomek_dari``: the relation between the old name and the new one stays,
the words change. Only whole identifiers are replaced (``new`` in ``def new`` is left alone
when only ``clear_new`` is named), in every message of the prompt and in the answer, whose
JSON escapes (``\\n``) are word boundaries. A made-up word never equals an identifier already
in the record. The same seed gives the same copies.
"""

from __future__ import annotations

import hashlib
import keyword
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Augmentations a recipe can name (``augment:`` in SFTRecipe); "" is none.
AUGMENTS = ("", "names")
# Which parts of the copied names are made up (``augment_parts:``): "all", or "shared" — only
# the parts two or more copied names share (the stem ``clear`` of ``clear`` → ``clear_safe``),
# every part when they share none. With "shared" a suffix only the new name has stays: the
# task's own suffixes are a small set, and picking the one the instruction names is a lookup
# a small policy learns, where copying it is an induction across two occurrences of the stem.
PARTS = ("all", "shared")

# An identifier that is not part of a longer one, nor an ast-grep metavariable, nor the
# letter after a JSON escape's backslash (``\nfix`` in an answer is ``\n`` then ``fix``).
_IDENT = re.compile(r"(?:(?<=\\[nrt])|(?<![A-Za-z0-9_$\\]))[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_])")
_TICKED = re.compile(r"`([^`\n]+)`")
_METAVAR = re.compile(r"\$+([A-Za-z_][A-Za-z0-9_]*)")

_ONSETS = "b c d f g h j k l m n p r s t v w z br dr gr kr pl st tr ch sh th".split()
_VOWELS = "a e i o u a e i o ai ou".split()
_CODAS = ["", "", "", "n", "r", "l", "s", "m", "k", "t"]


def copied_names(prompt: str, answer: str) -> list[str]:
    """The identifiers the answer copies from the prompt's backticked spans, in order of
    first appearance in the prompt."""
    meta = set(_METAVAR.findall(answer))
    in_answer = {m.group(0) for m in _IDENT.finditer(answer)}
    out: list[str] = []
    for span in _TICKED.findall(prompt):
        for m in _IDENT.finditer(span):
            name = m.group(0)
            if (
                name in in_answer
                and name not in meta
                and not keyword.iskeyword(name)
                and name.strip("_")
                and name not in out
            ):
                out.append(name)
    return out


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
    )


def _fresh_part(part: str, rng: random.Random) -> str:
    """A made-up word shaped like ``part``: its case pattern (lower, Capitalised, CamelCase,
    UPPER) and a trailing number kept, 1-3 syllables."""
    digits = re.search(r"[0-9]+$", part)
    letters = part[: digits.start()] if digits else part
    humps = len(re.findall(r"[A-Z][a-z]", letters))
    if letters.isupper() and len(letters) > 1:
        word = _word(rng, rng.randint(1, 2)).upper()
    elif humps >= 2 or (humps == 1 and letters[:1].islower()):
        # CamelCase: as many humps, each a word of 1-2 syllables.
        words = [_word(rng, rng.randint(1, 2)) for _ in range(max(2, humps))]
        word = "".join(w.capitalize() for w in words)
        if letters[:1].islower():
            word = word[0].lower() + word[1:]
    else:
        word = _word(rng, rng.choice((1, 2, 2, 3)))
        if letters[:1].isupper():
            word = word.capitalize()
    if digits:
        word += str(rng.randint(1, 9))
    return word


def name_map(
    names: Iterable[str], taken: set[str], rng: random.Random, which: str = "all"
) -> dict[str, str]:
    """Each name's replacement: its ``_``-separated parts mapped word for word (one mapping
    for the whole record), never onto an identifier in ``taken`` or a keyword; with ``which``
    "shared" only the parts two or more names share (all when they share none)."""
    if which not in PARTS:
        raise ValueError(f"augment_parts must be one of {', '.join(PARTS)}, not {which!r}")
    names = list(names)
    counts: dict[str, int] = {}
    for name in names:
        for p in {p for p in name.split("_") if p}:
            counts[p] = counts.get(p, 0) + 1
    shared = {p for p, c in counts.items() if c > 1}
    mapped = shared if which == "shared" and shared else set(counts)
    parts: dict[str, str] = {p: p for p in counts if p not in mapped}
    used = set(taken)
    out: dict[str, str] = {}
    for name in names:
        pieces = name.split("_")
        for p in pieces:
            if p and p not in parts:
                for _ in range(100):
                    w = _fresh_part(p, rng)
                    if w not in used and not keyword.iskeyword(w) and w not in parts.values():
                        break
                parts[p] = w
                used.add(w)
        new = "_".join(parts[p] if p else p for p in pieces)
        out[name] = new
        used.add(new)
    return out


def replace_names(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    return _IDENT.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


@dataclass(frozen=True)
class Augmented:
    messages: list[dict[str, Any]]
    completion: str
    mapping: dict[str, str]


def augment_record(
    messages: list[dict[str, Any]], completion: str, rng: random.Random, parts: str = "all"
) -> Augmented | None:
    """One copy of (prompt messages, answer) with the copied names made up; None when the
    answer copies no name from the prompt (nothing to permute)."""
    prompt = "\n".join(str(m.get("content", "")) for m in messages)
    names = copied_names(prompt, completion)
    if not names:
        return None
    taken = {m.group(0) for m in _IDENT.finditer(prompt + "\n" + completion)}
    mapping = {k: v for k, v in name_map(names, taken, rng, parts).items() if k != v}
    new_messages = [
        {**m, "content": replace_names(str(m.get("content", "")), mapping)} for m in messages
    ]
    return Augmented(new_messages, replace_names(completion, mapping), mapping)


def record_rng(seed: int, index: int, copy: int) -> random.Random:
    """The generator for copy ``copy`` of record ``index``: independent of the other records
    and of how many copies are made, so a copy is the same whatever the recipe's count."""
    digest = hashlib.sha256(f"names:{seed}:{index}:{copy}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def augment_names(
    records: list[tuple[list[dict[str, Any]], str]], copies: int, seed: int, parts: str = "all"
) -> tuple[list[tuple[list[dict[str, Any]], str]], dict[str, Any]]:
    """The records followed by ``copies`` name-permuted copies of each record that copies a
    name (records that copy none are not repeated), and the record of what was done for
    ``training_started``: kind, copies, seed, how many records had names, rows out."""
    if copies < 0:
        raise ValueError(f"augment_copies must be >= 0, not {copies}")
    out = list(records)
    with_names = 0
    extra: list[tuple[list[dict[str, Any]], str]] = []
    for i, (messages, completion) in enumerate(records):
        got = None
        for c in range(copies):
            got = augment_record(messages, completion, record_rng(seed, i, c), parts)
            if got is None:
                break
            extra.append((got.messages, got.completion))
        with_names += got is not None
    # The copies come after the originals; the trainer's sampler (or the recipe's shuffle)
    # mixes them.
    out.extend(extra)
    return out, {
        "kind": "names",
        "parts": parts,
        "copies": copies,
        "seed": seed,
        "records": len(records),
        "records_with_names": with_names,
        "rows": len(out),
    }
