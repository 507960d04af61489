"""A read-only `MemoryStore` checked out at one table version (SPEC §16).

It opens its own LanceDB handle and checks it out at the pinned version, so the writers' handle is
never moved; LanceDB itself refuses a write to a checked-out table, and the store is read-only besides.
Every read of the parts (reads, ANN plan, row copy, dense search) goes through `table()`, so they all
see that version; `version()` and `identity()` answer for it instead of moving to the newest commit.
"""
from __future__ import annotations

from typing import Any

from retrieval.store.identity import StoreIdentity, check_embedder, read_identity
from retrieval.store.memory import MemoryStore
from retrieval.store.versions import Pinned


class AsOfStore(MemoryStore):
    """`base` as it was at `pinned.version`: reads only."""

    def __init__(self, base: MemoryStore, pinned: Pinned):
        super().__init__(base.uri, embedder=base.embedder, table=base.table_name, clock=base.clock,
                         columns=base.columns, read_only=True, storage_options=base.storage_options)
        self.pinned = pinned
        self._pinned_tbl: Any = None

    def __repr__(self) -> str:
        return f"AsOfStore(uri={self.display_uri!r}, table={self.table_name!r}, version={self.pinned.version})"

    def table(self, create: bool = False) -> Any:
        if create:
            self.check_writable()
        if self._pinned_tbl is None:
            tbl = self.db.open_table(self.table_name)
            tbl.checkout(self.pinned.version)
            self.columns = self.columns.bind(tbl.schema)
            check_embedder(read_identity(tbl, self.columns.vector), self.embedder,
                           f"{self.display_uri} at version {self.pinned.version}")
            self._pinned_tbl = tbl
        return self._pinned_tbl

    def identity(self) -> StoreIdentity | None:
        return read_identity(self.table(), self.columns.vector)

    def version(self) -> int:
        return self.pinned.version

    def check_writable(self) -> None:
        raise ValueError(f"store {self.display_uri!r} is shown as of {self.pinned.label}: as-of reads never write")
