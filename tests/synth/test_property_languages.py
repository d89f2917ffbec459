"""Property, in JavaScript and Go: random programs, random renames of a function; the learned
rule reproduces the example, is idempotent, and leaves strings and other names alone."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from oopav.synth import Example, synthesize

RESERVED = {"var", "let", "const", "func", "return", "if", "for", "go", "new", "in", "do", "int"}
NAMES = st.from_regex(r"[a-z][a-zA-Z0-9]{1,7}", fullmatch=True).filter(lambda s: s not in RESERVED)

TEMPLATES = {
    "javascript": (
        "function {old}(x) {{\n  return x;\n}}\n",
        ["const v{i} = {a}({b});\n", "if ({a}) {{\n  {b}({a});\n}}\n", "log('{a}', {b});\n"],
    ),
    "go": (
        "package main\n\nfunc {old}(x int) int {{\n\treturn x\n}}\n",
        [
            "\nfunc f{i}() {{\n\tv := {a}({b})\n\t_ = v\n}}\n",
            '\nfunc g{i}() {{\n\tprintln("{a}", {b})\n}}\n',
        ],
    ),
}


@st.composite
def case(draw):  # type: ignore[no-untyped-def]
    lang = draw(st.sampled_from(sorted(TEMPLATES)))
    head, bodies = TEMPLATES[lang]
    names = draw(st.lists(NAMES, min_size=3, max_size=5, unique=True))
    old = names[0]
    new = draw(NAMES.filter(lambda n: n not in names))
    parts = [head.format(old=old)]
    for i in range(draw(st.integers(1, 5))):
        tmpl = draw(st.sampled_from(bodies))
        parts.append(
            tmpl.format(i=i, a=draw(st.sampled_from(names)), b=draw(st.sampled_from(names)))
        )
    before = "".join(parts)
    # Rename outside string literals only.
    pieces = re.split(r"('[^']*'|\"[^\"]*\")", before)
    after = "".join(p if p[:1] in ("'", '"') else re.sub(rf"\b{old}\b", new, p) for p in pieces)
    return lang, before, after


@settings(max_examples=30, deadline=None)
@given(case())
def test_rename_is_learned_reproduced_and_idempotent(c: tuple[str, str, str]) -> None:
    lang, before, after = c
    result = synthesize([Example(before, after, language=lang)])
    once, _ = result.apply(before)
    assert once == after
    assert result.apply(once)[0] == once
