"""``oopav guidance …`` run as a user runs it (a subprocess) against the test server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from helpers.cli import oopav
from oopav.events import mission as mev
from oopav.projections.guidance import export_library, fold


async def test_seed_show_history_rollback_diff_export_stats(
    nc: Any, nats_url: str, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text(
        "- Keep changes small.\n- text: Run the tests before finishing.\n  rationale: gates\n"
    )
    rc, out, err = await oopav(nats_url, tmp_path, "guidance", "seed", "web.app", str(seed))
    assert rc == 0, err
    assert "step 1, 2 entries" in out
    rc, out, err = await oopav(nats_url, tmp_path, "guidance", "seed", "web.app", str(seed))
    assert rc == 1 and "already has a library" in err

    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "show", "web.app")
    assert out.splitlines() == [
        "# mission web.app, step 1",
        "[G0]. Keep changes small.",
        "[G1]. Run the tests before finishing.",
    ]
    # Replace: new keys, old ones retired.
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"entries": [{"text": "Read the task twice."}]}))
    rc, out, err = await oopav(
        nats_url, tmp_path, "guidance", "seed", "web.app", str(other), "--replace"
    )
    assert rc == 0, err
    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "show", "web.app", "--json")
    shown = json.loads(out)
    assert shown["step"] == 2 and [e["key"] for e in shown["entries"]] == ["G2"]

    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "diff", "web.app", "1")
    assert out.splitlines() == [
        "- [G0]. Keep changes small.",
        "- [G1]. Run the tests before finishing.",
        "+ [G2]. Read the task twice.",
    ]
    rc, out, err = await oopav(nats_url, tmp_path, "guidance", "rollback", "web.app", "0")
    assert rc == 1 and "never empty" in err
    rc, out, err = await oopav(
        nats_url, tmp_path, "guidance", "rollback", "web.app", "1", "--reason", "bad seed"
    )
    assert rc == 0, err
    assert "step 3" in out
    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "show", "web.app")
    assert "[G0]. Keep changes small." in out and "G2" not in out
    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "history", "web.app")
    assert "rollback" in out and "bad seed" in out and "gates" in out

    rc, exported, _ = await oopav(nats_url, tmp_path, "guidance", "export", "web.app")
    events = await _read(nc, "web.app")
    assert exported.encode() == export_library(fold(events, "web.app")) + b"\n"
    assert [e.type for _, e in events] == [
        "experience_library_seeded",
        "experience_library_seeded",
        "guidance_rolled_back",
    ]
    assert events[0][1].subject == "oopav.ev.mission.web~app.experience_library_seeded"

    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "stats", "web.app", "--json")
    assert json.loads(out)["step"] == 3
    run = tmp_path / "run"
    rc, out, _ = await oopav(
        nats_url, tmp_path, "guidance", "export-run", "web.app", "--out", str(run)
    )
    assert rc == 0 and out.split() == [
        str(run / n) for n in ("stats.json", "trajectories.jsonl", "selections.jsonl")
    ]
    assert json.loads((run / "stats.json").read_text())["step"] == 3
    assert (run / "selections.jsonl").read_text() == ""  # seeded and rolled back: no group yet

    empty = tmp_path / "empty.yaml"
    empty.write_text("[]\n")
    rc, _, err = await oopav(nats_url, tmp_path, "guidance", "seed", "m2", str(empty))
    assert rc == 1 and "never empty" in err
    rc, out, _ = await oopav(nats_url, tmp_path, "guidance", "show", "m2")
    assert "no library yet" in out


async def _read(nc: Any, mission: str) -> list[Any]:
    from oopav.bus.store import EventStore

    return await EventStore(nc).read("mission", mev.mission_aggregate_id(mission))


async def test_handler_reflector_runs_and_bad_config_is_one_line(
    nc: Any, nats_url: str, tmp_path: Path
) -> None:
    import signal

    bad = tmp_path / "bad.yaml"
    bad.write_text("eligibility: sometimes\n")
    rc, _, err = await oopav(
        nats_url, tmp_path, "handler", "reflector", "--reflector-config", str(bad)
    )
    assert rc == 1 and "reflector config:" in err and "eligibility" in err
    tpl = tmp_path / "tpl.txt"
    tpl.write_text("{library}\n{critiques}\n{allowed_ops}\n{schema}\n")
    bad.write_text(f"consolidator_template_file: {tpl.name}\n")
    rc, _, err = await oopav(
        nats_url, tmp_path, "handler", "reflector", "--reflector-config", str(bad)
    )
    assert rc == 1 and "max_operations" in err

    env = {**os.environ, "OOPAV_LOG_LEVEL": "WARNING"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "oopav.cli",
        "--nats-url",
        nats_url,
        "handler",
        "reflector",
        "--critic-model",
        "scripted:/dev/null",
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    js = nc.jetstream()
    for _ in range(200):
        try:
            info = await js.consumer_info("OOPAV_EVENTS", "reflector")
            break
        except Exception:
            await asyncio.sleep(0.05)
    else:
        raise AssertionError("the reflector never created its durable consumer")
    assert info.config.filter_subject == "oopav.ev.session.*.session_completed"
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err
