"""An opened traces table: where it lives, how to open or create it, what built it, and its writers'
lock. `MemoryStore` is a `TableHandle` with parts (reads, writes, ANN index, row copy); each part is
given the handle and uses only this public interface.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from retrieval.store.columns import NATIVE, ColumnMap
from retrieval.store.context import KEY_CONTEXT, NEW_STORE_CONTEXT
from retrieval.store.identity import (NEW_STORE_ANALYZER, NEW_STORE_STATISTICS, StoreIdentity, check_embedder,
                                      embedder_for, read_identity, write_identity)
from retrieval.store.lock import lock_for
from retrieval.store.remote import check_local_location, is_local_uri, open_db, redact_uri, storage_options_from_env
from retrieval.store.rows import schema
from retrieval.store.versions import list_tags, list_versions

log = logging.getLogger(__name__)

# A table name becomes a directory name under the store: never a path (`/`, `..`), never hidden.
_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def check_table_name(name: str) -> str:
    """`name` when it is a plain table name, else ValueError naming it and the rule."""
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"table name {str(name)[:80]!r} is not allowed: use letters, digits, '_', '-' and '.' "
                         "(not first, no '..'), at most 128 characters")
    return name


class TableHandle:
    """One LanceDB table of traces, opened lazily (a mistyped local path is never created by a read).

    `embedder=None` uses the embedder the table records (SPEC §15); a named one must match it.
    `columns` (a ColumnMap) inspects a foreign table in place: always read-only. `storage_options`
    defaults to the environment's for s3:// gs:// az:// URIs (retrieval.store.remote).
    """

    def __init__(self, uri: str = "data/lancedb", embedder: Any = None, table: str = "traces", *,
                 columns: ColumnMap | None = None, read_only: bool = False,
                 storage_options: Mapping[str, str] | None = None, secrets: Any = None):
        self.uri = str(uri)
        self.table_name = check_table_name(table)
        self.display_uri = redact_uri(self.uri)  # what pages, errors and logs show
        self._embedder = embedder
        self.columns = columns or NATIVE
        self.read_only = bool(read_only or not self.columns.native)
        self.storage_options = (dict(storage_options) if storage_options is not None
                                else storage_options_from_env(self.uri))
        self.new_analyzer = NEW_STORE_ANALYZER  # recorded when this store creates its table
        self.new_statistics = NEW_STORE_STATISTICS
        self.new_context = NEW_STORE_CONTEXT  # the context setting a new table records (store/context.py)
        self._secrets = secrets
        self._tbl: Any = None
        self._db: Any = None

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            ident = self.identity()
            self._embedder = embedder_for(ident or StoreIdentity(None, 384), self._secrets)
        return self._embedder

    def use_embedder(self, embedder: Any) -> None:
        """Swap in an embedder of the same identity (an evaluation's batched query memo); else ValueError."""
        cur = self.embedder
        if (getattr(embedder, "name", None), embedder.dim) != (getattr(cur, "name", None), cur.dim):
            raise ValueError(f"embedder {getattr(embedder, 'name', None)!r} ({embedder.dim}-d) is not this store's "
                             f"{getattr(cur, 'name', None)!r} ({cur.dim}-d)")
        self._embedder = embedder

    def adopt_embedder(self, embedder: Any) -> None:
        """After a re-embed recorded a new identity: queries are embedded with `embedder` from now on."""
        self._embedder = embedder

    @property
    def db(self) -> Any:
        if self._db is None:
            self._db = open_db(self.uri, self.storage_options)
        return self._db

    def table(self, create: bool = False) -> Any:
        """The LanceDB table (None when it does not exist and `create` is false)."""
        if self._tbl is None:
            check_local_location(self.uri)  # a file on the way is refused even where nothing would be created
            if not create and self.is_local and not self.local_path.exists():
                return None  # reading a mistyped path must not create it
            if self.table_name in self.db.table_names():
                tbl = self.db.open_table(self.table_name)
                self.columns = self.columns.bind(tbl.schema)
                if self._embedder is not None:
                    check_embedder(read_identity(tbl, self.columns.vector), self._embedder, self.display_uri)
                self._tbl = tbl
            elif create:
                self.check_writable()
                self._tbl = self._create_table()
            elif not self.columns.native:
                raise ValueError(f"{self.display_uri!r} has no table {self.table_name!r}; tables: "
                                 f"{', '.join(self.db.table_names()) or 'none'}")
        return self._tbl

    def _create_table(self) -> Any:
        """Create the table, or open it when another thread or process created it first."""
        ident = StoreIdentity(getattr(self.embedder, "name", None), self.embedder.dim, self.new_analyzer,
                              self.new_statistics)
        sch = schema(self.embedder.dim)
        vec = sch.field("vector").with_metadata({**ident.metadata(), KEY_CONTEXT: self.new_context.to_text()})
        sch = sch.set(sch.get_field_index("vector"), vec)
        try:
            tbl = self.db.create_table(self.table_name, schema=sch, exist_ok=True)
        except Exception as exc:  # a create racing another process's create: open theirs
            if "already exists" not in str(exc):
                raise
            tbl = self.db.open_table(self.table_name)
        check_embedder(read_identity(tbl), self.embedder, self.display_uri)
        if not any("id" in list(getattr(i, "columns", [])) for i in tbl.list_indices()):
            try:
                tbl.create_scalar_index("id", index_type="BTREE")
            except Exception as exc:  # an index is an optimisation; a concurrent creator may have won
                log.warning("could not index id: %s", exc)
        return tbl

    def identity(self) -> StoreIdentity | None:
        """What built the store (embedder name + dim, BM25 analyzer); None before the table exists."""
        tbl = self.table()
        if tbl is None:
            return None
        tbl.checkout_latest()
        return read_identity(tbl, self.columns.vector)

    def record_identity(self, embedder: str | None = None, analyzer: str | None = None,
                        statistics: str | None = None) -> int | None:
        """Record a new embedder name, analyzer and/or BM25 statistics (one metadata-only commit; the dim is
        the schema's). Returns the table version it committed, None when nothing changed."""
        self.check_writable()
        with self.write_lock():
            cur = self.identity()
            if cur is None:
                raise ValueError(f"store {self.display_uri!r} has no table {self.table_name!r} yet")
            new = StoreIdentity(embedder or cur.embedder, cur.dim, analyzer or cur.analyzer,
                                statistics or cur.statistics)
            return write_identity(self.table(), new) if new != cur else None

    def record_settings(self, analyzer: str | None = None, statistics: str | None = None) -> int | None:
        """Record the BM25 analyzer and/or statistics: on the table (`record_identity`; returns the version it
        committed), or, before the table exists, as what it will record when it is created (None)."""
        with self.write_lock():
            if self.identity() is not None:
                return self.record_identity(analyzer=analyzer, statistics=statistics)
            self.new_analyzer = analyzer or self.new_analyzer
            self.new_statistics = statistics or self.new_statistics
            return None

    def check_writable(self) -> None:
        if self.read_only:
            raise ValueError(f"store {self.display_uri!r} table {self.table_name!r} is read-only "
                             "(an existing table inspected in place is never written); "
                             "ingest into a store of your own instead")

    @property
    def is_local(self) -> bool:
        return is_local_uri(self.uri)

    @property
    def local_path(self) -> Path:
        return Path(self.uri.removeprefix("file://"))

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialise writers: a lock per store inside the process and, for a local store, an
        advisory file lock across processes (a read-only store has none and cannot be written).

        Re-entrant per thread, so a Workspace can hold it around a whole ingest."""
        key = (str(self.local_path.resolve()) if self.is_local else self.uri, self.table_name)
        path = self.local_path / f".{self.table_name}.write.lock" if self.is_local and not self.read_only else None
        with lock_for(key, path):  # a table inspected in place gets no lock file: nothing is written there
            yield

    def index_state(self) -> dict:
        """What the Home page shows: rows, whether an ANN index exists and how many rows it lacks."""
        tbl = self.table()
        if tbl is None:
            return {"rows": 0, "ann_index": False, "ann_type": None, "unindexed_rows": 0}
        state = {"rows": tbl.count_rows(), "ann_index": False, "ann_type": None, "unindexed_rows": 0}
        for idx in tbl.list_indices():
            if self.columns.vector in list(getattr(idx, "columns", [])):
                stats = tbl.index_stats(idx.name)
                state["ann_index"] = True
                state["ann_type"] = str(getattr(idx, "index_type", "") or "") or None
                state["unindexed_rows"] = int(getattr(stats, "num_unindexed_rows", 0) or 0)
        return state

    def version(self) -> int:
        """The latest committed LanceDB table version (0 without a table); sees other writers' commits."""
        tbl = self.table()
        if tbl is None:
            return 0
        tbl.checkout_latest()
        if self.columns.native and len(self.columns.extras) < len(NATIVE.extras):  # another writer added them
            self.columns = self.columns.bind(tbl.schema)
        return int(tbl.version)

    def stored_versions(self) -> list[tuple[int, datetime]]:
        """(version, commit time) of every table version still stored, oldest first ([] without a table)."""
        tbl = self.table()
        return list_versions(tbl) if tbl is not None else []

    def tags(self) -> dict[str, int]:
        """Tag name → table version (retrieval.store.versions: tags, as-of reads, clean-up that keeps them)."""
        tbl = self.table()
        return list_tags(tbl) if tbl is not None else {}

    @property
    def dim(self) -> int:
        tbl = self.table()
        return int(tbl.schema.field("vector").type.list_size) if tbl is not None else int(self.embedder.dim)
