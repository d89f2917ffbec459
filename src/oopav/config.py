"""Settings shared by every command and handler, from flags and ``OOPAV_*`` variables."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from pydantic import BaseModel, Field


def default_data_dir() -> Path:
    env = os.environ.get("OOPAV_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("oopav", appauthor=False))


class Settings(BaseModel):
    """Where oopav keeps its state and which server and model it talks to."""

    data_dir: Path = Field(default_factory=default_data_dir)
    nats_url: str | None = Field(default_factory=lambda: os.environ.get("OOPAV_NATS_URL") or None)
    model: str | None = Field(default_factory=lambda: os.environ.get("OOPAV_MODEL") or None)
    # The embedded server's JetStream fsync: "always" (an acknowledged event survives power
    # loss), or a duration such as "2m" (nats-server's default: faster, may lose the last
    # interval's writes on power loss). See docs/operations.md.
    nats_sync: str = Field(default_factory=lambda: os.environ.get("OOPAV_NATS_SYNC") or "always")

    @property
    def nats_store_dir(self) -> Path:
        return self.data_dir / "nats"

    @property
    def snapshots_dir(self) -> Path:
        return self.data_dir / "snapshots"

    @property
    def workspaces_dir(self) -> Path:
        return self.data_dir / "workspaces"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    def workspace_for(self, session_id: str) -> Path:
        return self.workspaces_dir / session_id

    def artifacts_for(self, session_id: str) -> Path:
        return self.artifacts_dir / session_id


def yaml_error(exc: Exception) -> str:
    """A YAML parse error on one line (PyYAML's own text spans several, with carets), so that
    a malformed config file gives a one-line error."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if not problem:
        return " ".join(str(exc).split())
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    context = getattr(exc, "context", None)
    return f"{problem}{where}" + (f" ({context})" if context else "")
