"""Fixtures for the loop tests: a fresh example repository per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_harness import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "example", pytest_suite=True)
