"""Fixtures for the CLI tests: an intake serving the test server's submissions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from helpers.handlers import running
from oopav.handlers.intake import Intake


@pytest.fixture
async def intake(nc: Any) -> AsyncIterator[Intake]:
    async with running(Intake(nc)) as handler:
        yield handler
