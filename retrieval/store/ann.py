"""The dense side's ANN index (IVF-SQ) and the query plan it implies (`AnnIndex`, a part of MemoryStore)."""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from retrieval.store.versions import optimize
from retrieval.types import Scope

if TYPE_CHECKING:
    from retrieval.store.handle import TableHandle
    from retrieval.store.row_copy import RowCopy

log = logging.getLogger(__name__)

# Below this many rows an exact (flat) scan is both exact and fast enough; above it we build an
# IVF-SQ cosine index: about sqrt(rows) partitions of 8-bit scalar-quantised vectors (a quarter of
# IVF-FLAT's memory), 15% of them probed, the best 2×limit re-scored on the stored float vectors, so
# every distance we report is exact. At 1M synthetic traces (deliberately hard: noise larger than
# the cluster centre), probing 200 / 150 / 120 of 1,000 partitions gave recall@30 0.98 / 0.97 /
# 0.95 at 47 / 39 / 38 ms for the store's dense search; IVF-FLAT needed 150 of 200 partitions
# (~500 ms) and IVF-PQ / RaBitQ stayed under 0.89 (docs/BENCHMARKS.md, Scale). IVF-HNSW-SQ did not
# finish building in 14 min.
ANN_MIN_ROWS = 50_000
ANN_PROBE_FRACTION = 0.15
ANN_PROBE_ROWS = 100_000  # below ~667k rows, probe enough partitions to cover this many rows
ANN_REFINE = 2
FLAT_PROBE_FRACTION = 0.75  # an IVF-FLAT index built by an earlier version: sqrt(rows)/5 partitions


class AnnIndex:
    """The vector index of a store and the query plan it implies (partitions, probes, refine),
    cached per table version."""

    def __init__(self, handle: TableHandle, copy: RowCopy):
        self._handle = handle
        self._copy = copy
        self._plans: dict[tuple, Any] = {}

    def has_index(self) -> bool:
        return bool(self.plan()[0])

    def forget(self) -> None:
        """Drop the cached plans (after the table was replaced, e.g. by a re-embed)."""
        self._plans = {}

    def pin_probes(self, probes: int) -> tuple[int, int, int]:
        """Probe this many partitions at the current table version (benchmarks' probe sweeps)."""
        tbl = self._handle.table()
        partitions, _, refine = self.plan()
        self._plans = {("ann", tbl.version): (partitions, int(probes), refine)}
        return self.plan()

    def plan(self) -> tuple[int, int, int]:
        """(partitions, probes, refine factor) for the vector index, (0, 0, 0) without one; cached
        per table version.

        LanceDB does not report an IVF index's partition count, so it is estimated from the row count
        the same way it was chosen at build time (sqrt(rows); sqrt(rows)/5 for the IVF-FLAT indexes
        earlier versions built). Rows only grow after a build, so the estimate can over-probe (slower,
        never less recall); `ensure(force=True)` rebuilds for the new size. Quantised indexes get a
        refine step so that distances are exact.
        """
        tbl = self._handle.table()
        if tbl is None:
            return 0, 0, 0
        key = ("ann", tbl.version)
        plan = self._plans.get(key)
        if plan is None:
            plan = _plan_for(tbl, self._handle.columns.vector)
            # readers share this cache: copy (atomic under the GIL), never iterate it live
            kept = {k: v for k, v in list(self._plans.items()) if k[1] == tbl.version}
            kept[key] = plan
            self._plans = kept
        return plan

    def scoped_rows(self, scopes: Sequence[Scope]) -> int:
        """Rows in `scopes` (from the row copy when there is one, else counted once per version)."""
        cache = self._copy.current()
        if cache is not None:
            return cache.scoped_rows(scopes)
        tbl = self._handle.table()
        key = ("scoped", tbl.version, tuple(sorted(str(s) for s in scopes)))
        rows = self._plans.get(key)
        if rows is None:
            rows = self._plans[key] = tbl.count_rows(self._handle.columns.scope_filter(scopes))
        return int(rows)

    def ensure(self, min_rows: int = ANN_MIN_ROWS, force: bool = False) -> bool:
        """Build an IVF-SQ cosine index once the table passes `min_rows`; fold new rows in after.

        `force=True` (re)builds now, whatever the size (an IVF-FLAT index from an earlier version is
        replaced). Returns True when an index exists afterwards. Exact search is kept for small
        tables: it is exact and, below the threshold, no slower.
        """
        tbl = self._handle.table()
        if tbl is None or self._handle.read_only:  # a table inspected in place keeps the indexes it has
            return self.has_index() if tbl is not None else False
        rows = tbl.count_rows()
        if self.has_index() and not force:
            if self._handle.index_state()["unindexed_rows"] > 0:
                optimize(tbl)  # never prunes a tagged version (retrieval.store.versions)
            return True
        if rows < min_rows and not force:
            return False
        from lancedb.index import IvfSq

        # the row copy is rebuilt after this (it records which rows the index leaves out)
        tbl.create_index("vector", config=IvfSq(distance_type="cosine", num_partitions=_partitions_for(rows)),
                         replace=True)
        # `id` too: its index was made on the empty table, and rows appended since are scanned flat
        # (hydration by id at 1M rows: 444 ms with the stale index vs 137 ms rebuilt; docs/bench_scale.json).
        for col in ("id", "scope_id"):
            try:
                with self._copy.unchanged(tbl):
                    tbl.create_scalar_index(col, index_type="BTREE")
            except Exception as exc:  # an index is an optimisation; searching works without it
                log.warning("could not index %s: %s", col, exc)
        return True


def _plan_for(tbl: Any, vector: str) -> tuple[int, int, int]:
    for idx in tbl.list_indices():
        if vector in list(getattr(idx, "columns", [])):
            rows = tbl.count_rows()
            if str(getattr(idx, "index_type", "")).upper().replace("_", "") == "IVFFLAT":
                parts = max(8, round(math.sqrt(rows) / 5))
                return parts, max(1, math.ceil(parts * FLAT_PROBE_FRACTION)), 0
            parts = _partitions_for(rows)
            frac = min(1.0, max(ANN_PROBE_FRACTION, ANN_PROBE_ROWS / max(rows, 1)))
            return parts, max(1, math.ceil(parts * frac)), ANN_REFINE
    return 0, 0, 0


def _partitions_for(rows: int) -> int:
    """IVF partitions: about sqrt(rows) (316 at 100k, 1,000 at 1M); probed: enough to cover 100k
    rows, at least 15% (all of them up to 100k rows, 150 of 1,000 at 1M)."""
    return max(8, round(math.sqrt(rows)))
