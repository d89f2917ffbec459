"""Replay from the store alone (issue 27 §1), exactly as a user does it with the real CLI:
run a session in one data dir, export it, delete the repository, import the archive into
another data dir (another embedded server), then `replay --verify` and `--fork-at` there."""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from pathlib import Path

import yaml
from history_harness import oopav
from loop_harness import (
    INSTRUCTION,
    TEST_COMMAND,
    finish,
    plan_answer,
    rename_all,
    rename_definition_only,
)


def _task(repo: Path, tmp: Path) -> Path:
    script = tmp / "policy.yaml"
    # Half a rename: the session fails (the tests break), so the fork has something to fix.
    script.write_text(
        yaml.safe_dump(
            {"planner": [plan_answer()], "actor": [rename_definition_only(), finish("half")]}
        )
    )
    task = tmp / "task.json"
    task.write_text(
        json.dumps(
            {
                "instruction": INSTRUCTION,
                "repo": str(repo),
                "test_command": TEST_COMMAND,
                "model": f"scripted:{script}",
                "budgets": {"bounces": 0},
                "policy": {"tests_per_action": False},
                "environment": {"python": sys.executable},
            }
        )
    )
    return task


async def test_export_delete_import_elsewhere_then_verify_and_fork(
    repo: Path, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    task = _task(repo, tmp_path)
    rc, out, err = await oopav(None, one, "run", "--task", str(task), "--json")
    assert rc == 1, err  # the half rename fails the tests
    sid = json.loads(out)["session_id"]

    archive = tmp_path / "s.tar"
    rc, out, err = await oopav(None, one, "session", "export", sid, "-o", str(archive), "--json")
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["events"] > 10 and summary["blobs"] >= 6  # the tree and its files
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert (
        "events.ndjson" in names and sum(n.startswith("blobs/") for n in names) == summary["blobs"]
    )

    # The repository is gone, and so is the first server's store.
    shutil.rmtree(repo)
    shutil.rmtree(one)

    rc, out, err = await oopav(None, two, "session", "import", str(archive), "--json")
    assert rc == 0, err
    assert json.loads(out)["added"] == summary["events"]
    rc, out, err = await oopav(None, two, "session", "import", str(archive), "--json")
    assert rc == 0 and json.loads(out)["added"] == 0  # importing twice adds nothing

    rc, out, err = await oopav(None, two, "replay", sid, "--verify", "--json")
    assert rc == 0, out + err
    report = json.loads(out)
    assert report["handlers"]["ok"] and report["handlers"]["started_from"] == "store"
    assert report["handlers"]["replayed"] == report["handlers"]["recorded"] == summary["events"]
    assert report["handlers"]["tampering"] == []  # the same bytes: the chain still links
    # The handlers' signatures came along, and the notary here trusts their keys.
    signatures = report["handlers"]["signatures"]
    assert signatures["ok"] and signatures["unsigned"] == 0, signatures
    assert sum(signatures["signers"].values()) == summary["events"]
    rc, text, err = await oopav(None, two, "replay", sid, "--verify")
    assert rc == 0 and "workspace: from the starting tree in the blob store" in text

    # Fork at the plan, continuing live with a model that renames everything: the workspace
    # starts from the parent's stored tree, not from the (deleted) repository.
    rc, out, err = await oopav(None, two, "show", sid, "--json")
    assert rc == 0, err
    at = next(e["seq"] for e in json.loads(out) if e["type"] == "plan_proposed")
    live = tmp_path / "live.yaml"
    live.write_text(yaml.safe_dump({"actor": [rename_all(), finish("all")]}))
    rc, out, err = await oopav(
        None, two, "replay", sid, "--fork-at", str(at), "--model", f"scripted:{live}", "--json"
    )
    assert rc == 0, out + err
    fork = json.loads(out)
    assert fork["outcome"] == "success"
    assert "+from webtool.client import fetch_page" in fork["diff"]
    assert not repo.exists()

    # The fork is a session of the second store, with its parent's lineage.
    rc, out, err = await oopav(None, two, "show", "--tree", sid, "--json")
    assert rc == 0, err
    tree = json.loads(out)
    assert [c["session_id"] for c in tree["children"]] == [fork["session_id"]]


async def test_import_refuses_an_altered_blob_and_a_foreign_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar")
    rc, _, err = await oopav(None, tmp_path / "d", "session", "import", str(bad))
    assert rc == 1 and "is not a session archive" in err

    import io

    altered = tmp_path / "altered.tar"
    with tarfile.open(altered, "w") as tar:
        for name, data in (
            ("oopav-archive.json", json.dumps({"format": 1, "session_id": "x"}).encode()),
            ("blobs/" + "0" * 64, b"hello"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    rc, _, err = await oopav(None, tmp_path / "d", "session", "import", str(altered))
    assert rc == 1 and "does not match its hash" in err
