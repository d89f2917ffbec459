"""Fixtures for the CLI tests: a repository to submit, an intake serving the test server's
submissions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from helpers.handlers import running
from oopav.handlers.intake import Intake


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An (empty) repository directory to submit."""
    d = tmp_path / "repo"
    d.mkdir()
    return d


@pytest.fixture
async def intake(nc: Any) -> AsyncIterator[Intake]:
    async with running(Intake(nc)) as handler:
        yield handler
