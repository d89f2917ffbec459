"""Stub markers and tree scanning (oopav.decide.stubs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oopav.decide import new_findings, scan_stubs, scan_tree
from oopav.events.catalog import Finding
from oopav.sandbox.files import WorkspaceFiles


def messages(path: str, source: str) -> list[str]:
    return [f.message for f in scan_stubs(path, source.encode())]


# --- Python --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("    pass\n", "empty body (pass) in `f`"),
        ("    ...\n", "empty body (...) in `f`"),
        ('    """Doc."""\n    pass\n', "empty body (pass) in `f`"),
        ('    """Doc."""\n', "empty body (docstring only) in `f`"),
        ("    # nothing yet\n    pass\n", "empty body (pass) in `f`"),
    ],
)
def test_python_empty_bodies_are_stubs(body: str, expected: str) -> None:
    assert messages("m.py", f"def f(x):\n{body}") == [expected]


def test_python_real_body_is_not_a_stub() -> None:
    src = 'def f(x):\n    """Doc."""\n    return x + 1\n\ndef g():\n    pass\n    return 1\n'
    assert messages("m.py", src) == []


def test_python_async_and_nested_functions_carry_qualified_names() -> None:
    src = "class A:\n    async def run(self):\n        def inner():\n            ...\n        return inner\n"
    assert messages("m.py", src) == ["empty body (...) in `A.run.inner`"]


def test_python_raise_not_implemented_bare_and_called() -> None:
    src = (
        "def a():\n    raise NotImplementedError\n\n"
        "def b():\n    raise NotImplementedError('later')\n\n"
        "def c():\n    raise builtins.NotImplementedError()\n\n"
        "def d():\n    return NotImplemented\n"
    )
    found = scan_stubs("m.py", src.encode())
    assert [(f.line, f.message) for f in found] == [
        (2, "raise NotImplementedError in `a`"),
        (5, "raise NotImplementedError in `b`"),
        (8, "raise NotImplementedError in `c`"),
    ]
    assert {f.kind for f in found} == {"stub"}


def test_abstract_overload_and_protocol_methods_are_not_stubs() -> None:
    src = '''
import abc
from abc import ABC, abstractmethod
from typing import Protocol, overload
import typing


class Base(ABC):
    @abstractmethod
    def run(self) -> None:
        """Run."""

    @abc.abstractmethod
    def stop(self) -> None:
        raise NotImplementedError

    @property
    @abstractmethod
    def name(self) -> str: ...

    def concrete(self) -> None:
        pass


class Reader(Protocol):
    def read(self) -> bytes: ...

    def close(self) -> None:
        """Close."""


class Writer(typing.Protocol[T]):
    def write(self, data: T) -> None: ...


@overload
def parse(x: int) -> int: ...
@overload
def parse(x: str) -> str: ...
def parse(x):
    return x
'''
    # Only the concrete method of the ABC is a stub: decorators and Protocol bases exempt the rest.
    assert messages("m.py", src) == ["empty body (pass) in `Base.concrete`"]


def test_pyi_files_have_no_body_stubs_but_keep_todo_comments() -> None:
    src = "def f(x: int) -> int: ...\n# TODO: type g\n"
    assert messages("m.pyi", src) == ["TODO comment: type g"]


def test_todo_markers_only_in_comments_and_upper_case() -> None:
    src = (
        "x = 'TODO in a string'\n"
        "# TODO: handle unicode\n"
        "y = 1  # FIXME\n"
        "# XXX hack\n"
        "# todo lower case is prose\n"
        "# TODOS is another word\n"
    )
    found = scan_stubs("m.py", src.encode())
    assert [(f.line, f.message) for f in found] == [
        (2, "TODO comment: handle unicode"),
        (3, "FIXME comment"),
        (4, "XXX comment: hack"),
    ]


# --- other languages -----------------------------------------------------------------------


def test_rust_todo_and_unimplemented_macros() -> None:
    src = (
        "fn a() -> i32 { todo!() }\n"
        'impl S { fn b(&self) { unimplemented!("x"); } }\n'
        "fn c() { std::todo!(); }\n"
        'fn d() { println!("todo!()"); }\n'
        "// TODO: more\n"
        "/* FIXME later */\n"
    )
    assert messages("lib.rs", src) == [
        "todo!() in `a`",
        "unimplemented!() in `S.b`",
        "todo!() in `c`",
        "TODO comment: more",
        "FIXME comment: later",
    ]


@pytest.mark.parametrize("path", ["a.js", "a.ts", "a.tsx"])
def test_js_ts_not_implemented_throws(path: str) -> None:
    src = (
        'function a() { throw new Error("not implemented"); }\n'
        "function b() { throw Error(`Not Implemented yet`); }\n"
        "class C { m() { throw new TypeError('not_implemented'); } }\n"
        'function d() { throw new Error("bad input"); }\n'
        "// TODO: d\n"
    )
    assert messages(path, src) == [
        "throw not-implemented error in `a`",
        "throw not-implemented error in `b`",
        "throw not-implemented error in `C.m`",
        "TODO comment: d",
    ]


def test_other_code_languages_get_comment_markers_and_data_formats_nothing() -> None:
    assert messages("main.go", "package main\n// TODO: wire up\nfunc main() {}\n") == [
        "TODO comment: wire up"
    ]
    assert messages("pyproject.toml", "# TODO: not code\n[tool]\n") == []
    assert messages("notes.md", "TODO: write\n") == []


# --- trees ---------------------------------------------------------------------------------


def write(root: Path, rel: str, content: bytes | str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)


def test_scan_tree_counts_languages_and_skips_vendored_binary_huge(tmp_path: Path) -> None:
    write(tmp_path, "pkg/a.py", "def f():\n    pass\n")
    write(tmp_path, "pkg/b.py", "def g(:\n")
    write(tmp_path, "web/x.ts", "// TODO: x\n")
    write(tmp_path, "README.md", "# TODO: docs\n")
    write(tmp_path, "data.bin", b"\x00\x01")
    write(tmp_path, "blob.py", b"def f():\n    pass\n\x00")
    write(tmp_path, "big.py", "def f():\n    pass\n" + "# x\n" * 300_000)
    for skipped in (".git/hooks/h.py", "node_modules/m/i.js", ".venv/lib/v.py", "venv/v.py"):
        write(tmp_path, skipped, "def f():\n    pass\n")
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "myenv/lib/s.py", "def f():\n    pass\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "pkg" / "a.py")

    stubs, errors, languages, total = scan_tree(WorkspaceFiles(tmp_path))

    assert [(f.path, f.message) for f in stubs] == [
        ("pkg/a.py", "empty body (pass) in `f`"),
        ("web/x.ts", "TODO comment: x"),
    ]
    assert [f.path for f in errors] and {f.path for f in errors} == {"pkg/b.py"}
    assert all(f.kind == "parse_error" for f in errors)
    assert languages == {"python": 2, "typescript": 1}
    # README, data.bin, blob.py, big.py count as files of the repository but are not parsed.
    assert total == 7


def test_scan_tree_limited_to_given_files(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "def f():\n    pass\n")
    write(tmp_path, "b.py", "def g():\n    pass\n")
    outside = tmp_path.parent / "outside_scan.py"
    outside.write_text("def h():\n    pass\n")
    stubs, errors, languages, total = scan_tree(
        WorkspaceFiles(tmp_path), ["b.py", "deleted.py", "../outside_scan.py"]
    )
    assert [f.path for f in stubs] == ["b.py"]
    assert errors == []
    assert languages == {"python": 1}
    assert total == 1


def f(path: str, line: int, message: str, kind: str = "stub") -> Finding:
    return Finding(path=path, line=line, kind=kind, message=message)


def test_new_findings_ignores_line_shifts_and_counts_duplicates() -> None:
    before = [f("a.py", 3, "TODO comment: x"), f("a.py", 9, "syntax error", "parse_error")]
    after = [
        f("a.py", 5, "TODO comment: x"),  # moved down by two lines: not new
        f("a.py", 7, "TODO comment: x"),  # a second identical marker: new
        f("b.py", 5, "TODO comment: x"),  # same marker in another file: new
        f("a.py", 1, "syntax error", "parse_error"),
    ]
    assert new_findings(before, after) == [after[1], after[2]]
    assert new_findings(after, before) == []


def test_new_findings_from_real_scans_of_an_edit() -> None:
    old = b"# TODO: one\ndef f():\n    return 1\n"
    new = b"import os\n\n# TODO: one\ndef f():\n    pass\n"
    added = new_findings(scan_stubs("a.py", old), scan_stubs("a.py", new))
    assert [(x.line, x.message) for x in added] == [(4, "empty body (pass) in `f`")]
