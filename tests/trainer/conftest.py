"""Fixtures for the trainer tests: a recipe's settings on the module's tiny policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tiny_policy import Recipe, recipe_config


@pytest.fixture
def recipe(tmp_path: Path, tasks_dir: Path, base_model: Path) -> Recipe:
    """``recipe_config`` for this test: the output under ``tmp_path / out``, the module's tiny
    policy and tasks (its ``policy_fixtures``), then ``settings``."""

    def make(out: str, **settings: Any) -> dict[str, Any]:
        return recipe_config(tmp_path / out, base_model, tasks_dir, **settings)

    return make
