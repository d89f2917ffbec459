"""The textual pre-filter of ast-grep rules: what it requires, and that it never drops a file
that has a match (fuzzed with patterns cut from the standard library, checked on its files)."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from ast_grep_py import SgNode, SgRoot

from oopav.events.actions import AstGrepAction
from oopav.sandbox import treecache
from oopav.sandbox.apply import ActionPlan, plan_action
from oopav.sandbox.astgrep import Rule, rewrite_source
from oopav.sandbox.rulefilter import may_match, pattern_literals, pre_process, required_text

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _rule(rule: dict[str, Any], language: str = "python", **extra: Any) -> Rule:
    return Rule(id="t", language=language, rule=rule, fix="X", **extra)


def test_pre_process_matches_ast_grep() -> None:
    assert pre_process("f($A, $$$B, $$$, $_, $a, $$C)", "µ") == "f(µA, µµµB, µµµ, µ_, $a, µµC)"
    assert pre_process("$$$", "µ") == "µµµ"
    assert pre_process("x = $A", "$") == "x = $A"


@pytest.mark.parametrize(
    ("pattern", "language", "expected"),
    [
        ("fetch($$$ARGS)", "python", ["fetch"]),
        ("raise ValueError($MSG)", "python", ["ValueError"]),
        ("$A.foo($$$B, 'x y')", "javascript", ["x y", "foo"]),
        ("if $C: $$$B", "python", []),  # keywords are unnamed: compared by kind only
        ("var $N = $V", "javascript", []),
        ("fn $F() -> i32 { 1 }", "rust", ["i32", "1"]),
        ("a(", "python", None),  # ERROR in the pattern: no claim
        ("f($A)", "html", None),  # no expando table for the language: no claim
    ],
)
def test_pattern_literals(pattern: str, language: str, expected: list[str] | None) -> None:
    got = pattern_literals(pattern, language)
    assert (sorted(got) if got is not None else None) == (
        sorted(expected) if expected is not None else None
    )


def test_required_text_of_composite_rules() -> None:
    assert required_text(_rule({"pattern": "fetch($A)"})) == "fetch"
    both = required_text(_rule({"all": [{"pattern": "fetch($A)"}, {"has": {"pattern": "url"}}]}))
    assert both == ("all", ("fetch", "url"))
    either = required_text(_rule({"any": [{"pattern": "fetch($A)"}, {"pattern": "load($A)"}]}))
    assert either == ("any", ("fetch", "load"))
    assert may_match(either, "x = load(1)") and not may_match(either, "x = other(1)")
    # One alternative without a requirement makes the whole `any` require nothing.
    assert required_text(_rule({"any": [{"pattern": "fetch($A)"}, {"kind": "call"}]})) is True
    assert required_text(_rule({"kind": "call", "not": {"pattern": "fetch($A)"}})) is True
    # stopBy is where a search stops, not something that must match.
    inside = {"kind": "call", "inside": {"kind": "block", "stopBy": {"pattern": "gone($A)"}}}
    assert required_text(_rule(inside)) is True
    util = _rule({"matches": "is-fetch"}, utils={"is-fetch": {"pattern": "fetch($$$A)"}})
    assert required_text(util) == "fetch"
    loop = _rule({"matches": "a"}, utils={"a": {"any": [{"matches": "a"}, {"pattern": "z()"}]}})
    assert required_text(loop) is True  # a recursive util terminates and claims nothing
    assert required_text(_rule({"pattern": {"context": "fetch($A)", "selector": "call"}})) is True
    # A rule that does not compile claims nothing, so its error still surfaces.
    bad = _rule({"pattern": "fetch($A)", "kind": "no_such_kind"})
    assert required_text(bad) is True
    with pytest.raises(Exception, match="no_such_kind"):
        rewrite_source("x = 1\n", bad)


def test_files_without_the_literal_are_not_parsed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(6):
        (ws / f"m{i}.py").write_text(f"def f{i}(x):\n    return other(x)\n")
    (ws / "hit.py").write_text("def g(x):\n    return fetch(x)\n")
    treecache.drop_workspace(ws)
    action = AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python")
    plan = plan_action(ws, action)
    assert isinstance(plan, ActionPlan) and [c.path for c in plan.changes] == ["hit.py"]
    assert treecache.for_workspace(ws).misses == 1  # only hit.py was parsed
    treecache.drop_workspace(ws)


# --- fuzz: patterns cut from real code, with metavariables, on real files ----------------

_KINDS = (
    "call",
    "attribute",
    "binary_operator",
    "comparison_operator",
    "assignment",
    "return_statement",
    "raise_statement",
    "subscript",
    "boolean_operator",
    "keyword_argument",
    "augmented_assignment",
    "not_operator",
)


def _corpus() -> list[tuple[str, str]]:
    files = sorted(p for p in STDLIB.glob("*.py") if 2_000 < p.stat().st_size < 40_000)
    picked = random.Random(14).sample(files, min(70, len(files)))
    return [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in picked]


def _leaves(node: SgNode) -> list[SgNode]:
    kids = node.children()
    if not kids:
        return [node] if node.is_named() else []
    return [leaf for k in kids for leaf in _leaves(k)]


def _patterns(rng: random.Random, corpus: list[tuple[str, str]], n: int) -> list[str]:
    """Real expressions and statements with some named leaves, or argument lists, replaced
    by metavariables."""
    out: list[str] = []
    while len(out) < n:
        _, text = rng.choice(corpus)
        root = SgRoot(text, "python").root()
        nodes = root.find_all(kind=rng.choice(_KINDS))
        if not nodes:
            continue
        node = rng.choice(nodes)
        body = node.text()
        if "\n" in body or len(body) > 90:
            continue
        base = node.replace("").start_pos
        edits: list[tuple[int, int, str]] = []
        for leaf in _leaves(node):
            if rng.random() < 0.35:
                e = leaf.replace("")
                edits.append((e.start_pos - base, e.end_pos - base, rng.choice(["$A", "$B", "$_"])))
        args = node.field("arguments")
        if args is not None and rng.random() < 0.3:
            e = args.replace("")
            edits = [(e.start_pos - base + 1, e.end_pos - base - 1, "$$$ARGS")]
        for start, end, var in sorted(edits, reverse=True):
            body = body[:start] + var + body[end:]
        out.append(body)
    return out


def _rules(rng: random.Random, patterns: list[str]) -> list[Rule]:
    rules = [_rule({"pattern": p}) for p in patterns]
    for _ in range(len(patterns) // 2):
        p, q = rng.sample(patterns, 2)
        rules += [
            _rule({"any": [{"pattern": p}, {"pattern": q}]}),
            _rule({"kind": "call", "inside": {"pattern": p, "stopBy": "end"}}),
            _rule({"all": [{"kind": "expression_statement"}, {"has": {"pattern": q}}]}),
            _rule({"pattern": p, "not": {"has": {"pattern": q}}}),
            _rule({"matches": "u"}, utils={"u": {"any": [{"pattern": p}, {"pattern": q}]}}),
        ]
    return rules


def test_fuzz_filtered_files_never_match() -> None:
    rng = random.Random(1414)
    corpus = _corpus()
    roots = {name: SgRoot(text, "python").root() for name, text in corpus}
    rules = _rules(rng, _patterns(rng, corpus, 80))
    skipped = claimed = 0
    for rule in rules:
        need = required_text(rule)
        claimed += need is not True
        config = rule.config()
        for name, text in corpus:
            if may_match(need, text):
                continue
            skipped += 1
            try:
                found = roots[name].find_all(config)
            except Exception:
                continue  # a pattern that does not compile claims nothing (checked above)
            assert not found, (rule.rule, name, need, [n.text() for n in found[:3]])
    # The filter must actually filter, or this test proves nothing.
    assert claimed > len(rules) // 2
    assert skipped > len(rules) * len(corpus) // 3


def test_fuzz_rewrites_equal_unfiltered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole rewrites with and without the filter are identical on real files."""
    from oopav.sandbox import astgrep

    rng = random.Random(7)
    corpus = _corpus()[:30]
    rules = [
        Rule(id="t", language="python", rule={"pattern": p}, fix="wrapped($A)")
        for p in _patterns(rng, corpus, 40)
        if "$A" in p
    ]
    assert rules
    filtered = [[rewrite_source(text, r) for _, text in corpus] for r in rules]
    monkeypatch.setattr(astgrep, "may_match", lambda need, text: True)
    astgrep._prepared.clear()
    unfiltered = [[rewrite_source(text, r) for _, text in corpus] for r in rules]
    assert filtered == unfiltered
    assert sum(n for row in filtered for _, n in row) > 0


def test_per_rule_preparation_is_bounded() -> None:
    from oopav.sandbox import astgrep

    for i in range(3 * astgrep._PREPARED_MAX):
        rule = Rule(id="t", language="python", rule={"pattern": f"f{i}($A)"}, fix="g($A)")
        assert rewrite_source(f"f{i}(1)\n", rule) == ("g(1)\n", 1)
    assert len(astgrep._prepared) <= astgrep._PREPARED_MAX
