"""A store URI opened as a whole: traces (LanceDB), the BM25 index beside them, and the facts.

Keeps the three in step: every ingest or delete goes to all of them, and the BM25 index is saved
next to the LanceDB data (rebuilt from the store when missing or out of date).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .bm25 import BM25Index
from .hybrid import sync_bm25
from .store import MemoryStore
from .types import MemoryTrace

log = logging.getLogger(__name__)

BM25_FILE = "bm25.npz"


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


@dataclass
class IngestReport:
    written: int = 0
    duplicates: list[str] = field(default_factory=list)
    facts: int = 0
    fact_warnings: list[str] = field(default_factory=list)


class Workspace:
    def __init__(self, uri: str = "data/lancedb", embedder=None, clock=None, fact_extractor="rule"):
        self.uri = str(uri)
        self.store = MemoryStore(self.uri, embedder=embedder, clock=clock)
        self._fact_extractor = fact_extractor
        self._bm25: BM25Index | None = None
        self._facts = None

    def __repr__(self) -> str:
        return f"Workspace(uri={self.uri!r})"

    @property
    def bm25_path(self) -> Path | None:
        if not is_local_uri(self.uri):
            return None  # remote stores: the index is rebuilt from the store on open
        return Path(self.uri.removeprefix("file://")) / BM25_FILE

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            self._bm25 = self._open_bm25()
        return self._bm25

    def _open_bm25(self) -> BM25Index:
        path = self.bm25_path
        n_store = self.store.count(active_only=True)
        if path is not None and path.is_file():
            try:
                idx = BM25Index.load(path)
                if len(idx) == n_store:
                    return idx
                log.warning("BM25 index has %d docs but the store has %d; rebuilding", len(idx), n_store)
            except ValueError as exc:
                log.warning("%s; rebuilding from the store", exc)
        return self.rebuild_bm25()

    def rebuild_bm25(self) -> BM25Index:
        idx = BM25Index()
        sync_bm25(idx, self.store.all_traces())
        self._bm25 = idx
        self.save()
        return idx

    @property
    def facts(self):
        if self._facts is None:
            from .facts import FactStore

            self._facts = FactStore(self.uri)
        return self._facts

    def extractor(self):
        if self._fact_extractor in (None, "none"):
            return None
        if self._fact_extractor == "rule":
            from .facts import RuleFactExtractor

            return RuleFactExtractor()
        return self._fact_extractor

    def save(self) -> None:
        if self.bm25_path is not None and self._bm25 is not None:
            self._bm25.save(self.bm25_path)

    def ingest(self, traces: Iterable[MemoryTrace], progress: Callable[[int, int], None] | None = None,
               extract_facts: bool = True) -> IngestReport:
        """Store, index and extract facts from traces. Validation failure writes nothing anywhere."""
        traces = list(traces)
        written = self.store.add(traces, progress=progress)  # validates the whole batch first
        rep = IngestReport(written=written, duplicates=list(self.store.last_add_report.duplicates))
        latest = {t.id: t for t in traces}
        sync_bm25(self.bm25, latest.values())
        self.save()
        extractor = self.extractor() if extract_facts else None
        if extractor is not None:
            from .facts import extract_for_traces

            rep.facts, rep.fact_warnings = extract_for_traces(self.facts, extractor, latest.values())
        return rep

    def delete(self, ids: Iterable[str]) -> int:
        ids = list(ids)
        n = self.store.delete(ids)
        for i in ids:
            self.bm25.remove_document(i)
        self.save()
        try:
            for i in ids:
                self.facts.delete_for_trace(i)
        except ImportError:  # pragma: no cover
            pass
        return n

    def set_active(self, ids: Iterable[str], active: bool) -> int:
        """Activate or deactivate traces; inactive ones leave BM25 (and dense search filters them)."""
        ids = list(ids)
        self.store.set_active(ids, active)
        traces = self.store.get(ids)
        sync_bm25(self.bm25, traces)
        self.save()
        return len(traces)

    def retriever(self, **kwargs):
        from .hybrid import HybridRetriever

        kwargs.setdefault("fact_store", self.facts)
        return HybridRetriever(self.store, bm25=self.bm25, **kwargs)

    def status(self) -> dict:
        state = self.store.index_state()
        try:
            n_facts = self.facts.count()
        except Exception as exc:  # status must render even when the fact table is unreadable
            log.warning("fact count failed: %s", exc)
            n_facts = 0
        return {
            "uri": self.uri,
            "traces": state["rows"],
            "bm25_documents": len(self.bm25),
            "facts": n_facts,
            "scopes": {str(k): v for k, v in self.store.scope_counts().items()},
            "ann_index": state["ann_index"],
            "unindexed_rows": state["unindexed_rows"],
            "in_step": len(self.bm25) == self.store.count(active_only=True),
        }
