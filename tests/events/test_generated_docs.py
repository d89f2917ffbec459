"""Generated artefacts in the repo must match the code that generates them."""

from __future__ import annotations

import json
from pathlib import Path

from oopav.bus.streams import stream_definitions
from oopav.events.docs import render

ROOT = Path(__file__).resolve().parents[2]


def test_events_md_is_current() -> None:
    committed = (ROOT / "docs" / "events.md").read_text()
    assert committed == render(), "docs/events.md is stale: run `oopav events docs`"


def test_events_md_names_every_type() -> None:
    from oopav.events.catalog import SESSION_EVENTS

    text = render()
    for cls in SESSION_EVENTS:
        assert f"## `{cls.type_name()}`" in text


def test_ops_stream_definitions_are_current() -> None:
    defs = stream_definitions()
    files = sorted((ROOT / "ops" / "nats").glob("*.json"))
    assert {f.stem for f in files} == set(defs), "run `oopav streams export`"
    for f in files:
        assert json.loads(f.read_text()) == defs[f.stem], (
            f"{f.relative_to(ROOT)} is stale: run `oopav streams export`"
        )
