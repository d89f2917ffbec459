"""Property: for random programs and random renames, the learned rule reproduces the example
and is idempotent (applying it again changes nothing more)."""

from __future__ import annotations

import keyword

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oopav.synth import Example, synthesize

NAMES = st.from_regex(r"[a-z][a-z0-9_]{1,7}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s not in ("print", "len", "self")
)


@st.composite
def program_and_rename(draw):  # type: ignore[no-untyped-def]
    names = draw(st.lists(NAMES, min_size=3, max_size=6, unique=True))
    old, new = names[0], draw(NAMES.filter(lambda n: n not in names))
    lines = [f"def {old}(x):\n    return x\n"]
    for i in range(draw(st.integers(1, 6))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        shape = draw(st.integers(0, 3))
        if shape == 0:
            lines.append(f"v{i} = {a}({b})\n")
        elif shape == 1:
            lines.append(f"v{i} = [{a}, {b}, '{a}']\n")
        elif shape == 2:
            lines.append(f"if {a}:\n    {b}({a})\n")
        else:
            lines.append(f"v{i} = {a} + {b}  # {a}\n")
    before = "".join(lines)
    # The rename, applied by hand on identifiers only (strings and comments keep the old name).
    import re

    def rename_line(line: str) -> str:
        code, hash_, comment = line.partition("#")
        parts = re.split(r"('[^']*')", code)
        parts = [p if p.startswith("'") else re.sub(rf"\b{old}\b", new, p) for p in parts]
        return "".join(parts) + hash_ + comment

    after = "".join(rename_line(ln) for ln in before.splitlines(keepends=True))
    return before, after


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program_and_rename())
def test_rename_is_learned_reproduced_and_idempotent(pair: tuple[str, str]) -> None:
    before, after = pair
    result = synthesize([Example(before, after, language="python")])
    once, _ = result.apply(before)
    assert once == after
    twice, _ = result.apply(once)
    assert twice == once
