"""A store opened as of a version, tag or time: traces, BM25 and facts as they stood then (SPEC §16).

`open_as_of` resolves `as_of` (retrieval.store.versions), checks the traces table out at that version
(retrieval.store.asof), takes BM25 for it from the sidecar when the sidecar was built from exactly that
version, else from the sidecar moved to that version by the rows that differ (retrieval.history.sidecar),
else rebuilds it in memory from that version's rows, and checks the facts table out
at the matching time (retrieval.facts.asof). Nothing is written: no sidecar, no journal replay, no
index build. A version never changes once committed, so its traces and BM25 are kept in an `AsOfCache` (a few
versions, least recently used first out) owned by whoever reads as of: a `Workspace` (`Workspace.as_of_cache`, so
the app's cached workspace keeps them across reruns) or a bare `HybridRetriever`; without one nothing is kept. The
facts of the newest version are re-read each time.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.cache import BoundedCache
from retrieval.facts.asof import AsOfFactStore, facts_cut
from retrieval.history.sidecar import diffed, load_sidecar
from retrieval.sparse.build import build_bm25, statistics_of
from retrieval.store.asof import AsOfStore
from retrieval.store.versions import Pinned, resolve

if TYPE_CHECKING:
    from retrieval.access import Access

log = logging.getLogger(__name__)

AsOf = int | str | datetime
Progress = Callable[[int, int], None]
CACHED_VERSIONS = 4  # traces + BM25 of this many versions stay open (each about the size of the live index)

Moved = Mapping[str, tuple[int, int]]  # scope label -> (documents added, removed) to move the sidecar
Sparse = tuple[Any, str, Moved | None]


class AsOfCache:
    """The versions an owner keeps open for as-of reads: traces + BM25 per version, facts per cut, `versions` of
    each at most (least recently used out first). A committed version never changes, so nothing here goes stale
    while its store stays; `forget(uri)` drops a store's entries (it was replaced on disk), `clear()` all."""

    def __init__(self, versions: int = CACHED_VERSIONS) -> None:
        self.views: BoundedCache[tuple, tuple[AsOfStore, Sparse]] = BoundedCache(versions)
        self.facts: BoundedCache[tuple, AsOfFactStore] = BoundedCache(versions)

    def forget(self, uri: str) -> int:
        """Drop every entry of the store at `uri`; how many were dropped."""
        return self.views.invalidate(lambda k: k[0] == uri) + self.facts.invalidate(lambda k: k[0] == uri)

    def clear(self) -> None:
        self.views.invalidate()
        self.facts.invalidate()


@dataclass(frozen=True)
class AsOfView:
    """What a read as of `pinned` uses: the checked-out store, its BM25 (or FTS reader) and its facts."""

    pinned: Pinned
    store: AsOfStore
    bm25: Any
    facts: AsOfFactStore | None
    bm25_from: str  # "sidecar" (built from this version) | "the sidecar of version …" | "rebuilt" | "fts"
    moved: Moved | None = field(default=None)  # per scope, what moved the sidecar of another version to this one

    @property
    def bm25_source(self) -> str:
        """Where this version's BM25 came from, with the whole table's counts (the operator's view)."""
        return self.source()

    def source(self, scopes: Collection[str] | None = None) -> str:
        """Where BM25 came from; the documents added and removed counted over `scopes` (labels) only, every
        scope when None: a visitor limited to some scopes is never told how many rows other scopes moved."""
        if self.moved is None:
            return self.bm25_from
        counts = [v for k, v in self.moved.items() if scopes is None or k in scopes]
        added, removed = sum(a for a, _ in counts), sum(r for _, r in counts)
        return f"{self.bm25_from}, {added} added and {removed} removed"

    def status(self, access: Access | None = None) -> dict:
        """What `status --as-of` prints: the state's version, its rows, BM25 and facts then; for a visitor limited
        to some scopes (`access`), counted over their scopes only (`retrieval.access.for_visitor`)."""
        from retrieval.access import for_visitor

        s, p = self.store, self.pinned
        out = {"uri": s.display_uri, "as_of": p.label, "version": p.version, "tag": p.tag, "latest": p.latest,
                "committed": p.timestamp.isoformat(), "traces": s.count(), "active": s.count(active_only=True),
                "bm25_documents": len(self.bm25), "bm25_source": self.bm25_source,
                "facts": self.facts.count() if self.facts is not None else 0,
                "facts_version": self.facts.facts_version if self.facts is not None else None,
                "scopes": {str(k): v for k, v in s.scope_counts().items()}, "tags": s.tags()}
        if access is None or not access.limited:
            return out
        mine = [str(k) for k in s.scope_counts() if access.sees(k)]
        # the fact table's version counts every scope's fact commits: not a limited visitor's to see
        return {**for_visitor(out, access, s, self.facts), "bm25_source": self.source(mine), "facts_version": None}

    @property
    def banner(self) -> str:
        """One plain sentence saying which state is shown (every scope's counts)."""
        return self.banner_for(None)

    def banner_for(self, scopes: Collection[str] | None) -> str:
        """The banner for a reader of `scopes` (labels; None: every scope): counts of those scopes only."""
        head = "the newest state" if self.pinned.latest else "an earlier state"
        return f"Showing {head}: {self.pinned.label}; BM25 statistics of that version ({self.source(scopes)})."


def pin(store: Any, as_of: AsOf) -> Pinned:
    """The version `as_of` names in `store` (ValueError when unknown)."""
    store.version()  # see other writers' commits before resolving
    tbl = store.table()
    if tbl is None:
        raise ValueError(f"store {store.display_uri!r} has no table {store.table_name!r} yet: nothing to read as of")
    return resolve(tbl, as_of)


def open_as_of(store: Any, facts: Any, as_of: AsOf, *, sparse: str = "bm25", sidecar: Path | None = None,
               analyzer: str | None = None, progress: Progress | None = None,
               cache: AsOfCache | None = None) -> AsOfView:
    """`store` (a MemoryStore) and `facts` (a FactStore or None) as of `as_of`. `analyzer` overrides the
    analyser the store recorded at that version (a bare retriever whose index uses its own). `cache` (its
    owner's) keeps the version open for the next read; None builds it afresh."""
    pinned = pin(store, as_of)
    key = (store.uri, store.table_name, pinned.version, sparse, analyzer, getattr(store.embedder, "name", None))

    def build() -> tuple[AsOfStore, Sparse]:
        return _build(store, pinned, sparse, sidecar, analyzer, progress)

    view_store, (index, source, moved) = build() if cache is None else cache.views.get_or_build(key, build)
    fact_view = _facts_at(facts, facts_cut(pinned), cache) if facts is not None else None
    return AsOfView(pinned, view_store, index, fact_view, source, moved)


def _facts_at(facts: Any, cut: datetime | None, cache: AsOfCache | None) -> AsOfFactStore:
    """The facts as of `cut`: kept in `cache` when `cut` is fixed (a past version's facts never change); the
    newest version's facts are opened afresh (a fact may still follow its traces)."""
    if cut is None or cache is None:
        return AsOfFactStore(facts, cut)
    return cache.facts.get_or_build((facts.uri, facts.table_name, cut), lambda: AsOfFactStore(facts, cut))


def _build(store: Any, pinned: Pinned, sparse: str, sidecar: Path | None, analyzer: str | None,
           progress: Progress | None) -> tuple[AsOfStore, Sparse]:
    view_store = AsOfStore(store, pinned)
    return view_store, _sparse_for(view_store, sparse, sidecar, analyzer, progress)


def _sparse_for(view: AsOfStore, sparse: str, sidecar: Path | None, analyzer: str | None,
                progress: Progress | None) -> Sparse:
    ident = view.identity()
    name = analyzer or (ident.analyzer if ident is not None else view.new_analyzer)
    if sparse == "fts":
        from retrieval.sparse.fts import LanceFtsSparse

        fts = LanceFtsSparse(view, name)
        try:
            fts.ensure_index(view.table())  # read-only: only checks that this version has the index
            return fts, "fts", None
        except ValueError:  # the index was made after this version: that version's rows, in memory
            return build_bm25(view, name, progress), "rebuilt (no full-text index at that version)", None
    loaded = load_sidecar(sidecar, view.table_name, name)
    if loaded is not None:
        idx, saved_version = loaded
        idx.statistics = statistics_of(view)  # as open_sparse does: the statistics the store recorded then
        if saved_version == view.pinned.version:
            return idx, "sidecar", None
        moved = diffed(idx, saved_version, view)
        if moved is not None:
            return moved
    return build_bm25(view, name, progress), "rebuilt", None


class WorkspaceAsOf:
    """A workspace whose `retriever(**kw)` reads as of `as_of` (for factories that build through it);
    every other attribute is the workspace's own."""

    def __init__(self, workspace: Any, as_of: AsOf | None):
        self.workspace, self.as_of = workspace, as_of

    def __getattr__(self, name: str) -> Any:
        return getattr(self.workspace, name)

    def retriever(self, **kw: Any) -> Any:
        return self.workspace.retriever(as_of=self.as_of, **kw)
