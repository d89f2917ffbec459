"""oopav's per-test report plugin (issue 28): a direct pytest writes a small JSON report in
place of junit XML, and it means exactly what the junit report meant (the same TestReport:
ids, counts, verdicts), so baselines and replays recorded from either compare. A pytest
that something else starts (a tox-like runner that drops the import path) still reports,
through junit XML."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from oopav.config import Settings
from oopav.handlers.ports import BwrapSandbox
from oopav.sandbox.environment import (
    JUNIT_FILE,
    PLUGINS_HOST,
    REPORT_FILE,
    direct_pytest,
    parse_junit,
    parse_plugin_report,
    read_report,
)

MIX = """
import pytest

@pytest.fixture
def bad_setup():
    raise RuntimeError("setup")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown")

def test_pass():
    pass

def test_fail():
    assert False

def test_setup_error(bad_setup):
    pass

def test_pass_then_teardown_error(bad_teardown):
    pass

def test_fail_then_teardown_error(bad_teardown):
    assert False

def test_skip():
    pytest.skip("not here")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass

@pytest.mark.parametrize("v", ["a::b", "c\\x07d", "e[f]", "ok"])
def test_param(v):
    assert v == "ok"

class TestKind:
    def test_m(self):
        pass

    def test_n(self):
        assert 0
"""


def _suite(root: Path, *, broken_module: bool) -> Path:
    (root / "tests" / "sub").mkdir(parents=True)
    (root / "tests" / "test_mix.py").write_text(MIX)
    (root / "tests" / "sub" / "test_deep.py").write_text("def test_deep():\n    assert 1\n")
    (root / "tests" / "test_skipmod.py").write_text(
        "import pytest\npytest.skip('whole module', allow_module_level=True)\n"
    )
    if broken_module:
        (root / "tests" / "test_broken.py").write_text("import no_such_module_oopav\n")
    return root


def _pytest(root: Path, extra: list[str], env_extra: dict[str, str]) -> int:
    env = {**os.environ, "PYTHONPATH": str(PLUGINS_HOST), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    env.update(env_extra)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", *extra]
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode


@pytest.mark.parametrize(
    ("broken_module", "extra"),
    [
        (False, []),
        (True, ["--continue-on-collection-errors"]),  # a collection error beside run tests
        (True, []),  # a collection error interrupts the session: only collection is reported
    ],
)
def test_the_plugin_reports_what_junit_reports(
    tmp_path: Path, broken_module: bool, extra: list[str]
) -> None:
    root = _suite(tmp_path, broken_module=broken_module)
    junit, plugin = tmp_path / "junit.xml", tmp_path / "out" / "report.json"
    plugin.parent.mkdir()
    rc_junit = _pytest(root, [*extra, f"--junitxml={junit}"], {})
    rc_plugin = _pytest(root, [*extra, "-p", "oopav_report"], {"OOPAV_REPORT": str(plugin)})
    assert rc_junit == rc_plugin != 0
    from_junit, from_plugin = parse_junit(junit), parse_plugin_report(plugin)
    assert from_junit is not None and from_plugin is not None
    assert from_plugin.time_s > 0
    # Everything but the session's own time (two runs never take the same time).
    assert msgspec.structs.replace(from_plugin, time_s=0) == msgspec.structs.replace(
        from_junit, time_s=0
    )
    if broken_module and not extra:
        assert from_plugin.errors == ["tests.test_broken"]
        assert from_plugin.skipped_ids == ["tests.test_skipmod"] and from_plugin.total == 2
        return
    assert from_plugin.failed == [
        "tests.test_mix.TestKind::test_n",
        "tests.test_mix::test_fail",
        "tests.test_mix::test_fail_then_teardown_error",
        "tests.test_mix::test_param[a::b]",
        "tests.test_mix::test_param[c\\x07d]",
        "tests.test_mix::test_param[e[f]]",
        "tests.test_mix::test_xpass_strict",
    ]
    # A failed call with a teardown error is two test cases, as in junit; a passing call with
    # a teardown error one.
    assert from_plugin.errors == sorted(
        [
            "tests.test_mix::test_fail_then_teardown_error",
            "tests.test_mix::test_pass_then_teardown_error",
            "tests.test_mix::test_setup_error",
            *(["tests.test_broken"] if broken_module else []),
        ]
    )
    assert from_plugin.skipped_ids == [
        "tests.test_mix::test_skip",
        "tests.test_mix::test_xfail",
        "tests.test_skipmod",
    ]
    assert from_plugin.passed == 4  # test_pass, test_param[ok], TestKind::test_m, sub's test


def test_a_report_that_is_not_the_plugins_is_none(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    for text in ("", "[]", '{"v": 2}', '{"v": 1, "total": 1}', '{"v":1,"failed":[1]}'):
        bad.write_text(text)
        assert parse_plugin_report(bad) is None, text
    assert parse_plugin_report(tmp_path / "absent.json") is None
    assert read_report(tmp_path) is None


def test_which_commands_are_pytest_itself() -> None:
    for argv in (
        ["python", "-m", "pytest", "-q"],
        ["/venv/bin/python3.11", "-m", "pytest"],
        ["pytest", "tests"],
        ["/x/bin/py.test"],
    ):
        assert direct_pytest(argv), argv
    for argv in (
        [],
        ["tox", "-e", "py"],
        ["make", "test"],
        ["sh", "-c", "python -m pytest"],
        ["python", "-I", "-m", "pytest"],  # isolated: no PYTHONPATH, the plugin could not load
        ["python", "-m", "unittest"],
        ["pythonista", "-m", "pytest"],
    ):
        assert not direct_pytest(argv), argv


SMALL = "def test_ok():\n    pass\n\ndef test_bad():\n    assert False\n"


async def test_a_direct_pytest_reports_through_the_plugin_a_nested_one_through_junit(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text(SMALL)
    settings = Settings(data_dir=tmp_path / "data")
    sandbox = BwrapSandbox(settings)
    env = {"python": sys.executable, "repo": str(repo)}
    # tox-like: a runner that starts pytest without the import path it was given.
    nested = "env -u PYTHONPATH python -m pytest -q -p no:cacheprovider tests"
    reports = {}
    for key, argv in (
        ("direct", ["python", "-m", "pytest", "-q", "tests"]),
        ("nested", ["sh", "-c", nested]),
    ):
        rec = await sandbox.run(
            argv,
            workspace=repo,
            session_id="s",
            key=key,
            purpose="tests",
            timeout_s=120,
            environment=env,
            report=True,
        )
        assert rec.exit_code == 1, rec.stdout_tail + rec.stderr_tail
        assert rec.report is not None, rec.stdout_tail + rec.stderr_tail
        out = settings.artifacts_for("s") / "reports" / key
        reports[key] = rec.report
        assert {p.name for p in out.iterdir()} == {REPORT_FILE if key == "direct" else JUNIT_FILE}
    for report in reports.values():
        assert report.failed == ["tests.test_a::test_bad"]
        assert (report.total, report.passed, report.errors) == (2, 1, [])
