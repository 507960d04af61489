"""Dense side: memory traces in LanceDB with cognitive scoring (SPEC §2).

The only module that searches LanceDB for traces. LanceDB's cosine `_distance` (1 − cos) is
converted to a similarity in exactly one place (`_similarity`). A `MemoryStore` is a `TableHandle`
(handle.py: opening, identity, lock) composed with parts, each given the handle: `reads`
(reads.py), `writes` (writes.py), `ann` (ann.py: the vector index and query plan) and `row_copy`
(row_copy.py: the in-memory copy of a large store's rows).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from retrieval.store.ann import ANN_MIN_ROWS, AnnIndex
from retrieval.store.cognitive import cognitive_score, resolve_weights
from retrieval.store.columns import ColumnMap
from retrieval.store.dense import cosine_distances, index_and_tail
from retrieval.store.duplicates import resolve
from retrieval.store.handle import TableHandle
from retrieval.store.reads import SCAN_BATCH, StoreReads
from retrieval.store.row_cache import RowCache
from retrieval.store.row_copy import RowCopy
from retrieval.store.rows import from_row
from retrieval.store.writes import ADD_BATCH, AddReport, Progress, StoreWrites
from retrieval.types import MemoryTrace, Mood, Scope, ScoredMemoryTrace, utcnow

log = logging.getLogger(__name__)

# A scoped query whose scopes hold at most this many rows is searched exactly even when an index
# exists: a selective prefilter starves an IVF index of candidates (recall 0.54 at 1% selectivity),
# while an exact scan of the scope's rows (scalar-indexed) stays fast.
EXACT_SCOPE_ROWS = 50_000
POSTFILTER_MAX = 1_000


class MemoryStore(TableHandle):
    """Traces in a LanceDB table; vector search + cognitive scoring.

    `embedder=None` uses the embedder the table records (SPEC §15); a named one must match it.
    `columns` (a ColumnMap) inspects a foreign table in place: always read-only. `storage_options`
    defaults to the environment's for s3:// gs:// az:// URIs (retrieval.store.remote).
    """

    def __init__(self, uri: str = "data/lancedb", embedder: Any = None, table: str = "traces",
                 clock: Callable[[], datetime] | None = None, *, columns: ColumnMap | None = None,
                 read_only: bool = False, storage_options: Mapping[str, str] | None = None, secrets: Any = None):
        super().__init__(uri, embedder, table, columns=columns, read_only=read_only,
                         storage_options=storage_options, secrets=secrets)
        self.clock = clock or utcnow
        self.row_copy = RowCopy(self)
        self.ann = AnnIndex(self, self.row_copy)
        self.reads = StoreReads(self, self.row_copy)
        self.writes = StoreWrites(self, self.row_copy, self.ann)

    def __repr__(self) -> str:
        return f"MemoryStore(uri={self.display_uri!r}, table={self.table_name!r}, embedder={self._embedder!r})"

    # ------------------------------------------------------------------ the parts' public faces
    def add(self, traces: Iterable[MemoryTrace], progress: Progress | None = None,
            batch_size: int = ADD_BATCH) -> int:
        """Upsert traces by id, the whole batch validated first (StoreWrites.add)."""
        return self.writes.add(traces, progress, batch_size)

    @property
    def last_add_report(self) -> AddReport:
        return self.writes.last_add_report

    def delete(self, ids: Iterable[str]) -> int:
        return self.writes.delete(ids)

    def set_active(self, ids: Iterable[str], active: bool) -> None:
        self.writes.set_active(ids, active)

    def count(self, scope: Scope | None = None, active_only: bool = False) -> int:
        return self.reads.count(scope, active_only)

    def scopes(self) -> list[Scope]:
        return self.reads.scopes()

    def scope_counts(self) -> dict[Scope, int]:
        return self.reads.scope_counts()

    def get(self, ids: Sequence[str]) -> list[MemoryTrace]:
        """Traces for `ids` in the given order; unknown ids are skipped."""
        return self.reads.get(ids)

    def get_with_vectors(self, ids: Sequence[str], scopes: Sequence[Scope] | None = None,
                         active_only: bool = True) -> dict[str, tuple[MemoryTrace, np.ndarray]]:
        return self.reads.get_with_vectors(ids, scopes, active_only)

    def browse(self, scope: Scope | None = None, contains: str | None = None, limit: int = 200,
               offset: int = 0) -> list[MemoryTrace]:
        return self.reads.browse(scope, contains, limit, offset)

    def all_traces(self) -> list[MemoryTrace]:
        return self.reads.all_traces()

    def scan_text(self, batch_size: int = SCAN_BATCH, active_only: bool = True
                  ) -> Iterator[tuple[list[str], list[str], list[Scope]]]:
        return self.reads.scan_text(batch_size, active_only)

    def index_state(self) -> dict:
        return super().index_state()

    def ensure_ann_index(self, min_rows: int = ANN_MIN_ROWS, force: bool = False) -> bool:
        return self.ann.ensure(min_rows, force)

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
        if self.table() is None or top_k <= 0:
            return []
        rows = self._nearest_rows(vector, 2 * top_k, scopes)
        return self._ranked(rows, mood, neutral_mood, weights, top_k)

    def _nearest_rows(self, vector: np.ndarray, want: int, scopes: Sequence[Scope] | None) -> list[dict]:
        """The `want` nearest active rows in `scopes`, each with its exact cosine `_distance`."""
        tbl = self.table()
        cache = self.row_copy.current()
        # With the row copy, LanceDB returns ids and distances only, and the active filter (a
        # prefilter that scans every row: +65 ms at 1M) becomes a post-filter: the search fetches
        # as many more rows as are inactive (up to POSTFILTER_MAX; beyond that, prefilter).
        postfilter = cache is not None and cache.inactive <= POSTFILTER_MAX
        where = self.reads.where(scopes, not postfilter)
        small_scope = scopes is not None and self.ann.scoped_rows(scopes) <= EXACT_SCOPE_ROWS
        if small_scope and cache is not None:  # candidates from the int8 copy, re-scored exactly
            return cache.nearest_exact(vector, scopes or [], want)
        partitions, probes, refine = self.ann.plan()
        # A quantised index's candidates are re-scored on the float32 vectors: by LanceDB (refine
        # factor: random reads of the table) or, with the row copy's spill file, here (~0.5 ms).
        own_refine = bool(partitions and refine and not small_scope and cache is not None and cache.spilled)
        limit = want + (cache.inactive if cache is not None and postfilter else 0)
        if cache is not None and partitions and where is None:  # unscoped: LanceDB searches the index only
            rows = index_and_tail(cache, tbl, vector, self.columns.vector, probes, refine, limit)
            if rows is not None:
                return rows[:want]
        if cache is not None:
            sel: Any = ["id", "_distance"]
        else:
            sel = self.columns.select(False)
            sel = sel + ["_distance"] if isinstance(sel, list) else {**sel, "_distance": "_distance"}
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
        if cache is None:  # an id stored twice: its winner (store/duplicates.py), with its own distance
            return resolve(self.columns.normalize(r) for r in found.to_pylist())
        rows = self._rows_from_copy(cache, found, vector, own_refine)
        rows = [r for r in rows if r["is_active"] or not postfilter]
        return sorted(rows, key=lambda r: (r["_distance"], r["id"]))[:want]

    def _rows_from_copy(self, cache: RowCache, found: Any, vector: np.ndarray, own_refine: bool) -> list[dict]:
        """LanceDB's (id, distance) hits as full rows from the copy; rows the copy lacks (the table
        moved on mid-query) are read from LanceDB."""
        hit_ids = found["id"].to_pylist()
        dist = dict(zip(hit_ids, found["_distance"].to_pylist()))
        rows = cache.rows(list(dist))
        if own_refine or len(dist) < len(hit_ids):  # an id stored twice: the winner's own vector decides
            dist = {**dist, **cache.exact_distances(vector, list(dist))}
        missing = [i for i in dist if i not in {r["id"] for r in rows}]
        if missing:
            have = {r["id"] for r in rows}
            more = self.reads.fetch_rows(self.columns.ids_filter(missing), True)
            q32 = np.asarray(vector, np.float32)
            for r in more:
                v = np.asarray(r.pop("vector"), np.float32)
                dist[r["id"]] = float(cosine_distances(v, q32)[0])
            rows = [r for r in rows if r["id"] in have] + more
        return [{**r, "_distance": dist[r["id"]]} for r in rows]

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
