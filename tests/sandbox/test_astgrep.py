"""In-process ast-grep rewrites against the ast-grep CLI as reference, and rule validation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from oopav.events.actions import AstGrepAction
from oopav.sandbox.apply import ActionPlan, Rejection, apply_plan, plan_action
from oopav.sandbox.astgrep import (
    RuleError,
    cli_rewrite,
    files_for,
    rewrite_source,
    rule_from_action,
)

PY = """import os


def load(path, mode="r"):
    if os.path.exists(path):
        data = fetch(path,
                     timeout=3)
        return data
    print("missing", path)
    for i in range(3):
        fetch(fetch(i))
    return None


class Client:
    def get(self, url):
        result = fetch(url)
        if result is None:
            raise ValueError("no result")
        return result
"""
JS = """function main() {
  const a = fetch("x");
  console.log("hello", a);
  if (a) {
    console.log(
      a,
      "multi",
    );
  }
  var b = 1;
}
"""

CORPUS: list[AstGrepAction] = [
    AstGrepAction(pattern="fetch($$$ARGS)", rewrite="fetch_page($$$ARGS)", language="python"),
    AstGrepAction(pattern="print($$$A)", rewrite="logger.info($$$A)", language="py"),
    AstGrepAction(
        rule="""id: wrap-fetch
language: python
rule:
  pattern: fetch($A, $$$REST)
fix: |-
  with timeout():
      got = fetch($A,
                  $$$REST)
""",
    ),
    AstGrepAction(
        rule="""id: raise-in-method
language: python
rule:
  pattern: raise ValueError($MSG)
  inside:
    kind: function_definition
    stopBy: end
fix: raise LookupError($MSG)
""",
    ),
    AstGrepAction(
        rule="""id: ret-none
language: python
rule:
  all:
    - kind: return_statement
    - has:
        kind: none
fix: return
""",
    ),
    AstGrepAction(
        rule="""id: not-none-check
language: python
rule:
  pattern: 'if $X is None: $$$BODY'
fix: |-
  if $X is None:
      log("none")
      $$$BODY
""",
    ),
    AstGrepAction(
        rule="""id: constrained
language: python
rule:
  pattern: fetch($A)
constraints:
  A:
    regex: ^url$
fix: fetch_url($A)
""",
    ),
    AstGrepAction(
        rule="""id: transform
language: python
rule:
  pattern: def $NAME($$$P)
  kind: function_definition
  any:
    - has: {kind: block, stopBy: neighbor}
transform:
  UPPER:
    convert:
      source: $NAME
      toCase: upperCase
fix: def $UPPER($$$P)
""",
    ),
    AstGrepAction(
        rule="""id: js-console
language: javascript
rule:
  pattern: console.log($$$ARGS)
  not:
    has:
      regex: multi
      stopBy: end
fix: logger.debug($$$ARGS)
""",
    ),
    AstGrepAction(
        rule="""id: js-multiline
language: javascript
rule:
  pattern: console.log($$$ARGS)
  has:
    regex: multi
    stopBy: end
fix: |-
  if (debug) {
    console.log($$$ARGS);
  }
""",
    ),
    AstGrepAction(
        rule="""id: js-var
language: javascript
rule:
  kind: variable_declaration
  pattern: var $N = $V
fix: let $N = $V
""",
    ),
    AstGrepAction(pattern="if $C: $$$B", rewrite="if not ($C): $$$B", language="python"),
]


@pytest.mark.parametrize("action", CORPUS, ids=lambda a: (a.rule or a.pattern or "")[:30])
def test_in_process_matches_cli(action: AstGrepAction, tmp_path: Path) -> None:
    rule = rule_from_action(action)
    ours, theirs = tmp_path / "ours", tmp_path / "cli"
    for d in (ours, theirs):
        (d / "pkg").mkdir(parents=True)
        (d / "pkg" / "mod.py").write_text(PY)
        (d / "app.js").write_text(JS)
    files = files_for(ours, ["."], rule.language)
    assert files
    expected = cli_rewrite(theirs, rule, files)
    got = {}
    total = 0
    for f in files:
        new, n = rewrite_source((ours / f).read_text(), rule)
        got[f] = new
        total += n
    assert total > 0, "corpus rule must match something"
    assert got == expected
    assert any(got[f] != (ours / f).read_text() for f in files)


def test_plan_and_apply_rule(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(PY)
    plan = plan_action(tmp_path, CORPUS[0])
    assert isinstance(plan, ActionPlan)
    # Four calls, one nested in another: like the CLI, the inner one is left as it was.
    assert plan.matches == 3
    assert (tmp_path / "m.py").read_text() == PY  # planning writes nothing
    assert "+        data = fetch_page(path," in plan.diff
    assert apply_plan(tmp_path, plan) == ["m.py"]
    assert "fetch_page(fetch(i))" in (tmp_path / "m.py").read_text()


@pytest.mark.parametrize(
    ("action", "reason", "fragment"),
    [
        (
            AstGrepAction(rule="id: x\nlanguage: python\nrule:\n  kind: not_a_kind\nfix: y"),
            "rule_invalid",
            "not_a_kind",
        ),
        (
            AstGrepAction(rule="id: x\nlanguage: python\nrule:\n  patern: x\nfix: y"),
            "rule_invalid",
            "patern",
        ),
        (
            AstGrepAction(rule="id: x\nlanguage: python\nrule:\n  pattern: f($A)\nfix: g($B)"),
            "rule_invalid",
            "$B",
        ),
        (
            AstGrepAction(rule="id: x\nlanguage: cobol\nrule:\n  pattern: x\nfix: y"),
            "unknown_language",
            "cobol",
        ),
        (AstGrepAction(rule="[not, a, mapping]"), "bad_rule", "mapping"),
        (
            AstGrepAction(pattern="nothing_like_this($A)", rewrite="x", language="python"),
            "no_match",
            "matches nothing",
        ),
        (
            AstGrepAction(pattern="fetch($A)", rewrite="fetch($A", language="python"),
            "parse_error",
            "would not parse",
        ),
        (
            AstGrepAction(pattern="x", rewrite="y", language="python", paths=["../etc"]),
            "path_outside_workspace",
            "..",
        ),
        (AstGrepAction(pattern="x", language="python"), "bad_rule", "short form"),
        (
            AstGrepAction(
                rule="id: x\nlanguage: python\nrule:\n  pattern: fetch($A)\nfix: get($A)\n"
                "metadata: [optional]"
            ),
            "bad_rule",
            "`metadata` must be a mapping",
        ),
    ],
)
def test_rule_rejections(tmp_path: Path, action: AstGrepAction, reason: str, fragment: str) -> None:
    (tmp_path / "m.py").write_text(PY)
    out = plan_action(tmp_path, action)
    assert isinstance(out, Rejection), out
    assert out.reason == reason
    assert fragment in out.message
    assert (tmp_path / "m.py").read_text() == PY


def test_globs_and_hidden_dirs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("fetch(1)\n")
    (tmp_path / "b.py").write_text("fetch(2)\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "h.py").write_text("fetch(3)\n")
    assert files_for(tmp_path, ["a/*.py"], "python") == ["a/x.py"]
    assert files_for(tmp_path, ["."], "python") == ["a/x.py", "b.py"]
    shutil.rmtree(tmp_path / "a")
    assert files_for(tmp_path, ["*.py"], "python") == ["b.py"]


NON_ASCII = """# café ✓ — 𝔘𝔫𝔦𝔠𝔬𝔡𝔢
def héllo(x):
    s = "naïve ☃"
    y = fetch(s, "ü")
    if y is None:
        return fetch(fetch("日本"),
                     timeout=3)
    print("ø", fetch(y))
    return y
"""


@pytest.mark.parametrize("index", [0, 1, 2, 5, 7, 11])
def test_in_process_matches_cli_on_non_ascii_text(index: int, tmp_path: Path) -> None:
    """Offsets from ast-grep-py are in characters; multi-byte text before a match must not
    shift a rewrite."""
    rule = rule_from_action(CORPUS[index])
    (tmp_path / "m.py").write_text(NON_ASCII)
    expected = cli_rewrite(tmp_path, rule, ["m.py"])["m.py"]
    new, n = rewrite_source(NON_ASCII, rule)
    assert n > 0 and new != NON_ASCII
    assert new == expected


def test_matches_out_of_order_are_sorted_before_splicing() -> None:
    from ast_grep_py import SgRoot

    from oopav.sandbox.astgrep import _prepare, _span_key, _splice

    rule = rule_from_action(
        AstGrepAction(pattern="fetch($$$A)", rewrite="get($$$A)", language="python")
    )
    src = "a = fetch(fetch(1), 2)\nb = fetch(3)\n"
    nodes = SgRoot(src, "python").root().find_all(_prepare(rule).config)
    expand = _prepare(rule).expand
    expected = ("a = get(fetch(1), 2)\nb = get(3)\n", 2)  # the nested call is skipped
    assert _splice(src, nodes, expand) == expected == rewrite_source(src, rule)
    assert _splice(src, nodes[::-1], expand) is None
    assert _splice(src, sorted(nodes[::-1], key=_span_key), expand) == expected


def test_find_cli_never_takes_shadow_utils_sg(tmp_path, monkeypatch) -> None:
    """`/usr/bin/sg` on most Linux systems is shadow-utils' "execute as group": with the
    venv not activated (`.venv/bin/oopav`), the CLI beside the interpreter wins, and a
    foreign `sg` on PATH is never taken for ast-grep."""
    import subprocess
    import sys

    from oopav.sandbox import astgrep

    found = astgrep.find_cli()
    out = subprocess.run([found, "--version"], capture_output=True, text=True, check=True)
    assert "ast-grep" in out.stdout.lower()
    fake = tmp_path / "bin"
    fake.mkdir()
    impostor = fake / "sg"
    impostor.write_text("#!/bin/sh\necho 'sg from shadow-utils'\n")
    impostor.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    with pytest.raises(FileNotFoundError, match="ast-grep CLI not found"):
        astgrep.find_cli()
    real = fake / "ast-grep"
    real.symlink_to(found)
    assert astgrep.find_cli() == str(real)


def test_fix_config_expansions_match_the_cli(tmp_path: Path) -> None:
    """`fix: {template, expandStart/expandEnd}` (rules by example delete statements with it):
    the replaced range grows over one neighbouring sibling, in process as in the CLI."""
    yaml_rule = """\
id: del
language: python
rule:
  pattern: import sys
  follows: {pattern: $PREV, stopBy: neighbor}
fix:
  template: $PREV
  expandStart: {pattern: $PREV}
"""
    rule = rule_from_action(AstGrepAction(rule=yaml_rule))
    assert rule.expand_start == {"pattern": "$PREV"}
    assert "expandStart" in rule.to_yaml()
    text = "import os\nimport sys\nx = 1\n\n\ndef f():\n    a = 1\n    import sys\n    return a\n"
    (tmp_path / "m.py").write_text(text)
    expected = cli_rewrite(tmp_path, rule, ["m.py"])["m.py"]
    assert rewrite_source(text, rule)[0] == expected
    assert expected == "import os\nx = 1\n\n\ndef f():\n    a = 1\n    return a\n"
    end_rule = rule_from_action(
        AstGrepAction(
            rule="id: e\nlanguage: python\nrule: {pattern: import os}\n"
            "fix: {template: '', expandEnd: {pattern: import sys}}\n"
        )
    )
    (tmp_path / "m.py").write_text(text)
    assert rewrite_source(text, end_rule)[0] == cli_rewrite(tmp_path, end_rule, ["m.py"])["m.py"]
    with pytest.raises(RuleError, match="expandStart"):
        rule_from_action(
            AstGrepAction(
                rule="id: e\nlanguage: python\nrule: {pattern: x}\nfix: {expandStart: 1}\n"
            )
        )


BLANK_LINES = """def handler():
    class Config(object):
        def get(self):
            return 1

        timeout = 3
{ws}
        retries = 2
"""
UNWRAP_RULE = AstGrepAction(
    rule="""id: no-object-base
language: python
rule:
  pattern: |
    class $A(object):
        $$$B
fix: |-
  class $A:
      $$$B
""",
)


@pytest.mark.parametrize("ws", ["", "        "], ids=["empty", "whitespace-only"])
def test_a_blank_line_inside_a_multiline_metavariable_stays_as_it_was(
    ws: str, tmp_path: Path
) -> None:
    """The body `$$$B` is re-indented twice (to the fix's column, then to the match's): the
    CLI pads every blank line of it with the indentation, which no edit by a person does
    (structlog's `class X(object):` -> `class X:` came back with its empty lines changed)."""
    text = BLANK_LINES.format(ws=ws)
    rule = rule_from_action(UNWRAP_RULE)
    new, n = rewrite_source(text, rule)
    assert n == 1
    assert new == text.replace("class Config(object):", "class Config:")
    # The CLI differs exactly there: its output with those lines as they were is ours.
    (tmp_path / "m.py").write_text(text)
    cli = cli_rewrite(tmp_path, rule, ["m.py"])["m.py"]
    assert cli != new
    blanks = [i for i, ln in enumerate(text.split("\n")) if not ln.strip()]
    restored = cli.split("\n")
    for i in blanks:
        assert not restored[i].strip()
        restored[i] = text.split("\n")[i]
    assert "\n".join(restored) == new
    # Through the workspace path the loop's actions take (plan, then apply).
    ws_dir = tmp_path / "workspace"
    ws_dir.mkdir()
    (ws_dir / "m.py").write_text(text)
    plan = plan_action(ws_dir, UNWRAP_RULE)
    assert isinstance(plan, ActionPlan)
    apply_plan(ws_dir, plan)
    assert (ws_dir / "m.py").read_text() == new
