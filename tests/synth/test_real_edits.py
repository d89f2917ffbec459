"""The failure classes of issue 26 (rules by example on real edits), each as a small
self-written reproduction of what real commits did; see docs/synth.md."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.git_commits import commit_repo
from oopav.sandbox.astgrep import find_cli
from oopav.synth import Example, SynthesisError, synthesize

PAGERS_BEFORE = """\
def echo_via_pager(gen, color):
    if not isatty():
        return _nullpager(stdout, gen)
    if use_tempfile:
        return _tempfilepager(gen, cmd)
    return _pipepager(gen, cmd)


def other(gen):
    return run(gen)
"""
PAGERS_AFTER = """\
def echo_via_pager(gen, color):
    if not isatty():
        return _nullpager(stdout, gen, color)
    if use_tempfile:
        return _tempfilepager(gen, cmd, color)
    return _pipepager(gen, cmd, color)


def other(gen):
    return run(gen)
"""


def test_an_argument_added_at_calls_whose_names_differ_gets_a_regex_constraint() -> None:
    """Class 1 (too narrow): `_nullpager(…)`, `_pipepager(…)` … each get `color`. The call
    head is abstracted as far as the examples vary it — `^_?\\w*pager$` — not to any call
    (`run(gen)` stays) and not to one literal name."""
    result = synthesize([Example(PAGERS_BEFORE, PAGERS_AFTER, path="termui.py")])
    [rule] = result.rules
    assert rule.rule == {"pattern": "$A($$$B)", "not": {"regex": r"[,\(]\s*\)$"}}
    assert rule.constraints == {"A": {"regex": r"^_?\w*pager$"}}
    assert rule.fix == "$A($$$B, color)"
    held_out = "def f(g):\n    pager(g)\n    _lesspager(g, 1)\n    run(g)\n"
    assert result.apply(held_out)[0] == (
        "def f(g):\n    pager(g, color)\n    _lesspager(g, 1, color)\n    run(g)\n"
    )
    assert "constraints:" in rule.to_yaml()


def test_the_constrained_rule_file_is_accepted_by_the_ast_grep_cli(tmp_path: Path) -> None:
    result = synthesize([Example(PAGERS_BEFORE, PAGERS_AFTER, path="termui.py")])
    (tmp_path / "rule.yml").write_text(result.to_yaml())
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text("x = _morepager(a)\ny = run(a)\n")
    proc = subprocess.run(
        [find_cli(), "scan", "--rule", str(tmp_path / "rule.yml"), "--update-all", str(tree)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tree / "a.py").read_text() == "x = _morepager(a, color)\ny = run(a)\n"


def test_a_rename_reaches_the_type_names_of_its_namespace() -> None:
    """Class 1: a trait renamed in a `use` list (an identifier there) is also renamed where it
    is a type (`dyn Visitor<'a>`, `impl Visitor for`), which tree-sitter calls a different
    kind; a struct field of that name is another namespace and stays."""
    before = "use crate::kv::{self, Visitor};\n"
    after = "use crate::kv::{self, VisitSource};\n"
    result = synthesize([Example(before, after, path="lib.rs")])
    held_out = "impl<'k> Visitor<'k> for Get {}\nfn f(v: &mut dyn Visitor<'k>) { v.Visitor; }\n"
    assert result.apply(held_out)[0] == (
        "impl<'k> VisitSource<'k> for Get {}\nfn f(v: &mut dyn VisitSource<'k>) { v.Visitor; }\n"
    )


def test_unchanged_sites_of_the_same_shape_in_the_example_keep_the_rule_narrow() -> None:
    """Class 2 (too general): the example file keeps `retries` in one object; a bare rename of
    `retries` would rewrite it too, so the rule keeps the context that tells them apart."""
    before = "const a = {retries: 2};\nconst b = {retries: 3, timeout: 1};\n"
    after = "const a = {limit: 2};\nconst b = {retries: 3, timeout: 1};\n"
    result = synthesize([Example(before, after, path="a.js")])
    assert result.apply("const c = {retries: 5};\nconst d = {retries: 1, timeout: 2};\n")[0] == (
        "const c = {limit: 5};\nconst d = {retries: 1, timeout: 2};\n"
    )


def test_an_explicit_negative_narrows_a_rule_that_one_example_leaves_too_general() -> None:
    """Class 2: `{before, after: same}` — code the rule must leave alone. Without it the
    rename of `pub` items is learned for every `pub fn`; with it the rule keeps what tells
    the changed one apart."""
    change = Example("pub fn helper() {}\n", "pub(crate) fn helper() {}\n", path="a.rs")
    keep = "pub fn api() {}\n"
    loose = synthesize([change])
    assert loose.apply(keep)[0] != keep  # one example alone generalises to every `pub fn`
    tight = synthesize([change, Example(keep, keep, path="b.rs")])
    assert tight.apply(keep)[0] == keep
    assert tight.apply("pub fn helper() {}\n")[0] == "pub(crate) fn helper() {}\n"


def test_only_negatives_is_a_clear_error() -> None:
    with pytest.raises(SynthesisError) as info:
        synthesize([Example("x = 1\n", "x = 1\n", path="a.py")] * 2)
    assert "every example is unchanged" in info.value.reason


def test_a_decorator_added_above_a_definition_is_a_rewrite_of_that_definition() -> None:
    """Class 3: `@final` inserted on the line above `class …` (the token diff first places the
    new line after the previous statement, outside the class)."""
    before = "import x\n\n\nclass A(Base):\n    pass\n\n\nclass B(Base):\n    y = 1\n"
    after = (
        "import x\n\n\n@final\nclass A(Base):\n    pass\n\n\n@final\nclass B(Base):\n    y = 1\n"
    )
    result = synthesize([Example(before, after, path="a.py")])
    assert len(result.rules) == 1
    assert result.apply("class C(Base):\n    z = 2\n")[0] == "@final\nclass C(Base):\n    z = 2\n"


GO_A = """package a

func one(c *Cmd, args []string) {
\tc.Run(ctx, args)
\tc.Stop(ctx, args)
}

func two(c *Cmd, more []string) {
\tc.Run(ctx, more)
}
"""
GO_B = """package a

func three(d *Cmd, xs []string) {
\td.Run(nil, xs)
\td.Run(ctx, xs)
\td.Run(ctx, ys)
}
"""


def test_from_git_groups_a_commits_changes_by_shape_and_learns_one_rule(tmp_path: Path) -> None:
    """Class 8: `$A.Run($B, $C)` -> `$A.Run($B, $C...)` at five sites in two files. Per hunk,
    each site is learned with the others of its file unchanged (counter-examples); grouped,
    one rule reproduces the whole group."""
    from click.testing import CliRunner

    from oopav.cli import cli
    from oopav.synth.groups import learn_groups

    files = {
        "a.go": (
            GO_A,
            GO_A.replace("args)\n\tc.Stop", "args...)\n\tc.Stop").replace("more)", "more...)"),
        ),
        "b.go": (GO_B, GO_B.replace("xs)", "xs...)").replace("ys)", "ys...)")),
    }
    repo = commit_repo(tmp_path, files)
    groups = learn_groups(repo, "HEAD")
    [group] = groups
    assert group.sites == 5 and group.files == ["a.go", "b.go"]
    assert group.whole and group.reproduced == 5
    assert len(group.rules) == 1
    assert group.rules[0]["fix"].endswith("...)") and "$A.Run(" in str(group.rules[0]["rule"])
    r = CliRunner().invoke(cli, ["synth", "--from-git", str(repo), "HEAD"])
    assert r.exit_code == 0, r.output
    assert "5 site(s) in 2 file(s); whole group: reproduces 5/5" in r.output
    assert "1 group(s), 1 reproduced whole by their rule; 5 of 5 sites reproduced" in r.output


B64_BEFORE = "def base64_decode(string):\n    pass\n"
B64_AFTER = "@cache\ndef base64_decode(string):\n    pass\n"
B64_REAL = (
    "import x\n\n\ndef base64_decode(string: str | bytes) -> bytes:\n    return b64(string)\n"
)


def test_a_rule_that_matches_nothing_names_the_nearest_code_and_a_rule_that_would() -> None:
    """Class 9: the example's `def base64_decode(string):` cannot match the real definition
    with annotations; the diagnosis names it (path:line) and a generalisation that matches."""
    from oopav.synth.diagnose import explain

    result = synthesize([Example(B64_BEFORE, B64_AFTER, path="a.py")])
    assert result.apply(B64_REAL) == (B64_REAL, 0)
    msg = explain(result.rules[0].rule, "python", [("pkg/enc.py", B64_REAL)], "REPO")
    assert msg.startswith("the rule learned from your example matches nothing in REPO")
    assert "nearest: pkg/enc.py:4 def base64_decode(string: str | bytes) -> bytes:" in msg
    assert "'regex': '^base64_decode$'" in msg


def test_the_sandbox_and_the_cli_say_where_a_rule_nearly_matched(tmp_path: Path) -> None:
    """Class 9 in the loop: the actor's ast_grep action is refused with the nearest sites, so
    `synth:` stops with them (no identical retries); `oopav synth --apply` prints them too."""
    import json

    from click.testing import CliRunner

    from oopav.cli import cli
    from oopav.events.actions import AstGrepAction
    from oopav.sandbox.apply import Rejection, plan_action

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "enc.py").write_text(B64_REAL)
    result = synthesize([Example(B64_BEFORE, B64_AFTER, path="a.py")])
    out = plan_action(tmp_path, AstGrepAction(rule=result.rules[0].to_yaml(), paths=["."]))
    assert isinstance(out, Rejection) and out.reason == "no_match"
    assert "nearest: pkg/enc.py:4 def base64_decode" in out.message
    ex = tmp_path / "ex.json"
    ex.write_text(json.dumps([{"before": B64_BEFORE, "after": B64_AFTER, "path": "a.py"}]))
    r = CliRunner().invoke(cli, ["synth", str(ex), "--apply", str(tmp_path / "pkg")])
    assert r.exit_code == 0, r.output
    assert "matches nothing in" in r.output and "enc.py:4" in r.output


def test_an_argument_added_then_reflowed_by_a_formatter_is_learned_modulo_layout() -> None:
    """Class 4: `zip(a, b)` -> `zip(a, b, strict=False)`, after which black rewrapped the
    call over three lines. The rule is learned in the before side's layout and says so."""
    before = (
        "def f():\n    for a, b in zip(first_list_of_things, second_list_of_them):\n        g(a)\n"
    )
    after = (
        "def f():\n    for a, b in zip(\n        first_list_of_things, second_list_of_them, "
        "strict=False\n    ):\n        g(a)\n"
    )
    result = synthesize([Example(before, after, path="a.py")])
    [rule] = result.rules
    assert (rule.rule["pattern"], rule.fix) == ("zip($$$A)", "zip($$$A, strict=False)")
    assert any("modulo layout" in n for n in result.notes)
    assert result.apply("x = zip(p, q)\n")[0] == "x = zip(p, q, strict=False)\n"


FMT_BEFORE = """use std::fmt;

impl fmt::Display for A {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a")
    }
}

impl fmt::Debug for B {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "b")
    }
}
"""


def test_a_type_level_edit_keeps_the_changed_type_literal_and_stays_idempotent() -> None:
    """Class 5: `fmt::Formatter` -> `fmt::Formatter<'_>`. The rule is the changed type itself
    (not `$A: $B` -> `$A: $B<'_>`, which would rewrite every typed parameter), and it does not
    rewrite its own result again."""
    after = FMT_BEFORE.replace("fmt::Formatter)", "fmt::Formatter<'_>)")
    result = synthesize([Example(FMT_BEFORE, after, path="lib.rs")])
    [rule] = result.rules
    assert rule.fix == "fmt::Formatter<'_>"
    held = "fn g(x: u32, out: &mut fmt::Formatter, done: &mut fmt::Formatter<'_>) {}\n"
    assert result.apply(held)[0] == (
        "fn g(x: u32, out: &mut fmt::Formatter<'_>, done: &mut fmt::Formatter<'_>) {}\n"
    )
    assert result.apply(after) == (after, 0)


def test_comments_inside_the_enclosing_node_do_not_make_the_rule_literal() -> None:
    """Class 6: the loop around the change holds comments; the rule rewrites only the changed
    sub-node (the loop's iterable), so the comments neither block it nor get copied."""
    before = (
        "def f(items, things):\n    for x in items:  # all of them\n        # work\n"
        "        g(x)\n    for y in things:\n        h(y)  # other\n"
    )
    after = before.replace("in items:", "in sorted(items):").replace(
        "in things:", "in sorted(things):"
    )
    result = synthesize([Example(before, after, path="a.py")])
    for rule in result.rules:
        assert "#" not in str(rule.rule) and "#" not in rule.fix
    held = "for z in rows:  # rows\n    # keep\n    k(z)\n"
    assert result.apply(held)[0] == held.replace("in rows:", "in sorted(rows):")


def test_an_edit_inside_string_literals_becomes_a_replace_transform() -> None:
    """Class 7: `"%s [%s]" % (a, b)` -> `"{} [{}]".format(a, b)`: not one literal rule per
    format string but an ast-grep `replace` transform of any string in that position."""
    result = synthesize(
        [Example("a = '%s [%s]' % (x, y)\n", "a = '{} [{}]'.format(x, y)\n", path="a.py")]
    )
    [rule] = result.rules
    assert rule.transform == {"NEW1": {"replace": {"source": "$STR1", "replace": "%s", "by": "{}"}}}
    assert result.apply("c = '%s and %s' % (p, q)\nd = w % (p, q)\n")[0] == (
        "c = '{} and {}'.format(p, q)\nd = w % (p, q)\n"
    )


def test_an_import_added_after_the_last_import_is_a_statement_insertion() -> None:
    """Class 3: a statement added at the top level (refused before: "adds or removes whole
    statements"). The rule inserts it after the last import of any file, once."""
    before = '"""Doc."""\nimport os\nimport re\n\nx = os.sep\n'
    after = '"""Doc."""\nimport os\nimport re\nfrom datetime import timezone\n\nx = os.sep\n'
    result = synthesize([Example(before, after, path="a.py")])
    [rule] = result.rules
    # After the last import of any kind (wave 3h synth10: the import block, not a kind).
    assert {"kind": "import_statement"} in rule.rule["any"]
    held = "import json\n\n\ndef f():\n    pass\n"
    got = result.apply(held)[0]
    assert got == "import json\nfrom datetime import timezone\n\n\ndef f():\n    pass\n"
    assert result.apply(got) == (got, 0)  # inserted once


def test_a_javascript_require_added_before_the_first_statement() -> None:
    before = "'use strict';\n\nconst a = require('a');\n\nmodule.exports = a;\n"
    after = (
        "'use strict';\n\nconst a = require('a');\n"
        "var URLSearchParams = require('url-search-params');\n\nmodule.exports = a;\n"
    )
    result = synthesize([Example(before, after, path="a.js")])
    held = "const b = require('b');\n\nb();\n"
    got = result.apply(held)[0]
    assert (
        got
        == "const b = require('b');\nvar URLSearchParams = require('url-search-params');\n\nb();\n"
    )
    assert result.apply(got) == (got, 0)


def test_an_attribute_added_to_some_functions_is_anchored_by_their_names() -> None:
    """Class 3 in Rust: `#[cold]` is a sibling of the function, not part of it. The examples
    show which functions get it (names differ: a regex of them); the others stay."""
    before = "use std::fmt;\n\nfn error() {}\n\nfn other() {}\n\nfn fail() {}\n"
    after = "use std::fmt;\n\n#[cold]\nfn error() {}\n\nfn other() {}\n\n#[cold]\nfn fail() {}\n"
    result = synthesize([Example(before, after, path="lib.rs")])
    held = "fn error() {}\nfn ok() {}\n#[cold]\nfn fail() {}\n"
    assert result.apply(held)[0] == "#[cold]\nfn error() {}\nfn ok() {}\n#[cold]\nfn fail() {}\n"


def test_the_synth_policy_acts_with_constraints_negatives_and_insertions() -> None:
    """In the loop: the task's examples (an unchanged one is a negative) give actor actions
    whose rule YAML carries the constraints/transforms and that the sandbox's parser accepts."""
    import asyncio

    from oopav.events.actions import AstGrepAction
    from oopav.models.prompt import build_request, parse_role_answer, static_prefix
    from oopav.models.synth import SynthBackend, examples_block
    from oopav.sandbox.astgrep import rewrite_source, rule_from_action

    examples = [
        {"path": "termui.py", "before": PAGERS_BEFORE, "after": PAGERS_AFTER},
        {"path": "keep.py", "before": "lesspager(x)\n", "after": "lesspager(x)\n"},
        {
            "path": "m.py",
            "before": "import os\n\nx = os.sep\n",
            "after": "import os\nimport sys\n\nx = os.sep\n",
        },
    ]

    def act(step: int) -> AstGrepAction:
        context = f"### Plan\n-> 1. a\n   2. b\n   3. c\nCurrent step: {step} of 3\n"
        request = build_request(
            "actor",
            prefix=static_prefix(None),
            context=context + examples_block(examples),
            task="do it",
        )
        response = asyncio.run(SynthBackend().complete(request))
        action = parse_role_answer("actor", response.text).payload
        assert isinstance(action, AstGrepAction)
        return action

    code = "import re\n\n_pipepager(a)\nlesspager(b)\nrun(c)\n"
    for step in (1, 2):
        code, _ = rewrite_source(code, rule_from_action(act(step)))
    assert code == "import re\nimport sys\n\n_pipepager(a, color)\nlesspager(b)\nrun(c)\n"


def test_a_rust_method_rename_from_a_call_also_renames_its_definitions() -> None:
    """Class 1: `x.toggle()` -> `x.begin()` (a field name at the call) reaches `fn toggle` in
    impls and traits (a plain name there), not a local variable of that name."""
    before = "fn f(s: &mut S) {\n    s.read.toggle();\n}\n"
    result = synthesize([Example(before, before.replace("toggle", "begin"), path="a.rs")])
    held = "trait R {\n    fn toggle(&mut self);\n}\nfn g() {\n    let toggle = 1;\n}\n"
    assert result.apply(held)[0] == held.replace("fn toggle", "fn begin")


def test_the_plan_describes_an_insertion_rule_in_words() -> None:
    from oopav.models.synth import describe

    result = synthesize(
        [Example("import os\n\nx = 1\n", "import os\nimport sys\n\nx = 1\n", path="a.py")]
    )
    assert describe(result.rules[0]) == "insert 'import sys' next to a import_statement"


def test_a_site_too_large_for_metavariables_gives_no_pattern_rather_than_a_crash() -> None:
    """Found on real files: a site with more than 702 distinct carried subtrees ran out of
    metavariable names (a StopIteration inside a generator: a crash)."""
    from oopav.synth.abstract import Options, abstract_sites
    from oopav.synth.sites import find_sites, parse

    items = ", ".join(f"a{i}" for i in range(800))
    before, after = f"x = [{items}]\n", f"x = list([{items}])\n"
    [site] = find_sites(1, before, after, parse(before, "python"), parse(after, "python"), "ex")
    assert abstract_sites([site], Options(spread=False)) is None
    assert synthesize([Example(before, after, path="a.py")]).apply(before)[0] == after


# --- class 3: statements removed (imports, requires, attributes) ------------------------------


def test_a_removed_import_is_a_deletion_rule_that_takes_its_line_along() -> None:
    """Class 3: `use std::i64;` removed after another `use`. The rule deletes the statement
    with the layout before it (`expandStart` over the previous statement), so no empty line
    is left; its companion reaches the same statement first in a file."""
    before = "use std::fmt;\nuse std::i64;\n\nfn f() {}\n"
    after = "use std::fmt;\n\nfn f() {}\n"
    result = synthesize([Example(before, after, path="number.rs")])
    # (Wave 3d synth-exact: a layout companion that joins the next statement where the
    # wider gap is before it comes first; see tests/synth/test_exact.py.)
    first = next(r for r in result.rules if not r.companion)
    assert first.expand_start == {"pattern": "$PREV"}
    assert first.fix == "$PREV"
    assert "expandStart:" in first.to_yaml()
    held_out = "use std::i64;\nuse std::io;\nfn g() {\n    use std::i64;\n    h();\n}\n"
    assert result.apply(held_out)[0] == "use std::io;\nfn g() {\n    h();\n}\n"
    assert result.apply("use std::i32;\n")[0] == "use std::i32;\n"
    from oopav.models.synth import describe  # what the `synth:` policy says it does

    assert describe(first) == "delete 'use std::i64;'"
    # The companion may match nothing in a repository (a refused action in the loop): the
    # `synth:` policy applies the main rule only.
    assert [r.companion for r in result.rules] == [True, False, True]
    assert result.loop_rules() == [first]


def test_adjacent_removed_requires_are_generalised_no_wider_than_the_examples() -> None:
    """Class 3: two `require` lines removed at the top of a test file. One rule covers both
    (`var $A = require($B);`), with each metavariable constrained to the names seen, so other
    requires stay; adjacent deletions all go (the rule is applied until nothing changes)."""
    before = (
        "var axios = require('../../index');\nvar getAjaxRequest = require('./x');\n\n"
        "describe('a', function () {});\n"
    )
    after = "describe('a', function () {});\n"
    result = synthesize([Example(before, after, path="a.spec.js")])
    assert result.rules[0].constraints == {
        "A": {"regex": "^(?:axios|getAjaxRequest)$"},
        "B": {"regex": r"^(?:'\.\./\.\./index'|'\./x')$"},
    }
    held_out = (
        "var axios = require('../../index');\nvar getAjaxRequest = require('./x');\n\n"
        "var other = require('y');\ndescribe('b', function () {});\n"
    )
    assert (
        result.apply(held_out)[0] == "var other = require('y');\ndescribe('b', function () {});\n"
    )


def test_a_removed_go_import_and_rust_attribute_leave_no_line_behind() -> None:
    go_before = 'package a\n\nimport (\n\t"context"\n\t"fmt"\n)\n'
    go_after = 'package a\n\nimport (\n\t"fmt"\n)\n'
    result = synthesize([Example(go_before, go_after, path="a.go")])
    held = 'package b\n\nimport (\n\t"bytes"\n\t"context"\n\t"os"\n)\n'
    assert result.apply(held)[0] == 'package b\n\nimport (\n\t"bytes"\n\t"os"\n)\n'
    rs_before = (
        '#[cfg(feature = "std")]\nfn a() {}\n\n#[inline]\n#[cfg(feature = "std")]\nfn b() {}\n'
    )
    rs_after = "fn a() {}\n\n#[inline]\nfn b() {}\n"
    result = synthesize([Example(rs_before, rs_after, path="e.rs")])
    held = '#[derive(Debug)]\n#[cfg(feature = "std")]\nstruct S;\n#[cfg(feature = "alloc")]\nfn c() {}\n'
    assert result.apply(held)[0] == (
        '#[derive(Debug)]\nstruct S;\n#[cfg(feature = "alloc")]\nfn c() {}\n'
    )


def test_a_deletion_rule_set_gives_the_same_files_through_the_ast_grep_cli(tmp_path: Path) -> None:
    """The deletion rules are plain ast-grep (`fix: {template, expandStart}`): the CLI applied
    to a fixpoint gives what the in-process apply gives."""
    before = "import os\nimport sys\n\nx = 1\n"
    after = "import os\n\nx = 1\n"
    result = synthesize([Example(before, after, path="m.py")])
    tree = tmp_path / "tree"
    tree.mkdir()
    held = "import sys\nimport re\n\n\ndef f():\n    a = 1\n    import sys\n    return a\n"
    (tree / "m.py").write_text(held)
    for rule in result.rules:
        (tmp_path / "rule.yml").write_text(rule.to_yaml())
        for _ in range(3):
            proc = subprocess.run(
                [find_cli(), "scan", "--rule", str(tmp_path / "rule.yml"), "--update-all", "."],
                cwd=tree,
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
            assert proc.returncode in (0, 1), proc.stderr
    assert (tree / "m.py").read_text() == result.apply(held)[0]
    assert result.apply(held)[0] == "import re\n\n\ndef f():\n    a = 1\n    return a\n"


def test_a_deletion_rule_leaves_kept_statements_of_the_examples_alone() -> None:
    """A statement the example file keeps is a negative: `import sys` removed at one place
    but kept inside `main` gives no rule that would delete both."""
    before = "import os\nimport sys\n\n\ndef main():\n    x = 1\n    import sys\n"
    after = "import os\n\n\ndef main():\n    x = 1\n    import sys\n"
    result = synthesize([Example(before, after, path="m.py")])
    assert result.apply(before)[0] == after


# --- comments changed with the code (a doc comment's code sample) ------------------------------


def test_a_doc_comment_changed_like_the_code_gets_a_substitution_rule(tmp_path: Path) -> None:
    """A rename made in code and in a doc comment's code sample (one example holds only the
    comment): the comment is rewritten by a `replace` transform of the whole word, the code
    by a rename; a longer word containing it stays. The rule file is the CLI's too."""
    doc_before = (
        "/**\n * Use it:\n\tconst api = ky.create({prefixUrl: 'x'});\n */\nexport type A = 1;\n"
    )
    code_before = "const o = {prefixUrl: 2, other: 3};\n"
    result = synthesize(
        [
            Example(doc_before, doc_before.replace("prefixUrl", "prefix"), path="a.ts"),
            Example(code_before, code_before.replace("prefixUrl", "prefix"), path="b.ts"),
        ]
    )
    comment = result.rules[0]
    assert comment.rule["kind"] == "comment"
    assert comment.transform == {
        "NEWCMT": {"replace": {"source": "$CMT", "replace": r"\bprefixUrl\b", "by": "prefix"}}
    }
    held = "// prefixUrl and prefixUrls\nconst q = {prefixUrl: 1};\n"
    assert result.apply(held)[0] == "// prefix and prefixUrls\nconst q = {prefix: 1};\n"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "c.ts").write_text(held)
    (tmp_path / "rule.yml").write_text(result.to_yaml())
    proc = subprocess.run(
        [find_cli(), "scan", "--rule", str(tmp_path / "rule.yml"), "--update-all", str(tree)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert (tree / "c.ts").read_text() == result.apply(held)[0]


def test_a_comment_change_no_substitution_describes_says_so() -> None:
    """Replacing the changed word throughout would also change its other occurrence. Wave
    3d: the comment is left out with a note and the code's change is still learned (a doc
    comment changed along with the code failed the whole synthesis); a comment alone still
    fails."""
    before = "x = f(1)  # keep f, not f\n"
    after = "x = g(1)  # keep g, not f\n"
    result = synthesize([Example(before, after, path="a.py")])
    assert result.apply(before)[0] == "x = g(1)  # keep f, not f\n"
    assert result.examples_reproduced == 0
    assert any("a comment no single substitution describes" in n for n in result.notes)
    with pytest.raises(SynthesisError, match="changes a comment; comments are not rewritable"):
        synthesize([Example("x = 1  # keep f, not f\n", "x = 1  # keep g, not f\n", path="a.py")])


# --- class 6: rewrite only the changed sub-node (a parameter list), not the body's layout -----


def test_a_changed_parameter_list_is_rewritten_alone_not_with_the_body() -> None:
    """Arrow-function hooks `(_request, _options, response) => {…}` became `({response}) =>
    {…}` in tab-indented code. A rule of the whole function carries its body's layout (wrong at
    other depths); the rule learned rewrites the parameter list alone, so held-out hooks at any
    depth, `async` ones and one-line ones come out right."""
    a = (
        "const a = ky(u, {\n\thooks: {\n\t\tafterResponse: [\n"
        "\t\t\t(_request, _options, response) => {\n\t\t\t\tlog(response);\n\t\t\t},\n"
        "\t\t],\n\t},\n});\n"
    )
    b = (
        "const b = {\n\tafterResponse: [\n\t\t(_request, _options, res) => {\n"
        "\t\t\tuse(res);\n\t\t\treturn res;\n\t\t},\n\t],\n};\n"
    )
    result = synthesize(
        [
            Example(a, a.replace("(_request, _options, response)", "({response})"), path="a.ts"),
            Example(b, b.replace("(_request, _options, res)", "({res})"), path="b.ts"),
        ]
    )
    [rule] = result.rules
    assert rule.rule == {
        "pattern": {"context": "(_request, _options, $A) => {}", "selector": "formal_parameters"}
    }
    assert rule.fix == "({$A})"
    held = (
        "x({\n\thooks: [\n\t\t\tasync (_request, _options, response) => {\n"
        "\t\t\t\t\tawait f(response);\n\t\t\t},\n\t\t(_request, _options, response) => response,\n"
        "\t]});\n"
    )
    assert result.apply(held)[0] == held.replace("(_request, _options, response)", "({response})")


TRAILING_BEFORE = """\
export const a = {
\tfoo: 1
};
const b = {
\tbar: 2
};
g({x: 1});
"""
TRAILING_AFTER = TRAILING_BEFORE.replace("1\n", "1,\n").replace("2\n", "2,\n")
# Held out: multi-line objects get the comma; one-line objects, and a one-line object whose
# value spans lines, keep their layout (the rule once laid them out over lines: ky's
# trailing commas, 126 wrong hunks on one real commit).
TRAILING_HELD = "const c = {\n\tbaz: 3\n};\nconst d = {q: 1};\nconst e = {h: [\n\t2\n]};\n"
# Wave 3f (synth/commas.py): a change of trailing commas only is one rule for the last item
# of a multi-line list (`$A` -> `$A,`, no layout written): the array spread over lines inside
# the one-line object gets its comma too, the one-line object keeps its layout.
TRAILING_WANT = "const c = {\n\tbaz: 3,\n};\nconst d = {q: 1};\nconst e = {h: [\n\t2,\n]};\n"


def test_a_fix_that_hard_codes_a_multi_line_layout_matches_only_that_layout() -> None:
    result = synthesize([Example(TRAILING_BEFORE, TRAILING_AFTER, language="typescript")])
    assert result.apply(TRAILING_BEFORE)[0] == TRAILING_AFTER
    # Wave 3f: the trailing-comma rule and its nested copies (synth/commas.py).
    assert result.rules[0].fix == "$A,"
    assert {r.follow_up for r in result.rules[1:]} == {"nested"}
    # The list is the context (not an enclosing `variable_declarator`): a multi-line
    # object passed as an argument gets the comma too.
    assert "variable_declarator" not in str(result.rules[0].rule)
    assert result.apply(TRAILING_HELD)[0] == TRAILING_WANT
    assert result.apply("f({\n\tz: 1\n});\n")[0] == "f({\n\tz: 1,\n});\n"


def test_a_layout_guarded_rule_keeps_one_line_objects_through_the_ast_grep_cli(
    tmp_path: Path,
) -> None:
    result = synthesize([Example(TRAILING_BEFORE, TRAILING_AFTER, language="typescript")])
    (tmp_path / "rule.yml").write_text(result.to_yaml())
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "held.ts").write_text(TRAILING_HELD)
    subprocess.run(
        [find_cli(), "scan", "--rule", str(tmp_path / "rule.yml"), "--update-all", str(tree)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert (tree / "held.ts").read_text() == TRAILING_WANT


def test_a_multi_line_fix_in_tab_indented_code_keeps_to_the_examples_depth() -> None:
    # ast-grep re-indents a fix by the spaces before the match, not tabs: a rule learned at
    # depth 1 would write depth-1 lines into an object at depth 0 or 3. Wave 3f: a change of
    # trailing commas only is learned as `$A` -> `$A,` on the last item (synth/commas.py),
    # which writes no line break, so the other depths get their comma right.
    before = "function f() {\n\tfoo({\n\t\ta: 1\n\t});\n\tbar({\n\t\tb: 2\n\t});\n\tg({x: 1});\n}\n"
    after = before.replace("1\n", "1,\n").replace("2\n", "2,\n")
    result = synthesize([Example(before, after, language="typescript")])
    assert result.apply(before)[0] == after
    same_depth = "function h() {\n\tbaz({\n\t\tc: 3\n\t});\n}\n"
    assert result.apply(same_depth)[0] == same_depth.replace("3\n", "3,\n")
    other_depths = (
        "foo({\n\tc: 3\n});\nif (x) {\n\tif (y) {\n\t\tbaz(1, {\n\t\t\td: 4\n\t\t});\n\t}\n}\n"
    )
    assert result.apply(other_depths)[0] == other_depths.replace("3\n", "3,\n").replace(
        "4\n", "4,\n"
    )


def test_a_go_field_renamed_in_composite_literals_is_renamed_in_its_declaration_too() -> None:
    # gin's `SkipPathes` -> `SkipPaths`: the examples show only `LoggerConfig{SkipPathes: x}`
    # (an `identifier` there); the struct field and `conf.SkipPathes` are `field_identifier`s.
    before = "package a\n\nfunc f() {\n\tx := C{SkipPathes: n}\n\ty := D{SkipPathes: m}\n\t_, _ = x, y\n}\n"
    after = before.replace("SkipPathes", "SkipPaths")
    result = synthesize([Example(before, after, language="go")])
    held = (
        "package a\n\ntype C struct {\n\tSkipPathes []string\n}\n\n"
        "func g(c C, SkipPathes int) []string {\n\treturn c.SkipPathes\n}\n"
    )
    got = result.apply(held)[0]
    assert "\tSkipPaths []string" in got and "return c.SkipPaths" in got
    # The value-position identifiers stay renamed as before: the rename is of the name.
    assert result.apply("package a\n\nvar v = C{Other: SkipPathes}\n")[0].count("SkipPaths") == 1


IMPORT_LIST_BEFORE = """\
if TYPE_CHECKING:
    from .console import (
        Console,
        ConsoleOptions,
        ConsoleRenderable,
        JustifyMethod,
    )
"""
IMPORT_LINE_BEFORE = (
    "from .console import Console, ConsoleOptions, ConsoleRenderable, RenderResult\n"
)
IMPORT_LIST_HELD = """\
from .console import (
    Console,
    ConsoleOptions,
    ConsoleRenderable,
    RenderableType,
    RenderResult,
    Measurement,
)
from .console import Console, ConsoleRenderable, RenderResult, Segment
x = Console
"""


def test_a_name_removed_from_import_lists_of_any_length_and_layout_is_one_deletion() -> None:
    # rich's `ConsoleRenderable,` removed from import lists: the rule once kept the whole
    # list (`from $A import (\n $B,\n $C,\n ConsoleRenderable,\n ...)`, one metavariable an
    # item), which matches no list of another length; now the item alone, with its comma.
    result = synthesize(
        [
            Example(
                IMPORT_LIST_BEFORE,
                IMPORT_LIST_BEFORE.replace("        ConsoleRenderable,\n", ""),
                language="python",
            ),
            Example(
                IMPORT_LINE_BEFORE,
                IMPORT_LINE_BEFORE.replace("ConsoleRenderable, ", ""),
                language="python",
            ),
        ]
    )
    assert len(result.rules) == 1 and result.rules[0].fix == ""
    assert result.rules[0].rule["inside"]["kind"] == "import_from_statement"
    want = IMPORT_LIST_HELD.replace("    ConsoleRenderable,\n", "").replace(
        "Console, ConsoleRenderable, ", "Console, "
    )
    assert result.apply(IMPORT_LIST_HELD)[0] == want  # the use below the imports stays
    # A file that still uses the name keeps it (wave 3l: a name leaves an import list only
    # where nothing uses it any more).
    used = IMPORT_LIST_HELD + "y = ConsoleRenderable\n"
    assert result.apply(used)[0] == used


def test_an_import_list_item_deletion_gives_the_same_file_through_the_ast_grep_cli(
    tmp_path: Path,
) -> None:
    result = synthesize(
        [
            Example(
                IMPORT_LIST_BEFORE,
                IMPORT_LIST_BEFORE.replace("        ConsoleRenderable,\n", ""),
                language="python",
            )
        ]
    )
    (tmp_path / "rule.yml").write_text(result.to_yaml())
    (tmp_path / "held.py").write_text(IMPORT_LIST_HELD)
    subprocess.run(
        [find_cli(), "scan", "--rule", str(tmp_path / "rule.yml"), "--update-all", "held.py"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert (tmp_path / "held.py").read_text() == result.apply(IMPORT_LIST_HELD)[0]
    assert "ConsoleRenderable,\n" not in (tmp_path / "held.py").read_text()


def test_a_letter_changed_inside_a_word_of_strings_replaces_that_word_only() -> None:
    # gin's "Invalid node type" -> "invalid node type": the substitution once was `I` -> `i`
    # in every string, and rewrote a test table's "/HI" paths.
    before = 'package a\n\nfunc f() {\n\tpanic("Invalid node type")\n\tg("Invalid path")\n}\n'
    after = before.replace("Invalid", "invalid")
    result = synthesize([Example(before, after, language="go")])
    (rule,) = result.rules
    assert rule.transform is not None
    assert rule.transform["NEW1"]["replace"]["replace"] == r"\bInvalid\b"
    held = 'package a\n\nfunc k() {\n\tpanic("Invalid wildcard")\n\tx := []string{"/HI", "/Hi/", "Invalids"}\n}\n'
    assert result.apply(held)[0] == held.replace('"Invalid wildcard"', '"invalid wildcard"')
