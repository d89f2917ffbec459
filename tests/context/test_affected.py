"""The import graph that picks the tests exercising a change (issue 28 §2)."""

from __future__ import annotations

from pathlib import Path

from oopav.context.affected import affected_tests


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _repo(tmp_path: Path) -> Path:
    return _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "X = 1\n",
            "pkg/b.py": "from .a import X\n",
            "pkg/c.py": "Y = 2\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/d.py": "from ..c import Y\n",
            "tests/conftest.py": "",
            "tests/test_b.py": "import pkg.b\n",
            "tests/test_c.py": "from pkg import c\n",
            "tests/test_d.py": "from pkg.sub.d import Y\n",
            "tests/test_plain.py": "def test_x():\n    assert True\n",
            "README.md": "hi\n",
        },
    )


def test_a_change_reaches_the_tests_importing_it_transitively(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    found = affected_tests(root, ["pkg/a.py"])
    assert found is not None
    assert found.tests == ["tests/test_b.py"]
    assert "imports pkg.a" in found.why["tests/test_b.py"]
    assert found.total == 4
    # Relative imports two levels up: pkg/sub/d.py imports pkg.c.
    found = affected_tests(root, ["pkg/c.py"])
    assert found is not None and found.tests == ["tests/test_c.py", "tests/test_d.py"]


def test_a_changed_test_file_is_affected_by_itself(tmp_path: Path) -> None:
    found = affected_tests(_repo(tmp_path), ["tests/test_plain.py"])
    assert found is not None and found.tests == ["tests/test_plain.py"]


def test_what_cannot_be_told_runs_everything(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert affected_tests(root, ["README.md"]) is None  # not a Python module
    assert affected_tests(root, ["tests/conftest.py"]) is None  # loaded for every test
    assert affected_tests(root, ["pkg/a.py", "setup.cfg"]) is None
    assert affected_tests(root, []) is None
    (root / "pkg" / "lonely.py").write_text("Z = 3\n")
    assert affected_tests(root, ["pkg/lonely.py"]) is None  # no test reaches it


def test_a_src_layout_names_modules_under_src(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "src/lib/__init__.py": "from lib.core import run\n",
            "src/lib/core.py": "def run():\n    return 1\n",
            "tests/test_lib.py": "import lib\n",
        },
    )
    found = affected_tests(root, ["src/lib/core.py"])
    assert found is not None and found.tests == ["tests/test_lib.py"]
    assert "lib" in found.why["tests/test_lib.py"]


def test_a_package_init_counts_for_its_submodules_only_when_it_changed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "pkg" / "__init__.py").write_text("from . import c\n")
    # pkg/__init__ imports c, but test_b imports pkg.b by name: a change to c does not reach it.
    found = affected_tests(root, ["pkg/c.py"])
    assert found is not None and "tests/test_b.py" not in found.tests
    # A change to the __init__ itself runs for every import of the package's modules.
    found = affected_tests(root, ["pkg/__init__.py"])
    assert found is not None
    assert found.tests == ["tests/test_b.py", "tests/test_c.py", "tests/test_d.py"]


def test_the_affected_run_replaces_the_test_paths_the_command_names(tmp_path: Path) -> None:
    from oopav.handlers.support.affected import without_paths

    root = _repo(tmp_path)
    argv = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", "-k", "tests"]
    assert without_paths(argv, root) == [
        "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "tests",
    ]  # fmt: skip
    assert without_paths(["pytest", "tests/test_b.py::test_x", "--ignore=x"], root) == [
        "pytest",
        "--ignore=x",
    ]


def test_imports_are_read_from_their_lines_without_parsing_the_whole_module() -> None:
    """Multi-line, backslash, indented and commented imports are found; a statement that is
    not an import, and prose that only starts with "from", are not."""
    from oopav.context.affected import _imports

    source = (
        '"""Taken from the spec.\n\nfrom here on, prose.\n"""\n'
        "import os, json as j\n"
        "from .tables import (  # the generated data (see gen.py\n"
        "    A,\n"
        "    B,\n"
        ")\n"
        "from pkg.x import \\\n    y\n"
        "TABLE = (\n" + "    (1, 2),\n" * 5000 + ")\n"
        "def f():\n"
        "    from ..core import z; return z\n"
    )
    found = _imports(source, "pkg.sub.mod", False)
    assert {"os", "json", "pkg.sub.tables", "pkg.sub.tables.A", "pkg.sub.tables.B"} <= found
    assert {"pkg.x", "pkg.x.y", "pkg.core", "pkg.core.z"} <= found
    assert not any(name.startswith(("here", "the")) for name in found)


def test_a_test_importing_a_module_after_a_huge_literal_is_affected(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/data.py": "TABLE = [\n" + "    'x',\n" * 20000 + "]\nfrom pkg.core import f\n",
            "pkg/core.py": "def f():\n    return 1\n",
            "tests/test_data.py": "from pkg import data\n",
            "tests/test_other.py": "def test_x():\n    assert True\n",
        },
    )
    found = affected_tests(root, ["pkg/core.py"])
    assert found is not None
    assert found.tests == ["tests/test_data.py"]
