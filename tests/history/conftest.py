"""Fixtures for the history tests (issue 27): the loop harness of tests/loop, a fresh example
repository per test, and the CLI as a user runs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loop"))

from loop_harness import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "gitrepo", pytest_suite=False, git_repo=True)
