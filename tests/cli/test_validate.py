"""``oopav validate FILE…``: the parse and stub gates (and the compile check) outside a session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from oopav.cli import cli


def _repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "stub.py").write_text("def f(x):\n    raise NotImplementedError\n")
    (tmp_path / "broken.py").write_text("def g(:\n    return 1\n")
    (tmp_path / "ok.py").write_text("def ok():\n    return 1\n")
    return tmp_path


def test_validate_names_each_parse_error_and_stub_and_exits_1(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    res = CliRunner().invoke(cli, ["validate", str(repo / "stub.py"), str(repo / "broken.py")])
    assert res.exit_code == 1, res.output
    assert "broken.py:1: parse error" in res.output
    assert "stub.py:2: stub: raise NotImplementedError in `f`" in res.output
    assert "parse: FAIL · stubs: FAIL · 2 file(s)" in res.output


def test_validate_passes_clean_files_and_reports_json(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    res = CliRunner().invoke(cli, ["validate", str(repo / "ok.py"), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["files"] == ["ok.py"]
    assert report["parse_errors"] == [] and report["stubs"] == []
    assert report["languages"] == {"python": 1}


def test_validate_compile_is_skipped_with_the_reason_when_nothing_is_configured(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    res = CliRunner().invoke(cli, ["validate", str(repo / "ok.py"), "--compile", "--json"])
    assert res.exit_code == 0, res.output
    compile_ = json.loads(res.output)["compile"]
    assert compile_ == {
        "status": "skipped",
        "why": "no compile or type check is configured for the changed files",
    }
