"""Building a store's sparse side: BM25 streamed from the table with progress, or LanceDB's FTS.

Streaming matters at scale: a million traces are read as Arrow batches of (id, text, scope) and
added batch by batch, never materialised as a million MemoryTrace objects.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import make_tokenizer

log = logging.getLogger(__name__)

SPARSE_BACKENDS = ("bm25", "fts")
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Opened:
    """A sparse index, the table version it reflects, whether it was just built (unsaved), and the table version
    the change that asked for it committed (`set_analyzer`: the analyser recorded; None when it committed none)."""

    index: Any
    version: int
    built: bool
    committed: int | None = None


def check_sparse(name: str) -> str:
    if name not in SPARSE_BACKENDS:
        raise ValueError(f"sparse backend {name!r} is not one of {', '.join(SPARSE_BACKENDS)}")
    return name


def log_progress(what: str, every_s: float = 5.0) -> Progress:
    """A progress callback that logs at most every `every_s` seconds (and at the end)."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if done >= total or time.perf_counter() - last[0] > every_s:
            last[0] = time.perf_counter()
            log.warning("%s: %d/%d", what, done, total)

    return progress


def statistics_of(store) -> str:
    """The BM25 statistics the store records (`store` | `scope`), or what a new table will record."""
    ident = store.identity()
    return ident.statistics if ident is not None else store.new_statistics


def new_bm25(store) -> BM25Index:
    """An empty BM25 index with the store's recorded analyzer and statistics (filled by the Workspace's catch-up)."""
    ident = store.identity()
    analyzer = ident.analyzer if ident is not None else store.new_analyzer
    return BM25Index(tokenizer=make_tokenizer(analyzer), statistics=statistics_of(store))


def load_sidecar(store, path: Path | None) -> tuple[BM25Index, int] | None:
    """The saved BM25 sidecar at `path` and the table version it was built from, when it was built with the store's
    analyzer; else None (with a warning saying why)."""
    if path is None or not path.is_file():
        return None
    ident = store.identity()
    analyzer = ident.analyzer if ident is not None else store.new_analyzer
    try:
        idx = BM25Index.load(path, tokenizer=make_tokenizer(analyzer))
    except ValueError as exc:
        log.warning("%s; rebuilding from the store", exc)
        return None
    idx.statistics = statistics_of(store)
    built_from = (idx.source or {}).get("table_version")
    if not isinstance(built_from, int) or isinstance(built_from, bool):
        log.warning("BM25 sidecar %s does not say which table version it reflects; rebuilding", path)
        return None
    return idx, built_from


def build_bm25(store, analyzer: str | None = None, progress: Progress | None = None,
               batch_size: int = 50_000) -> BM25Index:
    """BM25 over the store's active rows, with the store's recorded analyzer (unless one is given) and
    statistics."""
    if analyzer is None:
        ident = store.identity()
        analyzer = ident.analyzer if ident is not None else store.new_analyzer  # what the table will record
    idx = BM25Index(tokenizer=make_tokenizer(analyzer), statistics=statistics_of(store))
    total = store.count(active_only=True)
    done = 0
    for ids, texts, scopes in store.scan_text(batch_size):
        idx.add_documents(zip(ids, texts, scopes))
        done += len(ids)
        if progress:
            progress(done, total)
    if progress and total == 0:
        progress(0, 0)
    return idx


def open_sparse(store, sparse: str, path: Path | None, progress: Progress | None = None) -> Opened:
    """A store's sparse index (call with its write lock held): the FTS reader, the saved BM25 sidecar
    at `path` when it matches the table version and analyzer, else BM25 built from the store (then
    `Opened.built`: the caller saves it)."""
    from retrieval.sparse.fts import LanceFtsSparse

    version = store.version()
    ident = store.identity()
    analyzer = ident.analyzer if ident is not None else store.new_analyzer  # what the table will record
    if sparse == "fts":
        return Opened(LanceFtsSparse(store, analyzer), version, False)
    if path is not None and path.is_file():
        try:
            idx = BM25Index.load(path, tokenizer=make_tokenizer(analyzer))
            idx.statistics = statistics_of(store)
            built_from = (idx.source or {}).get("table_version")
            if built_from == version:
                return Opened(idx, version, False)
            log.warning("BM25 sidecar %s was built from table version %s but the store is at %s; rebuilding",
                        path, built_from, version)
        except ValueError as exc:
            log.warning("%s; rebuilding from the store", exc)
    elif path is not None and version > 0:
        log.warning("no BM25 sidecar at %s; building it from the store", path)
    elif path is None and version > 0:
        log.warning("no BM25 sidecar beside %s (remote or inspected in place); building BM25 in memory",
                    store.display_uri)
    idx = build_bm25(store, analyzer, progress or log_progress(f"BM25 from {store.display_uri}"))
    return Opened(idx, version, True)


def set_analyzer(store, sparse: str, name: str, progress: Progress | None = None) -> Opened:
    """Record the store's BM25 analyzer and rebuild its sparse side with it (with progress); the
    caller installs (and for BM25 saves) the returned index."""
    from retrieval.store.identity import check_analyzer

    check_analyzer(name)
    with store.write_lock():
        committed = store.record_settings(analyzer=name)
        if sparse == "fts":
            opened = open_sparse(store, sparse, None)
            opened.index.ensure_index(replace=True)
            return replace(opened, committed=committed)
        return Opened(build_bm25(store, name, progress), store.version(), True, committed)


def set_statistics(store, index, name: str) -> int | None:
    """Record the store's BM25 statistics (`store` | `scope`) and read `index` with them from now on
    (no rebuild: the postings are the same; only a scoped query's N, df and avgdl change). Returns the table
    version it committed (None: nothing changed, or no table yet)."""
    from retrieval.bm25.scoped import check_statistics

    committed = store.record_settings(statistics=check_statistics(name))
    if hasattr(index, "statistics"):
        index.statistics = name
    return committed


def sparse_status(store, sparse: str) -> dict:
    """What the store was built with, for Home and `status`: embedder name + dim, analyzer, sparse backend."""
    ident = store.identity()
    return {"embedder": ident.embedder if ident else None, "dim": ident.dim if ident else None,
            "analyzer": ident.analyzer if ident else store.new_analyzer, "sparse": sparse,
            "bm25_statistics": "store" if sparse == "fts" else (ident.statistics if ident else store.new_statistics),
            "table": store.table_name, "in_place": not store.columns.native}
