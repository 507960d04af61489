"""An in-memory copy of a large store's rows (`RowCopy`, a part of MemoryStore; one version of it: store/row_cache.py).

Why: LanceDB 0.40's random reads of a few rows are slow at this size: on the 1M benchmark store,
60 random rows cost 186 ms for all 19 columns and 128 ms for a single column, while the same rows
from an Arrow table in memory take ~3 ms (scripts/probe_lancedb_reads.py). So past ROW_CACHE_MIN
rows a store keeps, for the table version it reads, every row's columns except the vector (~350 MB
at 1M), every vector as int8 with a per-row scale (384 MB at 1M × 384), and the float32 vectors in an
unlinked local file (store/spill.py). LanceDB serves only what needs its index (store/dense.py).

The int8 vectors serve one plan: a small scope is searched exactly, and its rows lie scattered
through the table, so LanceDB would read vectors from all over the file. The int8 dot products pick
2×limit + 10 candidates, re-scored on their float32 vectors. Vectors are laid out scope by scope.

This process's own writes (upsert, delete, (de)activate) are applied to the copy as a small overlay
when nothing else committed in between: the copy advances to the new version without a rebuild.
Any other commit (another process's write, an index build, a compaction, which moves row ids) or
an overlay past OVERLAY_MAX rows makes the next read rebuild the copy (~9 s at 1M; docs/BENCHMARKS.md).
Only for the native schema (a table inspected in place reads LanceDB directly).
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from collections.abc import Iterator
from typing import TYPE_CHECKING

from retrieval.store.tuning import release_freed_memory, single_threaded_blas
from retrieval.store.row_cache import RowCache, TableMoved

if TYPE_CHECKING:
    from retrieval.store.handle import TableHandle

log = logging.getLogger(__name__)

ROW_CACHE_MIN = 1_000  # a 10k store: retrieve() p50 52 -> 16 ms with the copy (scripts/bench_retrieve.py)


def _advance(cache: RowCache, version: int, change: dict) -> RowCache | None:
    """The copy advanced by a committed change; None (rebuild on the next read) if that fails."""
    try:
        return cache.advanced(version, **change)
    except Exception:  # the write itself is committed: never fail it for the copy's sake
        log.exception("row copy: could not apply this process's write; it is rebuilt on the next read")
        return None


class RowCopy:
    """A store's row copy: built on first need for the table version the store reads (past
    ROW_CACHE_MIN rows, native schema only), advanced by this process's own writes, rebuilt after any
    other commit. Readers that see a new version wait for the advanced copy."""

    def __init__(self, handle: TableHandle):
        self._handle = handle
        self._copy: RowCache | None = None
        self._small: tuple[int, int] | None = None  # (table version, threshold) found below it
        self._lock = threading.RLock()

    @property
    def held(self) -> RowCache | None:
        """The copy held now, whatever table version it is for (None when none is held)."""
        return self._copy

    def current(self) -> RowCache | None:
        """The copy for the table version the store reads, built on first need; None when the
        table is small or not native."""
        tbl = self._handle.table()
        if tbl is None or not self._handle.columns.native:
            return None
        cache = self._copy
        if cache is not None and cache.version == tbl.version:
            return cache
        if self._small == (tbl.version, ROW_CACHE_MIN):
            return None
        if tbl.count_rows() < ROW_CACHE_MIN:
            self._small = (tbl.version, ROW_CACHE_MIN)
            return None
        with self._lock:
            cache = self._copy
            if cache is None or cache.version != tbl.version:
                cache = self._rebuild(tbl)
        return cache

    def _rebuild(self, tbl) -> RowCache | None:
        single_threaded_blas()
        self._copy = None  # let the old copy go first: never two at once
        release_freed_memory()
        cols = [f.name for f in tbl.schema if f.name != self._handle.columns.vector]
        version, state = int(tbl.version), self._handle.index_state()
        try:
            cache = RowCache(tbl, cols, self._handle.columns.vector, unindexed=(
                state["unindexed_rows"] if state["ann_index"] else None))
        except TableMoved:
            return None
        if int(tbl.version) != version:  # a commit landed mid-build: read LanceDB this time, build again next
            return None
        self._copy = cache
        return cache

    @contextmanager
    def write(self, tbl) -> Iterator[dict]:
        """Around one write of this process: yields a dict the writer fills with the change
        (`upserts`: full rows with vectors, `deleted`: ids). If the write was the table's only
        commit since the copy's version, the copy advances by that change (no rebuild); anything
        else (another writer's commit in between, several commits) leaves it for the next read to
        rebuild. Readers of this store that see the new version wait here for the advanced copy."""
        with self._lock:
            before = int(tbl.version)
            change: dict = {}
            yield change
            after = int(tbl.version)
            cache = self._copy
            if cache is None or cache.version != before or after == before:
                return
            # advance only by a change the writer recorded, made in exactly one commit
            self._copy = _advance(cache, after, change) if after == before + 1 and change else None

    @contextmanager
    def unchanged(self, tbl) -> Iterator[None]:
        """Around commits that change no row and no row id (an index build, table metadata)."""
        with self._lock:
            before = int(tbl.version)
            yield
            cache, after = self._copy, int(tbl.version)
            if cache is not None and cache.version == before and after != before:
                self._copy = _advance(cache, after, {}) if after == before + 1 else None
