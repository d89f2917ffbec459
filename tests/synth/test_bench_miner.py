"""The miner and scorer of `bench/synth_real.py` (issue 26): a case's expected file is the
parent with only its edit applied, on small self-written commits in a real git repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import synth_real
from synth_real import Case, FileCase, Git, mine_commit, score


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "PATH": "/usr/bin:/bin",
    }
    for args in (["add", "-A"], ["commit", "-qm", message]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, timeout=30)
    out = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def mined(tmp_path: Path, before: dict[str, str], after: dict[str, str]) -> Case | None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=30)
    commit(repo, before, "parent")
    sha = commit(repo, after, "edit")
    git = Git(repo / ".git")
    try:
        return mine_commit(git, "t/repo", sha, sorted(after))
    finally:
        git.close()


def expected(case: Case) -> dict[str, str]:
    return {f.path: f.after for f in case.files}


WARN = 'import warnings\n\nwarnings.warn(\n    "{}",\n)\n'


def test_a_whole_inserted_line_keeps_its_line(tmp_path: Path) -> None:
    """`stacklevel=2,` added as a line of its own: v5 folded it into the next line and put
    `stacklevel=2,)` at column 0."""
    before = {f"m{i}.py": WARN.format(i) for i in range(3)}
    after = {p: t.replace(",\n)", ",\n    stacklevel=2,\n)") for p, t in before.items()}
    case = mined(tmp_path, before, after)
    assert case is not None
    assert expected(case) == after


def test_one_change_repeated_on_a_line_is_that_change_twice(tmp_path: Path) -> None:
    """`f(a: Old): Old` -> `f(a: New): New`: two renames three tokens apart, not one
    four-token rewrite keyed apart from the line's single renames."""
    before = {
        "a.py": "def f(a: Old) -> Old:\n    pass\n",
        "b.py": "x: Old = 1\n",
        "c.py": "y: Old = 2\n",
    }
    after = {p: t.replace("Old", "New") for p, t in before.items()}
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "Old -> New"
    assert sum(f.sites for f in case.files) == 4
    assert expected(case) == after


def test_a_wrap_is_one_change_not_its_opening_half(tmp_path: Path) -> None:
    """`check(x, a.b.c)` -> `check(x, {m: a.b.c})`: the opening `{m:` alone (a bracket it does
    not close) is a fragment; it is taken with its closing `}` or not at all."""
    before = {f"t{i}.py": f"check(x{i}, a.b.c)\npass\ncheck(y{i}, a.b.c)\n" for i in range(2)}
    after = {p: t.replace("a.b.c)", "{m: a.b.c})") for p, t in before.items()}
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "a . b . c -> { m : a . b . c }"
    assert expected(case) == after


def test_a_rename_whose_import_was_also_resorted_is_repaired(tmp_path: Path) -> None:
    """The commit renamed `_Result` and moved its import line (isort): the expected file has
    the import renamed in place, not kept as `_Result` (pluggy's case)."""
    head = "from .r import _Result\nfrom .r import Hook\n\n"
    before = {
        "a.py": head + "x: _Result = _Result()\nz = 1\nw: _Result = 2\n",
        "b.py": head + "y: _Result = 1\n",
    }
    after = {
        p: t.replace(head, "from .r import Hook\nfrom .r import Result\n\n").replace(
            "_Result", "Result"
        )
        for p, t in before.items()
    }
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "_Result -> Result"
    for f in case.files:
        assert f.after == f.before.replace("_Result", "Result")
    assert synth_real.STATS["repaired: this edit's tokens also re-sorted by the commit"] >= 1


def test_a_file_where_another_change_took_the_edits_tokens_is_left_out(tmp_path: Path) -> None:
    """`Raw` renamed to `Plain` at most sites but to `Internal` in c.py's import (axios'
    `RawAxiosRequestConfig`): c.py has no "only this edit", so it is left out."""
    before = {
        "a.ts": "let a: Raw = 1;\nlet z = 0;\nlet b: Raw = 2;\n",
        "b.ts": "let c: Raw = 3;\n",
        "c.ts": "import {Raw} from './t';\nlet d: Raw = 4;\n",
    }
    after = {
        "a.ts": "let a: Plain = 1;\nlet z = 0;\nlet b: Plain = 2;\n",
        "b.ts": "let c: Plain = 3;\n",
        "c.ts": "import {Internal} from './t';\nlet d: Plain = 4;\n",
    }
    case = mined(tmp_path, before, after)
    assert case is not None
    assert [f.path for f in case.files] == ["a.ts", "b.ts"]
    assert expected(case) == {"a.ts": after["a.ts"], "b.ts": after["b.ts"]}


def fc(path: str, before: str, after: str, sites: int = 1) -> FileCase:
    return FileCase(path, before, after, sites)


@pytest.mark.parametrize(
    ("example_before", "example_after", "held_before", "held_after", "cls"),
    [
        # The commit kept a call `fetch(…)` like the example's: nothing tells them apart.
        (
            "x = fetch(0)\n",
            "x = get(0)\n",
            "a = fetch(1)\nz = 0\nb = fetch(2)\n",
            "a = get(1)\nz = 0\nb = fetch(2)\n",
            "examples cannot decide",
        ),
        # The bare rename also reached an attribute, a context no example site has.
        (
            "x = fetch(0)\n",
            "x = get(0)\n",
            "a = fetch(1)\nz = 0\nb = self.fetch\n",
            "a = get(1)\nz = 0\nb = self.fetch\n",
            "too general",
        ),
        # The example kept the attribute, so the rule renames calls only; the commit also
        # renamed an attribute elsewhere.
        (
            "x = fetch(0)\ny = self.fetch\n",
            "x = get(0)\ny = self.fetch\n",
            "a = fetch(1)\nz = 0\nb = self.fetch\n",
            "a = get(1)\nz = 0\nb = self.get\n",
            "too narrow",
        ),
    ],
)
def test_a_miss_is_classed_by_what_limits_it(
    example_before: str, example_after: str, held_before: str, held_after: str, cls: str
) -> None:
    ex = fc("e.py", example_before, example_after)
    held = fc("h.py", held_before, held_after)
    s = score(Case("t", "", "0", "python", "", [ex, held]), [ex], [held])
    assert not s.exact
    assert s.miss_class == cls


def test_a_site_differing_only_in_layout_counts_as_the_site() -> None:
    """Precision and recall compare line hunks modulo layout: a rule writing `get(1,2)` where
    the commit wrote `get(1, 2)` reached the right site (the miss is `layout`)."""
    ex = fc("e.py", "x = fetch(0)\n", "x = get(0)\n")
    held = fc("h.py", "a = fetch(1,2)\n", "a = get(1, 2)\n")
    s = score(Case("t", "", "0", "python", "", [ex, held]), [ex], [held])
    assert (s.correct, s.produced, s.expected) == (1, 1, 1)
    assert not s.exact and s.miss_class == "layout"


def test_a_deletion_does_not_cut_a_multi_character_operator() -> None:
    """`T: self::serde` -> `T: serde`: difflib deletes `: self :` (the first `:` of `::`
    and the one after `T`), whose whitespace splice gave `T:serde`; the run moves to
    `self::`."""
    old, new = "    T: self::serde::Serialize + 'static,\n", "    T: serde::Serialize + 'static,\n"
    [unit] = synth_real.hunk_units(old, new, "rust")
    assert unit.olds == ("self", ":", ":")
    assert old[: unit.start] + unit.text + old[unit.end :] == new


def test_a_change_inside_a_docstring_is_not_mined_even_from_its_opening_line(
    tmp_path: Path,
) -> None:
    """A hunk that starts at a module docstring's opening quotes holds no closing ones: the
    docstring is found in the whole file, not in the hunk (jinja's `:copyright:` lines)."""
    doc = '"""\n    Module.\n\n    :copyright: 2017.\n"""\nx = {}\n'
    before = {f"m{i}.py": doc.format(i) for i in range(3)}
    after = {f"m{i}.py": f'"""Module.\n"""\nx = {i}\n' for i in range(3)}
    assert mined(tmp_path, before, after) is None


def test_a_rust_lifetime_is_no_character_literal(tmp_path: Path) -> None:
    """`impl<'v> self::serde::Serialize for Value<'v>` -> without `self::` (log 31b683d49f):
    v7 read `'v> self::serde::Serialize for Value<'` as one character literal, keyed the
    line's change as another (literal) edit and left it out of the expected file, so a rule
    that wrote exactly the commit's line was scored wrong there."""
    before = {
        "a.rs": "fn f<T>()\nwhere\n    T: self::serde::Serialize,\n{\n}\n",
        "b.rs": (
            "fn g<T>()\nwhere\n    T: self::serde::Serialize,\n{\n}\n\n"
            "impl<'v> self::serde::Serialize for Value<'v> {\n}\n"
        ),
    }
    after = {p: t.replace("self::serde", "serde") for p, t in before.items()}
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "self : : -> "
    assert expected(case) == after
    assert synth_real._tokens("impl<'v> X<'v> { 'a' }", "rust") == [
        *("impl", "<", "'v", ">", "X", "<", "'v", ">", "{", "'a'", "}"),
    ]


def test_a_line_the_commit_changed_by_this_edit_alone_is_expected(tmp_path: Path) -> None:
    """`t.Optional[t.BinaryIO]` -> `t.Optional[t.IO[bytes]]` (werkzeug 770ac299b8): the token
    diff aligns the new `]` with the kept one, so that line's change is a bracket fragment,
    not this edit, and v7 left the line out of the expected file although the commit's line
    is exactly the parent line with this edit applied. v8 takes the commit's line."""
    before = {
        "a.py": "x: t.BinaryIO = 1\ny = 2\nz: t.BinaryIO = 3\n",
        "b.py": "s: t.Optional[t.BinaryIO]\nw = 0\nv: t.BinaryIO = 4\n",
    }
    after = {p: t.replace("BinaryIO", "IO[bytes]") for p, t in before.items()}
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "BinaryIO -> IO [ bytes ]"
    assert expected(case) == after
    assert (
        synth_real.STATS["v8: a line the commit changed by this edit alone added (no unit had it)"]
        >= 1
    )


def test_repo_aware_fits_and_counts_what_is_written_outside_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--repo-aware`: synthesis gets the parent's files as its target (the learned member
    rename matches nothing there, so it is fitted), and a site rewritten in a file the commit
    did not touch is counted outside."""
    ex_before = (
        "import errs\n\n\ndef test_a():\n    with raises(errs.OldClosed):\n        a()\n\n\n"
        "def test_b():\n    with raises(errs.OldClosed):\n        b()\n"
    )
    held_before = "from .exc import (\n    OldClosed,\n    Other,\n)\n\n\ndef close(s):\n    raise OldClosed()\n"
    other = "from .exc import OldClosed\n"
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=30)
    files = {"tests/test_x.py": ex_before, "pkg/models.py": held_before, "pkg/other.py": other}
    commit(repo, files, "parent")
    after = {
        p: t.replace("OldClosed", "NewClosed") for p, t in files.items() if p != "pkg/other.py"
    }
    sha = commit(repo, after, "rename")
    ex = fc("tests/test_x.py", ex_before, after["tests/test_x.py"], 2)
    held = fc("pkg/models.py", held_before, after["pkg/models.py"], 2)
    case = Case("t/repo", str(repo / ".git"), sha, "python", "", [ex, held])
    plain = score(case, [ex], [held])
    assert not plain.exact and plain.produced == 0 and not plain.fitted
    monkeypatch.setattr(synth_real, "REPO_AWARE", True)
    aware = score(case, [ex], [held])
    assert aware.fitted and aware.exact
    assert aware.outside == 1  # pkg/other.py: the commit kept its `OldClosed`


def test_a_site_inside_a_change_that_takes_a_docstring_with_code_is_no_negative(
    tmp_path: Path,
) -> None:
    """httpx 994403bec9 removed `@threadpool` from every test and, in one file, deleted the
    `threadpool` helper itself — docstring, body and the first test's decorator in one
    change. v8 skipped any change holding a docstring as prose, so that first `@threadpool`
    stayed in the expected file: an example kept a site of its own edit unchanged (a false
    negative) and synth refused ("no rule ... without changing something else"). v9 keeps
    the larger change, so the clash is seen and the file is left out (another change took
    the edit's tokens there)."""
    helper = 'def threadpool(func):\n    """\n    Run in a thread.\n    """\n    return func\n\n\n'
    tests = "".join(f"@threadpool\ndef test_{n}():\n    pass\n\n\n" for n in "abc")
    before = {"a.py": helper + tests, "b.py": tests, "c.py": tests}
    after = {p: t.replace("@threadpool\n", "") for p, t in before.items()}
    after["a.py"] = after["a.py"].replace(helper, "")
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "@ threadpool -> "
    assert expected(case) == {"b.py": after["b.py"], "c.py": after["c.py"]}


def test_an_import_line_added_above_a_rewritten_import_stays_a_line(tmp_path: Path) -> None:
    """requests 2aab9a9a39 added `from collections import OrderedDict` to three modules; in
    one it went above `from .compat import OrderedDict, Mapping`, which lost `OrderedDict`
    (another change). v8 folded the inserted line into the one below as tokens inserted
    into a rewrapped line — `from collections import OrderedDictfrom .compat import …` —
    which tree-sitter parses without an ERROR node, so the broken example was kept."""
    line = "from collections import OrderedDict\n"
    before = {
        "a.py": "import time\n\nx = 1\n",
        "b.py": "import os\n\ny = 2\n",
        "c.py": "from .compat import OrderedDict, Mapping\n\nz = 3\n",
    }
    after = {
        "a.py": "import time\n" + line + "\nx = 1\n",
        "b.py": "import os\n" + line + "\ny = 2\n",
        "c.py": line + "\nfrom .compat import Mapping\n\nz = 3\n",
    }
    case = mined(tmp_path, before, after)
    assert case is not None
    got = expected(case)
    assert got["c.py"] == line + "\nfrom .compat import OrderedDict, Mapping\n\nz = 3\n"
    for text in got.values():
        compile(text, "x.py", "exec")  # every expected file parses


def test_a_python_line_tree_sitter_recovers_is_still_unparseable() -> None:
    glued = "from collections import OrderedDictfrom .compat import OrderedDict, Mapping\n"
    assert not synth_real._still_parses("x = 1\n", glued, "python")
    assert synth_real._still_parses("x = 1\n", "from a import b\n", "python")


def test_an_import_moved_by_a_sort_is_no_removal(tmp_path: Path) -> None:
    """starlette bcf876c686 ran isort: `import json` moved above `import typing` in every
    module. The diff deletes it in one place and inserts it in another; v8 mined the
    deletion as an edit `import json -> ` whose examples removed the import (and kept a
    blank line), which is not what the commit did."""
    before = {
        f"m{i}.py": f"import asyncio\nimport typing\nimport json\nfrom x import y{i}\n"
        for i in range(3)
    }
    after = {
        p: "import asyncio\nimport json\nimport typing\n\n" + t.split("import json\n")[1]
        for p, t in before.items()
    }
    case = mined(tmp_path, before, after)
    assert case is None or "json" not in case.signature


def test_a_token_run_removed_in_place_is_no_move_when_another_change_adds_it(
    tmp_path: Path,
) -> None:
    """uvicorn c3c2db3f9e: `self.server_state.default_headers` -> `self.default_headers` at
    each use, while a new line `self.default_headers = server_state.default_headers` adds the
    same tokens back: the file holds `server_state .` as often after as before, yet the edit
    is a removal in place, not a move (only whole lines move)."""
    body = (
        "class P:\n    def __init__(self, server_state):\n        self.server_state = server_state\n"
        "\n    def f(self):\n        return self.server_state.default_headers\n"
    )
    before = {f"m{i}.py": body for i in range(3)}
    after = {
        p: t.replace("self.server_state.default_headers", "self.default_headers")
        for p, t in before.items()
    }
    after["m0.py"] = after["m0.py"].replace(
        "        self.server_state = server_state\n",
        "        self.server_state = server_state\n"
        "        self.default_headers = server_state.default_headers\n",
    )
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == "server_state . -> "
    assert "m0.py" in expected(case)  # v9 before this fix took it for a move there


def test_lines_added_inside_a_multi_line_string_are_no_move(tmp_path: Path) -> None:
    """zod a7cb6ed52e added `"exact": true,` to inline snapshots (template literals): the
    hunk's lines are tokens, the whole file's text holds them inside one string token, so
    "as often after as before" (0 = 0) is no evidence of a move."""
    snap = 'test("a", () => {\n  expect(f()).toMatchInlineSnapshot(`\n    {\n      "code": "x",\n    }\n  `);\n});\n'
    before = {f"t{i}.test.ts": snap for i in range(3)}
    after = {
        p: t.replace('"code": "x",\n', '"code": "x",\n      "exact": true,\n')
        for p, t in before.items()
    }
    case = mined(tmp_path, before, after)
    assert case is not None
    assert case.signature == " -> <str> : true ,"
