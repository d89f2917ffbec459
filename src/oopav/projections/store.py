"""LMDB snapshot store: ``(state, last_sequence)`` per projection, written in one transaction.

Snapshots are disposable (invariant 1): delete the directory and the runner rebuilds from the
stream. A snapshot written under another projection schema is ignored and rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import lmdb
import msgspec

S = TypeVar("S")

_META = b"__meta__"


class ProjectionMeta(msgspec.Struct):
    schema: int
    last_sequence: int = 0


class SnapshotStore:
    """One LMDB environment; one named database per projection."""

    def __init__(self, path: Path, map_size: int = 1 << 30) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        # No fsync per commit: snapshots are disposable, and LMDB stays consistent (state and
        # position commit together), a crash at worst rolls back to an older position.
        self.env = lmdb.open(
            str(self.path),
            map_size=map_size,
            max_dbs=32,
            subdir=True,
            lock=True,
            sync=False,
            metasync=False,
        )
        self._dbs: dict[str, Any] = {}

    def db(self, name: str) -> Any:
        if name not in self._dbs:
            self._dbs[name] = self.env.open_db(name.encode())
        return self._dbs[name]

    def close(self) -> None:
        self.env.close()

    def _grow(self) -> None:
        self.env.set_mapsize(self.env.info()["map_size"] * 2)


class Snapshots(Generic[S]):
    """Typed access to one projection's snapshots."""

    def __init__(self, store: SnapshotStore, name: str, schema: int, state_type: type[S]) -> None:
        self.store = store
        self.name = name
        self.schema = schema
        self._db = store.db(name)
        self._enc = msgspec.msgpack.Encoder()
        self._dec = msgspec.msgpack.Decoder(state_type)
        self._meta_dec = msgspec.msgpack.Decoder(ProjectionMeta)

    def meta(self) -> ProjectionMeta | None:
        with self.store.env.begin(db=self._db) as txn:
            raw = txn.get(_META)
        return self._meta_dec.decode(raw) if raw else None

    def valid(self) -> bool:
        meta = self.meta()
        return meta is not None and meta.schema == self.schema

    def last_sequence(self) -> int:
        meta = self.meta()
        return meta.last_sequence if meta and meta.schema == self.schema else 0

    def get(self, key: str) -> S | None:
        # The schema check and the read in one transaction: a rebuild calls this for every
        # state that is not in its memory.
        with self.store.env.begin(db=self._db) as txn:
            raw_meta = txn.get(_META)
            if not raw_meta or self._meta_dec.decode(raw_meta).schema != self.schema:
                return None
            raw = txn.get(key.encode())
        return self._dec.decode(raw[8:]) if raw else None

    def items(self) -> Iterator[tuple[str, S]]:
        if not self.valid():
            return
        with self.store.env.begin(db=self._db) as txn:
            for k, v in txn.cursor():
                if k == _META:
                    continue
                yield k.decode(), self._dec.decode(v[8:])

    def commit(
        self, states: Mapping[str, S], last_sequence: int, versions: Mapping[str, int] | None = None
    ) -> None:
        """Write the changed states and the new position atomically.

        ``versions`` gives each state's last folded sequence. Two runners may share a store
        (``oopav up`` and a CLI command): a state is never overwritten by an older one, and the
        position never moves back, so neither can lose the other's progress."""
        versions = versions or {}
        encoded = [
            (k.encode(), versions.get(k, last_sequence), self._enc.encode(v))
            for k, v in states.items()
        ]
        while True:
            try:
                with self.store.env.begin(db=self._db, write=True) as txn:
                    raw_meta = txn.get(_META)
                    stored = self._meta_dec.decode(raw_meta) if raw_meta else None
                    position = last_sequence
                    if stored is not None and stored.schema == self.schema:
                        position = max(position, stored.last_sequence)
                    for k, ver, v in encoded:
                        old = txn.get(k)
                        if old is not None and int.from_bytes(old[:8], "big") > ver:
                            continue
                        txn.put(k, ver.to_bytes(8, "big") + v)
                    txn.put(
                        _META,
                        self._enc.encode(
                            ProjectionMeta(schema=self.schema, last_sequence=position)
                        ),
                    )
                return
            except lmdb.MapFullError:
                self.store._grow()

    def reset(self) -> None:
        with self.store.env.begin(write=True) as txn:
            txn.drop(self._db, delete=False)
