"""`oopav gc` removes the artifacts of ended sessions by age and by total size, with a dry run
(issue 29, item 5); sessions that have not ended keep theirs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from click.testing import CliRunner

from oopav.cli import cli
from oopav.sandbox.artifacts import ArtifactDir, parse_age, parse_size, select_for_gc

DAY = 86400.0


def _dir(root: Path, sid: str, size: int, age_days: float) -> Path:
    d = root / sid / "runs" / "k"
    d.mkdir(parents=True)
    (d / "stdout").write_bytes(b"x" * size)
    when = time.time() - age_days * DAY
    for p in (d / "stdout", d, d.parent, d.parent.parent):
        os.utime(p, (when, when))
    return d.parent.parent


def test_selection_by_age_then_total_only_among_ended() -> None:
    now = 100 * DAY
    items = [
        ArtifactDir("old-ended", Path("/a"), 10, now - 30 * DAY),
        ArtifactDir("old-running", Path("/b"), 10, now - 30 * DAY),
        ArtifactDir("mid-ended", Path("/c"), 50, now - 3 * DAY),
        ArtifactDir("new-ended", Path("/d"), 50, now - 1 * DAY),
    ]
    ended = {"old-ended", "mid-ended", "new-ended"}
    by_age = select_for_gc(items, ended, max_age_s=7 * DAY, max_total_bytes=None, now=now)
    assert [(a.session_id, why) for a, why in by_age] == [("old-ended", "older than 7d")]
    both = select_for_gc(items, ended, max_age_s=7 * DAY, max_total_bytes=70, now=now)
    # 110 left after the age pass; the oldest ended one goes (60 left), the running one stays.
    assert [a.session_id for a, _ in both] == ["old-ended", "mid-ended"]
    assert "total over" in both[1][1]
    # A running session is never chosen, even when it alone is over the total.
    assert select_for_gc(items, set(), max_age_s=0, max_total_bytes=0, now=now) == []


def test_sizes_and_ages_parse_with_specific_errors() -> None:
    assert parse_size("500M") == 500 << 20 and parse_size("2GiB") == 2 << 30
    assert parse_size("1024") == 1024 and parse_age("7d") == 7 * DAY and parse_age("90s") == 90
    for bad, fn in (("lots", parse_size), ("-1G", parse_size), ("soon", parse_age)):
        try:
            fn(bad)
        except ValueError as exc:
            assert repr(bad) in str(exc)
        else:
            raise AssertionError(bad)


def test_gc_cli_dry_run_then_age_then_total(tmp_path: Path) -> None:
    data = tmp_path / "data"
    root = data / "artifacts"
    old = _dir(root, "s-old", 1000, 30)
    mid = _dir(root, "s-mid", 3000, 3)
    new = _dir(root, "s-new", 3000, 0)

    def gc(*args: str) -> str:
        r = CliRunner().invoke(cli, ["--data-dir", str(data), "gc", *args])
        assert r.exit_code == 0, r.output
        return r.output

    # Unknown to the store, so not ended: nothing of theirs goes without --all.
    out = gc("--artifacts-max-age", "1d", "--artifacts-max-total", "1K")
    assert "the artifacts of 0 session(s)" in out and old.exists()
    out = gc("--all", "--dry-run", "--artifacts-max-age", "7d", "--artifacts-max-total", "off")
    assert f"would remove {old} (1000 B, older than 7d)" in out and old.exists()
    out = gc("--all", "--artifacts-max-age", "7d", "--artifacts-max-total", "off")
    assert f"removed {old}" in out and not old.exists() and mid.exists()
    out = gc("--all", "--artifacts-max-age", "off", "--artifacts-max-total", "4000")
    assert f"removed {mid}" in out and "total over" in out
    assert not mid.exists() and new.exists()
    r = CliRunner().invoke(cli, ["--data-dir", str(data), "gc", "--artifacts-max-total", "lots"])
    assert r.exit_code == 2 and "'lots' is not a size" in r.output
