"""One version of a large store's rows held in memory (`RowCache`), built and advanced by `RowCopy` (store/row_copy.py).

Every row's columns except the vector as one Arrow table, every vector as int8 with a per-row scale (laid out
scope by scope, for exact small-scope search), the float32 vectors in an unlinked local file (store/spill.py),
and an immutable overlay of this process's own writes since the scan. Why and when: store/row_copy.py.
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from retrieval.store.dense import cosine_distances, newest_fragments
from retrieval.store.duplicates import winner_positions
from retrieval.store.tuning import release_freed_memory
from retrieval.store.spill import Spill
from retrieval.types import Scope

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

VECTOR_BATCH = 8_192
OVERLAY_MAX = 20_000  # rows written or deleted since the copy's scan, before a rebuild


class RowCache:
    """Every row of one table version without its vector; rows by id in microseconds.

    The base (built from a scan) is never changed; `advanced()` returns a new copy sharing it with a
    new overlay, so a reader holding the old copy keeps a consistent view while a write lands."""

    def __init__(self, tbl, columns: Sequence[str], vector: str = "vector", batch: int = 50_000,
                 unindexed: int | None = None):
        self.version, self._tbl, self._vector = int(tbl.version), tbl, vector
        chunks: dict[str, list] = {c: [] for c in columns}
        rowids = []
        for b in tbl.search().select(list(columns)).with_row_id(True).limit(None).to_batches(batch):
            rowids.append(b.column("_rowid").to_numpy(zero_copy_only=False).copy())  # a view would pin the batch
            for c in columns:
                chunks[c].append(b.column(c))
        # one contiguous array per column (a take over a chunked table copies every chunk: 84 ms for 60 rows at 1M,
        # ~2 ms contiguous), concatenated column by column so only one column's chunks (≤ ~250 MB at 1M) exist twice
        data = pa.Table.from_arrays([pa.concat_arrays(chunks.pop(c)) if chunks[c] else
                                     pa.array([], tbl.schema.field(c).type) for c in columns], names=list(columns))
        release_freed_memory()  # the chunks: ~350 MB at 1M that the pool would otherwise keep
        n = data.num_rows
        self.data: pa.Table = data
        self.rowids = np.concatenate(rowids) if rowids else np.zeros(0, np.uint64)
        self.pos: dict[str, int] = dict(zip(data.column("id").to_pylist(), range(n)))
        self.active = data.column("is_active").to_numpy(zero_copy_only=False).astype(bool)
        # rows grouped by scope: the rows of scope code c are order[bounds[c]:bounds[c+1]], ascending
        key = pc.binary_join_element_wise(data.column("scope"), data.column("scope_id"), "\x1f")
        enc = pc.dictionary_encode(key).combine_chunks() if n else None
        codes = enc.indices.to_numpy(zero_copy_only=False) if enc is not None else np.zeros(0, np.int32)
        self._scope_code = {tuple(k.split("\x1f", 1)): c for c, k in enumerate(enc.dictionary.to_pylist())} \
            if enc is not None else {}
        self._order = np.argsort(codes, kind="stable")
        self._bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(self._scope_code)))]
        self.slot_of = np.empty(n, np.int64)  # base position -> row in the scope-ordered int8 vectors
        self.slot_of[self._order] = np.arange(n)
        self._by_rowid = np.argsort(self.rowids)
        self._rowids_sorted = self.rowids[self._by_rowid]
        self._read_vectors(tbl)
        # rows outside the vector index (`unindexed` of them, LanceDB says): the newest fragments
        self.unindexed_pos = newest_fragments(self.rowids, unindexed) if unindexed is not None else None
        # the overlay: rows this process wrote since the scan (by id, with their float32 vectors)
        # and the base ids those writes replaced or deleted
        self.alive = np.ones(n, bool)  # base rows not replaced or deleted since the scan
        if len(self.pos) < n:  # an id stored twice by two writers: only the rule's winner is alive
            keep = winner_positions(data)
            self.alive[:] = False
            self.alive[keep] = True
            ids_col = data.column("id")
            self.pos = {ids_col[p].as_py(): p for p in keep}
        self.live_active = self.active & self.alive  # alive and active
        self.ov_rows: dict[str, dict] = {}
        self.ov_vecs: dict[str, np.ndarray] = {}
        self.dead: frozenset[str] = frozenset()
        self._count_overlay()
        release_freed_memory()

    def _read_vectors(self, tbl) -> None:
        """The int8 vectors laid out in scope order (a scope is one contiguous slice), filled batch by batch from a
        second scan matched on row id (no second full-size copy is ever made), and the float32 spill."""
        n, vector, by_rowid = len(self.rowids), self._vector, self._by_rowid
        self.vectors = np.zeros((n, 0), np.int8)
        self.scale = np.zeros(n, np.float32)  # per row: int8 value × scale ≈ the stored float
        self.norms = np.zeros(n, np.float32)  # of the stored float32 vectors
        self.spill = Spill()  # float32 vectors by row position, on local disk
        # small batches: LanceDB reads ahead a number of batches, and each batch's arithmetic makes
        # a few float copies of it (at 1M rows, 50k-row batches peaked ~1 GB above the result)
        for k, b in enumerate(tbl.search().select([vector]).with_row_id(True).limit(None).to_batches(VECTOR_BATCH)):
            if k % 32 == 31:
                release_freed_memory()
            m = b.column(vector).flatten().to_numpy(zero_copy_only=False).reshape(b.num_rows, -1)
            if self.vectors.shape[1] != m.shape[1]:
                self.vectors = np.zeros((n, m.shape[1]), np.int8)
            rid = b.column("_rowid").to_numpy(zero_copy_only=False)
            pos = by_rowid[np.minimum(np.searchsorted(self.rowids, rid, sorter=by_rowid), max(n - 1, 0))]
            if not np.array_equal(self.rowids[pos], rid):
                raise TableMoved("row ids changed between the copy's two scans")
            self.spill.write(pos, m)
            at = self.slot_of[pos]
            scale = np.maximum(np.abs(m).max(axis=1), 1e-30) / 127.0
            self.vectors[at] = np.rint(m / scale[:, None]).astype(np.int8)
            self.scale[at] = scale
            self.norms[at] = np.linalg.norm(m, axis=1)

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Base positions of LanceDB row ids (-1 where a row id is not in the base)."""
        rowids = np.asarray(rowids, np.uint64)
        if not len(self._rowids_sorted):
            return np.full(len(rowids), -1, np.int64)
        at = np.minimum(np.searchsorted(self._rowids_sorted, rowids), len(self._rowids_sorted) - 1)
        return np.where(self._rowids_sorted[at] == rowids, self._by_rowid[at], -1)

    def __len__(self) -> int:
        return int(self.alive.sum()) + len(self.ov_rows)

    # ------------------------------------------------------------------ this process's own writes
    def advanced(self, version: int, upserts: Sequence[dict] = (), deleted: Sequence[str] = ()) -> RowCache | None:
        """A copy at table `version` after this process's write: `upserts` (full rows, as the
        table's schema reads them back, vector included) replace or add rows, `deleted` ids go.
        None when the overlay would pass OVERLAY_MAX rows (rebuild instead)."""
        new = copy.copy(self)
        new.version = int(version)
        ov_rows, ov_vecs, dead = dict(self.ov_rows), dict(self.ov_vecs), set(self.dead)
        for i in deleted:
            ov_rows.pop(i, None), ov_vecs.pop(i, None)
            if i in self.pos:
                dead.add(i)
        # through Arrow with the copy's schema, so an overlay row reads exactly as a scanned one
        plain = pa.Table.from_pylist([{k: v for k, v in r.items() if k != self._vector} for r in upserts],
                                     schema=self.data.schema).to_pylist() if upserts else []
        for row, r in zip(plain, upserts):
            ov_rows[row["id"]] = row
            ov_vecs[row["id"]] = np.asarray(r[self._vector], np.float32)
            if row["id"] in self.pos:
                dead.add(row["id"])
        if len(ov_rows) + len(dead) > OVERLAY_MAX:
            return None
        new.ov_rows, new.ov_vecs, new.dead = ov_rows, ov_vecs, frozenset(dead)
        if len(dead) != len(self.dead):
            new.alive = self.alive.copy()
            new.alive[[self.pos[i] for i in dead - self.dead]] = False
            new.live_active = self.active & new.alive
        new._count_overlay()
        return new

    def _count_overlay(self) -> None:
        """Scope counts and the inactive count of the base as the overlay changes it."""
        counts = {k: int(self._bounds[c + 1] - self._bounds[c]) for k, c in self._scope_code.items()}
        inactive = int(len(self.active) - self.active.sum())
        if self.dead:
            gone = self.data.take([self.pos[i] for i in self.dead]).select(["scope", "scope_id", "is_active"])
            for sc, sid, act in zip(*(gone.column(c).to_pylist() for c in ("scope", "scope_id", "is_active"))):
                counts[(sc, sid)] -= 1
                inactive -= not act
        for r in self.ov_rows.values():
            counts[(r["scope"], r["scope_id"])] = counts.get((r["scope"], r["scope_id"]), 0) + 1
            inactive += not r["is_active"]
        self._counts = {k: v for k, v in counts.items() if v > 0}
        self.inactive = inactive

    # ------------------------------------------------------------------ reads
    def rows(self, ids: Sequence[str]) -> list[dict]:
        """Rows of the known `ids`, in that order (unknown ids skipped)."""
        base = [i for i in ids if i not in self.ov_rows and i not in self.dead and i in self.pos]
        got = dict(zip(base, self.data.take([self.pos[i] for i in base]).to_pylist())) if base else {}
        got.update((i, dict(self.ov_rows[i])) for i in ids if i in self.ov_rows)
        return [got[i] for i in ids if i in got]

    def nearest_exact(self, vector: np.ndarray, scopes: Sequence[Scope], limit: int) -> list[dict]:
        """Rows (with `_distance`, cosine) of the `limit` nearest active rows in `scopes`: int8
        candidates (2·limit + 10), then exact float32 cosines of those."""
        dist = self.exact_distances(vector, self.nearest(vector, scopes, 2 * limit + 10))
        best = sorted((d, i) for i, d in dist.items())[:limit]
        return [{**r, "_distance": d} for (d, _), r in zip(best, self.rows([i for _, i in best]))]

    def exact_distances(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine distance (1 − cos, as LanceDB reports it) of each known id's stored float32 vector."""
        vecs = self.exact_vectors(ids)
        if not vecs:
            return {}
        q = np.asarray(vector, np.float32)
        m = np.stack(list(vecs.values()))
        dist = cosine_distances(m, q)
        return dict(zip(vecs, dist.tolist()))

    @property
    def spilled(self) -> bool:
        """Whether every base vector is on the local spill file (fast exact re-scoring)."""
        return self.spill.ok

    def exact_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored float32 vectors of the known `ids`: the overlay's from memory, the base's from
        the spill file (~0.5 ms for 120 rows at 1M), or by row id from LanceDB if it could not be
        written (one column: 9-18 ms at 1M rows)."""
        out = {i: self.ov_vecs[i] for i in ids if i in self.ov_vecs}
        at = [self.pos[i] for i in ids if i not in out and i not in self.dead and i in self.pos]
        if not at:
            return out
        if self.spill.ok:
            ids_col = self.data.column("id")
            out.update(zip((ids_col[p].as_py() for p in at), self.spill.read(at)))
            return out
        got = self._tbl.take_row_ids(self.rowids[at].tolist()).select(["id", self._vector]).to_arrow()
        flat = got.column(self._vector).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vecs = flat.reshape(got.num_rows, -1).astype(np.float32, copy=False)
        out.update(zip(got.column("id").to_pylist(), vecs))
        return out

    def scope_counts(self) -> dict[tuple[str, str], int]:
        """Rows per (scope, scope id), inactive ones included."""
        return dict(self._counts)

    def scoped_rows(self, scopes: Sequence[Scope]) -> int:
        """How many rows `scopes` hold, inactive ones included."""
        return sum(self._counts.get(sc, 0) for sc in {(s.scope, s.scope_id) for s in scopes})

    def nearest(self, vector: np.ndarray, scopes: Sequence[Scope], k: int, active_only: bool = True) -> list[str]:
        """Ids of about the `k` rows in `scopes` most cosine-similar to `vector` by the int8 copy
        and the overlay's float32 vectors (candidates for an exact re-score, not final distances)."""
        q = np.asarray(vector, np.float32)
        qn = float(np.linalg.norm(q))
        keep_mask = self.live_active if active_only else self.alive
        wanted = {(s.scope, s.scope_id) for s in scopes}
        sims, rows = [], []
        for sc in wanted:
            c = self._scope_code.get(sc)
            if c is None:
                continue
            b0, b1 = int(self._bounds[c]), int(self._bounds[c + 1])
            orig = self._order[b0:b1]
            dots = (self.vectors[b0:b1].astype(np.float32) @ q) * self.scale[b0:b1]
            sim = dots / np.maximum(self.norms[b0:b1] * qn, 1e-12)
            keep = keep_mask[orig]
            sims.append(sim[keep])
            rows.append(orig[keep])
        pos = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        sim = np.concatenate(sims) if sims else np.zeros(0, np.float32)
        extra = [i for i, r in self.ov_rows.items() if (r["scope"], r["scope_id"]) in wanted
                 and (r["is_active"] or not active_only)]
        if extra:
            m = np.stack([self.ov_vecs[i] for i in extra])
            sim = np.r_[sim, 1.0 - cosine_distances(m, q)]
        top = np.argpartition(-sim, k)[:k] if len(sim) > k else np.arange(len(sim))
        ids_col = self.data.column("id")
        return [ids_col[int(pos[t])].as_py() if t < len(pos) else extra[t - len(pos)] for t in top.tolist()]


class TableMoved(RuntimeError):
    """A commit moved the table's row ids while the copy was being built."""
