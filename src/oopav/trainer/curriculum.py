"""The order a recipe sees its training rows in: a curriculum by task difficulty (stages 0-4)
and a seeded shuffle per epoch, both recorded in ``training_started.data_order``.

Stages (``stage_of``): a synthetic task's family sets its stage, one higher when it rewrites
three or more sites (capped at 4)::

    0  rename_call, rename_attr        one name, one shape
    1  rename_method, optional_chaining
    2  add_kwarg, wrap_call            the call's shape changes
    3  swap_args, replace_api          arguments move or the API changes
    4  migrate_api                     several coordinated rewrites

A row without a family (an exported SFT dataset) is staged by the length of its answer, in
five equal bands from the shortest to the longest.

``epoch_order`` lays the rows out epoch after epoch: each epoch shuffled with a generator seeded
by (seed, epoch), and under a curriculum ordered easy to hard (stage by stage, shuffled within a
stage). The trainer then reads them in that order (a sequential sampler), so the order is the
record's, not the sampler's.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

STAGES = 5
FAMILY_STAGE: dict[str, int] = {
    "rename_call": 0,
    "rename_attr": 0,
    "rename_method": 1,
    "optional_chaining": 1,
    "add_kwarg": 2,
    "wrap_call": 2,
    "swap_args": 3,
    "replace_api": 3,
    "migrate_api": 4,
}
Shuffle = Literal["sampler", "epoch"]


def stage_of(family: str, rewrites: int = 1) -> int:
    """A synthetic task's curriculum stage (0 easiest, 4 hardest). An unknown family: 2."""
    base = FAMILY_STAGE.get(family, 2)
    return min(STAGES - 1, base + (1 if rewrites >= 3 else 0))


def stages_by_length(lengths: Sequence[int]) -> list[int]:
    """Stages for rows without a family: five equal bands of answer length (ties in order)."""
    n = len(lengths)
    ranked = sorted(range(n), key=lambda i: (lengths[i], i))
    out = [0] * n
    for rank, i in enumerate(ranked):
        out[i] = min(STAGES - 1, rank * STAGES // max(1, n))
    return out


def epochs_needed(rows: int, steps: int, batch_size: int) -> int:
    return max(1, math.ceil(steps * batch_size / max(1, rows)))


def _digest(order: Sequence[int]) -> str:
    return hashlib.sha256(json.dumps(list(order)).encode()).hexdigest()[:16]


def epoch_order(
    stages: Sequence[int], *, epochs: int, seed: int, curriculum: bool
) -> tuple[list[int], dict[str, Any]]:
    """(row indices in training order, the record for ``training_started.data_order``)."""
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    order: list[int] = []
    digests = []
    for epoch in range(epochs):
        rng = random.Random(f"{seed}:{epoch}")
        idx = list(range(len(stages)))
        rng.shuffle(idx)
        if curriculum:
            # sorted() is stable: the shuffle survives within each stage.
            idx = sorted(idx, key=lambda i: stages[i])
        order += idx
        digests.append(_digest(idx))
    counts = Counter(stages)
    record = {
        "shuffle": "epoch",
        "curriculum": "stages" if curriculum else "none",
        "seed": seed,
        "epochs": epochs,
        "stages": {str(s): counts.get(s, 0) for s in range(STAGES)},
        "epoch_orders": digests,
    }
    return order, record
