"""The "mentioned files missing" check understands src layouts (issue 16 §4)."""

from __future__ import annotations

from pathlib import Path

from oopav.handlers.orient import locate


def test_locate_finds_files_in_src_layouts_and_by_name(tmp_path: Path) -> None:
    (tmp_path / "src" / "click").mkdir(parents=True)
    (tmp_path / "src" / "click" / "core.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "api.md").write_text("")
    assert locate(tmp_path, "click/core.py") == tmp_path / "src" / "click" / "core.py"
    assert locate(tmp_path, "src/click/core.py") == tmp_path / "src" / "click" / "core.py"
    assert locate(tmp_path, "click/") == tmp_path / "src" / "click"
    assert locate(tmp_path, "api.md") == tmp_path / "docs" / "api.md"
    assert locate(tmp_path, "click/nope.py") is None
    assert locate(tmp_path, "../outside.py") is None
