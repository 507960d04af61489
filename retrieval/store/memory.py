"""Dense side: memory traces in LanceDB with cognitive scoring (SPEC §2).

The only module that talks to LanceDB for traces. LanceDB's cosine `_distance` (1 − cos) is
converted to a similarity in exactly one place (`_similarity`).
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from retrieval.store.columns import NATIVE, ColumnMap
from retrieval.store.remote import storage_options_from_env
from retrieval.store.cognitive import cognitive_score, resolve_weights
from retrieval.store.ann import AnnIndex
from retrieval.store.identity import (DEFAULT_ANALYZER, StoreIdentity, check_embedder, embedder_for, read_identity,
                                      write_identity)
from retrieval.store.row_copy import RowCaching
from retrieval.store.dense import cosine_distances, index_and_tail
from retrieval.store.reads import StoreReads
from retrieval.store.writes import AddReport, StoreWrites
from retrieval.store.rows import SCALAR_COLUMNS, from_row, ids_filter, schema, scope_filter, sql_quote, to_row  # noqa: F401
from retrieval.types import MemoryTrace, Mood, Scope, ScoredMemoryTrace, utcnow
from retrieval.store.lock import lock_for

log = logging.getLogger(__name__)

# A scoped query whose scopes hold at most this many rows is searched exactly even when an index
# exists: a selective prefilter starves an IVF index of candidates (recall 0.54 at 1% selectivity),
# while an exact scan of the scope's rows (scalar-indexed) stays fast.
EXACT_SCOPE_ROWS = 50_000
POSTFILTER_MAX = 1_000


class MemoryStore(AnnIndex, RowCaching, StoreReads, StoreWrites):
    """Traces in a LanceDB table; vector search + cognitive scoring.

    `embedder=None` uses the embedder the table records (SPEC §15); a named one must match it.
    `columns` (a ColumnMap) inspects a foreign table in place: always read-only. `storage_options`
    defaults to the environment's for s3:// gs:// az:// URIs (retrieval.store.remote).
    """

    def __init__(self, uri: str = "data/lancedb", embedder=None, table: str = "traces",
                 clock: Callable[[], datetime] | None = None, *, columns: ColumnMap | None = None,
                 read_only: bool = False, storage_options: Mapping[str, str] | None = None, secrets=None):
        self.uri = str(uri)
        self.table_name = table
        self._embedder = embedder
        self.clock = clock or utcnow
        self.columns = columns or NATIVE
        self.read_only = bool(read_only or not self.columns.native)
        self.storage_options = (dict(storage_options) if storage_options is not None
                                else storage_options_from_env(self.uri))
        self.new_analyzer = DEFAULT_ANALYZER  # recorded when this store creates its table
        self._secrets = secrets
        self.last_add_report = AddReport()
        self._tbl = None
        self._db = None
        self._plan_cache: dict[tuple, int] = {}
        self._row_cache_lock = threading.RLock()  # the row copy's (store/row_copy.py): rebuilds, own writes

    def __repr__(self) -> str:
        return f"MemoryStore(uri={self.uri!r}, table={self.table_name!r}, embedder={self._embedder!r})"

    # ------------------------------------------------------------------ plumbing
    @property
    def embedder(self):
        if self._embedder is None:
            ident = self.identity()
            self._embedder = embedder_for(ident or StoreIdentity(None, 384), self._secrets)
        return self._embedder

    def use_embedder(self, embedder) -> None:
        """Swap in an embedder of the same identity (an evaluation's batched query memo); else ValueError."""
        cur = self.embedder
        if (getattr(embedder, "name", None), embedder.dim) != (getattr(cur, "name", None), cur.dim):
            raise ValueError(f"embedder {getattr(embedder, 'name', None)!r} ({embedder.dim}-d) is not this store's "
                             f"{getattr(cur, 'name', None)!r} ({cur.dim}-d)")
        self._embedder = embedder

    @property
    def db(self):
        if self._db is None:
            import lancedb

            self._db = lancedb.connect(self.uri, storage_options=self.storage_options or None)
        return self._db

    def _table(self, create: bool = False):
        if self._tbl is None:
            if not create and self.is_local and not self.local_path.exists():
                return None  # reading a mistyped path must not create it
            if self.table_name in self.db.table_names():
                tbl = self.db.open_table(self.table_name)
                self.columns = self.columns.bind(tbl.schema)
                if self._embedder is not None:
                    check_embedder(read_identity(tbl, self.columns.vector), self._embedder, self.uri)
                self._tbl = tbl
            elif create:
                self._check_writable()
                self._tbl = self._create_table()
            elif not self.columns.native:
                raise ValueError(f"{self.uri!r} has no table {self.table_name!r}; tables: "
                                 f"{', '.join(self.db.table_names()) or 'none'}")
        return self._tbl

    def _create_table(self):
        """Create the table, or open it when another thread or process created it first."""
        ident = StoreIdentity(getattr(self.embedder, "name", None), self.embedder.dim, self.new_analyzer)
        sch = schema(self.embedder.dim)
        vec = sch.field("vector").with_metadata(ident.metadata())
        sch = sch.set(sch.get_field_index("vector"), vec)
        try:
            tbl = self.db.create_table(self.table_name, schema=sch, exist_ok=True)
        except Exception as exc:  # a create racing another process's create: open theirs
            if "already exists" not in str(exc):
                raise
            tbl = self.db.open_table(self.table_name)
        check_embedder(read_identity(tbl), self.embedder, self.uri)
        if not any("id" in list(getattr(i, "columns", [])) for i in tbl.list_indices()):
            try:
                tbl.create_scalar_index("id", index_type="BTREE")
            except Exception as exc:  # an index is an optimisation; a concurrent creator may have won
                log.warning("could not index id: %s", exc)
        return tbl

    def identity(self) -> StoreIdentity | None:
        """What built the store (embedder name + dim, BM25 analyzer); None before the table exists."""
        tbl = self._table()
        if tbl is None:
            return None
        tbl.checkout_latest()
        return read_identity(tbl, self.columns.vector)

    def record_identity(self, embedder: str | None = None, analyzer: str | None = None) -> StoreIdentity:
        """Record a new embedder name and/or analyzer (one metadata-only commit; the dim is the schema's)."""
        self._check_writable()
        with self.write_lock():
            cur = self.identity()
            if cur is None:
                raise ValueError(f"store {self.uri!r} has no table {self.table_name!r} yet")
            new = StoreIdentity(embedder or cur.embedder, cur.dim, analyzer or cur.analyzer)
            if new != cur:
                write_identity(self._table(), new)
            return new

    def _check_writable(self) -> None:
        if self.read_only:
            raise ValueError(f"store {self.uri!r} table {self.table_name!r} is read-only "
                             "(an existing table inspected in place is never written); "
                             "ingest into a store of your own instead")

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri or self.uri.startswith("file://")

    @property
    def local_path(self) -> Path:
        return Path(self.uri.removeprefix("file://"))

    @contextmanager
    def write_lock(self):
        """Serialise writers: a lock per store inside the process and, for a local store, an
        advisory file lock across processes (a read-only store has none and cannot be written).

        Re-entrant per thread, so a Workspace can hold it around a whole ingest."""
        key = (str(self.local_path.resolve()) if self.is_local else self.uri, self.table_name)
        path = self.local_path / f".{self.table_name}.write.lock" if self.is_local and not self.read_only else None
        with lock_for(key, path):  # a table inspected in place gets no lock file: nothing is written there
            yield

    def version(self) -> int:
        """The latest committed LanceDB table version (0 without a table); sees other writers' commits."""
        tbl = self._table()
        if tbl is None:
            return 0
        tbl.checkout_latest()
        return int(tbl.version)

    @property
    def dim(self) -> int:
        tbl = self._table()
        return tbl.schema.field("vector").type.list_size if tbl is not None else self.embedder.dim

    # ------------------------------------------------------------------ search
    def embed_query(self, text: str) -> np.ndarray:
        embed = getattr(self.embedder, "embed_query", self.embedder.embed)
        return np.asarray(embed([text])[0], dtype=np.float32)

    def query(self, text: str, mood: Mood | None = None, top_k: int = 20,
              scopes: Sequence[Scope] | None = None, neutral_mood: bool = False,
              scoring_weights: Mapping[str, float] | None = None) -> list[ScoredMemoryTrace]:
        """Nearest `2*top_k` by cosine within `scopes` (active only), cognitively scored, top `top_k`."""
        if not text or not text.strip() or top_k <= 0:
            return []
        return self.query_vector(self.embed_query(text), mood, top_k, scopes, neutral_mood, scoring_weights)

    def query_vector(self, vector: np.ndarray, mood: Mood | None = None, top_k: int = 20,
                     scopes: Sequence[Scope] | None = None, neutral_mood: bool = False,
                     scoring_weights: Mapping[str, float] | None = None) -> list[ScoredMemoryTrace]:
        weights = resolve_weights(scoring_weights)
        tbl = self._table()
        if tbl is None or top_k <= 0:
            return []
        cache = self._row_cache()
        # With the row copy, LanceDB returns ids and distances only, and the active filter (a
        # prefilter that scans every row: +65 ms at 1M) becomes a post-filter: the search fetches
        # as many more rows as are inactive (up to POSTFILTER_MAX; beyond that, prefilter).
        postfilter = cache is not None and cache.inactive <= POSTFILTER_MAX
        extra = cache.inactive if postfilter else 0
        where = self._where(scopes, not postfilter)
        if cache is not None:
            sel = ["id", "_distance"]
        else:
            sel = self.columns.select(False)
            sel = sel + ["_distance"] if isinstance(sel, list) else {**sel, "_distance": "_distance"}
        small_scope = scopes is not None and self._scoped_rows(scopes) <= EXACT_SCOPE_ROWS
        if small_scope and cache is not None:  # candidates from the int8 copy, re-scored exactly
            rows = cache.nearest_exact(vector, scopes, 2 * top_k)
            return self._ranked(rows, mood, neutral_mood, weights, top_k)
        partitions, probes, refine = self._ann_plan()
        # A quantised index's candidates are re-scored on the float32 vectors: by LanceDB (refine
        # factor: random reads of the table) or, with the row copy's spill file, here (~0.5 ms).
        own_refine = bool(partitions and refine and not small_scope and cache is not None and cache.spilled)
        limit = 2 * top_k + extra
        if cache is not None and partitions and where is None:  # unscoped: LanceDB searches the index only
            rows = index_and_tail(cache, tbl, vector, self.columns.vector, probes, refine, limit)
            if rows is not None:
                return self._ranked(rows[: 2 * top_k], mood, neutral_mood, weights, top_k)
        q = tbl.search(np.asarray(vector, dtype=np.float32), vector_column_name=self.columns.vector)
        q = q.distance_type("cosine").where(where, prefilter=True) if where else q.distance_type("cosine")
        q = q.select(sel).limit(limit * refine if own_refine else limit)
        if partitions:
            if small_scope:
                q = q.bypass_vector_index()
            else:
                q = q.nprobes(probes)
                if refine and not own_refine:
                    q = q.refine_factor(refine)
        found = q.to_arrow()
        if cache is None:
            rows = [self.columns.normalize(r) for r in found.to_pylist()]
            return self._ranked(rows, mood, neutral_mood, weights, top_k)
        dist = dict(zip(found["id"].to_pylist(), found["_distance"].to_pylist()))
        rows = cache.rows(list(dist))
        if own_refine:
            dist = cache.exact_distances(vector, list(dist))
        if len(rows) < len(found) or len(dist) < len(found):  # the table moved on mid-query: read from LanceDB
            have = {r["id"] for r in rows if r["id"] in dist}
            more = self._fetch_rows(self.columns.ids_filter([i for i in found["id"].to_pylist() if i not in have]),
                                    True)
            q32 = np.asarray(vector, np.float32)
            for r in more:
                v = np.asarray(r.pop("vector"), np.float32)
                dist[r["id"]] = float(cosine_distances(v, q32)[0])
            rows = [r for r in rows if r["id"] in have] + more
        rows = [{**r, "_distance": dist[r["id"]]} for r in rows if r["is_active"] or not postfilter]
        rows = sorted(rows, key=lambda r: (r["_distance"], r["id"]))[: 2 * top_k]
        return self._ranked(rows, mood, neutral_mood, weights, top_k)

    def _ranked(self, rows, mood, neutral_mood, weights, top_k) -> list[ScoredMemoryTrace]:
        now = self.clock()
        scored = [self._score(from_row(r), _similarity(r["_distance"]), now, mood, neutral_mood, weights)
                  for r in rows]
        scored.sort(key=lambda s: (-s.retrieval_score, s.id))
        return scored[:top_k]

    def score_hits(self, hits: Mapping[str, tuple[MemoryTrace, np.ndarray]], vector: np.ndarray,
                   mood: Mood | None = None, neutral_mood: bool = False,
                   scoring_weights: Mapping[str, float] | None = None) -> dict[str, ScoredMemoryTrace]:
        """Cognitively score traces fetched by id (sparse-only hydration) with their real cosine."""
        weights = resolve_weights(scoring_weights)
        now = self.clock()
        q = np.asarray(vector, dtype=np.float32)
        return {i: self._score(t, float(np.dot(v, q)), now, mood, neutral_mood, weights)
                for i, (t, v) in hits.items()}

    @staticmethod
    def _score(trace, cosine, now, mood, neutral_mood, weights) -> ScoredMemoryTrace:
        score, parts = cognitive_score(trace, cosine, now, mood, neutral_mood, weights)
        return ScoredMemoryTrace(trace, score, parts)

def _similarity(distance: float) -> float:
    """LanceDB cosine distance is 1 − cos; the one place it becomes a similarity."""
    return 1.0 - float(distance)
