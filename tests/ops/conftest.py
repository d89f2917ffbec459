"""Fixtures for the deployment tests: a local 3-node JetStream cluster, the loop harness."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loop"))

from loop_harness import make_repo

from oopav.bus.cluster import LocalCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path / "cluster", 3)
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", pytest_suite=False, git_repo=False)
