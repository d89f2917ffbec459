"""The starting tree is read before the baseline and stored beside it (issue 28: a small
project's first session waited ~0.2-0.4 s on the store's round trips before its baseline
started): its hash is the one ``store_tree`` gives, what the tests write later is not in it,
and when the store refuses, ``workspace_prepared`` names no tree (as before)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import nats

from oopav.config import Settings
from oopav.events import catalog as ev
from oopav.events.factory import root_event
from oopav.handlers.ports import Ports
from oopav.handlers.support.workspace import settle_tree, start_storing_tree
from oopav.history.blobs import BlobStore, materialize, store_tree


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (root / "README").write_text("hello\n")
    return root


def _prepared(tree: str | None) -> Any:
    return root_event(
        ev.WorkspacePrepared,
        handler="observer",
        path="/ws",
        base_commit="0" * 40,
        branch="b",
        tree=tree,
    )


async def test_the_tree_is_read_first_and_stored_beside_the_baseline(
    nc: Any, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "ws")
    ports = Ports(settings=Settings(data_dir=tmp_path / "data"))
    ports.blobs = BlobStore(nc)
    digest, storing = await start_storing_tree(root, ports)
    (root / "written_by_a_test.txt").write_text("later\n")  # the suite runs meanwhile
    assert digest is not None and storing is not None
    events = [_prepared(digest)]
    await settle_tree(storing, events, events[0])
    assert events[0].tree == digest and storing.result() == digest
    out = tmp_path / "restored"
    await materialize(ports.blobs, digest, out)
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["README", "__init__.py"]
    # The same hash as storing it in one go (before the file was written).
    (root / "written_by_a_test.txt").unlink()
    assert await store_tree(BlobStore(nc), root) == digest


async def test_a_refusing_store_leaves_the_workspace_event_without_a_tree(
    nats_url: str, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "ws")
    conn = await nats.connect(nats_url)
    ports = Ports(settings=Settings(data_dir=tmp_path / "data"))
    ports.blobs = BlobStore(conn)
    await conn.close()  # the store cannot be reached
    digest, storing = await start_storing_tree(root, ports)
    assert digest is not None and storing is not None
    prepared = _prepared(digest)
    events = [prepared, _prepared(None)]
    await settle_tree(storing, events, prepared)
    assert storing.result() is None
    assert events[0].tree is None and events[0].id == prepared.id
    assert msgspec.structs.replace(events[0], tree=digest) == prepared
    # No store at all: nothing read, nothing to wait for.
    assert await start_storing_tree(root, Ports(settings=Settings(data_dir=tmp_path / "d2"))) == (
        None,
        None,
    )
