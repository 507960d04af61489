"""An in-memory copy of a large store's non-vector columns (a mixin of MemoryStore).

Why: LanceDB 0.40 pays a fixed ~4–9 ms per column for every random-access read, whatever the
number of rows (60 rows or 600 of one column: 9.2 vs 9.5 ms at 1M rows). Hydrating 60 traces' 18
columns costs ~80 ms at 1M rows — more than the whole retrieve() budget — while the same rows from
an Arrow table in memory take ~2 ms. So past ROW_CACHE_MIN rows a store keeps every row's columns
except the vector for the table version it reads (~350 MB and ~3 s to build at 1M synthetic traces)
and LanceDB serves only what needs it: vector search (ids and distances) and vectors by id. A write
moves the table version on; the next read rebuilds the copy (docs/BENCHMARKS.md, Scale).

The copy also holds every vector as float16 (768 MB at 1M × 384) for one plan: a scoped query whose
scope is small is searched exactly, and a scope's rows lie scattered through the table, so LanceDB
reads them in ~135 ms at 1M rows (10k rows in scope). The float16 dot products pick 2×limit + 10
candidates, whose stored float32 vectors (read by row id) give the exact cosines reported.

Only for the native schema (a table inspected in place reads LanceDB directly).
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import Scope

ROW_CACHE_MIN = 50_000


class RowCache:
    """Every row of one table version without its vector; rows by id in microseconds."""

    def __init__(self, tbl, columns: Sequence[str], vector: str = "vector", batch: int = 50_000):
        self.version = int(tbl.version)
        self._tbl, self._vector = tbl, vector
        parts, vecs, rowids = [], [], []
        for b in tbl.search().select([*columns, vector]).with_row_id(True).limit(None).to_batches(batch):
            flat = b.column(vector).flatten().to_numpy(zero_copy_only=False)
            vecs.append(flat.reshape(b.num_rows, -1).astype(np.float16))
            rowids.append(b.column("_rowid").to_numpy(zero_copy_only=False))
            parts.append(b.drop_columns([vector, "_rowid"]))
        data = pa.Table.from_batches(parts).combine_chunks() if parts else tbl.search().select(list(columns)).limit(0).to_arrow()
        self.data: pa.Table = data
        self.vectors = np.concatenate(vecs) if vecs else np.zeros((0, 0), np.float16)
        self.rowids = np.concatenate(rowids) if rowids else np.zeros(0, np.uint64)
        self.pos: dict[str, int] = dict(zip(data.column("id").to_pylist(), range(data.num_rows)))
        self.active = data.column("is_active").to_numpy(zero_copy_only=False).astype(bool)
        self.inactive = int(len(self.active) - self.active.sum())
        v32 = np.empty(len(self.vectors), np.float32)  # row norms, in chunks (no float32 copy of all)
        for i in range(0, len(self.vectors), batch):
            v32[i:i + batch] = np.linalg.norm(self.vectors[i:i + batch].astype(np.float32), axis=1)
        self.norms = v32
        # rows grouped by scope: positions of one scope are a slice of `order`, ascending
        key = pc.binary_join_element_wise(data.column("scope"), data.column("scope_id"), "\x1f")
        enc = pc.dictionary_encode(key).combine_chunks() if data.num_rows else None
        codes = enc.indices.to_numpy(zero_copy_only=False) if enc is not None else np.zeros(0, np.int32)
        self._scope_code = {tuple(k.split("\x1f", 1)): c for c, k in enumerate(enc.dictionary.to_pylist())} \
            if enc is not None else {}
        self._order = np.argsort(codes, kind="stable")
        self._bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(self._scope_code)))]

    def __len__(self) -> int:
        return self.data.num_rows

    def rows(self, ids: Sequence[str]) -> list[dict]:
        """Rows of the known `ids`, in that order (unknown ids skipped)."""
        at = [p for p in (self.pos.get(i) for i in ids) if p is not None]
        return self.data.take(at).to_pylist() if at else []

    def nearest_exact(self, vector: np.ndarray, scopes: Sequence[Scope], limit: int) -> list[dict]:
        """Rows (with `_distance`, cosine) of the `limit` nearest active rows in `scopes`: float16
        candidates (2·limit + 10), then exact float32 cosines of those."""
        vecs = self.exact_vectors(self.nearest(vector, scopes, 2 * limit + 10))
        if not vecs:
            return []
        q = np.asarray(vector, np.float32)
        ids = list(vecs)
        m = np.stack([vecs[i] for i in ids])
        dist = 1.0 - (m @ q) / np.maximum(np.linalg.norm(m, axis=1) * np.linalg.norm(q), 1e-12)
        best = sorted(zip(dist.tolist(), ids))[:limit]
        return [{**r, "_distance": d} for (d, _), r in zip(best, self.rows([i for _, i in best]))]

    def exact_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored float32 vectors of the known `ids`, read by row id (one column: ~9 ms at 1M rows,
        where a filter on `id` costs ~19 ms)."""
        at = [p for p in (self.pos.get(i) for i in ids) if p is not None]
        if not at:
            return {}
        got = self._tbl.take_row_ids(self.rowids[at].tolist()).select(["id", self._vector]).to_arrow()
        flat = got.column(self._vector).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vecs = flat.reshape(got.num_rows, -1).astype(np.float32, copy=False)
        return dict(zip(got.column("id").to_pylist(), vecs))

    def scope_counts(self) -> dict[tuple[str, str], int]:
        """Rows per (scope, scope id), inactive ones included."""
        return {k: int(self._bounds[c + 1] - self._bounds[c]) for k, c in self._scope_code.items()}

    def positions(self, scopes: Sequence[Scope]) -> np.ndarray:
        """Row positions (ascending) of the rows in `scopes`."""
        parts = []
        for sc in {(s.scope, s.scope_id) for s in scopes}:
            c = self._scope_code.get(sc)
            if c is not None:
                parts.append(self._order[self._bounds[c]:self._bounds[c + 1]])
        return np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0] if parts else np.zeros(0, np.int64)

    def nearest(self, vector: np.ndarray, scopes: Sequence[Scope], k: int, active_only: bool = True) -> list[str]:
        """Ids of about the `k` rows in `scopes` most cosine-similar to `vector` by the float16 copy
        (candidates for an exact re-score, not final distances)."""
        pos = self.positions(scopes)
        if active_only:
            pos = pos[self.active[pos]]
        if len(pos) == 0:
            return []
        q = np.asarray(vector, np.float32)
        sims = (self.vectors[pos].astype(np.float32) @ q) / np.maximum(self.norms[pos] * float(np.linalg.norm(q)), 1e-12)
        top = np.argpartition(-sims, k)[:k] if len(sims) > k else np.arange(len(sims))
        ids = self.data.column("id")
        return [ids[int(p)].as_py() for p in pos[top]]


class RowCaching:
    """Needs `_table()`, `columns` and `schema_columns()` from the class it is mixed into."""

    _row_cache_obj: RowCache | None = None
    _row_cache_lock = threading.Lock()

    def _row_cache(self) -> RowCache | None:
        """The copy for the table version this store reads, built on first need; None when the
        table is small or not native."""
        tbl = self._table()
        if tbl is None or not self.columns.native:
            return None
        cache = self._row_cache_obj
        if cache is not None and cache.version == tbl.version:
            return cache
        if tbl.count_rows() < ROW_CACHE_MIN:
            return None
        with self._row_cache_lock:
            cache = self._row_cache_obj
            if cache is None or cache.version != tbl.version:
                cols = [f.name for f in tbl.schema if f.name != self.columns.vector]
                cache = self._row_cache_obj = RowCache(tbl, cols, self.columns.vector)
        return cache
