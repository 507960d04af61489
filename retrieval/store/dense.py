"""Unscoped dense search over a large store with its row copy (store/row_copy.py), LanceDB doing only
what needs its index.

LanceDB searches the IVF-SQ index alone (`fast_search`) and returns row ids and quantised
distances: no `id` column read (~8 ms at 1M rows), no flat scan of the rows the index leaves out
(~15 ms for 2,000 rows after an upsert), no refine step reading float vectors at random. Here: row
ids become copy positions, the rows outside the index (the copy knows which) and the rows this
process wrote since the copy are searched exactly, and every candidate is re-scored on its stored
float32 vector (the spill file, or the overlay in memory). From the index, the same candidates as
LanceDB's refine step (the best `limit × refine`, re-ranked exactly); rows outside it beyond that
many are pre-selected on the int8 copy first, as a small scope is (docs/BENCHMARKS.md, Scale).

Which rows the index leaves out is inferred from row ids (`newest_fragments`): an index covers the
fragments that existed when it was built or last optimised, and later appends get newer fragment
ids. When no run of newest fragments holds exactly LanceDB's unindexed count, LanceDB does it all.
"""
from __future__ import annotations

import numpy as np


def cosine_distances(m: np.ndarray, q: np.ndarray) -> np.ndarray:
    """1 − cos of each row of `m` (float32 vectors) with `q`, as LanceDB reports cosine distance:
    the one formula every exact re-score of the row copy uses."""
    m = np.asarray(m, np.float32).reshape(-1, len(q))
    return 1.0 - (m @ q) / np.maximum(np.linalg.norm(m, axis=1) * float(np.linalg.norm(q)), 1e-12)


def index_and_tail(cache, tbl, vector: np.ndarray, vector_column: str, probes: int, refine: int,
                   limit: int) -> list[dict] | None:
    """Rows (with exact cosine `_distance`) of the `limit` nearest active rows, or None when the copy
    cannot answer for this table version (then the caller asks LanceDB)."""
    if cache.unindexed_pos is None or not cache.spilled:
        return None
    q = np.asarray(vector, np.float32)
    want = limit * max(refine, 1)
    found = (tbl.search(q, vector_column_name=vector_column).distance_type("cosine").select(["_distance"])
             .with_row_id(True).nprobes(probes).limit(want).fast_search().to_arrow())
    pos = cache.positions_of(found.column("_rowid").to_numpy())
    if (pos < 0).any():  # a row the copy does not know: the table moved on mid-query
        return None
    tail = cache.unindexed_pos[cache.alive[cache.unindexed_pos]]
    if len(tail) > want:  # int8 pre-selection, as for a small scope
        slots = cache.slot_of[tail]
        approx = (cache.vectors[slots].astype(np.float32) @ q) * cache.scale[slots] / np.maximum(cache.norms[slots],
                                                                                                 1e-12)
        tail = tail[np.argpartition(-approx, want)[:want]]
    cand = np.unique(np.r_[pos[cache.alive[pos]], tail]).astype(np.int64)
    cand = cand[cache.live_active[cand]]
    ov = [i for i, r in cache.ov_rows.items() if r["is_active"]]
    m = np.stack(cache.spill.read(cand) + [cache.ov_vecs[i] for i in ov]) if len(cand) or ov else np.zeros((0, len(q)))
    dist = cosine_distances(m, q)
    top = np.argsort(dist, kind="stable")[:limit + 8]  # a few spare, so that ties break by id below
    ids_col = cache.data.column("id")
    ids = [ids_col[int(cand[t])].as_py() if t < len(cand) else ov[t - len(cand)] for t in top.tolist()]
    best = sorted(zip(dist[top].tolist(), ids))[:limit]
    return [{**r, "_distance": d} for (d, _), r in zip(best, cache.rows([i for _, i in best]))]


def newest_fragments(rowids: np.ndarray, count: int) -> np.ndarray | None:
    """Positions of the rows in the newest fragments (a row id is fragment << 32 | offset) that hold
    exactly `count` rows: the rows an index built before they were appended does not cover. None
    when no run of newest fragments holds exactly that many (then LanceDB searches them itself)."""
    if count == 0:
        return np.zeros(0, np.int64)
    frag = (rowids >> np.uint64(32)).astype(np.int64)
    ids, counts = np.unique(frag, return_counts=True)
    total = np.cumsum(counts[::-1])
    k = int(np.searchsorted(total, count))
    if k >= len(total) or total[k] != count:
        return None
    return np.flatnonzero(frag >= ids[::-1][k])
