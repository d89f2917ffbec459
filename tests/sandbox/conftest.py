from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from oopav.config import Settings
from oopav.sandbox.runner import SandboxConfig, default_config


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OOPAV_DATA_DIR", str(tmp_path / "data"))
    return Settings()


@pytest.fixture
def workspace(settings: Settings) -> Path:
    ws = settings.workspace_for("s1")
    ws.mkdir(parents=True)
    return ws


@pytest.fixture
def artifacts(settings: Settings) -> Path:
    return settings.artifacts_for("s1")


@pytest.fixture
def config(settings: Settings) -> SandboxConfig:
    return default_config(settings)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside /tmp (which the sandbox replaces anyway), so that hiding it is
    down to the configuration under test."""
    d = Path(tempfile.mkdtemp(prefix="oopav-test-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)
