"""The synthesiser, its rule files (checked with the real ast-grep CLI) and `oopav synth`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from oopav.cli import cli
from oopav.sandbox.astgrep import find_cli
from oopav.synth import Example, SynthesisError, synthesize


def learn(before: str, after: str, lang: str) -> list[tuple[dict, str]]:
    result = synthesize([Example(before, after, language=lang)])
    assert result.apply(before)[0] == after
    assert result.examples_reproduced == 1
    return [(r.rule, r.fix) for r in result.rules]


@pytest.mark.parametrize(
    ("before", "after", "lang", "rules"),
    [
        (
            "from c import fetch\nx = fetch(1)\n",
            "from c import fetch_page\nx = fetch_page(1)\n",
            "python",
            [({"kind": "identifier", "regex": "^fetch$"}, "fetch_page")],
        ),
        (
            "x = obj.fetch(1)\ny = fetch(2)\n",
            "x = obj.get(1)\ny = fetch(2)\n",
            "python",
            [({"pattern": "$A.fetch"}, "$A.get")],
        ),
        (
            "if x == None:\n    pass\nif y == 1:\n    pass\n",
            "if x is None:\n    pass\nif y == 1:\n    pass\n",
            "python",
            [({"pattern": "$A == None"}, "$A is None")],
        ),
        (
            "p = os.path.join(a, b)\n",
            "p = Path(a) / b\n",
            "python",
            [({"pattern": "os.path.join($A, $B)"}, "Path($A) / $B")],
        ),
        (
            "ok = d.has_key(k)\n",
            "ok = k in d\n",
            "python",
            [({"pattern": "$A.has_key($B)"}, "$B in $A")],
        ),
        (
            "f(a, b)\ng(a, b)\n",
            "f(b, a)\ng(a, b)\n",
            "python",
            [({"pattern": "f($A, $B)"}, "f($B, $A)")],
        ),
        (
            "r = get(u)\n",
            "r = get(u, timeout=5)\n",
            "python",
            # The append guard (wave 3e): not `get()` nor a call passing `timeout` already.
            [
                (
                    {
                        "pattern": "get($$$A)",
                        "not": {
                            "any": [
                                {"regex": r"[,\(]\s*\)$"},
                                {"regex": r"[,\(]\s*timeout\s*=[^=]"},
                            ]
                        },
                    },
                    "get($$$A, timeout=5)",
                )
            ],
        ),
        (
            "r = get(u, timeout=5)\n",
            "r = get(u)\n",
            "python",
            [({"pattern": "get($$$A, timeout=5)"}, "get($$$A)")],
        ),
        (
            "x = foo(a)\n",
            "x = list(foo(a))\n",
            "python",
            [({"pattern": "foo($$$A)"}, "list(foo($$$A))")],
        ),
        (
            "const v = a && a.b;\n",
            "const v = a?.b;\n",
            "javascript",
            [({"pattern": "$A && $A.$B"}, "$A?.$B")],
        ),
        (
            "var a = 1;\nvar b = 2, c;\n",
            "let a = 1;\nlet b = 2, c;\n",
            "javascript",
            [({"pattern": "var $$$A;"}, "let $$$A;")],
        ),
        (
            "package main\n\nfunc main() {\n\tfoo(1)\n}\n",
            "package main\n\nfunc main() {\n\tbar(1)\n}\n",
            "go",
            # A rename reaches the other name kinds of its namespace (issue 26): a Go type of
            # that name too.
            [
                (
                    {
                        "regex": "^foo$",
                        "any": [
                            {"kind": "identifier"},
                            {"kind": "type_identifier"},
                            {"kind": "package_identifier"},
                        ],
                    },
                    "bar",
                )
            ],
        ),
    ],
)
def test_learns_the_intended_rule(before: str, after: str, lang: str, rules: list) -> None:
    assert learn(before, after, lang) == rules


def test_two_examples_generalise_what_differs() -> None:
    result = synthesize(
        [
            Example("a = obj.fetch(1)\n", "a = obj.fetch_page(1)\n", language="python"),
            Example("b = other.fetch()\n", "b = other.fetch_page()\n", language="python"),
        ]
    )
    assert result.examples_reproduced == 2
    assert result.apply("c = x.y.fetch(2, 3)\n")[0] == "c = x.y.fetch_page(2, 3)\n"


def test_several_changes_give_a_rule_set_and_say_so() -> None:
    result = synthesize(
        [Example("x = f(1)\ny = g(2)\n", "x = f2(1)\ny = h(g(2))\n", language="python")]
    )
    assert len(result.rules) == 2
    assert any("rule set" in n for n in result.notes)
    assert result.apply("a = f(0)\nb = g(0)\n")[0] == "a = f2(0)\nb = h(g(0))\n"


def test_a_rule_that_would_over_match_is_never_chosen() -> None:
    # Renaming every `load` identifier would also rename the free function: refused.
    result = synthesize(
        [Example("a = s.load(k)\nb = load(p)\n", "a = s.read(k)\nb = load(p)\n", language="python")]
    )
    assert result.apply("load(1)\nx.load(2)\n")[0] == "load(1)\nx.read(2)\n"


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        (
            "# one\nx = 1\n",
            "# two\nx = 1\n",
            "example 1 changes a comment; comments are not rewritable",
        ),
        ("x = 1\n", "x  =  1\n", "example 1 differs only in whitespace"),
        ("x = 1\n", "x = 1\n", "example 1: before and after are identical"),
        ("x = f(1)\n", "x = f(1\n", "example 1: the after side does not parse as python"),
    ],
)
def test_no_rule_says_which_example_and_why(before: str, after: str, message: str) -> None:
    with pytest.raises(SynthesisError) as info:
        synthesize(
            [
                Example("y = 2\n", "y = 3\n", language="python"),
                Example(before, after, language="python"),
            ][1:]
        )
    assert message in info.value.reason
    assert info.value.example == 1


def test_conflicting_examples_fail() -> None:
    with pytest.raises(SynthesisError) as info:
        synthesize(
            [
                Example("x = f(1)\n", "x = g(1)\n", language="python"),
                Example("x = f(1)\n", "x = h(1)\n", language="python"),
            ]
        )
    assert "example" in info.value.reason


def test_language_comes_from_the_path_and_must_be_one() -> None:
    assert (
        synthesize([{"before": "f(1);\n", "after": "g(1);\n", "path": "a.ts"}]).language
        == "typescript"
    )
    with pytest.raises(SynthesisError, match="mix languages"):
        synthesize(
            [
                {"before": "f(1)\n", "after": "g(1)\n", "path": "a.py"},
                {"before": "f(1);\n", "after": "g(1);\n", "path": "a.js"},
            ]
        )


def test_the_ast_grep_cli_accepts_the_rule_file_and_agrees(tmp_path: Path) -> None:
    result = synthesize(
        [
            Example(
                "x = f(1)\ny = g(2)\nz = a == None\n",
                "x = f2(1)\ny = h(g(2))\nz = a is None\n",
                language="python",
            )
        ]
    )
    rule_file = tmp_path / "rule.yml"
    rule_file.write_text(result.to_yaml())
    src = tmp_path / "src"
    src.mkdir()
    code = "p = f(3)\nq = g(4)\nr = b == None\ns = c == 1\n"
    (src / "m.py").write_text(code)
    proc = subprocess.run(
        [find_cli(), "scan", "--rule", str(rule_file), "--update-all", str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (src / "m.py").read_text() == result.apply(code)[0]
    assert (src / "m.py").read_text() == "p = f2(3)\nq = h(g(4))\nr = b is None\ns = c == 1\n"


EXAMPLES = {
    "examples": [
        {
            "path": "a.py",
            "before": "x = fetch(u)\ny = obj.fetch\n",
            "after": "x = fetch_page(u)\ny = obj.fetch_page\n",
        }
    ]
}


def test_cli_prints_the_rule_and_json(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text(yaml.safe_dump(EXAMPLES))
    r = CliRunner().invoke(cli, ["synth", str(ex)])
    assert r.exit_code == 0, r.output
    assert yaml.safe_load(r.output)["fix"] == "fetch_page"
    r = CliRunner().invoke(cli, ["synth", str(ex), "--json"])
    data = json.loads(r.output)
    assert set(data) == {"rules", "examples_reproduced", "ambiguous", "notes"}
    assert data["examples_reproduced"] == 1


def test_cli_apply_is_a_dry_run_unless_write(tmp_path: Path) -> None:
    ex = tmp_path / "ex.json"
    ex.write_text(json.dumps(EXAMPLES))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text("from m import fetch\nprint(fetch(1))\n")
    (tree / "n.py").write_text("print(1)\n")
    r = CliRunner().invoke(cli, ["synth", str(ex), "--apply", str(tree), "--json"])
    report = json.loads(r.output)["apply"]
    assert report["files"] == [{"path": "m.py", "sites": 2}] and not report["written"]
    assert "+print(fetch_page(1))" in report["diff"]
    assert "fetch(1)" in (tree / "m.py").read_text()
    r = CliRunner().invoke(cli, ["synth", str(ex), "--apply", str(tree), "--write"])
    assert r.exit_code == 0
    assert (tree / "m.py").read_text() == "from m import fetch_page\nprint(fetch_page(1))\n"


def test_cli_exits_3_with_one_line_when_no_rule(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text(yaml.safe_dump([{"path": "a.py", "before": "# x\n", "after": "# y\n"}]))
    r = CliRunner().invoke(cli, ["synth", str(ex)])
    assert r.exit_code == 3
    assert r.output.strip().splitlines() == [
        "oopav synth: no rule: example 1 changes a comment; comments are not rewritable"
    ]


def test_cli_from_git_reports_learnable_hunks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@x.invalid", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    (repo / "a.py").write_text("from b import fetch\n\n\nx = fetch(1)\n\n\n# note\n")
    (repo / "b.py").write_text("def fetch(u):\n    return u\n")
    git("add", "-A")
    git("commit", "-qm", "one")
    (repo / "a.py").write_text(
        "from b import fetch_page\n\n\nx = fetch_page(1)\n\n\n# other note\n"
    )
    (repo / "b.py").write_text("def fetch_page(u):\n    return u\n")
    git("commit", "-qam", "rename")
    r = CliRunner().invoke(
        cli, ["synth", "--from-git", str(repo), "HEAD", "--by", "hunk", "--json"]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    by = {(h["path"], h["start"]): h for h in data["hunks"]}
    assert by[("b.py", 1)]["learnable"]
    assert by[("a.py", 1)]["learnable"]
    assert not by[("a.py", 7)]["learnable"] and "comment" in by[("a.py", 7)]["reason"]
    assert data["total"] == len(data["hunks"]) and data["learnable"] == data["total"] - 1


def test_ast_grep_cli_is_there() -> None:
    assert shutil.which(find_cli())


def test_ambiguity_is_reported_with_the_wider_rule() -> None:
    result = synthesize([Example("x = a == None\n", "x = a is None\n", language="python")])
    assert [(r.rule, r.fix) for r in result.rules] == [({"pattern": "$A == None"}, "$A is None")]
    assert result.ambiguous
    assert "'$A == $B' -> '$A is $B'" in result.notes[0]
    # An example that must stay unchanged settles it: no ambiguity left.
    settled = synthesize(
        [Example("x = a == None\ny = b == 1\n", "x = a is None\ny = b == 1\n", language="python")]
    )
    assert not settled.ambiguous and settled.notes == []
    # A rename is the most general rule there is.
    assert not synthesize([Example("f(1)\n", "g(1)\n", language="python")]).ambiguous


def test_a_language_is_guessed_when_none_is_named_and_said() -> None:
    py = synthesize([{"before": "if x == None:\n    pass\n", "after": "if x is None:\n    pass\n"}])
    assert py.language == "python" and "they parse as python" in py.notes[-1]
    ts = synthesize([{"before": "let a: number = f(1);\n", "after": "let a: number = g(1);\n"}])
    assert ts.language == "typescript"
    with pytest.raises(SynthesisError, match="do not parse as any of"):
        synthesize([{"before": "x = = 1\n", "after": "y = = 1\n"}])


def test_actions_are_valid_actor_actions() -> None:
    import msgspec

    from oopav.events.actions import decode_action
    from oopav.sandbox.astgrep import rule_from_action

    result = synthesize(
        [Example("x = f(1)\ny = g(2)\n", "x = f2(1)\ny = h(g(2))\n", language="python")]
    )
    actions = [decode_action(msgspec.json.encode(a)) for a in result.actions()]
    assert [a.type for a in actions] == ["ast_grep", "ast_grep"]
    assert [rule_from_action(a).fix for a in actions] == [r.fix for r in result.rules]
