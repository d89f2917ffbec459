"""Recorded sessions as regression tests (issue 27 §6): the committed corpus (tests/corpus,
re-recorded with `python tests/corpus/record.py`) is imported into the test server and
replayed with `oopav replay --all --verify`; a changed rule shows as a named divergence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from history_harness import oopav

CORPUS = sorted((Path(__file__).resolve().parents[1] / "corpus" / "sessions").glob("*.tar.gz"))


async def _import_corpus(nats_url: str, data_dir: Path) -> list[str]:
    sids = []
    for archive in CORPUS:
        rc, out, err = await oopav(nats_url, data_dir, "session", "import", str(archive), "--json")
        assert rc == 0, err
        sids.append(json.loads(out)["session_id"])
    return sids


async def test_the_corpus_replays_with_the_current_code(
    nc: Any, nats_url: str, data_dir: Path
) -> None:
    assert len(CORPUS) >= 3, "the corpus is missing: python tests/corpus/record.py"
    sids = await _import_corpus(nats_url, data_dir)
    rc, out, err = await oopav(nats_url, data_dir, "replay", "--all", "--verify", "--json")
    report = json.loads(out)
    assert rc == 0, json.dumps(report["by_handler"], indent=1) + err
    assert report["ok"] and report["sessions"] == len(CORPUS) and report["diverged"] == 0
    assert sorted(e["session_id"] for e in report["entries"]) == sorted(sids)
    # Every replay started from the stored tree: the repositories they ran on are long gone.
    assert {e["started_from"] for e in report["entries"]} == {"store"}
    rc, out, err = await oopav(nats_url, data_dir, "replay", sids[0], "--verify", "--json")
    sig = json.loads(out)["handlers"]["signatures"]
    assert rc == 0 and sig["ok"] and sig["unsigned"] == 0, sig
    assert {"intake", "observer", "planner", "actor", "verifier"} <= set(sig["signers"])
    # Without --verify: the projections are rebuilt and compared (fast).
    rc, text, err = await oopav(nats_url, data_dir, "replay", "--all")
    assert rc == 0 and "3 session(s) replayed (projections rebuilt): all reproduce" in text
    # --since in the future selects nothing; a bad --since is a usage error.
    rc, out, err = await oopav(
        nats_url, data_dir, "replay", "--all", "--since", "2999-01-01", "--json"
    )
    assert rc == 0 and json.loads(out)["sessions"] == 0
    rc, _, err = await oopav(nats_url, data_dir, "replay", "--all", "--since", "yesterday")
    assert rc == 2 and "give an ISO time" in err


async def test_a_changed_rule_is_named_by_handler_and_rule(
    nc: Any, nats_url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The current code 'changes' orient's complexity rule: every session's replay diverges
    at its orient report, and the report names the handler and the rule."""
    import importlib

    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.corpus import replay_all

    # The module (``oopav.decide.orient`` the attribute is the function of that name).
    orient_rules = importlib.import_module("oopav.decide.orient")
    await _import_corpus(nats_url, data_dir)
    real = orient_rules.score_complexity

    def harsher(inp: Any, category: Any) -> tuple[int, list[str]]:
        score, reasons = real(inp, category)
        return min(score + 1, 5), [*reasons, "complexity: every task is harder (new rule)"]

    monkeypatch.setattr(orient_rules, "score_complexity", harsher)
    async with open_bus(Settings(nats_url=nats_url, data_dir=data_dir), name="t") as bus:
        report = await replay_all(bus, verify=True)
    assert not report.ok
    by = report.by_rule()
    assert list(by) == ["orient"], by
    assert by["orient"] == {
        "complexity: every task is harder (new rule)": sorted(e.session_id for e in report.entries)
    }
    assert all("orient_reported" in (e.divergence or "") for e in report.entries)
