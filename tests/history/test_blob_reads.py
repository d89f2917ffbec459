"""Blobs read without a consumer each: `oopav export` of 1,205 sessions read their prompt
blobs one after another and hit JetStream's consumer limit (err_code 10026), since nats-py's
object `get` opens an ephemeral ordered consumer per object and the server keeps it a while.
Against the real test server's Object Store."""

from __future__ import annotations

import os
from typing import Any

import pytest

from oopav.history.blobs import BUCKET, BlobError, BlobStore, digest_of


async def _consumers(nc: Any) -> int:
    info = await nc.jetstream().stream_info(f"OBJ_{BUCKET}")
    return int(info.state.consumer_count or 0)


async def test_blobs_of_every_size_read_back_exactly_and_open_no_consumer(nc: Any) -> None:
    store = BlobStore(nc)
    # Empty, one chunk, several chunks (the object store's chunks are 128 KiB).
    datas = [b"", b"one chunk of prompt text", os.urandom(300_000), os.urandom(128 * 1024)]
    digests = await store.put_many(datas)
    before = await _consumers(nc)
    fresh = BlobStore(nc)  # nothing known: every read goes to the server
    for _ in range(3):
        got = await fresh.get_many(digests)
        assert [got[d] for d in digests] == datas
    assert await _consumers(nc) == before  # no ephemeral consumer per object


async def test_a_missing_or_altered_blob_is_still_refused(nc: Any) -> None:
    store = BlobStore(nc)
    with pytest.raises(BlobError, match="is not in"):
        await store.get(digest_of(b"never stored"))
    # Stored under another name than its hash: the read is refused, not trusted.
    obs = await store.bucket()
    await obs.put(digest_of(b"claimed"), b"other bytes")
    with pytest.raises(BlobError, match="does not match its hash"):
        await BlobStore(nc).get(digest_of(b"claimed"))
