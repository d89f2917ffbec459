"""The project's environment (issue 16 §1) and the baseline comparisons of the gates (§2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oopav.config import Settings
from oopav.decide.gates import compare_tests, introduced, ruff_findings
from oopav.events.catalog import ExecRecord, TestReport
from oopav.handlers.ports import BwrapSandbox
from oopav.sandbox.environment import (
    EnvironmentError_,
    host_interpreter,
    import_roots,
    normalize_spec,
    parse_junit,
    resolve,
    top_level_package,
    with_environment,
)


def make_venv(path: Path) -> Path:
    subprocess.run(
        [str(host_interpreter()), "-m", "venv", "--without-pip", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (3, "environment must be a path, 'uv' or an object, got int"),
        ({"pyhton": "/x"}, "unknown environment key(s) pyhton"),
        ({"build": "conda"}, "environment.build must be 'uv', got 'conda'"),
        ({"python": "rel/venv"}, "environment.python must be an absolute path"),
        ({"env": {"A": 1}}, "environment.env must map variable names to strings"),
        ({"pythonpath": "src"}, "environment.pythonpath must be a list of non-empty strings"),
        ({"python": "/x", "build": "uv"}, "either python or build, not both"),
    ],
)
def test_bad_specs_get_specific_errors(raw: object, message: str) -> None:
    with pytest.raises(EnvironmentError_) as exc:
        normalize_spec(raw)
    assert message in str(exc.value)


def test_resolution_order(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    cache = tmp_path / "envs"
    # Nothing declared or found: the host's base interpreter, oopav's own prefix hidden.
    host = resolve({}, repo, cache_root=cache)
    assert host.source == "host"
    if sys.prefix != sys.base_prefix:
        assert os.path.realpath(sys.prefix) in host.hidden
        assert not any(os.path.realpath(sys.prefix) == os.path.realpath(p) for p in host.exposed)
    # $VIRTUAL_ENV of the submitting shell, unless it is oopav's own environment.
    other = make_venv(tmp_path / "other")
    assert resolve({"virtual_env": str(other)}, repo, cache_root=cache).source == "virtual_env"
    assert resolve({"virtual_env": sys.prefix}, repo, cache_root=cache).source == "host"
    # The repository's .venv beats $VIRTUAL_ENV.
    make_venv(repo / ".venv")
    found = resolve({"virtual_env": str(other)}, repo, cache_root=cache)
    assert found.source == "repo" and found.prefix == str(repo / ".venv")
    assert found.bin_dirs == (str(repo / ".venv" / "bin"),)
    assert found.env["VIRTUAL_ENV"] == str(repo / ".venv")
    # An explicit interpreter beats everything; extra variables and paths are carried.
    explicit = resolve(
        {"python": str(other / "bin" / "python"), "env": {"A": "1"}, "pythonpath": ["lib"]},
        repo,
        cache_root=cache,
    )
    assert explicit.source == "task" and explicit.env["A"] == "1"
    assert explicit.pythonpath == ("lib",)
    with pytest.raises(EnvironmentError_, match="does not exist"):
        resolve({"python": str(tmp_path / "nope")}, repo, cache_root=cache)


def test_src_layout_and_package_guess(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src" / "my_pkg").mkdir(parents=True)
    (ws / "src" / "my_pkg" / "__init__.py").write_text("")
    (ws / "tests").mkdir()
    (ws / "tests" / "__init__.py").write_text("")
    (ws / "pyproject.toml").write_text('[project]\nname = "my-pkg"\n')
    assert import_roots(ws) == [str(ws / "src"), str(ws)]
    assert top_level_package(ws) == "my_pkg"


async def test_project_commands_never_see_oopavs_own_packages(tmp_path: Path) -> None:
    """msgspec is installed only in oopav's env; the project's env (its own venv under /tmp,
    which the sandbox would otherwise hide) runs the command, with the workspace first."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("VALUE = 'workspace'\n")
    venv = make_venv(repo / ".venv")
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "pkg").mkdir()
    (site / "pkg" / "__init__.py").write_text("VALUE = 'stale installed copy'\n")
    sandbox = BwrapSandbox(Settings(data_dir=tmp_path / "data"))
    code = (
        "import sys, pkg\n"
        "print(sys.executable, pkg.VALUE)\n"
        "try:\n    import msgspec\nexcept ImportError:\n    print('no msgspec')\n"
    )
    rec = await sandbox.run(
        ["python", "-c", code],
        workspace=repo,
        session_id="s",
        key="k",
        purpose="t",
        timeout_s=60,
        environment={"repo": str(repo)},
    )
    assert rec.exit_code == 0, rec.stderr_tail
    assert f"{venv}/bin/python workspace" in rec.stdout_tail
    assert "no msgspec" in rec.stdout_tail


async def test_an_unusable_environment_is_a_clear_record(tmp_path: Path) -> None:
    sandbox = BwrapSandbox(Settings(data_dir=tmp_path / "data"))
    rec = await sandbox.run(
        ["python", "-V"],
        workspace=tmp_path,
        session_id="s",
        key="k",
        purpose="t",
        timeout_s=10,
        environment={"python": str(tmp_path / "missing-venv")},
    )
    assert rec.exit_code == 125
    assert "cannot use the project environment" in rec.stderr_tail
    assert "missing-venv does not exist" in rec.stderr_tail


def test_junit_report(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_ok"/>'
        '<testcase classname="tests.test_a" name="test_bad"><failure message="x"/></testcase>'
        '<testcase classname="tests.test_a" name="test_skip"><skipped/></testcase>'
        '<testcase classname="" name="tests.test_b"><error message="collection failure"/>'
        "</testcase></testsuite></testsuites>"
    )
    report = parse_junit(xml)
    assert report == TestReport(
        total=4,
        passed=1,
        skipped=1,
        failed=["tests.test_a::test_bad"],
        errors=["tests.test_b"],
        skipped_ids=["tests.test_a::test_skip"],  # named: skipped before and after is reported
    )
    assert parse_junit(tmp_path / "absent.xml") is None


def _rec(exit_code: int, report: TestReport | None) -> ExecRecord:
    return ExecRecord(key="k", purpose="p", argv=["pytest"], exit_code=exit_code, report=report)


def test_tests_gate_compares_with_the_baseline() -> None:
    base = _rec(1, TestReport(total=3, passed=2, failed=["t::old"]))
    same = _rec(1, TestReport(total=3, passed=2, failed=["t::old"]))
    ok, evidence = compare_tests(same, base)
    assert ok and "pre-existing failures (not caused by the change, not blamed): 1" in evidence
    broke = _rec(1, TestReport(total=3, passed=1, failed=["t::old", "t::new"]))
    ok, evidence = compare_tests(broke, base)
    assert not ok and "- newly failing: t::new" in evidence and "t::old" not in evidence
    errs = _rec(2, TestReport(total=1, errors=["tests.test_b"]))
    ok, evidence = compare_tests(errs, base)
    assert not ok and "- new error: tests.test_b" in evidence
    fixed = _rec(0, TestReport(total=3, passed=3))
    ok, evidence = compare_tests(fixed, base)
    assert ok and "fixed by the change: 1" in evidence
    # Without per-test results: by exit code, and a failing baseline clears nothing.
    ok, evidence = compare_tests(_rec(1, None), _rec(1, None))
    assert not ok and "it exited 1 at baseline too" in evidence
    assert compare_tests(_rec(0, None), _rec(1, None))[0]


def test_lint_compares_findings_by_line_text_not_number() -> None:
    before_src = "import os\n\nx = 1\n"
    after_src = "import os\nimport sys\n\n\nx = 1\n"
    before = ruff_findings("a.py:1:8: F401 [*] `os` imported but unused", {"a.py": before_src})
    after = ruff_findings(
        "a.py:1:8: F401 [*] `os` imported but unused\n"
        "a.py:2:8: F401 [*] `sys` imported but unused\nFound 2 errors.",
        {"a.py": after_src},
    )
    new = introduced(after, before)
    assert [(p, c, m) for p, c, m, _, _ in new] == [("a.py", "F401", "`sys` imported but unused")]


def test_cli_folds_env_options_into_the_submission(tmp_path: Path) -> None:
    body = with_environment({"instruction": "x"}, "uv", ("A=1",), virtual_env="")
    assert body["environment"] == {"build": "uv", "env": {"A": "1"}}
    body = with_environment({"environment": "venv"}, None, (), base=tmp_path, virtual_env="")
    assert body["environment"] == {"python": str(tmp_path / "venv")}
    body = with_environment({}, None, (), virtual_env="/opt/ve")
    assert body["environment"] == {"virtual_env": "/opt/ve"}
    with pytest.raises(EnvironmentError_, match="--env-var takes NAME=VALUE"):
        with_environment({}, None, ("nope",), virtual_env="")


def test_the_intake_rejects_bad_environments_with_the_field(tmp_path: Path) -> None:
    import json

    from oopav.handlers.support.submission import Accepted, Rejected, parse_submission

    def submit(env: object) -> Accepted | Rejected:
        body = {"instruction": "x", "repo": str(tmp_path), "environment": env}
        return parse_submission(json.dumps(body).encode())

    rel = submit("venv")
    assert isinstance(rel, Rejected) and rel.field == "environment"
    assert "environment.python must be an absolute path, got 'venv'" in rel.error
    missing = submit({"python": str(tmp_path / "nope")})
    assert isinstance(missing, Rejected) and missing.code == "not_found"
    typo = submit({"bulid": "uv"})
    assert isinstance(typo, Rejected) and "unknown environment key(s) bulid" in typo.error
    ok = submit({"build": "uv", "packages": ["pytest"], "env": {"A": "1"}})
    assert isinstance(ok, Accepted)
    assert ok.environment == {"build": "uv", "packages": ["pytest"], "env": {"A": "1"}}


async def test_an_interpreter_without_a_python_name_still_runs_python(tmp_path: Path) -> None:
    """A Debian system interpreter: its bin has `python3` only. The task's `python -m pytest`
    and the baseline probe's `python` must run that interpreter (a shim bound first on PATH),
    not fail with `execvp python` nor run another `python` found later on PATH."""
    bindir = tmp_path / "interp" / "bin"
    bindir.mkdir(parents=True)
    link = bindir / "python3"
    link.symlink_to(os.path.realpath(host_interpreter()))
    assert not (bindir / "python").exists()
    sandbox = BwrapSandbox(Settings(data_dir=tmp_path / "data"))
    rec = await sandbox.run(
        ["python", "-c", "import sys; print('exe', sys.executable)"],
        workspace=tmp_path,
        session_id="s",
        key="k",
        purpose="t",
        timeout_s=60,
        environment={"python": str(link)},
    )
    assert rec.exit_code == 0, rec.stderr_tail
    assert f"exe {link}" in rec.stdout_tail
