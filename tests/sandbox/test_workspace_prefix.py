"""`oopav apply <prefix>`: a workspace is found by a unique prefix of its session id."""

from __future__ import annotations

from pathlib import Path

import pytest

from oopav.config import Settings
from oopav.sandbox.workspace import WorkspaceError, find_workspace, prepare_workspace


def test_workspace_found_by_unique_prefix_and_refused_when_ambiguous(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    settings = Settings(data_dir=tmp_path / "data")
    first = prepare_workspace(repo, "01abcdef-1111", settings)
    prepare_workspace(repo, "01abcdef-2222", settings)
    assert find_workspace("01abcdef-1", settings) == first
    with pytest.raises(WorkspaceError, match="matches 2"):
        find_workspace("01abcdef", settings)
    with pytest.raises(WorkspaceError, match="no workspace"):
        find_workspace("ffff", settings)
