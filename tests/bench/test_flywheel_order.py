"""bench/flywheel.py writes its datasets in an order of their content (wave 3p): the stream
holds records in the order sessions completed, which varies from run to run, and generation 1
trained on the same records in two such orders reached 52% and 42% on held-out A."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import flywheel


def _rec(n: int) -> dict[str, object]:
    return {"prompt": f"rename f{n}", "completion": f"<action>{n}</action>", "session_id": f"s{n}"}


def test_the_same_records_in_any_completion_order_make_the_same_dataset(tmp_path: Path) -> None:
    recs = [_rec(n) for n in range(12)]
    flywheel.write_records(tmp_path / "a", recs)
    flywheel.write_records(tmp_path / "b", list(reversed(recs)))
    a = (tmp_path / "a" / "sft-00000.jsonl").read_bytes()
    assert a == (tmp_path / "b" / "sft-00000.jsonl").read_bytes()
    # Ordered by content, not by the session ids (which differ between runs).
    renamed = [{**r, "session_id": f"x{i}"} for i, r in enumerate(recs)]
    flywheel.write_records(tmp_path / "c", renamed)
    order = [line.split(b'"prompt":')[1][:12] for line in a.splitlines()]
    got = (tmp_path / "c" / "sft-00000.jsonl").read_bytes()
    assert [line.split(b'"prompt":')[1][:12] for line in got.splitlines()] == order
    assert len(set(order)) == 12  # every record kept
