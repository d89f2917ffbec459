"""Examples that need several rule sets: the fewest groups that each get one (wave 3g synth6).

When no one rule set reproduces every example (a further example whose sites a rule for the
others cannot reach without rewriting something they keep, or that interferes with them),
``synthesize`` does not give up: it partitions the changed examples into groups, fewest
groups first, learns each group's rule set on its own (unchanged examples, the negatives, go
with every group) and keeps the first partition whose union — the groups' sets one after
another, in some order — still reproduces every example byte for byte. The contract stays:
a returned rule set reproduces every example it was given.

Pure orchestration (no import of ``core``: tests/test_layers.py forbids the cycle): the
caller gives ``learn(group)`` (a group's rule set, or None) and ``combine(groups)`` (the
verified union, or None). Each group is learned at most once, and at most ``MAX_LEARNS``
groups are learned in all, so a hopeless set of examples costs a bounded number of searches.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import TypeVar

# Group learns per call: every group of up to four changed examples (14 proper subsets) fits.
MAX_LEARNS = 14
# Orders of the groups tried per partition (all of them up to 4 groups: 24).
MAX_ORDERS = 24

G = TypeVar("G")
U = TypeVar("U")


def partitions(items: list[int], k: int) -> Iterator[list[tuple[int, ...]]]:
    """The partitions of ``items`` into exactly ``k`` non-empty groups, in the order of their
    restricted growth strings: the earlier examples stay together longest (``[1, 2], [3]``
    before ``[1, 3], [2]`` before ``[1], [2, 3]``): in the incremental protocol the last
    example added is the one most likely to need its own rules."""
    n = len(items)

    def grow(i: int, labels: list[int], used: int) -> Iterator[list[int]]:
        if i == n:
            if used == k:
                yield labels
            return
        # Not enough items left to open the groups still missing.
        for label in range(min(used + 1, k)):
            if n - i - 1 < k - max(used, label + 1):
                continue
            yield from grow(i + 1, [*labels, label], max(used, label + 1))

    for labels in grow(0, [], 0):
        yield [tuple(x for x, lab in zip(items, labels, strict=True) if lab == g) for g in range(k)]


def learn_in_groups(
    items: list[int],
    learn: Callable[[tuple[int, ...]], G | None],
    combine: Callable[[list[tuple[tuple[int, ...], G]]], U | None],
) -> U | None:
    """The first verified union over the partitions of ``items`` into 2, 3, … groups."""
    cache: dict[tuple[int, ...], G | None] = {}

    def learned(group: tuple[int, ...]) -> G | None:
        if group not in cache:
            if len(cache) >= MAX_LEARNS:
                raise _Budget
            cache[group] = learn(group)
        return cache[group]

    try:
        for k in range(2, len(items) + 1):
            for partition in partitions(items, k):
                results: list[tuple[tuple[int, ...], G]] = []
                for group in partition:
                    got = learned(group)
                    if got is None:
                        break
                    results.append((group, got))
                else:
                    for order in itertools.islice(itertools.permutations(results), MAX_ORDERS):
                        union = combine(list(order))
                        if union is not None:
                            return union
    except _Budget:
        return None
    return None


class _Budget(Exception):
    """More groups would have to be learned than ``MAX_LEARNS`` allows."""


_ID = re.compile(r"\bsynth-\d+(?:-d\d+)?\b")


def renumber(note: str, ids: dict[str, str]) -> str:
    """A group's note with its rule ids as the union numbers them."""
    return _ID.sub(lambda m: ids.get(m.group(0), m.group(0)), note)
