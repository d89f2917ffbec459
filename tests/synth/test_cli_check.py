"""Every rule `oopav synth` learns is one the real ast-grep CLI accepts and applies as the
in-process rewriter does (synth/clicheck.py, synth/clishape.py; wave 3e synth-clivalid).

The self-written cases' rules, each run by `ast-grep scan --rule FILE --update-all` over the
training and held-out files, and self-written reproductions of each class the CLI refused or
read otherwise on real edits: a bare metavariable whose kind only its constraint named (a
string transform, axios's `json;charset=utf-8` and gin's `Invalid`), and a deletion whose
expanded range reaches over a block holding another deleted statement (zod's `console.log`).
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from ast_grep_py import SgRoot

from oopav.sandbox.astgrep import Rule, find_cli, rewrite_source
from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules, same_modulo_padding
from oopav.synth.clishape import cli_rule, kinds_from_sites, potential_kinds
from oopav.synth.core import SynthResult, SynthRule
from oopav.synth.evaluate import cases_in, load_case

CASES = cases_in(Path(__file__).parent / "cases")


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_every_rule_of_a_case_runs_in_the_cli_as_in_process(path: Path) -> None:
    case = load_case(path)
    lang = case["language"]
    train = case["train"][:2]
    result = synthesize([Example(e["before"], e["after"], language=lang) for e in train])
    files = [(f"train{i}", e["before"]) for i, e in enumerate(train)]
    files += [(f"held{i}", h["before"]) for i, h in enumerate(case["heldout"])]
    found = check_rules(result.rules, files, lang) + check_file(result.rules, files, lang)
    assert not found, "\n".join(f.line() for f in found)


# --- a bare metavariable whose kind only its constraint names ------------------------------

STRING_EDITS = [
    pytest.param(
        "const a = 'application/json;charset=utf-8';\n"
        "const b = {type: 'text/json;charset=utf-8'};\nconst c = 'json';\n",
        "const a = 'application/json';\nconst b = {type: 'text/json'};\nconst c = 'json';\n",
        "a.js",
        "string",
        id="javascript",
    ),
    pytest.param(
        'package main\n\nfunc f() {\n\terr("Invalid name")\n\tlog("Invalid id", 2)\n'
        '\tg("valid")\n}\n',
        'package main\n\nfunc f() {\n\terr("invalid name")\n\tlog("invalid id", 2)\n'
        '\tg("valid")\n}\n',
        "a.go",
        "interpreted_string_literal",
        id="go",
    ),
]


@pytest.mark.parametrize(("before", "after", "path", "kind"), STRING_EDITS)
def test_a_string_transform_rule_names_its_kind_for_the_cli(
    before: str, after: str, path: str, kind: str, tmp_path: Path
) -> None:
    """`pattern: $STR1` with `STR1: {kind: string, …}` is refused by the CLI ("Rule must
    specify a set of AST kinds to match"); rendered, the kind is also at the top."""
    result = synthesize([Example(before, after, path=path)])
    (rule,) = result.rules
    assert rule.rule.get("pattern") == "$STR1" and "kind" not in rule.rule  # as learned
    rendered = rule.to_dict()["rule"]
    assert rule.constraints is not None
    assert rendered["kind"] == kind == rule.constraints["STR1"]["kind"]
    found = check_rules(result.rules, [(path, before)], result.language)
    assert not found, [f.line() for f in found]
    # The file a user runs: `ast-grep scan --rule rule.yml --update-all`.
    (tmp_path / "rule.yml").write_text(result.to_yaml())
    (tmp_path / path).write_text(before)
    proc = subprocess.run(
        [find_cli(), "scan", "--rule", "rule.yml", "--update-all", path],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / path).read_text() == after


def test_the_kind_moved_to_the_top_matches_what_the_constraint_matched() -> None:
    """The rendered rule is the learned one for ast-grep-py too: the same nodes, the same
    rewrites (a bare `$X` is the node itself, so its constraint's kind is the node's)."""
    source = 'x = "a b"\ny = f"a {b}"\nz = (\'a\', b"a")\n'
    learned = {"pattern": "$S"}
    constraints = {"S": {"any": [{"kind": "string"}, {"kind": "identifier"}], "regex": "a"}}
    rendered = cli_rule(learned, constraints)
    assert rendered["any"] == [{"kind": "identifier"}, {"kind": "string"}]
    a = Rule(id="a", language="python", rule=learned, fix="Q", constraints=constraints)
    b = Rule(id="b", language="python", rule=rendered, fix="Q", constraints=constraints)
    root = SgRoot(source, "python").root()
    old = [n.range() for n in root.find_all(a.config())]
    new = [n.range() for n in root.find_all(b.config())]
    assert old == new and len(old) == 4  # the four strings holding an `a`
    assert rewrite_source(source, a) == rewrite_source(source, b)


# What the CLI accepts at the top of a rule, and what potential_kinds says of it.
SHAPES: list[tuple[dict[str, Any], bool]] = [
    ({"pattern": "foo($A)"}, True),
    ({"pattern": "$A"}, False),
    ({"pattern": "$A", "kind": "identifier"}, True),
    ({"regex": "^foo$"}, False),
    ({"pattern": "$A", "inside": {"kind": "call", "stopBy": "end"}}, False),
    ({"all": [{"pattern": "$A"}, {"regex": "^foo$"}]}, False),
    ({"all": [{"kind": "identifier"}, {"regex": "^foo$"}]}, True),
    ({"any": [{"kind": "identifier"}, {"pattern": "$A"}]}, False),
    ({"any": [{"kind": "identifier"}, {"pattern": "foo()"}]}, True),
    ({"not": {"kind": "call"}, "regex": "^foo$"}, False),
    ({"kind": "identifier", "not": {"regex": "^x$"}}, True),
    ({"pattern": {"context": "foo($A)", "selector": "call"}}, True),
    # A pattern that does not parse on its own (structlog's `elif` learned as it stands).
    ({"pattern": "elif $A == 1:\n    $$$B"}, False),
]


@pytest.mark.parametrize(("rule", "accepted"), SHAPES, ids=[str(s[0]) for s in SHAPES])
def test_potential_kinds_says_what_the_cli_accepts(
    rule: dict[str, Any], accepted: bool, tmp_path: Path
) -> None:
    (tmp_path / "t.py").write_text("foo(1)\nx = foo\nif x:\n    pass\nelif x == 1:\n    pass\n")
    doc = {"id": "r", "language": "python", "rule": rule, "fix": "bar"}
    (tmp_path / "r.yml").write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        [find_cli(), "scan", "--rule", "r.yml", "t.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    refused = "Rule must specify a set of AST kinds" in proc.stderr
    assert refused == (not accepted), proc.stderr
    assert (potential_kinds(rule, language="python") is not None) == accepted


# --- a deletion whose range reaches over a block holding another deletion --------------------


def test_expanded_deletions_are_taken_in_the_order_of_the_matched_nodes() -> None:
    """zod's `console.log` deletions: one deleted statement follows an `if` block holding
    another, so its range (grown back over the block, `expandStart: $PREV`) holds the other's.
    The CLI takes matches in the order of the nodes and skips the later, overlapping range;
    the in-process rewriter took them by expanded start and deleted the other one."""
    source = (
        "def f(x):\n    a()\n    if x:\n        b()\n        log(1)\n    log(2)\n"
        "    c()\n    log(3)\n    log(4)\n"
    )
    rule = SynthRule(
        id="del",
        language="python",
        rule={
            "kind": "expression_statement",
            "regex": r"^log\(",
            "follows": {"pattern": "$PREV", "stopBy": "neighbor"},
        },
        fix="$PREV",
        expand_start={"pattern": "$PREV"},
    )
    once, n = rewrite_source(source, rule.as_rule())
    assert n == 2
    assert "log(1)" not in once and "log(2)" in once  # the one inside the block goes first
    # Applied until nothing changes (synth's own apply), every one goes; so they do with the
    # CLI run as many times: the one finding says so.
    assert rule.apply(source)[0] == "def f(x):\n    a()\n    if x:\n        b()\n    c()\n"
    (found,) = check_rules([rule], [("m.py", source)], "python")
    assert found.kind == "passes" and found.detail.startswith("several CLI runs give")


def test_the_checker_reports_a_rule_the_cli_refuses() -> None:
    """The checker itself: a rule the CLI refuses is `rejected`, with the CLI's reason."""
    rule = SynthRule(
        id="bare", language="python", rule={"pattern": "$A", "regex": "^foo$"}, fix="b"
    )
    (found,) = check_rules([rule], [("m.py", "foo(1)\n")], "python")
    assert found.kind == "rejected" and "AST kinds" in found.detail
    assert check_file([rule], [("m.py", "foo(1)\n")], "python")[0].kind == "file"


def test_only_a_padded_blank_line_is_forgiven() -> None:
    assert same_modulo_padding("a\n\nb\n", "a\n    \nb\n")
    assert not same_modulo_padding("a\nb\n", "a\n b\n")


# --- a bare metavariable that nothing in the rule gives a kind --------------------------------

KY_BEFORE = (
    "import {Page, HttpServerOptions, run} from './helpers';\n"
    "export function go(page: Page, options: HttpServerOptions) {\n  return run(page, options);\n}\n"
)
KY_AFTER = KY_BEFORE.replace("{Page, HttpServerOptions,", "{type Page, type HttpServerOptions,")


def _ky_rule() -> SynthRule:
    return SynthRule(
        id="ky",
        language="typescript",
        rule={"pattern": "$A", "inside": {"kind": "import_specifier", "stopBy": "neighbor"}},
        fix="type $A",
        constraints={"A": {"regex": "^(?:HttpServerOptions|Page)$"}},
    )


def test_a_names_rule_gets_the_kind_of_the_nodes_it_matched_in_the_examples() -> None:
    """ky's names-list rule (`pattern: $A` inside an import specifier, a names regex): the
    CLI refuses it; the kinds of what it matched in the examples make it one the CLI runs,
    rewriting what it rewrote."""
    rule = _ky_rule()
    (refused,) = check_rules([rule], [("a.ts", KY_BEFORE)], "typescript")
    assert refused.kind == "rejected"
    result = SynthResult([rule], "typescript", 1)
    assert kinds_from_sites(result, [KY_BEFORE], lambda r: r.apply(KY_BEFORE)[0] == KY_AFTER) == []
    (fixed,) = result.rules
    assert fixed.rule["kind"] == "identifier"
    assert fixed.apply(KY_BEFORE)[0] == KY_AFTER
    assert not check_rules(result.rules, [("a.ts", KY_BEFORE)], "typescript")


def test_kinds_from_the_examples_are_dropped_when_the_examples_are_no_longer_reproduced() -> None:
    result = SynthResult([_ky_rule()], "typescript", 1)
    kinds_from_sites(result, [KY_BEFORE], lambda r: False)
    assert result.rules == [_ky_rule()]


def test_an_error_rooted_pattern_gets_the_kind_it_matched() -> None:
    """structlog's `elif $A == "__email__": …` -> `if …` and log's Rust `: $A` bound: learned
    where they stand, they do not parse alone; ast-grep-py matches them, the CLI refuses
    them for want of a kind. The kind they matched in the examples makes them runnable."""
    before = 'def f(a):\n    if a == 1:\n        pass\n    elif a == "x":\n        pass\n'
    after = before.replace("    elif a", "    if a")
    rule = SynthRule(
        id="elif",
        language="python",
        rule={"pattern": 'elif $A == "x":\n        $$$B'},
        fix='if $A == "x":\n    $$$B',
    )
    assert rule.apply(before)[0] == after
    assert check_rules([rule], [("m.py", before)], "python")[0].kind == "rejected"
    result = SynthResult([rule], "python", 1)
    kinds_from_sites(result, [before], lambda r: r.apply(before)[0] == after)
    assert result.rules[0].rule["kind"] == "elif_clause"
    assert not check_rules(result.rules, [("m.py", before)], "python")


def test_the_checker_names_the_cli_reason_and_a_rule_neither_rewriter_takes() -> None:
    """A constraint on a metavariable the rule never binds: ast-grep-py refuses it too
    (synth verifies every rule in process, so it never hands one out)."""
    rule = SynthRule(
        id="undef",
        language="python",
        rule={"pattern": "foo($A)"},
        fix="baz($A)",
        constraints={"B": {"regex": "x"}},
    )
    (found,) = check_rules([rule], [("m.py", "foo(1)\n")], "python")
    assert found.kind == "invalid" and "Undefined meta var `B`" in found.detail


def test_a_companion_that_matches_nothing_takes_the_kinds_of_its_rule() -> None:
    """A deletion's companion (the same pattern, first in its block) may match nothing in the
    examples; one refused document makes the CLI refuse the whole file, so it takes the kinds
    of the rule of the same pattern."""
    before = 'def f(a):\n    if a == 1:\n        pass\n    elif a == "x":\n        pass\n'
    after = before.replace("    elif a", "    if a")
    pattern = {"pattern": 'elif $A == "x":\n        $$$B'}
    main = SynthRule(id="m", language="python", rule=pattern, fix='if $A == "x":\n    $$$B')
    companion = replace(main, id="c", rule={**pattern, "nthChild": 1})
    result = SynthResult([main, companion], "python", 1)
    assert result.apply(before)[0] == after
    kinds_from_sites(result, [before], lambda r: r.apply(before)[0] == after)
    assert [r.rule.get("kind") for r in result.rules] == ["elif_clause", "elif_clause"]
    assert not check_rules(result.rules, [("m.py", before)], "python")
    assert not check_file(result.rules, [("m.py", before)], "python")
