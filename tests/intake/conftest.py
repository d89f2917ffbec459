"""Fixtures for the intake tests: a repository to submit, an intake that checks it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from helpers.handlers import running
from oopav.handlers.intake import Intake


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    d = tmp_path / "repo"
    d.mkdir()
    (d / "main.py").write_text("def fetch():\n    return 1\n")
    return d


@pytest.fixture
async def intake(nc: Any) -> AsyncIterator[Intake]:
    async with running(Intake(nc, check_repo=True)) as handler:
        yield handler
