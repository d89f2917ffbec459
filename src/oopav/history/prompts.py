"""Prompts stored as content-addressed blobs (filled in below)."""

from __future__ import annotations

from typing import Any


def prompt_refs(event: Any) -> list[str]:
    """The blobs a model call's stored prompt names (none yet)."""
    return []
