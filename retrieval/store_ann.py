"""The dense side's ANN index (IVF-FLAT) and the query plan it implies; a mixin of MemoryStore."""
from __future__ import annotations

import logging
import math

log = logging.getLogger(__name__)

# Below this many rows an exact (flat) scan is both exact and fast enough; above it we build an
# IVF-FLAT cosine index (docs/BENCHMARKS.md: recall@30 vs exact and latency at 100k rows).
ANN_MIN_ROWS = 50_000
ANN_PROBE_FRACTION = 0.75


class AnnIndex:
    """Needs `_table()`, `_plan_cache`, `columns` and `read_only` from the class it is mixed into."""

    def _has_ann(self) -> bool:
        return bool(self._ann_partitions())

    def _ann_partitions(self) -> int:
        """Partitions to plan probes for (0 without an index); cached per table version.

        LanceDB does not report an IVF index's partition count, so it is estimated from the row count
        the same way it was chosen at build time. Rows only grow after a build, so the estimate can
        over-probe (slower, never less recall); `ensure_ann_index(force=True)` rebuilds for the new size.
        """
        tbl = self._table()
        if tbl is None:
            return 0
        key = ("ann", tbl.version)
        if key not in self._plan_cache:
            parts = 0
            for idx in tbl.list_indices():
                if self.columns.vector in list(getattr(idx, "columns", [])):
                    parts = _partitions_for(tbl.count_rows())
            self._plan_cache = {k: v for k, v in self._plan_cache.items() if k[1] == tbl.version}
            self._plan_cache[key] = parts
        return self._plan_cache[key]

    def index_state(self) -> dict:
        """What the Home page shows: rows, whether an ANN index exists and how many rows it lacks."""
        tbl = self._table()
        if tbl is None:
            return {"rows": 0, "ann_index": False, "unindexed_rows": 0}
        state = {"rows": tbl.count_rows(), "ann_index": False, "unindexed_rows": 0}
        for idx in tbl.list_indices():
            if self.columns.vector in list(getattr(idx, "columns", [])):
                stats = tbl.index_stats(idx.name)
                state["ann_index"] = True
                state["unindexed_rows"] = int(getattr(stats, "num_unindexed_rows", 0) or 0)
        return state

    def ensure_ann_index(self, min_rows: int = ANN_MIN_ROWS, force: bool = False) -> bool:
        """Build an IVF-FLAT cosine index once the table passes `min_rows`; fold new rows in after.

        `force=True` (re)builds now, whatever the size. Returns True when an index exists afterwards.
        Exact search is kept for small tables: it is exact and, below the threshold, no slower.
        IVF-FLAT (not HNSW/PQ): on this machine it built fastest and gave the best recall per
        millisecond (docs/BENCHMARKS.md).
        """
        tbl = self._table()
        if tbl is None or self.read_only:  # a table inspected in place keeps the indexes it has
            return self._has_ann() if tbl is not None else False
        rows = tbl.count_rows()
        if self._has_ann() and not force:
            if self.index_state()["unindexed_rows"] > 0:
                tbl.optimize()
            return True
        if rows < min_rows and not force:
            return False
        from lancedb.index import IvfFlat

        tbl.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=_partitions_for(rows)),
                         replace=True)
        # `id` too: its index was made on the empty table, and rows appended since are scanned flat
        # (hydration by id at 1M rows: 444 ms with the stale index vs 137 ms rebuilt; docs/bench_scale.json).
        for col in ("id", "scope_id"):
            try:
                tbl.create_scalar_index(col, index_type="BTREE")
            except Exception as exc:  # an index is an optimisation; searching works without it
                log.warning("could not index %s: %s", col, exc)
        return True


def _partitions_for(rows: int) -> int:
    """IVF partitions: about sqrt(rows)/5 (64 at 100k), probed at 75% — recall 0.99 vs exact there."""
    return max(8, round(math.sqrt(rows) / 5))
